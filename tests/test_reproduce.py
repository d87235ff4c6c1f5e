"""``harness reproduce``: a stored supervised run trained again (one the time cap stopped, for the epochs up to its
tested checkpoint, or the steps up to it where it came part way through an epoch, without the cap), or a stepwise
one (a capped one for the cycles it trained), and every figure compared; the runs it cannot reproduce so, refused in
one line. The runs here train at the smoke profile on generated bAbI data and generated Game of Life worlds
(seconds)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.reproduce import Figure, compare, verdict
from reports.build import main as build_report
from tests.conftest import only_run
from tests.test_report import write_rl_run, write_run


def _edit(path: Path, name: str, change: Any) -> None:
    text = (path / name).read_text()
    data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    change(data)
    (path / name).write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))


@pytest.fixture
def stored(env: dict[str, str], tmp_path: Path) -> Path:
    """A completed smoke run of the LSTM on generated bAbI (2 epochs), moved into a reference store of its own."""
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator"]) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    reference = tmp_path / "results" / "babi" / "lstm" / run.name
    shutil.move(run, reference)
    return reference


@pytest.mark.slow
def test_a_run_trained_again_gives_every_figure_bit_for_bit_and_a_changed_figure_is_found(
        stored: Path, env: dict[str, str], capfd: pytest.CaptureFixture[str]) -> None:
    again = ["reproduce", stored.name, "--results-dir", str(stored.parents[2])]
    assert main(again) == 0
    out = capfd.readouterr().out
    assert "ended by its own rule (its epoch limit): training the same config" in out  # the smoke profile's 2 epochs
    figures = json.loads((stored / "results.json").read_text())["metrics"]
    assert f"every one of the {len(figures)} figures is equal, bit for bit" in out
    again_path = Path(env["HARNESS_RUNS_DIR"]) / "babi" / "lstm" / stored.name  # same run id
    assert json.loads((again_path / "results.json").read_text())["reproduces"] == stored.name
    capfd.readouterr()
    assert main(["runs"]) == 0
    assert f"completed, a reproduce check of {stored.name}" in capfd.readouterr().out
    site = Path(env["HARNESS_RUNS_DIR"]).parent / "site"  # listed as a check, left out of the comparisons
    assert build_report(["--runs-dir", env["HARNESS_RUNS_DIR"], "--results-dir", str(stored.parents[2]),
                         "--out", str(site)]) == 0
    assert f"(a reproduce check of {stored.name})" in (site / "index.html").read_text()
    pages = [page.read_text() for page in (site / "runs").glob("*.html")]
    assert sum("<th>a reproduce check</th>" in page for page in pages) == 1

    _edit(stored, "results.json", lambda results: results["metrics"].update({"test/acc": 0.123}))
    assert main(again) == 1  # trained already: compared, not trained again
    out = capfd.readouterr().out
    assert "is trained already in" in out and "nothing is trained now" in out
    assert f"1 of the {len(figures)} figures differ" in out
    assert "the same kind of CPU: a difference here is not rounding" in out

    assert main(["reproduce", str(Path(env["HARNESS_RUNS_DIR"]) / "babi" / "lstm" / stored.name)]) == 2  # itself
    err = capfd.readouterr().err
    assert "is itself in" in err and " --seed 0 --force -- " in err  # --force before the overrides: a command that runs

    # the user's own run, named by its id as `harness runs` lists it, trained again into another store
    elsewhere = Path(env["HARNESS_RUNS_DIR"]).parent / "elsewhere"
    assert main(["reproduce", stored.name, "--results-dir", "", "--runs-dir", str(elsewhere)]) == 0
    assert "every one of the" in capfd.readouterr().out and (elsewhere / "babi" / "lstm" / stored.name).is_dir()


@pytest.mark.slow
def test_a_recorded_check_is_kept_in_the_reference_store_and_shown_in_the_readme_table(
        stored: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from harness.reproductions import load
    from reports.reproduced import section

    results = stored.parents[2]
    assert section(results) == []  # no check stored: no table
    assert main(["reproduce", stored.name, "--results-dir", str(results), "--record"]) == 0
    assert main(["reproduce", stored.name, "--results-dir", str(results), "--record"]) == 0  # compared, not trained
    out = capfd.readouterr().out
    assert "this training of the run is recorded already" in out and len(load(results)) == 1
    trained = json.loads((Path(os.environ["HARNESS_RUNS_DIR"]) / "babi" / "lstm" / stored.name / "results.json")
                         .read_text())
    assert load(results)[0]["trained_at"] == trained["finished_at"]
    assert load(results)[0]["code"]["commit"] == trained["git"]["commit"]
    _edit(stored, "results.json", lambda stored_results: stored_results["metrics"].update({"test/acc": 0.123}))
    assert main(["reproduce", stored.name, "--results-dir", str(results), "--record"]) == 1  # compared again
    checks = load(results)
    assert [check["equal"] == check["figures"] for check in checks] == [True, False]
    assert checks[1]["differing"] == {"test/acc": [0.123, checks[1]["largest"]["now"]]}
    assert checks[0]["budget"] == "its own config" and checks[0]["cpu"] == "same"
    text = "\n".join(section(results))
    assert "2 checks of 1 runs; 1 of the checks came back bit for bit, and the latest check of 0 of the 1 runs" in text
    assert f"| `{stored.name}` |" in text
    assert "`test/acc`: 0.123 → " in text and "| same kind | its own config |" in text
    assert text.count("; kernel ") == 4  # each check's two machines with their systems' kernels
    runs = len(list(results.glob("*/*/*/results.json")))
    task = stored.parents[1].name
    # by task, each run once at its latest check: the second, which differs on the same kind of CPU
    assert f"| {task} | {runs} | 1 | 0 | 0 | 0 | 1 |" in text and f"| all | {runs} | 1 | 0 | 0 | 0 | 1 |" in text

    (results / "reproductions.json").write_text("[{\"no run\": 1}]")  # damaged: refused, left as it is
    capfd.readouterr()
    assert main(["reproduce", stored.name, "--results-dir", str(results), "--record"]) == 2
    assert "reproductions.json: expected a JSON list of checks" in capfd.readouterr().err
    assert (results / "reproductions.json").read_text() == "[{\"no run\": 1}]"
    assert main(["reproduce", str(stored), "--results-dir", "", "--record"]) == 2
    assert "--record adds the check to the reference store's log" in capfd.readouterr().err


@pytest.mark.slow
def test_a_capped_run_trains_the_epochs_up_to_its_tested_checkpoint_without_the_cap(
        stored: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The stored run made to read as capped (200 epochs and a cap, 2 trained, no other rule): its tested checkpoint
    closed a whole epoch, so the same config trained that far without the cap gives the same figures."""
    best = json.loads((stored / "results.json").read_text())["best"]["epoch"]
    _edit(stored, "config.yaml", lambda config: config["train"].update(
        {"max_epochs": 200, "max_time_s": 600, "early_stop_patience": None, "stop_at": None}))
    assert main(["reproduce", stored.name, "--results-dir", str(stored.parents[2])]) == 0
    out = capfd.readouterr().out
    assert f"stopped by its 10-minute cap, its tested checkpoint at the end of epoch {best}" in out
    assert f"train.max_epochs={best}" in out and "max_time_s=600" not in out  # the smoke profile's: no cap
    assert "bit for bit" in out


