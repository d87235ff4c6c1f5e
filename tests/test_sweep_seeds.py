"""``harness sweep --seeds`` (``make sweep SEEDS=...``): a sweep run with other seeds than its file's. The trials of
a seed the file has keep their run ids, so a sweep run before gives Ray only the new seeds' trials
(``harness.runners.tune.split_completed``). Seconds each (no Ray, no training)."""

from __future__ import annotations

import subprocess

from harness.cli import main
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import compose_trial, grid_trials
from tests.conftest import ROOT

SWEEP = "name: seeded\ntask: babi\nmodels: [lstm, memn2n]\nprofile: smoke\nseeds: [0]\n"


def test_seeds_replace_the_files_and_keep_its_seeds_run_ids(tmp_path, env, capsys):
    path = tmp_path / "seeded.yaml"
    path.write_text(SWEEP)
    assert main(["sweep", str(path), "--dry-run", "--seeds", "0,1,2"]) == 0
    assert "6 trials;" in capsys.readouterr().out
    assert main(["sweep", str(path), "--dry-run", "--seeds", "3", "--cells", "memn2n"]) == 0
    assert "1 trial;" in capsys.readouterr().out

    sweep = load_sweep(path)
    before = {(t["model"], t["seed"]): compose_trial(sweep, t).run_id for t in grid_trials(sweep)}
    sweep.seeds = [0, 1]  # what --seeds 0,1 does
    after = {(t["model"], t["seed"]): compose_trial(sweep, t).run_id for t in grid_trials(sweep)}
    assert sorted(after) == [("lstm", 0), ("lstm", 1), ("memn2n", 0), ("memn2n", 1)]
    assert {key: after[key] for key in before} == before
    assert after[("lstm", 1)] != after[("lstm", 0)]


def test_make_sweep_passes_seeds():
    command = ["make", "--no-print-directory", "-n", "sweep", "SWEEP=sweeps/matrix_cpu.yaml", "CELLS=babi/*",
               "SEEDS=0,1"]
    printed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    printed = printed.replace("\\\n", " ")  # the recipe's continued lines as one
    line = next(line for line in printed.splitlines() if "harness sweep" in line)
    assert "--seeds '0,1'" in line and "--cells 'babi/*'" in line
    without = subprocess.run(command[:-1], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--seeds" not in without
