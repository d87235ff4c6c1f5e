"""The run store's rules (``harness/runs.py``, its module docstring and those of ``atomic_write``,
``remove_stale_temporaries``, ``owner_state``, ``CurveWriter``, ``curve_damage``, ``Run.set_aside``, ``Run.clear``,
``held_folder`` and ``listed_status``; docs/contributing.md), each checked against the documented rule written out
by hand on a tiny store:

* every write is atomic: a temporary file ``.NAME.XXXXXXXX.tmp`` beside the target, then a rename; a failed write
  leaves the old file and nothing else; the file gets ordinary permissions (0666 less the umask);
* a temporary file is removed from a shared folder only when no process holds its lock and it is unchanged for
  ``STALE_TEMPORARY_S`` (60) seconds: an age of exactly 60 s is stale, 59 s is not; without locks its age decides;
* a run's ``running`` record is ``alive`` while a process on this host that may own a run (its command line names
  the harness, or cannot be read) has its pid; ``gone`` once that pid is free or reused by another program; None
  for this process, another host, or a status other than ``running``;
* ``metrics.csv`` holds one row per logged step, ``step,epoch`` first; on resume rows past the restored step are
  dropped (rows at that step are kept); a damaged curve is set aside (renamed, never deleted) and restarts;
* a damaged file is set aside as ``<name>.<why>-<YYYYmmddTHHMMSS>`` and never deleted by a clear;
* a folder held by one ``flock`` is refused to a second one until the first lets go.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO

import pytest

from harness import runs
from harness.runs import (
    GONE,
    KEPT,
    STALE_TEMPORARY_S,
    CurveWriter,
    Run,
    atomic_write,
    atomic_write_text,
    curve_damage,
    held_folder,
    is_atomic_temporary,
    listed_status,
    owner_state,
    remove_stale_temporaries,
)

STAMP = r"\d{8}T\d{6}"  # Run.set_aside's time stamp, %Y%m%dT%H%M%S


# atomic_write ------------------------------------------------------------------------------------------------------


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    atomic_write_text(target, "old")

    def half_then_fail(handle: BinaryIO) -> None:
        handle.write(b"ne")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_an_atomic_write_gives_ordinary_permissions(tmp_path: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    target = tmp_path / "metrics.csv"
    atomic_write_text(target, "step,epoch\n")
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # mkstemp alone gives 0600


def test_the_temporary_file_is_named_as_the_leftover_rule_recognises(tmp_path: Path) -> None:
    seen: list[str] = []

    def write(handle: BinaryIO) -> None:
        seen.extend(p.name for p in tmp_path.iterdir())
        handle.write(b"x")

    atomic_write(tmp_path / "results.json", write)
    (name,) = seen
    assert re.fullmatch(r"\.results\.json\.[a-z0-9_]{8}\.tmp", name) and is_atomic_temporary(Path(name))


@pytest.mark.parametrize(("name", "temporary"), [
    (".results.json.ab_d1234.tmp", True),
    (".x.00000000.tmp", True),
    (".results.json.abc.tmp", False),  # three characters: not mkstemp's eight
    (".results.json.abcdefghi.tmp", False),  # nine
    ("results.json.abcd1234.tmp", False),  # not hidden
    (".results.json.ABCD1234.tmp", False),  # mkstemp's alphabet is lower case
    (".results.json.abcd1234.tmp.x", False),
    ("last.ckpt.tmp", False),
])
def test_only_atomic_writes_temporary_names_are_temporaries(name: str, temporary: bool) -> None:
    assert is_atomic_temporary(Path(name)) is temporary


# remove_stale_temporaries ------------------------------------------------------------------------------------------


def _aged(path: Path, age_s: int, now: int) -> Path:
    """A temporary file last changed ``age_s`` whole seconds before ``now``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"part")
    os.utime(path, ns=((now - age_s) * 10**9, (now - age_s) * 10**9))
    return path


