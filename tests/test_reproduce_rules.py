"""Rules of ``harness reproduce`` and its ``--unchecked`` queue (harness/reproduce.py, harness/reproduce_unchecked.py),
each against the rule as the modules' docstrings state it, on hand-made runs (no training; the one end-to-end check
replaces the training command by a stand-in that writes the new run's results.json):

* a figure is equal only bit for bit (NaN equal to NaN); a boolean in ``metrics`` is no figure;
* two machine records that name only one processor are of the same *name*, not the same kind of CPU;
* a stepwise run's threads and time cap are read from its ``stepwise`` section, not ``train``;
* a resumed run (two attempts) is trained again with the caveat that says so;
* the run trained again records the id of the stored run it checks, the log keeps each machine on its side, and a
  stored run without figures is no bit-for-bit reproduction (exit code 1);
* the run's figures that a later retest added are not compared, and the output says so;
* the queue leaves out stale runs and runs trained on a GPU, sorts a run without a wall time last (shown ``?``),
  counts the runs that fit in ``--minutes`` cumulatively, and ``Budget`` compares seconds with seconds;
* of the runs that record no CPU model, the queue leaves out (and counts) those of an image whose checks differed on
  this machine's kind and all came back bit for bit on another, and only those.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.reproduce import Figure, compare, cpu_relation, same_threads, without_cap
from harness.reproduce_kinds import tallies_by_image, trained_elsewhere
from harness.reproduce_unchecked import Budget, Candidate, Queue, queue_lines, summary, unchecked
from reports.store import RunRecord
from tests.run_records import run_record
from tests.test_report import write_run

EPYC = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1", "cpu_capability": "AVX2"}
XEON = {"processor": "Intel Xeon", "cpu_id": "GenuineIntel family 6 model 85 stepping 7", "cpu_capability": "AVX512"}


def _record(run_id: str, *, results: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
            stale: list[str] | None = None) -> RunRecord:
    """A completed supervised run that ended by its epoch limit (4 of 4 epochs, its best at the last)."""
    return run_record(run_id,
                      results={"epochs": 4, "steps": 40, "best": {"metric": "val/acc", "value": 0.5, "epoch": 4},
                               **(results or {})},
                      config=config or {"train": {"max_epochs": 4, "max_time_s": None}}, stale=stale or [])


def test_a_figure_is_equal_only_bit_for_bit_and_nan_equals_nan() -> None:
    one_ulp = math.nextafter(1.0, 2.0)  # 1 + 2.2e-16: rounding, but not bit for bit
    assert not Figure("test/loss", 1.0, one_ulp).equal
    assert not Figure("test/loss", 0.0, 1e-300).equal
    assert Figure("test/loss", math.nan, math.nan).equal  # a diverged loss that diverges again is reproduced
    assert not Figure("test/loss", math.nan, 1.0).equal and not Figure("test/loss", 1.0, math.nan).equal


def test_a_boolean_or_text_in_metrics_is_no_figure() -> None:
    figures = compare({"metrics": {"solved": True, "test/acc": 0.5, "note": "x"}},
                      {"metrics": {"solved": False, "test/acc": 0.5}})
    assert [figure.name for figure in figures] == ["test/acc"]


def test_two_records_of_one_processor_name_without_its_model_are_of_one_name_not_one_kind() -> None:
    assert cpu_relation(EPYC, EPYC) == "same"
    assert cpu_relation({"processor": "AMD EPYC"}, {"processor": "AMD EPYC"}) == "name"
    assert cpu_relation({"processor": "AMD EPYC"}, EPYC) == "name"
    assert cpu_relation(EPYC, XEON) == "other"


def test_a_stepwise_runs_threads_and_time_cap_are_its_stepwise_sections() -> None:
    counted = {"machine": {"processor": "AMD EPYC", "torch_threads": 1}}
    stepwise = _record("s", results=counted, config={"stepwise": {"threads": 2, "max_time_s": 600}})
    assert same_threads(stepwise)[1] is None  # its config names its threads: its command carries them
    assert without_cap(stepwise) == {"stepwise.max_time_s": None}
    loose = _record("t", results=counted, config={"stepwise": {"threads": None}, "train": {"threads": 4}})
    environment, threads = same_threads(loose)  # left to torch: the threads its machine counted
    assert threads == 1 and environment["OMP_NUM_THREADS"] == "1"
    assert without_cap(_record("u", config={"stepwise": {"max_time_s": None}, "train": {"max_time_s": 60}})) == {}


def test_a_resumed_run_is_trained_again_with_the_caveat_that_it_was_resumed(tmp_path: Path) -> None:
    from harness.reproduce import plan
    from reports.store import load_run

    folder = write_run(tmp_path, "babi", "lstm", 0, metrics={"test/acc": 0.5})
    results = json.loads((folder / "results.json").read_text())
    results["attempts"] = [{"machine": EPYC}, {"machine": EPYC}]  # killed once, resumed
    (folder / "results.json").write_text(json.dumps(results))
    assert "it was resumed" in plan(load_run(folder / "results.json", tmp_path)).caveat
    results["attempts"] = results["attempts"][:1]
    (folder / "results.json").write_text(json.dumps(results))
    assert "it was resumed" not in plan(load_run(folder / "results.json", tmp_path)).caveat


def _reproduce_with_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored_metrics: dict[str, float],
                             new_metrics: dict[str, float], stored_extra: dict[str, Any] | None = None,
                             record: bool = True) -> tuple[int, Path, dict[str, Any]]:
    """``reproduce_run --record`` (or without, ``record`` false) of a stored babi/lstm run trained on a Xeon, its
    training replaced by a stand-in that writes a completed run trained on an EPYC: the exit code, the reference
    store and the run trained again."""
    import harness.reproduce as reproduce

    results_dir, runs_dir = tmp_path / "results", tmp_path / "runs"
    stored = write_run(results_dir, "babi", "lstm", 0, metrics=stored_metrics)
    written = json.loads((stored / "results.json").read_text())
    (stored / "results.json").write_text(json.dumps({**written, "machine": XEON, **(stored_extra or {})}))

    def stand_in(command: list[str], environment: dict[str, str] | None) -> tuple[int, bool]:
        args = command[command.index("bench"):]
        target = Path(args[args.index("--runs-dir") + 1]) / "babi" / "lstm" / chosen[0]
        target.mkdir(parents=True)
        (target / "results.json").write_text(json.dumps(
            {"run_id": chosen[0], "status": "completed", "metrics": new_metrics, "machine": EPYC,
             "finished_at": "2026-12-01T00:00:00Z", "wall_time_s": 3.0, "git": {"commit": "c", "dirty": False},
             "code": {"files": {"tasks/babi/task.py": "0123456789abcdef"}}}))
        return 0, False  # exit code 0, no signal came

    real_plan = reproduce.plan
    chosen: list[str] = []

    def plan(run: Any) -> Any:
        made = real_plan(run)
        chosen.append(made.rebuilt.run_id)
        return made

    monkeypatch.setattr(reproduce, "plan", plan)
    monkeypatch.setattr(reproduce, "check_same_data_now", lambda *args: None)  # tested in its own file
    monkeypatch.setattr(reproduce, "train", stand_in)
    code = reproduce.reproduce_run(stored.name, runs_dir, results_dir, record=record)
    again = json.loads((runs_dir / "babi" / "lstm" / chosen[0] / "results.json").read_text())
    return code, results_dir, again


def test_the_run_trained_again_names_the_stored_run_and_the_log_keeps_each_machine_on_its_side(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stored run's config composes to another run id today (keys added since): the run trained again still
    names the stored run it checks, whose figures it is compared with."""
    from harness.reproductions import load

    code, results_dir, again = _reproduce_with_stand_in(tmp_path, monkeypatch, {"test/acc": 0.5, "test/loss": 1.0},
                                                        {"test/acc": 0.5, "test/loss": 1.25})
    assert code == 1  # one figure differs
    assert again["reproduces"] == "babi-lstm-cpu-s0-a" != again["run_id"]
    (check,) = load(results_dir)
    assert check["run_id"] == "babi-lstm-cpu-s0-a"
    assert check["stored_on"]["processor"] == "Intel Xeon" and check["now_on"]["processor"] == "AMD EPYC"
    assert check["cpu"] == "other" and (check["figures"], check["equal"]) == (2, 1)
    assert check["differing"] == {"test/loss": [1.0, 1.25]} and check["largest"]["relative"] == 0.25


