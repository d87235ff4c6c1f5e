"""Report fixes from an audit of the HTML report against the stored runs: a non-finite metric is no number, a
benchmark record is read as ``make perf`` writes it (and from its published copy), configurations beside a
published cell are not merged, a diverged run's page shows how far it got, a mistyped --papers-dir is refused,
unreadable runs are named on the terminal, the run pages being rendered are announced (and counted by a bar on a
terminal), and an RL run's per-puzzle training column is its last iteration."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from reports.build import build_report, main
from reports.facts import fact_rows
from reports.index_tables import _best_variant
from reports.paper_tables import _beside
from reports.papers import load_papers
from reports.rl_tables import _last_iteration
from reports.store import RunRecord
from reports.tables import TEST_ACC
from tests.run_records import run_record
from tests.test_report import write_run

PAPERS = Path(__file__).resolve().parents[1] / "reports" / "papers"


def _run(results: dict, config: dict | None = None, curves: pd.DataFrame | None = None) -> RunRecord:
    return run_record(task=results.get("task", "babi"), model="m", rel_path="x", results=results,
                      status=results.get("status", "completed"), config=config or {}, curves=curves)


def test_a_non_finite_metric_is_no_number_and_ranks_nowhere() -> None:
    assert _run({"metrics": {"test/acc": math.nan}}).metric("test/acc") is None
    assert _run({"metrics": {"test/acc": math.inf}}).metric("test/acc") is None
    assert _run({"metrics": {"test/acc": 0.5}}).metric("test/acc") == 0.5
    # a configuration whose run stored NaN (json.dump writes it) sorting first used to win every comparison
    nan_run = _run({"metrics": {"test/acc": math.nan}, "seed": 0}, config={"seed": 0})
    nan_run.fingerprint = "a"
    good = _run({"metrics": {"test/acc": 0.9}, "seed": 0}, config={"seed": 0})
    good.fingerprint = "b"
    best = _best_variant([nan_run, good], TEST_ACC)
    assert best is not None and best["text"] == "90.0"


def _facts(root: Path) -> dict[str, dict]:
    paper = next(p for p in load_papers(PAPERS) if p.name == "simplicial")
    return {row["id"]: row for row in fact_rows(paper.facts, [], root)}


def test_benchmark_facts_read_the_record_make_perf_writes_and_else_its_published_copy(tmp_path: Path) -> None:
    record = {"name": "agents", "command": "python -m models.agents.bench_agents",
              "figures": {"device": "cpu", "threads": 2, "ms": {"1280": {"relational": 200.0, "simplicial": 400.0}},
                          "ratio": {"1280": 2.0}}}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "agents.json").write_text(json.dumps(record))  # reports.perf run's bench/NAME.json
    facts = _facts(tmp_path)
    assert facts["grad_relational"]["text"] == "200.0" and facts["grad_ratio"]["text"] == "2.00"
    assert facts["grad_relational"]["where"] == "bench/agents.json: ms.1280.relational (device cpu, threads 2)"
    assert facts["env_single"]["text"] == "not measured" and "(absent)" in facts["env_single"]["where"]
    # no bench/ file: the published record results/perf/NAME.json (make perf-publish) stands in
    (tmp_path / "bench" / "agents.json").unlink()
    (tmp_path / "results" / "perf").mkdir(parents=True)
    (tmp_path / "results" / "perf" / "agents.json").write_text(json.dumps(record))
    (tmp_path / "results" / "perf" / "boxworld_env.json").write_text(json.dumps(
        {"name": "boxworld_env", "figures": {"single_bridge_steps_per_s": 698410.0}}))
    facts = _facts(tmp_path)
    assert facts["grad_simplicial"]["text"] == "400.0"
    assert facts["grad_simplicial"]["where"].startswith("results/perf/agents.json (the published record)")
    assert facts["env_single"]["text"] == "698,410"


def test_configurations_beside_a_published_cell_are_listed_apart() -> None:
    """Two configurations that differ from the paper alike (a 6x6 board, two time limits) are two experiments:
    one run per seed across both kept only the later and hid the other's number."""
    settings = {"task.env.n": 9}

    def run(seed_tag: str, limit: int, win: float, finished: str) -> RunRecord:
        r = _run({"metrics": {"eval/win_rate": win}, "seed": 0, "finished_at": finished},
                 config={"seed": 0, "task": {"env": {"n": 6}}, "rl": {"max_time_s": limit}})
        r.run_id = seed_tag
        return r

    beside = _beside([run("a", 3300, 0.815, "2026-01-01"), run("b", 600, 0.355, "2026-01-02")], "eval/win_rate",
                     100.0, 1, settings)
    assert len(beside) == 2, beside
    assert any("81.5 (n=1" in line for line in beside) and any("35.5 (n=1" in line for line in beside)
    assert all(line.startswith("n 6 ≠ 9 (") for line in beside)  # each named by its configuration
    one = _beside([run("a", 3300, 0.815, "2026-01-01")], "eval/win_rate", 100.0, 1, settings)
    assert one == ["n 6 ≠ 9: 81.5 (n=1, yours)"]


