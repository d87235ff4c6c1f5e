"""The run-figure cache's key and pruning rules (reports/figure_cache.py, module docstring).

A run's cached figures are named by a digest of everything of its record the figures could read; so any change to
that data (a curve's value, a rollout, a config value under a renamed key) must give another key, or a stale
figure would be shown for changed data, while an identical record rebuilt from scratch must give the same key (so
an unchanged store draws nothing). Pruning removes exactly the files a build did not use. Content addressing as in
git's object store (Chacon & Straub, "Pro Git", 2nd ed., 2014, section 10.2 "Git Objects").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from reports import figure_cache
from reports.store import RunRecord
from tests.run_records import run_record

CODE = "code-digest"


def _record() -> RunRecord:
    """A small run record with curves and a rollout (fresh objects on each call)."""
    curves = pd.DataFrame({"step": [1, 2, 3], "val/acc": [0.5, 0.6, 0.7]})
    rollout = pd.DataFrame({"step": [1, 10], "acc": [0.9, 0.8]})
    return run_record("r0", path=Path("/runs/babi/lstm/r0"), rel_path="babi/lstm/r0",
                      results={"seed": 0, "metrics": {"test/acc": 0.7}}, config={"model": {"hidden": 8}, "seed": 0},
                      curves=curves, rollout=rollout)


def test_an_identical_record_rebuilt_gets_the_same_key() -> None:
    assert figure_cache.figure_key(_record(), CODE) == figure_cache.figure_key(_record(), CODE)


def test_every_change_the_figures_could_show_changes_the_key() -> None:
    base = _record()
    key = figure_cache.figure_key(base, CODE)
    changed_curve = base.curves.copy()
    changed_curve.loc[2, "val/acc"] = 0.1  # one value of one curve
    changed_rollout = base.rollout.copy()
    changed_rollout.loc[1, "acc"] = 0.2
    variants = {
        "curve value": replace(base, curves=changed_curve),
        "rollout value": replace(base, rollout=changed_rollout),
        "config key renamed": replace(base, config={"model": {"width": 8}, "seed": 0}),
        "status": replace(base, status="running"),
        "code": base,
    }
    for what, record in variants.items():
        other = figure_cache.figure_key(record, "other-code" if what == "code" else CODE)
        assert other != key, what


def test_pruning_keeps_the_files_this_build_used_and_removes_the_rest(tmp_path: Path) -> None:
    figures = {"figures": [{"svg": "<svg/>", "caption": "c"}]}
    for key in ("aaa", "bbb", "ccc"):
        figure_cache._write(tmp_path / f"{key}{figure_cache.SUFFIX}", figures)
    (tmp_path / "notes.txt").write_text("not a cache file")
    figure_cache.prune(tmp_path, ["bbb"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"bbb{figure_cache.SUFFIX}", "notes.txt"]
    kept = figure_cache.cached_figures(tmp_path, "bbb", lambda: {"figures": []})
    assert kept == figures  # read back, not drawn again