def test_the_figures_a_retest_added_are_said_to_be_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    retested = {"retests": [{"splits": ["test_files"]}]}  # tested on the official files after training
    code, _, _ = _reproduce_with_stand_in(tmp_path, monkeypatch, {"test/acc": 0.5, "test_files/acc": 0.25},
                                          {"test/acc": 0.5}, retested)
    out = capsys.readouterr().out
    assert code == 0 and "every one of the 1 figures is equal, bit for bit" in out
    assert "not compared: the figures of test_files, which harness retest added after the run trained" in out


def test_a_stored_run_without_figures_is_no_bit_for_bit_reproduction(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, _ = _reproduce_with_stand_in(tmp_path, monkeypatch, {}, {"test/acc": 0.5})
    assert code == 1


def test_the_queue_leaves_out_stale_runs_and_sorts_a_run_without_a_wall_time_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [_record("fast", results={"machine": EPYC, "wall_time_s": 60.0}),
            _record("unknown", results={"machine": EPYC}),
            _record("slow", results={"machine": EPYC, "wall_time_s": 600.0}),
            _record("stale", results={"machine": EPYC, "wall_time_s": 6.0}, stale=["harness/optim.py"]),
            _record("xeon", results={"machine": XEON, "wall_time_s": 6.0}),
            _record("gpu", results={"machine": EPYC, "wall_time_s": 6.0, "device": "cuda: NVIDIA H200"})]
    monkeypatch.setattr("reports.store.load_store", lambda results_dir: runs)
    queue = unchecked(tmp_path, here=EPYC)
    assert [(candidate.run_id, candidate.minutes) for candidate in queue.runs] == [
        ("fast", 1.0), ("slow", 10.0), ("unknown", math.inf)]
    assert queue.left_out == []
    lines = queue_lines(queue, tmp_path, 12.0)
    assert lines[2].split() == ["?", "min", "unknown", "(trained", "on", "AMD", "EPYC", "(AuthenticAMD", "family",
                                "25", "model", "1", "stepping", "1,", "AVX2))"]
    assert lines[3] == "3 runs, ? minutes as they trained"  # one of unknown length: the sum is unknown too
    assert lines[4] == "2 of them fit in --minutes 12 at the pace they trained"


def test_the_runs_that_fit_are_counted_cumulatively_cheapest_first() -> None:
    """Three runs of 1 minute each: 2.5 minutes hold two of them, one after another, not all three."""
    found = [Candidate(f"r{index}", 1.0, "AMD EPYC") for index in range(3)]
    lines = queue_lines(Queue(found, []), Path("results"), 2.5)
    assert lines[-2:] == ["3 runs, 3.0 minutes as they trained",
                          "2 of them fit in --minutes 2.5 at the pace they trained"]


def test_the_budget_compares_a_runs_minutes_in_seconds_with_the_seconds_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    budget = Budget(1.0)  # 60 seconds
    assert budget.fits(Candidate("short", 0.5, "x"))
    assert not budget.fits(Candidate("long", 2.0, "x"))  # 120 seconds do not fit in 60
    assert capsys.readouterr().out.startswith("stopping before long: it took 2.0 minutes, 1.0 are left")
    assert Budget(None).fits(Candidate("any", math.inf, "x"))


def test_the_summary_tells_bit_for_bit_differing_and_untrained_runs_apart() -> None:
    outcomes = {"a": 0, "b": 1, "c": 2}
    assert summary(outcomes, 4) == ("1 of 2 runs trained again came back bit for bit; differing or not completed: b; "
                                    "not trained: c; 1 of the 4 in the queue not reached")


MODEL_1 = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1", "cpu_capability": "AVX2"}
MODEL_17 = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 17 stepping 1", "cpu_capability": "AVX512"}
FIRST_IMAGE = {"processor": "AMD EPYC", "system": "Linux-6.18.44-fc-v782-x86_64-with-glibc2.36"}
OTHER_IMAGE = {"processor": "AMD EPYC", "system": "Linux-6.18.44-fc-v657-x86_64-with-glibc2.36"}


def _check(run_id: str, stored_on: dict[str, Any], now_on: dict[str, Any], equal: int, cpu: str = "name",
           figures: int = 5) -> dict[str, Any]:
    return {"run_id": run_id, "stored_on": stored_on, "now_on": {**now_on, "system": "any"}, "cpu": cpu,
            "figures": figures, "equal": equal}


def test_an_image_whose_checks_differed_here_and_were_all_bit_for_bit_on_another_kind_trained_there() -> None:
    checks = [_check("a", FIRST_IMAGE, MODEL_1, 5), _check("b", FIRST_IMAGE, MODEL_1, 5),
              _check("c", FIRST_IMAGE, MODEL_17, 2), _check("d", FIRST_IMAGE, MODEL_17, 5)]  # one bit for bit
    tallies = tallies_by_image(checks)
    elsewhere = trained_elsewhere(FIRST_IMAGE, MODEL_17, tallies)
    assert elsewhere is not None and elsewhere.trained_on == ("AuthenticAMD family 25 model 1 stepping 1", "AVX2")
    assert (elsewhere.there.equal, elsewhere.there.checks, elsewhere.here.equal, elsewhere.here.checks) == (2, 2, 1, 2)
    assert trained_elsewhere(FIRST_IMAGE, MODEL_1, tallies) is None  # the kind it trained on
    assert trained_elsewhere(OTHER_IMAGE, MODEL_17, tallies) is None  # another image: no check tells
    unknown = {**MODEL_17, "cpu_id": "AuthenticAMD family 25 model 160 stepping 1"}
    assert trained_elsewhere(FIRST_IMAGE, unknown, tallies) is None  # no check on this kind: cannot tell


def test_no_image_is_placed_when_every_kind_saw_a_difference_or_only_bit_for_bit() -> None:
    differed_everywhere = tallies_by_image([_check("a", FIRST_IMAGE, MODEL_1, 4),
                                            _check("b", FIRST_IMAGE, MODEL_17, 2)])
    assert trained_elsewhere(FIRST_IMAGE, MODEL_17, differed_everywhere) is None
    agreeing = tallies_by_image([_check("a", FIRST_IMAGE, MODEL_1, 5), _check("b", FIRST_IMAGE, MODEL_17, 5)])
    assert trained_elsewhere(FIRST_IMAGE, MODEL_17, agreeing) is None
    no_figures = tallies_by_image([_check("a", FIRST_IMAGE, MODEL_1, 0, figures=0),
                                   _check("b", FIRST_IMAGE, MODEL_17, 2)])
    assert trained_elsewhere(FIRST_IMAGE, MODEL_17, no_figures) is None  # a check without figures is no bit for bit


def test_checks_that_compared_recorded_kinds_or_were_made_without_one_place_no_image() -> None:
    checks = [_check("a", FIRST_IMAGE, MODEL_1, 5, cpu="same"), _check("b", FIRST_IMAGE, MODEL_17, 2, cpu="other"),
              _check("c", FIRST_IMAGE, {"processor": "AMD EPYC"}, 2)]
    assert tallies_by_image(checks) == {}


def test_the_queue_leaves_out_and_counts_the_runs_of_an_image_that_trained_on_another_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = [_check("checked-1", FIRST_IMAGE, MODEL_1, 5), _check("checked-17", FIRST_IMAGE, MODEL_17, 3)]
    (tmp_path / "reproductions.json").write_text(json.dumps(checks), encoding="utf-8")
    runs = [_record("first-a", results={"machine": FIRST_IMAGE, "wall_time_s": 60.0}),
            _record("first-b", results={"machine": FIRST_IMAGE, "wall_time_s": 120.0}),
            _record("other", results={"machine": OTHER_IMAGE, "wall_time_s": 60.0}),
            _record("recorded", results={"machine": {**MODEL_17, **FIRST_IMAGE}, "wall_time_s": 60.0})]
    monkeypatch.setattr("reports.store.load_store", lambda results_dir: runs)
    queue = unchecked(tmp_path, here={**MODEL_17, "system": "Linux-6.18.44-fc-v1098-x86_64-with-glibc2.36"})
    assert [candidate.run_id for candidate in queue.runs] == ["other", "recorded"]
    assert queue.left_out == [
        "left out: 2 runs of AMD EPYC on Linux-6.18.44-fc-v782-x86_64-with-glibc2.36, which trained on AuthenticAMD "
        "family 25 model 1 stepping 1, AVX2 as the checks of its runs show (1 of 1 bit for bit there, 1 of 1 "
        "differing on this machine's kind); `harness reproduce RUN` checks one here anyway"]
    assert queue_lines(queue, tmp_path)[-1] == queue.left_out[0]
    on_model_1 = unchecked(tmp_path, here={**MODEL_1, "system": "any"})
    assert [candidate.run_id for candidate in on_model_1.runs] == ["first-a", "other", "first-b"]
    assert on_model_1.left_out == [] and queue_lines(Queue([], queue.left_out), tmp_path)[1:] == queue.left_out


def _reproduce_here(folder: Path, here: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                    capsys: pytest.CaptureFixture[str]) -> str:
    """``harness reproduce`` of a run of the first image on a machine of kind ``here`` (a stand-in training), with
    one check of that image on model 1 (bit for bit) and one on model 17 (differing) recorded: what it printed."""
    (folder / "results").mkdir(parents=True)
    checks = [_check("checked-1", FIRST_IMAGE, MODEL_1, 5), _check("checked-17", FIRST_IMAGE, MODEL_17, 3)]
    (folder / "results" / "reproductions.json").write_text(json.dumps(checks), encoding="utf-8")
    monkeypatch.setattr("harness.reproduce_kinds.this_machine", lambda: {**here, "system": "any"})
    capsys.readouterr()
    _reproduce_with_stand_in(folder, monkeypatch, {"test/acc": 0.5}, {"test/acc": 0.5}, {"machine": FIRST_IMAGE})
    return capsys.readouterr().out


def test_reproducing_one_run_of_an_image_that_trained_on_another_kind_says_so_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = _reproduce_here(tmp_path / "on 17", MODEL_17, monkeypatch, capsys)
    assert ("  the figures may differ: its machine image trained on AuthenticAMD family 25 model 1 stepping 1, AVX2 "
            "as the checks of its runs show (1 of 1 bit for bit there, 1 of 1 differing on this machine's kind)\n"
            ) in out
    assert "its machine image" not in _reproduce_here(tmp_path / "on 1", MODEL_1, monkeypatch, capsys)


def test_a_damaged_check_log_stops_only_a_check_that_would_record_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import UserError

    for folder in ("recorded", "not recorded"):
        (tmp_path / folder / "results").mkdir(parents=True)
        (tmp_path / folder / "results" / "reproductions.json").write_text("[{\"no run\": 1}]", encoding="utf-8")
    with pytest.raises(UserError, match="expected a JSON list of checks"):
        _reproduce_with_stand_in(tmp_path / "recorded", monkeypatch, {"test/acc": 0.5}, {"test/acc": 0.5})
    code, results_dir, _ = _reproduce_with_stand_in(tmp_path / "not recorded", monkeypatch, {"test/acc": 0.5},
                                                    {"test/acc": 0.5}, record=False)
    assert code == 0 and (results_dir / "reproductions.json").read_text(encoding="utf-8") == "[{\"no run\": 1}]"
