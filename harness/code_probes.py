"""Probes: the evidence ``harness carry --probe MODULE`` records where no reference run can be trained again bit
for bit (:mod:`harness.code_changes`). A probe is a module whose ``probe()`` returns a fingerprint of what the code
computes (``tasks/boxworld/probe.py``, ``harness/runners/stacked_probe.py``); it is run in a child process on a git
revision's code, unpacked in a temporary folder, and on the working tree, and the two outputs must be equal.

Nothing here computes a run's numbers (:data:`harness.provenance.NOT_COMPUTING`).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import UserError

# Runs a probe in the project tree given as argv[2]: the probe's output and the digests of the computing files it
# imported, as one JSON line. The tree's own packages must be the ones imported (not an installed copy).
PROBE_CHILD = """
import importlib, json, sys
from pathlib import Path
root = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(root))
import harness
if Path(harness.__file__).resolve().parent.parent != root:
    sys.exit(f"the probe imported harness from {harness.__file__}, not from {root}")
output = importlib.import_module(sys.argv[1]).probe()
from harness.provenance import code_files
print(json.dumps({"output": output, "files": code_files(root)}))
"""
CODE_FOLDERS = ("harness", "tasks", "models")


PROJECT_VARIABLE = "HARNESS_PROBE_PROJECT"  # the working project, for a probe that reads its reference runs


def run_probe(module: str, root: Path, project: Path | None = None) -> dict[str, Any]:
    """``module.probe()``'s output in the project tree at ``root``, and the computing files it imported there.
    ``project`` (default ``root``): the project whose ``results/`` a probe may read (``$HARNESS_PROBE_PROJECT``),
    the same on both sides of an edit."""
    env = {**os.environ, PROJECT_VARIABLE: str((project or root).resolve())}
    done = subprocess.run([sys.executable, "-c", PROBE_CHILD, module, str(root)], cwd=root, capture_output=True,
                          text=True, check=False, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"probe {module} failed in {root}: {why}")
    return json.loads(lines[-1])


def run_probe_at(module: str, base: str, root: Path) -> dict[str, Any]:
    """:func:`run_probe` on git revision ``base``'s code (its harness, tasks and models, unpacked in a temporary
    folder that is removed afterwards)."""
    folders = [folder for folder in CODE_FOLDERS if (root / folder).is_dir()]
    archive = subprocess.run(["git", "archive", "--format=tar", base, *folders], cwd=root, capture_output=True,
                             check=False)
    if archive.returncode != 0:
        raise UserError(f"git archive {base}: {archive.stderr.decode(errors='replace').strip()}")
    with tempfile.TemporaryDirectory(prefix="harness-carry-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        return run_probe(module, Path(folder), project=root)


def probe_record(module: str, base: str, root: Path) -> dict[str, Any]:
    """The evidence of a probe: its output on ``base``'s code and on the working tree's, and each file it imported
    in both, ``{"probe": module, "output": [before, after], "files": {rel: [before, after]}}``."""
    before, after = run_probe_at(module, base, root), run_probe(module, root)
    files = {rel: [before["files"].get(rel, ""), digest] for rel, digest in after["files"].items()}
    return {"probe": module, "output": [before["output"], after["output"]], "files": files}
