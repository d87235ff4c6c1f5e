"""The harness core: registry, configuration, run store, tracking, runners and the command line.

Arrows point down only: ``harness.cli`` (with ``cli_parser`` and ``cli_runs``) -> ``harness.runners`` -> registry /
config / runs.
Tasks and models never import runners; models never import tasks.
"""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
