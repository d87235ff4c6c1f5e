"""Rules of the log of reproduction checks (harness/reproductions.py), each against the module docstring's record:
a check keeps each machine's processor model (``cpu_id``), the digests of the code the run trained again under and
when that training finished; one training is recorded once, matched by ``trained_at`` where both checks record one
and else by training time and source digests, and a stored run that changed since gives a check of its own (its
differing figures are part of the outcome); the latest check of a run is the one checked last, whatever the log's
order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.reproduce import Figure
from harness.reproductions import append, check_record, latest, recorded_already

EPYC = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1", "cpu_capability": "AVX2",
        "system": "Linux-6.1", "host": "left out", "torch_threads": 2}
FILES = {"tasks/babi/task.py": "0123456789abcdef", "models/lstm.py": "fedcba9876543210"}


def _now(trained_at: str | None = "2026-12-01T10:00:00Z", files: dict[str, str] | None = None) -> dict[str, Any]:
    """The results.json of the run trained again, as check_record reads it."""
    return {"wall_time_s": 30.2, "finished_at": trained_at, "git": {"commit": "abc", "dirty": False},
            "code": {"fingerprint": "x", "files": FILES if files is None else files}}


def _check(figures: list[Figure], now: dict[str, Any]) -> dict[str, Any]:
    return check_record("r", "its own config", "harness bench ...", figures, EPYC, EPYC, "same", now)


def test_a_check_keeps_each_machines_processor_model_and_the_code_it_trained_under() -> None:
    check = _check([Figure("test/acc", 0.5, 0.5)], _now())
    kept = {key: EPYC[key] for key in ("processor", "cpu_id", "cpu_capability", "system")}
    assert check["stored_on"] == kept and check["now_on"] == kept  # host and threads are not the machine's kind
    assert check["code"] == {"commit": "abc", "dirty": False, "files": FILES}
    assert (check["training_s"], check["trained_at"]) == (30.2, "2026-12-01T10:00:00Z")


def test_a_stored_run_that_changed_since_gives_a_check_of_its_own_even_with_the_same_counts(tmp_path: Path) -> None:
    """Compared once with the stored loss at 1.0, then (the stored run trained again itself) at 0.9: one figure of
    one differs both times, but the outcome differs."""
    first = _check([Figure("test/loss", 1.0, 1.1)], _now())
    append(tmp_path, first)
    assert recorded_already(tmp_path, _check([Figure("test/loss", 1.0, 1.1)], _now())) == first
    assert recorded_already(tmp_path, _check([Figure("test/loss", 0.9, 1.1)], _now())) is None


def test_a_check_from_before_trained_at_is_matched_by_training_time_and_digests(tmp_path: Path) -> None:
    older = {**_check([Figure("a", 1.0, 1.0)], _now()), "trained_at": None}  # a check from before 1 December
    older.pop("trained_at")
    append(tmp_path, older)
    assert recorded_already(tmp_path, _check([Figure("a", 1.0, 1.0)], _now())) == older
    assert recorded_already(tmp_path, _check([Figure("a", 1.0, 1.0)], _now(files={"tasks/babi/task.py": "1" * 16}))) \
        is None  # other code: another training


def test_the_latest_check_is_the_one_checked_last_whatever_the_logs_order(tmp_path: Path) -> None:
    newer = {"run_id": "r", "checked_at": "2026-11-30T00:00:00Z", "figures": 2, "equal": 2}
    older = {"run_id": "r", "checked_at": "2026-11-29T00:00:00Z", "figures": 2, "equal": 1}
    assert latest([newer, older]) == {"r": newer}
    (tmp_path / "reproductions.json").write_text(json.dumps([newer]))
    append(tmp_path, older)  # kept oldest first within the run
    assert [check["checked_at"][:10] for check in json.loads((tmp_path / "reproductions.json").read_text())] == [
        "2026-11-29", "2026-11-30"]
