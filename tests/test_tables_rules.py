"""Rules of the rankings' numbers (:func:`reports.tables.rankings`): a configuration's mean and its sample standard
deviation are over its seeds, each seed counted once (the latest completed run of a seed trained twice)."""

from __future__ import annotations

from pathlib import Path

from reports.store import assign_variants, load_store
from reports.tables import mean_sd, rankings
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
