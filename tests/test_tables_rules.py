"""Rules of the rankings' numbers (:func:`reports.index_tables.rankings`): a configuration's mean and its sample
standard deviation are over its seeds, each seed counted once (the latest completed run of a seed trained twice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reports.index_tables import rankings
from reports.store import RunRecord, assign_variants, load_store
from reports.tables import mean_sd
from tests.run_records import run_record
from tests.test_report import write_run


def test_a_seed_trained_twice_counts_once_in_a_ranking(tmp_path: Path):
    """Seed 0 trained twice (60%, then 90%) and seed 1 once (80%): the configuration is two seeds, its mean the
    latest of seed 0 with seed 1, (90 + 80) / 2 = 85.0, and its sd the sample one, sqrt(2 * 5² / 1) = 7.1 (not
    the three runs' 76.7, nor the population sd 5.0)."""
    runs = tmp_path / "runs"
    task = {"babi_id": 1, "data_set": "en-10k", "source": "files"}
    for seed, acc, tag, day in ((0, 0.6, "a", 1), (0, 0.9, "b", 2), (1, 0.8, "c", 3)):
        write_run(runs, "babi", "lstm", seed, metrics={"test/acc": acc}, task_cfg=task, tag=tag,
                  finished=f"2026-01-0{day}T00:00:00Z")
    records = load_store(runs)
    assign_variants(records)
    (row,) = rankings(records, criteria={})
    (entry,) = row["entries"]
    assert (entry["seeds"], entry["text"], entry["sd"]) == (2, "85.0", "7.1")


def test_mean_sd_is_the_sample_standard_deviation():
    mean, sd = mean_sd([1.0, 2.0, 3.0])
    assert mean == 2.0 and sd == 1.0  # sqrt(((1 - 2)² + 0 + (3 - 2)²) / (3 - 1))
    assert mean_sd([4.0]) == (4.0, None)


def test_a_matrix_cell_counts_a_seed_trained_twice_once():
    """Three completed runs, two of them seed 0: 3 runs of 2 seeds."""
    from reports.index_tables import matrix

    runs = [run_record(name, results={"seed": seed, "metrics": {"test/acc": 0.5}}, config={"seed": seed})
            for name, seed in (("a", 0), ("b", 0), ("c", 1))]
    row = next(row for row in matrix(runs, [])["rows"] if row["task"] == "babi")
    cell = next(cell for cell in row["cells"] if cell["model"] == "lstm")
    assert (cell["n_runs"], cell["n_seeds"]) == (3, 2)


def test_models_of_equal_means_rank_by_name():
    runs = [run_record(model, model=model, results={"seed": 0, "metrics": {"test/acc": 0.9}, "profile": "cpu"},
                       config={"task": {"babi_id": 1}}) for model in ("mha", "lstm")]
    (row,) = rankings(runs, criteria={})
    assert [(entry["rank"], entry["model"]) for entry in row["entries"]] == [(1, "lstm"), (2, "mha")]


def test_a_generated_run_tested_on_the_files_is_ranked_under_its_data_set():
    """A run trained on generated data and also tested on the official files read en-10k's test file: its setting
    names the set; one tested on generated data only read no files and names none."""
    from reports.index_tables import setting_label

    def run(task: dict[str, Any]) -> RunRecord:
        return run_record(results={"profile": "cpu"}, config={"task": {"babi_id": 1, "data_set": "en-10k", **task}})

    assert setting_label(run({"source": "generator", "test_on": ["files"]})) == "task 1 [cpu] (en-10k, generator)"
    assert setting_label(run({"source": "generator"})) == "task 1 [cpu] (generator)"


def test_a_missing_number_reads_as_a_dash():
    from reports.tables import fmt, fmt_count

    assert fmt(float("nan")) == "–" and fmt(None) == "–" and fmt(0.25, 2) == "0.25"
    assert fmt_count(float("nan")) == "–" and fmt_count(12345.6) == "12,346"


def test_an_attempt_left_running_and_resumed_by_a_later_one_is_listed_as_killed():
    """Stores from before the launcher closed killed attempts hold an attempt still ``running`` before the one that
    completed the run (three shipped runs did): the run page lists it as interrupted, killed, not as running; the
    last attempt of a run still in progress stays running."""
    from reports.build import _provenance

    killed = {"status": "running", "started_at": "2026-11-27T00:16:28Z", "finished_at": None}
    done = {"status": "completed", "started_at": "2026-11-27T01:21:02Z", "finished_at": "2026-11-27T01:32:29Z"}
    rows = _provenance({"attempts": [killed, done]})["attempts"]
    assert [(r["status"], r["finished"]) for r in rows] == [("interrupted", "killed (no end stored)"),
                                                          ("completed", "2026-11-27T01:32:29Z")]
    (row,) = _provenance({"attempts": [killed]})["attempts"]
    assert (row["status"], row["finished"]) == ("running", "–")


def test_an_rl_runs_evaluation_gives_its_episode_length_and_a_run_from_before_it_a_dash():
    from reports.rl_tables import rl_summary

    metrics = {"eval/episode_return": 9.0, "eval/episodes": 20.0, "train/episode_len": 31.25}
    rows = {row["name"]: row for row in rl_summary(run_record(task="boxworld", results={
        "metrics": {**metrics, "eval/episode_len": 12.5}, "env_steps": 100}))["rows"]}
    assert (rows["episode length"]["eval"], rows["episode length"]["train"]) == ("12.5", "31.2")
    before = {row["name"]: row for row in rl_summary(run_record(task="boxworld", results={
        "metrics": metrics, "env_steps": 100}))["rows"]}
    assert before["episode length"]["eval"] == "–"