def test_a_diverged_run_page_shows_how_far_its_curves_got(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    path = write_run(runs, "babi", "tpr_rnn", 0, task_cfg={"babi_id": 1}, status="diverged",
                     error="non-finite training loss (nan) at step 41")
    results = json.loads((path / "results.json").read_text())
    results.update(steps=0, epochs=0)  # what the runner records for a diverged run
    (path / "results.json").write_text(json.dumps(results))
    build_report(runs, tmp_path / "out")
    page = (tmp_path / "out" / "runs" / "babi-tpr_rnn-cpu-s0-a.html").read_text()
    assert "40 (its curves, up to where it diverged) / 1 (its curves, up to where it diverged)" in page


def test_a_missing_papers_dir_is_a_one_line_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    code = main(["--runs-dir", str(runs), "--results-dir", "", "--out", str(tmp_path / "out"),
                 "--papers-dir", str(tmp_path / "nope")])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"report: --papers-dir {tmp_path / 'nope'}: no such folder"
    assert not (tmp_path / "out").exists()


def test_unreadable_runs_are_named_on_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    write_run(runs, "babi", "lstm", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5})
    broken = write_run(runs, "babi", "lstm", 1, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5})
    (broken / "results.json").write_text("{not json")
    build_report(runs, tmp_path / "out")
    assert capsys.readouterr().err.strip() == "report: 1 run could not be read and is marked unreadable: " \
                                              "babi-lstm-cpu-s1-a"


def test_the_run_pages_are_announced_and_counted_on_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A build of hundreds of runs takes minutes: a line says what it renders, and on a terminal a bar counts the
    pages (each still written under its own run's name)."""
    runs = tmp_path / "runs"
    for seed in range(3):
        write_run(runs, "babi", "lstm", seed, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5 + seed / 10})
    build_report(runs, tmp_path / "log", jobs=1)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["report: rendering 3 run pages in one process"]
    assert "run pages" not in captured.err  # no bar in a log
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    build_report(runs, tmp_path / "terminal", jobs=1)
    bar = capsys.readouterr().err
    assert "run pages:   0%" in bar and "| 0/3 [" in bar  # the bar's first frame (later frames depend on timing)
    for seed in range(3):
        page = f"runs/babi-lstm-cpu-s{seed}-a.html"
        assert (tmp_path / "terminal" / page).read_text() == (tmp_path / "log" / page).read_text()


