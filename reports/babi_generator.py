"""The README's bAbI generator table: our generator beside the official files, from the stored output of
``python -m tasks.babi.compare --json results/generators/babi.json`` (the table itself is
:func:`tasks.babi.compare.table`, so the command prints what the README shows)."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.babi.compare import table

BABI_GENERATOR_STATS = Path("generators") / "babi.json"  # under results/


def babi_generator_section(results_dir: Path) -> list[str]:
    """The section, or nothing when the record is not stored."""
    path = results_dir / BABI_GENERATOR_STATS
    if not path.exists():
        return []
    stored = json.loads(path.read_text(encoding="utf-8"))
    return ["### bAbI: our generator beside the official files", "",
            f"Per task, the official {stored['data_set']} files (training and test pooled; task 3's training file "
            "from the 1k release, as en-10k's is not staged) and as many questions from our generator "
            f"(`{stored['command']}`; definitions in `tasks/babi/compare.py`). Each cell gives the files' figure, "
            "then ours. A distance is the total variation between the two distributions, 0 when equal and 1 when "
            "disjoint, with the files' own training-against-test distance in brackets: the spread two samples of "
            "one generator show. The first supporting fact's distance back counts statements, capped at 12.",
            "", *table(stored["tasks"])]
