"""Rules of a reproduction check, on hand-made figures and logs (no training): a figure is equal only bit for bit
and its difference is relative to the stored value; every stored figure is compared (a missing one too), except
those a later retest added; a check counts its equal figures and names the one furthest apart; one training is
recorded once, and a check of no figures is not bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.reproduce import Figure, compare, verdict
from harness.reproductions import append, check_record, exact, recorded_already, summary

EPYC = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1", "cpu_capability": "AVX2"}


def test_a_figure_differs_relative_to_its_stored_value():
    """2.0 stored, 3.0 now: 0.5 apart relative to the stored value (not 1/3, relative to the new one)."""
    assert Figure("test/loss", 2.0, 3.0).relative == 0.5
    figures = [Figure("a", 1.0, 1.1), Figure("b", 2.0, 3.0), Figure("c", 4.0, 4.0)]
    assert verdict(figures, EPYC, EPYC).startswith("2 of the 3 figures differ, by up to 5.0e-01 relative")


def test_every_stored_figure_is_compared_a_missing_one_too_but_not_a_later_retests():
    stored = {"metrics": {"test/acc": 0.5, "test/loss": 1.0, "test_files/acc": 0.4},
              "retests": [{"splits": ["test_files"]}]}
    figures = compare(stored, {"metrics": {"test/acc": 0.5}})
    assert [(f.name, f.equal) for f in figures] == [("test/acc", True), ("test/loss", False)]
    assert figures[1].now is None


def _check(figures: list[Figure], trained_at: str | None = "2026-12-01T10:00:00Z") -> dict[str, Any]:
    now = {"wall_time_s": 30.2, "finished_at": trained_at, "git": {"commit": "abc", "dirty": False},
           "code": {"files": {"tasks/babi/task.py": "d1"}}}
    return check_record("r", "its own config", "harness bench ...", figures, EPYC, EPYC, "same", now)


def test_a_check_counts_its_equal_figures_and_names_the_one_furthest_apart():
    check = _check([Figure("a", 1.0, 1.0), Figure("b", 2.0, 3.0), Figure("c", 1.0, 1.1)])
    assert (check["figures"], check["equal"]) == (3, 1)
    assert check["largest"] == {"figure": "b", "stored": 2.0, "now": 3.0, "relative": 0.5}
    assert check["differing"] == {"b": [2.0, 3.0], "c": [1.0, 1.1]}
    assert not exact(check) and summary(check).startswith("1 of 3 figures equal (CPU: same kind; ")


def test_a_check_of_no_figures_is_not_bit_for_bit():
    check = _check([])
    assert not exact(check) and summary(check).startswith("0 of 0 figures equal")
    assert exact(_check([Figure("a", 1.0, 1.0)]))


def test_one_training_is_recorded_once_and_another_training_or_outcome_is_a_check_of_its_own(tmp_path: Path):
    first = _check([Figure("a", 1.0, 1.0)])
    append(tmp_path, first)
    assert recorded_already(tmp_path, _check([Figure("a", 1.0, 1.0)])) == first  # compared twice
    assert recorded_already(tmp_path, _check([Figure("a", 1.0, 1.0)], "2026-12-02T10:00:00Z")) is None  # again
    assert recorded_already(tmp_path, _check([Figure("a", 0.5, 1.0)])) is None  # the stored run changed since
    assert recorded_already(tmp_path, {**first, "run_id": "other"}) is None


def test_the_readmes_reproduced_counts_take_each_run_once_at_its_latest_check(tmp_path: Path):
    """Four checks of three of four stored runs: run a came back bit for bit, then differed on the same kind of CPU;
    b and c differed on another kind. One check of the four was bit for bit, the latest of none of the three runs;
    by task, 3 of 4 runs trained again, 2 differing on another kind of CPU and 1 on the same kind; by machines, the
    two checks of a are of one run, those of b and c of two."""
    import json

    from reports.reproduced import section

    for name in "abcd":
        (tmp_path / "babi" / "lstm" / name).mkdir(parents=True)
        (tmp_path / "babi" / "lstm" / name / "results.json").write_text("{}")
    xeon = {"processor": "Intel Xeon"}

    def check(run_id: str, day: int, equal: int, cpu: str, stored_on: dict[str, Any]) -> dict[str, Any]:
        return {"run_id": run_id, "checked_at": f"2026-11-2{day}T00:00:00Z", "figures": 4, "equal": equal,
                "cpu": cpu, "stored_on": stored_on, "now_on": EPYC, "budget": "its own config"}

    (tmp_path / "reproductions.json").write_text(json.dumps([
        check("a", 1, 4, "same", EPYC), check("a", 2, 3, "same", EPYC),
        check("b", 1, 2, "other", xeon), check("c", 1, 0, "other", xeon)]))
    text = "\n".join(section(tmp_path))
    assert ("(4 checks of 3 runs; 1 of the checks came back bit for bit, and the latest check of 0 of the 3 runs)"
            in text)
    assert "| babi | 4 | 3 | 0 | 2 | 0 | 1 |" in text and "| all | 4 | 3 | 0 | 2 | 0 | 1 |" in text
    assert "| same kind | 2 | 1 | 1 | 8 |" in text and "| another kind | 2 | 2 | 0 | 8 |" in text


def _stored(status: str = "completed") -> Any:
    """A supervised run the 10-minute cap stopped in epoch 3 of 10, its tested checkpoint at the end of epoch 2."""
    from tests.run_records import run_record

    return run_record(status=status,
                      results={"epochs": 3, "steps": 30, "best": {"metric": "val/acc", "value": 0.5, "epoch": 2}},
                      config={"train": {"max_time_s": 600, "max_epochs": 10}})


def test_a_capped_run_with_an_epoch_budget_is_trained_again_and_a_run_not_completed_is_refused():
    from harness.reproduce import refusal
    from reports.budgets import checkpoint_budget

    assert checkpoint_budget(_stored()) == 2 and refusal(_stored()) is None
    for status in ("diverged", "running", "failed"):
        assert refusal(_stored(status)) == f"r is {status}, not completed: there are no figures to reproduce"


def test_the_machine_of_a_resumed_run_is_its_last_attempts():
    from harness.reproduce import machine

    attempts = [{"machine": {"processor": "A"}}, {"machine": {"processor": "B"}}]
    assert machine({"attempts": attempts}) == {"processor": "B"}
    assert machine({"machine": {"processor": "C"}, "attempts": attempts}) == {"processor": "C"}