def _frozen_at(monkeypatch: pytest.MonkeyPatch, now: int) -> None:
    """``harness.runs``'s clock stopped at ``now`` (seconds since the epoch)."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime.fromtimestamp(now, tz)

    monkeypatch.setattr(runs, "datetime", Frozen)


def test_a_temporary_file_is_stale_from_exactly_the_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"unchanged for ``older_than_s`` seconds": an age equal to it is stale, one second less is not."""
    now = int(time.time())
    _frozen_at(monkeypatch, now)
    at = _aged(tmp_path / ".a.npz.abcd1234.tmp", 60, now)
    under = _aged(tmp_path / ".b.npz.abcd1234.tmp", 59, now)
    assert remove_stale_temporaries(tmp_path, older_than_s=60) == [at]
    assert not at.exists() and under.exists()


def test_the_default_staleness_is_sixty_seconds_in_any_subfolder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    now = int(time.time())
    _frozen_at(monkeypatch, now)
    assert STALE_TEMPORARY_S == 60
    old = _aged(tmp_path / "relations_game" / "deep" / ".train.npz.abcd1234.tmp", 61, now)
    young = _aged(tmp_path / "relations_game" / ".val.npz.abcd1234.tmp", 59, now)
    data = _aged(tmp_path / "relations_game" / "train.npz", 3600, now)  # data, not a temporary file
    assert remove_stale_temporaries(tmp_path) == [old]
    assert young.exists() and data.exists()