def test_an_rl_runs_per_puzzle_training_column_is_its_last_iteration() -> None:
    curves = pd.DataFrame([
        {"step": 100, "train/win_rate": 0.5, "train/win_rate/1-0-0": 1.0, "train/win_rate/3-2-4": 1.0},
        {"step": 200, "train/win_rate": 0.8, "train/win_rate/1-0-0": 0.0, "train/win_rate/3-2-4": None},
        {"step": 200, "eval/win_rate": 0.4},  # the final evaluation's row
    ])
    running = _run({"status": "running", "metrics": {}}, config={"rl": {}}, curves=curves)
    assert _last_iteration(running, "train/win_rate/1-0-0") == 0.0
    assert _last_iteration(running, "train/win_rate/3-2-4") is None  # no episode of that type in the last one
    done = _run({"metrics": {"train/win_rate": 0.8, "train/win_rate/1-0-0": 0.0}}, config={"rl": {}}, curves=curves)
    assert _last_iteration(done, "train/win_rate/1-0-0") == 0.0
    assert _last_iteration(done, "train/win_rate/3-2-4") is None


def test_every_full_model_table_of_the_tpr_rnn_paper_sets_the_ablations_apart() -> None:
    """Only Table 3 compares ablated models: every other TPR-RNN table (the PyTorch port's too) counts a run with
    some memory operations left out as not like for like, so "the configuration with the most seeds" cannot pick
    an ablation for a full-model number."""
    from reports.settings import differences

    paper = next(p for p in load_papers(PAPERS) if p.name == "tpr_rnn")
    ablated = _run({"status": "completed"}, config={"model": {"operations": ["write"]}})
    for table in paper.tables:
        if "ablation" in table.title:
            continue
        assert any(d.startswith("operations") for d in differences(ablated, table.settings)), table.id


def test_a_game_of_life_run_page_shows_the_all_dead_floor_of_its_worlds() -> None:
    """The README's world-state table puts each Game of Life figure beside the accuracy of answering "dead"
    everywhere on the same worlds; the run page does too, and says when the worlds were not measured."""
    from reports.build import _stepwise_info

    config = {"task": {"name": "game_of_life", "size": 8, "boundary": "torus", "density": 0.5, "interventions": 0},
              "stepwise": {"steps": 5, "eval_steps": None, "eval_batch": 4, "horizon_batch": 2, "horizons": [10]}}
    run = _run({"task": "game_of_life", "kind": "stepwise"}, config=config)
    run.task = "game_of_life"
    board = {"size": 8, "boundary": "torus", "density": 0.5, "interventions": 0}
    floor = {"held_out": [
        {"worlds": "test", "boards": 4, "steps": 5, **board, "dead_share": {"5": 0.75}},
        {"worlds": "rollout", "boards": 2, "steps": 10, **board,
         "dead_share": {str(step): step / 20 for step in range(1, 11)}}]}
    info = _stepwise_info(run, floor)
    assert info is not None
    assert info["dead_floor"] == "test, step 5: 75.0; rollout 1: 5.0, 2: 10.0, 3: 15.0, 4: 20.0, 5: 25.0, 10: 50.0"
    assert _stepwise_info(run, {})["dead_floor"].startswith("not measured for these worlds")
    run.task = "world_of_numbers"
    assert _stepwise_info(run, floor)["dead_floor"] is None


def test_a_ranked_entry_says_how_long_its_runs_trained_and_on_what() -> None:
    """Time-capped runs of one setting can differ tenfold in steps (a GPU's against one CPU thread's): each
    ranked entry names its runs' mean steps and any accelerator."""
    from reports.index_tables import budget

    cpu = _run({"steps": 5121, "device": "cpu, 1 threads"})
    gpu = _run({"steps": 100000, "device": "cuda: NVIDIA H100"})
    assert budget([cpu]) == "5,121 steps"
    assert budget([cpu, gpu]) == "52,560 steps; on cuda: NVIDIA H100"
    rl = _run({"env_steps": 40000, "steps": 40000}, config={"rl": {}})
    assert budget([rl]) == "40,000 env steps"
    assert budget([_run({})]) == ""