@pytest.mark.slow
def test_a_capped_run_whose_tested_checkpoint_came_part_way_through_an_epoch_trains_its_steps_without_the_cap(
        env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A run stopped after step 6 of its 4-step epochs (``train.max_steps``, validating there as the cap does) and
    made to read as capped (a cap, 200 epochs, its best the cut-short epoch's validation): the epochs reach no
    tested checkpoint, so the same config is trained for those 6 steps without the cap, validates at step 6 again
    and gives the same figures."""
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator",
                 "train.max_steps=6"]) == 0
    assert "train.max_steps=6 reached: validating there, then stopping" in capfd.readouterr().out
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    with (run / "metrics.csv").open() as rows:
        validated = [int(row["step"]) for row in csv.DictReader(rows) if row["val/acc"]]
    assert validated == [4, 6] and json.loads((run / "results.json").read_text())["steps"] == 6
    stored = tmp_path / "results" / "babi" / "lstm" / run.name
    shutil.move(run, stored)
    _edit(stored, "config.yaml", lambda config: config["train"].update(
        {"max_epochs": 200, "max_time_s": 600, "max_steps": None, "early_stop_patience": None, "stop_at": None}))
    _edit(stored, "results.json", lambda results: results["best"].update({"epoch": 2, "step": 6}))
    assert main(["reproduce", stored.name, "--results-dir", str(stored.parents[2])]) == 0
    out = capfd.readouterr().out
    assert "stopped by its 10-minute cap after step 6, where it validated last: training those steps" in out
    assert "train.max_steps=6" in out and "max_time_s=600" not in out and "bit for bit" in out


@pytest.mark.slow
def test_a_run_that_ended_by_its_own_rule_is_trained_again_without_its_time_cap(
        stored: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Its cap did not stop it where it trained, but on a slower machine it would stop the same config sooner: the
    run is trained again without it, and stops where its own rule (here its epoch limit) stopped it."""
    _edit(stored, "config.yaml", lambda config: config["train"].update({"max_time_s": 600}))
    assert main(["reproduce", stored.name, "--results-dir", str(stored.parents[2])]) == 0
    out = capfd.readouterr().out
    assert "(its epoch limit): training the same config without its time cap" in out
    assert "max_time_s=600" not in out and "bit for bit" in out  # the smoke profile's own default: no cap


def test_runs_it_cannot_reproduce_so_are_refused_in_one_line(tmp_path: Path, env: dict[str, str],
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    write_rl_run(results, "boxworld", "relational", 0, eval_win=0.5)
    write_run(results, "babi", "lstm", 1, status="failed", error="boom")
    capped = write_run(results, "babi", "lstm", 2, metrics={"test/acc": 0.9})  # validated at steps 20 and 40
    _edit(capped, "config.yaml", lambda config: config["train"].update({"max_epochs": 20, "max_time_s": 600}))
    _edit(capped, "results.json", lambda results: results.update(
        {"steps": 30, "best": {"metric": "val/acc", "value": 0.9, "step": 30, "epoch": 2}}))
    for run_id, reason in (("boxworld-relational-cpu-s0-r", "is an RL run: reproduce trains supervised single runs "
                                                            "and stepwise runs"),
                           ("babi-lstm-cpu-s1-a", "is failed, not completed"),
                           ("babi-lstm-cpu-s2-a", "its curves show no validation at the step where the cap "
                                                  "stopped it"),
                           ("babi-lstm-cpu-s9-z", "no run 'babi-lstm-cpu-s9-z'")):
        assert main(["reproduce", run_id, "--results-dir", str(results)]) == 2, run_id
        err = capfd.readouterr().err
        assert reason in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_the_figures_a_later_retest_added_are_left_out_and_said_so(
        stored: Path, env: dict[str, str], capfd: pytest.CaptureFixture[str]) -> None:
    """A retest adds a split's figures after training; training the run again does not retest it, so those figures
    are not "missing" differences (a run retested once failed every check)."""
    def retested(results: dict[str, Any]) -> None:
        results["metrics"].update({"test_files/acc": 0.5, "test_files/loss": 1.5, "test_files/error": 0.5})
        results["retests"] = [{"overrides": ["task.test_on=[files]"], "splits": ["test_files"]}]

    _edit(stored, "results.json", retested)
    trained = len(json.loads((stored / "results.json").read_text())["metrics"]) - 3
    assert main(["reproduce", stored.name, "--results-dir", str(stored.parents[2])]) == 0
    out = capfd.readouterr().out
    assert f"every one of the {trained} figures is equal, bit for bit" in out and "test_files/" not in out.split(
        "not compared")[0]
    assert ("not compared: the figures of test_files, which harness retest added after the run trained (retest the "
            "run trained again to compare them)") in out


def test_the_verdict_says_how_the_figures_compare_and_whether_the_cpus_were_of_one_kind() -> None:
    """The same kind of CPU is the same family, model and vector kernels where both runs record them: a virtual
    machine may name several generations of a processor alike ("AMD EPYC"), so a name alone cannot tell rounding
    from a real difference."""
    same = compare({"metrics": {"test/acc": 0.5, "val/acc": 0.25, "note": "x"}},
                   {"metrics": {"test/acc": 0.5, "val/acc": 0.25}})
    assert [figure.name for figure in same] == ["test/acc", "val/acc"] and all(f.equal for f in same)
    epyc = {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1", "cpu_capability": "AVX2"}
    assert verdict(same, epyc, epyc) == ("every one of the 2 figures is equal, bit for bit (trained on AMD EPYC "
                                         "(AuthenticAMD family 25 model 1 stepping 1, AVX2), again on AMD EPYC "
                                         "(AuthenticAMD family 25 model 1 stepping 1, AVX2))")
    apart = [Figure("test/loss", 1.0, 1.0 + 1e-7), Figure("test/acc", 0.5, 0.5)]
    assert verdict(apart, epyc, epyc).endswith("; the same kind of CPU: a difference here is not rounding)")
    assert verdict(apart, {"processor": "Intel(R) Xeon(R) Processor"}, epyc).startswith(
        "1 of the 2 figures differ, by up to 1.0e-07 relative (trained on Intel(R) Xeon(R) Processor, again on")
    assert verdict(apart, {"processor": "Intel(R) Xeon(R) Processor"}, epyc).endswith(
        "; another kind of CPU, whose arithmetic rounds differently)")
    assert verdict(apart, {**epyc, "cpu_id": "AuthenticAMD family 23 model 49 stepping 0"}, epyc).endswith(
        "another kind of CPU, whose arithmetic rounds differently)")
    assert "records no CPU model" in verdict(apart, {"processor": "AMD EPYC"}, epyc)  # a run of older versions
    assert not Figure("test/acc", 0.5, None).equal


def test_a_run_that_left_its_threads_to_torch_is_trained_again_with_the_threads_it_counted(tmp_path: Path) -> None:
    """The thread count decides how kernels split their sums: a sweep trial that left ``train.threads`` to torch
    trained with Ray's OMP_NUM_THREADS, and is trained again so; a config that names its threads says it itself."""
    from harness.reproduce import same_threads
    from reports.store import load_run

    def stored(folder: Path, results: dict[str, Any]) -> Any:
        run = load_run(folder / "results.json", tmp_path)
        run.results = results
        return run

    run = write_run(tmp_path, "babi", "lstm", 0, metrics={"test/acc": 0.9})
    results = {"attempts": [{"machine": {"processor": "AMD EPYC", "torch_threads": 1}}]}
    environment, threads = same_threads(stored(run, results))
    assert threads == 1 and environment["OMP_NUM_THREADS"] == "1"
    _edit(run, "config.yaml", lambda config: config["train"].update({"threads": 2}))
    assert same_threads(stored(run, results))[1] is None
    assert same_threads(stored(write_run(tmp_path, "babi", "lstm", 1), {}))[1] is None  # no count recorded: as it is


@pytest.mark.slow
def test_a_stepwise_run_is_trained_again_and_a_capped_one_for_the_cycles_it_trained(
        env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A Game of Life smoke run (the Updater-Extractor, 6 cycles, a 30-step rollout) ends by its iteration limit and
    comes back bit for bit by its own config; capped after its first cycles, it comes back by those cycles without
    the cap, every figure (validation, test, rollout) equal."""
    from reports.budgets import cycle_budget
    from reports.stops import run_stop
    from reports.store import load_run

    runs, results = Path(env["HARNESS_RUNS_DIR"]), tmp_path / "results"
    assert main(["bench", "--task", "game_of_life", "--model", "updater_extractor", "--profile", "smoke"]) == 0
    plain = only_run(runs)
    shutil.move(plain, results / "game_of_life" / "updater_extractor" / plain.name)
    assert main(["bench", "--task", "game_of_life", "--model", "updater_extractor", "--profile", "smoke",
                 "stepwise.max_time_s=0.01", "stepwise.eval_every=2"]) == 0  # the cap stops it after its first cycle
    capped = only_run(runs)
    shutil.move(capped, results / "game_of_life" / "updater_extractor" / capped.name)
    capfd.readouterr()
    record = load_run(results / "game_of_life" / "updater_extractor" / capped.name / "results.json", results)
    assert run_stop(record).kind == "cap" and cycle_budget(record) == record.results["steps"] == 1

    assert main(["reproduce", plain.name, "--results-dir", str(results)]) == 0
    out = capfd.readouterr().out
    assert "ended by its own rule (its iteration limit): training the same config" in out
    assert "rollout/step_30/acc" in out and "bit for bit" in out
    assert main(["reproduce", capped.name, "--results-dir", str(results)]) == 0
    out = capfd.readouterr().out
    assert "cap after 1 outer cycle: training that cycle without the cap" in out
    assert "stepwise.iterations=1" in out and "bit for bit" in out


@pytest.mark.slow
def test_a_member_of_a_stack_is_trained_again_with_its_stack(env: dict[str, str], tmp_path: Path,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    """A stacked run's members train as one computation, so its command trains the whole stack again (``--seeds``),
    and the member asked for comes back bit for bit."""
    runs, results = Path(env["HARNESS_RUNS_DIR"]), tmp_path / "results"
    assert main(["bench", "--task", "relations_game", "--model", "predinet", "--profile", "smoke", "--seeds",
                 "0,1"]) == 0
    (results / "relations_game").mkdir(parents=True)
    shutil.move(runs / "relations_game" / "predinet", results / "relations_game" / "predinet")
    member = sorted((results / "relations_game" / "predinet").iterdir())[1]
    capfd.readouterr()
    assert main(["reproduce", member.name, "--results-dir", str(results)]) == 0
    out = capfd.readouterr().out
    assert "--seeds 0,1" in out and "stack of 2 runs" in out and "bit for bit" in out
    assert len(list((runs / "relations_game" / "predinet").iterdir())) == 2  # both members trained again


def test_checks_recorded_at_the_same_time_are_all_kept(tmp_path: Path) -> None:
    """Reproductions run side by side record their checks into one log: each append holds a lock on the store's
    folder from reading the log to writing it (without it, most of these appends are lost to one another)."""
    import threading

    from harness.reproductions import append, load

    def record(name: str) -> None:
        for index in range(25):
            append(tmp_path, {"run_id": f"{name}-{index}", "checked_at": "2026-11-30T00:00:00Z", "pad": "x" * 2000})

    threads = [threading.Thread(target=record, args=(name,)) for name in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(load(tmp_path)) == 100
    assert append(tmp_path / "new", {"run_id": "e", "checked_at": "x"}).is_file()  # a store not made yet is made


@pytest.mark.slow
def test_the_unchecked_queue_holds_the_runs_of_this_machines_cpu_kind_not_checked_yet_cheapest_first(
        stored: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A run trained here qualifies, and one whose record names only this machine's processor (recorded before the
    CPU model was); one from another kind of CPU, one trained on a GPU and one without a machine record do not."""
    results = stored.parents[2]
    here, wall = (json.loads((stored / "results.json").read_text())[key] for key in ("machine", "wall_time_s"))
    hosts = {3: {"processor": "AMD EPYC", "cpu_id": "AuthenticAMD family 25 model 1 stepping 1",
                 "cpu_capability": "AVX2"}, 4: here, 5: {"processor": here["processor"]}, 6: None}
    for seed, host in hosts.items():
        run = write_run(results, "babi", "lstm", seed, metrics={"test/acc": 0.5})
        _edit(run, "results.json", lambda results, seed=seed, host=host: results.update(
            {**({"machine": host} if host else {}), "wall_time_s": wall / 2,  # cheaper however fast this machine is
             **({"device": "cuda: NVIDIA H200"} if seed == 4 else {})}))
    assert main(["reproduce", "--unchecked", "--list", "--results-dir", str(results)]) == 0
    lines = capfd.readouterr().out.strip().splitlines()
    assert [line.split()[2] for line in lines[:-1]] == ["babi-lstm-cpu-s5-a", stored.name], lines
    assert lines[-1].startswith("2 runs, ")
    minutes = f"{wall / 60:.6g}"  # the cheaper run fits, both (1.5 times as long) do not
    assert main(["reproduce", "--unchecked", "--list", "--minutes", minutes, "--results-dir", str(results)]) == 0
    assert capfd.readouterr().out.strip().splitlines()[-1] == f"1 of them fit in --minutes {minutes} at the pace " \
                                                               "they trained"


@pytest.mark.slow
def test_the_unchecked_runs_are_trained_again_and_recorded_within_the_minutes_given(
        stored: Path, capfd: pytest.CaptureFixture[str]) -> None:
    results = stored.parents[2]
    queue = ["reproduce", "--unchecked", "--record", "--results-dir", str(results)]
    wall = json.loads((stored / "results.json").read_text())["wall_time_s"]
    assert main([*queue, "--minutes", f"{wall / 120:.6g}"]) == 0  # the run took longer: nothing trained
    out = capfd.readouterr().out
    assert f"stopping before {stored.name}" in out and "0 of 0 runs trained again" in out
    assert "1 of the 1 in the queue not reached" in out
    broken = write_run(results, "babi", "gone", 7, metrics={"test/acc": 0.5})  # cheaper; its model is no more
    here = json.loads((stored / "results.json").read_text())["machine"]
    _edit(broken, "results.json", lambda results: results.update(machine=here, wall_time_s=wall / 2))
    assert main(queue) == 1  # one run not trained
    out = capfd.readouterr().out
    assert "[1/2] babi-gone-cpu-s7-a" in out and "skipped babi-gone-cpu-s7-a: " in out
    assert f"[2/2] {stored.name}" in out
    assert "1 of 1 run trained again came back bit for bit; not trained: babi-gone-cpu-s7-a" in out
    shutil.rmtree(broken)
    assert main(["reproduce", "--unchecked", "--list", "--results-dir", str(results)]) == 0
    assert "is left unchecked that this machine can train again bit for bit" in capfd.readouterr().out
    for wrong, said in ((["reproduce"], "name a run"), (["reproduce", stored.name, "--unchecked"], "not both"),
                        (["reproduce", stored.name, "--list"], "go with --unchecked"),
                        (["reproduce", stored.name, "--jobs", "2"], "go with --unchecked"),
                        (["reproduce", "--unchecked", "--minutes", "nan"], "give a finite number of minutes > 0"),
                        (["reproduce", "--unchecked", "--minutes", "inf"], "give a finite number of minutes > 0")):
        assert main(wrong) == 2, wrong
        err = capfd.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("variables", [[], ["UNCHECKED=0"], ["UNCHECKED="]])
def test_make_reproduce_without_a_run_or_unchecked_1_says_what_to_name(variables):
    """``make reproduce`` needs RUN=... or UNCHECKED=1; any other UNCHECKED is a mistake, not the queue."""
    done = subprocess.run(["make", "--no-print-directory", "reproduce", *variables], cwd=Path(__file__).parents[1],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert done.stderr.splitlines()[0].startswith("make reproduce: name a run"), done.stderr


@pytest.mark.slow
def test_the_unchecked_runs_train_side_by_side_with_jobs(stored: Path, env: dict[str, str],
                                                         capfd: pytest.CaptureFixture[str]) -> None:
    """``--jobs 2``: two checks at once, each in its own process with its output in a log; both recorded (the log of
    checks is locked between them), the summary as one after another."""
    from harness.reproductions import load

    results = stored.parents[2]
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "--seed", "1",
                 "task.source=generator"]) == 0
    second = only_run(Path(env["HARNESS_RUNS_DIR"]))
    shutil.move(second, results / "babi" / "lstm" / second.name)
    capfd.readouterr()
    assert main(["reproduce", "--unchecked", "--jobs", "2", "--record", "--results-dir", str(results)]) == 0
    out = capfd.readouterr().out
    logs = Path(env["HARNESS_RUNS_DIR"]) / ".reproduce"
    for name in (stored.name, second.name):
        assert f"  {name}: every one of the " in out and (logs / f"{name}.log").is_file(), out
    assert out.strip().splitlines()[-1] == "2 of 2 runs trained again came back bit for bit"
    assert sorted(check["run_id"] for check in load(results)) == sorted([stored.name, second.name])
    assert main(["reproduce", "--unchecked", "--jobs", "0", "--results-dir", str(results)]) == 2
    assert "--jobs 0: give at least 1" in capfd.readouterr().err