def test_without_locks_the_age_alone_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system without locks (flock raises an OSError other than BlockingIOError): a file old enough is
    removed, a young one kept."""
    import fcntl

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "no locks")

    monkeypatch.setattr(runs, "fcntl", SimpleNamespace(flock=no_locks, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB))
    now = int(time.time())
    _frozen_at(monkeypatch, now)
    old = _aged(tmp_path / ".a.npz.abcd1234.tmp", 120, now)
    young = _aged(tmp_path / ".b.npz.abcd1234.tmp", 10, now)
    assert remove_stale_temporaries(tmp_path) == [old]
    assert young.exists()
    with held_folder(tmp_path) as free:  # the folder's lock too: used as if free
        assert free


# owner_state / listed_status ---------------------------------------------------------------------------------------

FREE_PID = 2**22 + 12345  # above Linux's largest pid: no process has it


def _record(pid: Any, status: str = "running", host: str | None = None) -> dict[str, Any]:
    return {"run_id": "r", "task": "t", "model": "m", "status": status,
            "owner": {"host": socket.gethostname() if host is None else host, "pid": pid}}


@pytest.fixture
def processes() -> Iterator[dict[str, int]]:
    """Two live processes: one whose command line names the harness (a run's), one that does not (a pid reused)."""
    harness = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "harness.cli"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.time() + 10
        while time.time() < deadline and b"harness" not in Path(f"/proc/{harness.pid}/cmdline").read_bytes():
            time.sleep(0.01)  # the child's command line is its own once it has exec'd
        yield {"harness": harness.pid, "other": other.pid}
    finally:
        for process in (harness, other):
            process.kill()
            process.wait()


def test_owner_state_by_the_documented_rule(processes: dict[str, int]) -> None:
    assert owner_state(_record(processes["harness"])) == "alive"
    assert owner_state(_record(processes["other"])) == "gone"  # its pid now runs another program
    assert owner_state(_record(FREE_PID)) == "gone"
    assert owner_state(_record(os.getpid())) is None  # this process
    assert owner_state(_record(FREE_PID, host=socket.gethostname() + "-elsewhere")) is None  # cannot be checked
    assert owner_state(_record(processes["harness"], host=socket.gethostname() + "-elsewhere")) is None
    for status in ("completed", "interrupted", "failed", "diverged"):
        assert owner_state(_record(processes["harness"], status=status)) is None
    assert owner_state(_record(True)) is None and owner_state(_record(str(processes["harness"]))) is None
    assert owner_state({"status": "running"}) is None


def test_a_process_of_another_user_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.kill(pid, 0)`` refused (PermissionError): a process has that pid, whose command line may be a run's."""
    asked: list[int] = []

    def refused(pid: int, signal: int) -> None:
        asked.append(pid)
        raise PermissionError

    monkeypatch.setattr(runs.os, "kill", refused)
    assert owner_state(_record(FREE_PID)) == "alive" and asked == [FREE_PID]


def test_a_live_pid_whose_command_line_cannot_be_read_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(runs.os, "kill", lambda pid, signal: asked.append(pid))  # a process has the pid
    assert owner_state(_record(FREE_PID)) == "alive" and asked == [FREE_PID]  # /proc/FREE_PID/cmdline: unreadable


def test_listed_status_marks_only_a_gone_owner(processes: dict[str, int]) -> None:
    assert listed_status(_record(FREE_PID)) == GONE
    assert listed_status(_record(processes["other"])) == GONE
    assert listed_status(_record(processes["harness"])) == "running"
    assert listed_status(_record(os.getpid())) == "running"
    assert listed_status(_record(FREE_PID, host="elsewhere.example")) == "running"
    assert listed_status(_record(FREE_PID, status="completed")) == "completed"


def test_owner_alive_reads_the_runs_record(tmp_path: Path, processes: dict[str, int]) -> None:
    run = Run(tmp_path / "r")
    run.write_results(_record(processes["harness"]))
    assert run.owner_alive()
    run.write_results(_record(processes["other"]))
    assert not run.owner_alive()


# CurveWriter / curve_damage ----------------------------------------------------------------------------------------


def test_curves_are_written_key_columns_first_in_order_of_appearance(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    curve = CurveWriter(path)
    curve.append(5, 0, {"train/loss": 2.5})
    curve.append(10, 1, {"val/acc": 0.25, "train/loss": 1.5})
    curve.flush()
    assert path.read_text() == "step,epoch,train/loss,val/acc\n5,0,2.5,\n10,1,1.5,0.25\n"
    assert CurveWriter(path).rows == [{"step": 5, "epoch": 0, "train/loss": 2.5},
                                      {"step": 10, "epoch": 1, "train/loss": 1.5, "val/acc": 0.25}]
    assert all(type(row["step"]) is int and type(row["epoch"]) is int for row in CurveWriter(path).rows)


def test_a_resume_keeps_the_rows_of_its_step_and_drops_the_later_ones(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    curve = CurveWriter(path)
    for step, epoch, values in [(4, 0, {"train/loss": 3.0}), (8, 0, {"train/loss": 2.0}), (8, 0, {"val/acc": 0.5}),
                                (12, 1, {"train/loss": 1.0}), (16, 1, {"val/acc": 0.75})]:
        curve.append(step, epoch, values)
    curve.flush()
    CurveWriter(path).truncate_after(8)  # rewrites the file
    assert [(row["step"], sorted(row)) for row in CurveWriter(path).rows] == [
        (4, ["epoch", "step", "train/loss"]), (8, ["epoch", "step", "train/loss"]), (8, ["epoch", "step", "val/acc"])]


def test_a_damaged_curve_is_set_aside_never_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metrics.csv"
    cut = "step,epoch,train/loss\n1,0,2.0\n2,0,1."  # a write cut short
    path.write_text(cut)
    curve = CurveWriter(path)
    assert curve.rows == [] and not path.exists()
    (aside,) = tmp_path.iterdir()
    assert re.fullmatch(rf"metrics\.csv\.damaged-{STAMP}", aside.name) and KEPT in aside.name
    assert aside.read_text() == cut
    assert "the curve restarts" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "damage"), [
    ("", None),
    ("step,epoch,train/loss\n1,0,2.0\n", None),
    ("step,epoch,train/loss\n1,0,2.0\n2,0,1.", "it ends in the middle of line 3 (cut short)"),
    ("step,epoch,train/loss\n1,0\n", "line 2 has 2 fields, the header 3"),
    ("step,epoch,train/loss\n1,0,2.0,7\n", "line 2 has 4 fields, the header 3"),
    ("epoch,step,train/loss\n0,1,2.0\n", "its header does not start with step,epoch"),
    ("step,epoch,train/loss\n1,0,abc\n", "it does not parse (ValueError)"),
    ("step,epoch,train/loss\n1.5,0,2.0\n", "it does not parse (ValueError)"),  # a step is a whole number
])
def test_curve_damage_by_the_documented_rule(tmp_path: Path, text: str, damage: str | None) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(text)
    assert curve_damage(path) == damage
    assert curve_damage(tmp_path / "none.csv") is None


# Run: damage, set_aside, clear, leftovers --------------------------------------------------------------------------


def test_set_aside_renames_beside_the_file_and_keeps_its_bytes(tmp_path: Path) -> None:
    run = Run(tmp_path / "r")
    (run.path / "checkpoints").mkdir(parents=True)
    run.best_checkpoint.write_bytes(b"weights")
    aside = run.set_aside(run.best_checkpoint)
    assert aside.parent == run.checkpoint_dir and re.fullmatch(rf"best\.ckpt\.damaged-{STAMP}", aside.name)
    assert aside.read_bytes() == b"weights" and not run.best_checkpoint.exists() and KEPT in aside.name
    run.last_checkpoint.write_bytes(b"intact")
    unused = run.set_aside(run.last_checkpoint, "unused")
    assert re.fullmatch(rf"last\.ckpt\.unused-{STAMP}", unused.name) and unused.read_bytes() == b"intact"


def test_clear_deletes_all_but_the_files_set_aside_as_damaged(tmp_path: Path) -> None:
    run = Run(tmp_path / "r")
    (run.path / "checkpoints").mkdir(parents=True)
    run.write_results(_record(1, status="failed"))
    run.metrics_path.write_text("step,epoch\n")
    run.last_checkpoint.write_bytes(b"weights")
    damaged = run.set_aside(run.last_checkpoint)  # could not be read
    run.best_checkpoint.write_bytes(b"best")
    unused = run.set_aside(run.best_checkpoint, "unused")
    kept = run.clear()
    assert kept == [damaged] and damaged.read_bytes() == b"weights"
    assert sorted(str(p.relative_to(run.path)) for p in run.path.rglob("*")) == [
        "checkpoints", str(damaged.relative_to(run.path))]
    assert not unused.exists()


def test_damage_names_what_makes_a_record_unusable(tmp_path: Path) -> None:
    run = Run(tmp_path / "r")
    run.path.mkdir()
    run.results_path.write_text('{"status": "running"')
    assert run.damage().startswith("results.json is not readable JSON (JSONDecodeError")
    run.results_path.write_text("[1]")
    assert run.damage() == "results.json holds a list, not an object"
    run.results_path.write_text('{"run_id": "r", "status": "running"}')
    assert run.damage() == "results.json lacks task, model"
    run.write_results(_record(1, status="paused"))
    assert run.damage() == "results.json has an unknown status 'paused'" and run.status is None
    for status in runs.STATUSES:
        run.write_results(_record(1, status=status))
        assert run.damage() is None and run.status == status


def test_a_runs_leftover_temporaries_are_removed_but_not_wandbs_or_other_files(tmp_path: Path) -> None:
    run = Run(tmp_path / "r")
    for folder in ("checkpoints", "wandb/offline-run-1"):
        (run.path / folder).mkdir(parents=True)
    leftovers = [run.path / ".results.json.abcd1234.tmp", run.path / "checkpoints" / ".last.ckpt.k_9x0a1b.tmp"]
    kept = [run.path / "wandb" / "offline-run-1" / ".run.wandb.abcd1234.tmp", run.path / ".hidden",
            run.path / "metrics.csv.damaged-20260101T000000", run.path / ".notes.txt.abc.tmp"]
    for path in leftovers + kept:
        path.write_bytes(b"x")
    assert sorted(run.remove_leftover_temporaries()) == sorted(leftovers)
    assert not any(path.exists() for path in leftovers) and all(path.exists() for path in kept)


# held_folder -------------------------------------------------------------------------------------------------------


def test_a_held_folder_is_refused_to_a_second_holder_until_it_is_let_go(tmp_path: Path) -> None:
    with held_folder(tmp_path) as first:
        with held_folder(tmp_path) as second:  # another open descriptor: as another process would take it
            assert first and not second
    with held_folder(tmp_path) as again:
        assert again


def test_two_files_set_aside_within_one_second_are_both_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Run.set_aside`` names a file by the time to the second: a second file of that name set aside within the
    same second gets its own name (``-2``) instead of replacing the first (nothing is deleted)."""
    import harness.runs as runs_module
    from harness.runs import Run

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)

    monkeypatch.setattr(runs_module, "datetime", Frozen)
    run = Run(tmp_path / "run")
    run.path.mkdir()
    kept = []
    for text in ("first\n", "second\n", "third\n"):
        (run.path / "results.json").write_text(text)
        kept.append(run.set_aside(run.path / "results.json"))
    stamp = "results.json.damaged-20260102T030405"
    assert [p.name for p in kept] == [stamp, f"{stamp}-2", f"{stamp}-3"]
    assert [p.read_text() for p in kept] == ["first\n", "second\n", "third\n"]
