"""Rules of the harness's small utilities, each stated by hand on a tiny input.

* harness/interfaces.py: a split that lacks a tensor of its interface's contract is a one-line UserError naming
  the split, the tensor and its dtype and shape (a split without ``length`` would otherwise reach the model).
* harness/bench_start.py: the figures reported are medians of the runs (not means), each rounded to the
  millisecond; the child's environment drops a ``FORCE`` the caller's shell may hold (``make bench FORCE=1``), so
  every start is the same command.
* harness/bench_args.py: ``at_least(low, high)`` refuses a value above ``high`` for every ``high`` given, 0 too.
* harness/code_probes.py: a probe's record pairs its output and each file's digest as [before, after] (a file
  only the edited code imports has "" before); a probe that fails is a one-line UserError even when it printed
  something first.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import torch

from harness import bench_start, code_probes
from harness.bench_args import at_least
from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.interfaces import check_task_data

# ---------------------------------------------------------------- harness/interfaces.py


@pytest.mark.parametrize("left_out", ["tokens", "length"])
def test_a_split_without_one_of_its_contract_tensors_is_refused_naming_it(left_out: str) -> None:
    tensors = {"tokens": torch.ones(2, 5, dtype=torch.long), "length": torch.full((2,), 5, dtype=torch.long),
               TARGET: torch.zeros(2, dtype=torch.long)}
    whole = TensorDictDataset(tensors)
    lacking = TensorDictDataset({k: v for k, v in tensors.items() if k != left_out})
    info = {"max_len": 5, "vocab_size": 10, "num_classes": 3}
    want = {"tokens": "int64 [max_len]", "length": "int64 []"}[left_out]
    with pytest.raises(UserError, match=rf"^task t, val split: no '{left_out}' tensor; the 'sequence' contract "
                                        rf"needs {left_out} {re.escape(want)}$"):
        check_task_data("t", "sequence", TaskData(whole, lacking, whole, info, "test"))


# ---------------------------------------------------------------- harness/bench_start.py


def test_the_reported_figures_are_medians_rounded_to_the_millisecond(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    # three runs; each run times the command, then the import floor, then the optimiser floor
    timings = iter([(1.0, 2.0), (0.5, 0.6), (0.25, 0.3),
                    (2.0001, 3.0), (0.7512, 0.8), (0.5, 0.6),
                    (9.0, 10.0), (4.5, 4.6), (0.125, 0.2)])
    monkeypatch.setattr(bench_start, "time_command", lambda command, env: next(timings))
    figures = bench_start.measure("babi", "lstm", "smoke", 3, "disabled")
    assert figures["first_step_s_each"] == [1.0, 2.0, 9.0]
    assert figures["first_step_s"] == 2.0  # the median; the mean would be 4.0
    assert figures["command_s"] == 3.0 and figures["imports_s"] == 0.751 and figures["torch_optimizer_s"] == 0.25
    assert figures["runs"] == 3 and figures["wandb"] == "disabled"


def test_the_child_environment_drops_force(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FORCE", "1")
    assert "FORCE" not in bench_start.child_environment(tmp_path, "offline")


# ---------------------------------------------------------------- harness/bench_args.py


def test_at_least_refuses_a_value_above_a_high_of_zero() -> None:
    at_most_zero = at_least(-3, 0)
    assert at_most_zero("0") == 0 and at_most_zero("-3") == -3
    with pytest.raises(argparse.ArgumentTypeError, match=r"^1 is above 0$"):
        at_most_zero("1")


# ---------------------------------------------------------------- harness/code_probes.py


def test_a_probe_record_pairs_before_and_after(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(code_probes, "run_probe_at", lambda module, base, root: {
        "output": "old", "files": {"harness/a.py": "d1"}})
    monkeypatch.setattr(code_probes, "run_probe", lambda module, root: {
        "output": "new", "files": {"harness/a.py": "d2", "harness/b.py": "d3"}})
    assert code_probes.probe_record("tasks.x.probe", "HEAD", tmp_path) == {
        "probe": "tasks.x.probe", "output": ["old", "new"],
        "files": {"harness/a.py": ["d1", "d2"], "harness/b.py": ["", "d3"]}}


def test_a_probe_that_fails_after_printing_is_a_user_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "failing_probe.py").write_text(
        "def probe():\n    print('half way')\n    raise RuntimeError('the probe broke')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    root = Path(code_probes.__file__).resolve().parents[1]
    with pytest.raises(UserError, match=r"^probe failing_probe failed in .*: RuntimeError: the probe broke$"):
        code_probes.run_probe("failing_probe", root)
