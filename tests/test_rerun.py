"""Planning reruns: `harness runs --imports FILE` (the runs a change would make stale) and `harness runs --stale`
(what changed, and the command that composes each stale run again, checked against the run's id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.cli import main
from harness.config import compose, run_id, save
from harness.provenance import source_digest
from harness.rerun import reproduce

OVERRIDES = ["task.babi_id=2", "optim.lr=0.003", "tracking.tags=[sweep-x]"]


def _stored_run(store: Path, optim_digest: str, overrides: list[str] = OVERRIDES) -> Path:
    """A completed babi/tpr_rnn run in ``store`` whose record says it imported harness/optim.py (with that digest)."""
    cfg = compose("babi", "tpr_rnn", "smoke", ["seed=1", *overrides]).cfg
    OmegaConf.set_struct(cfg, False)
    cfg.data.fingerprint = "abc123"
    cfg.task.source = "generator"  # resolved by the run from "auto" (the data it found): kept as an override
    identity = run_id(cfg)
    folder = store / "babi" / "tpr_rnn" / identity
    folder.mkdir(parents=True)
    save(cfg, folder / "config.yaml")
    (folder / "results.json").write_text(json.dumps({
        "run_id": identity, "task": "babi", "model": "tpr_rnn", "profile": "smoke", "seed": 1, "status": "completed",
        "wall_time_s": 90.0, "metrics": {"test/acc": 0.5},
        "code": {"files": {"harness/optim.py": optim_digest}}}))
    return folder


def test_the_command_composes_the_stored_config_again(tmp_path: Path) -> None:
    folder = _stored_run(tmp_path, "0" * 16)
    command, note = reproduce(folder)
    assert note == ""  # the command gives the run's own id
    assert command == ("harness bench --task babi --model tpr_rnn --profile smoke --seed 1 -- optim.lr=0.003 "
                       "task.babi_id=2 task.source=generator 'tracking.tags=[\"sweep-x\"]'")


def test_stale_runs_are_listed_with_what_changed_and_how_to_rerun(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from harness import PROJECT_ROOT

    _stored_run(tmp_path, "0" * 16)  # optim.py changed since (another digest): stale
    _stored_run(tmp_path, source_digest(PROJECT_ROOT / "harness" / "optim.py"), ["task.babi_id=3"])  # current
    assert main(["runs", "--runs-dir", str(tmp_path), "--stale"]) == 0
    out = capsys.readouterr().out
    assert out.count("completed, stale") == 1 and "babi_id=3" not in out
    assert "changed: harness/optim.py" in out and "harness bench --task babi --model tpr_rnn" in out

    assert main(["runs", "--runs-dir", str(tmp_path), "--imports", "harness/optim.py"]) == 0
    assert "2 of 2 runs imported harness/optim.py (0.1 h of wall time in all)" in capsys.readouterr().out
    assert main(["runs", "--runs-dir", str(tmp_path), "--imports", "harness/data.py"]) == 0
    assert "none of the 2 runs imported harness/data.py" in capsys.readouterr().out


def test_a_file_that_computes_nothing_is_answered_not_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--runs-dir", str(tmp_path), "--imports", "harness/cli.py"]) == 0
    out, err = capsys.readouterr()
    assert "harness/cli.py computes nothing a run reports" in out and "no run stale" in out and err == ""


@pytest.mark.parametrize(("given", "message"), [
    ("harness/no_such_file.py", "harness/no_such_file.py: no such file"),
    ("README.md", "README.md is not a Python source file"),
    ("/etc/hostname", "is not inside the project"),
])
def test_a_file_that_cannot_make_runs_stale_is_a_one_line_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  given: str, message: str) -> None:
    assert main(["runs", "--runs-dir", str(tmp_path), "--imports", given]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
