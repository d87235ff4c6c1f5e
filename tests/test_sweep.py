"""Sweeps on Ray Tune, end to end. Ray runs in a loopback-only network namespace (it probes cloud
metadata addresses otherwise), so the sweep runs as `unshare -n` subprocess; where that is not allowed
the test is skipped with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness import cli
from harness.errors import SweepStopped, UserError
from harness.runners.sweep_file import cell_overrides, load_sweep, narrow_grid, sweep_cells, trial_cells
from harness.runners.tune import fit_sweep, run_sweep, sweep_table, trial_bundles, trial_overrides
from tests.conftest import ROOT, requires_loopback_only, run_cli_loopback


def run_sweep_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli_loopback(["sweep", *args], env)


def test_sweep_files_are_checked(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: babi\nmodels: [lstm]\nspaces: {}\n")
    with pytest.raises(UserError, match="unknown key\\(s\\) spaces"):
        load_sweep(bad)
    bad.write_text("name: x\ntask: babi\nmodels: [lstm]\nspace: {optim.lr: {type: gaussian}}\n")
    with pytest.raises(UserError, match="type 'gaussian'"):
        load_sweep(bad)
    sweep = load_sweep(ROOT / "sweeps" / "predinet_table1.yaml")
    overrides = trial_overrides(sweep, {"model": "mlp1", "seed": 2, "space": {"task.tasks": ["xoccurs"]}})
    assert "task.tasks=[xoccurs]" in overrides and "seed=2" in overrides
    assert "tracking.group=predinet_table1" in overrides


GOOD = {"name": "x", "task": "babi", "models": "[lstm]", "profile": "smoke"}
BAD_SWEEPS = {  # what the file says (None: no file; a string: the whole file; a dict: keys over GOOD) -> the error
    "missing file": (None, "no sweep file"),
    "bad YAML": ("name: [x\ntask: babi\n", "not valid YAML at line"),
    "not a mapping": ("- lstm\n- tpr_rnn\n", "a sweep file is a mapping"),
    "unknown key": ({"spaces": "{}"}, "unknown key\\(s\\) spaces"),
    "missing models": ({"models": None}, "missing 'models'"),
    "empty models": ({"models": "[]"}, "'models' must be a non-empty list"),
    "unknown model": ({"models": "[lstm, lstmm]"}, "unknown model 'lstmm'"),
    "unknown task": ({"task": "babl"}, "unknown task 'babl'"),
    "unknown profile": ({"profile": "smok"}, "unknown profile 'smok'"),
    "bad name": ({"name": "'my sweep'"}, "name 'my sweep' must be"),
    "negative seed": ({"seeds": "[0, -1]"}, "'seeds' must be a non-empty list of non-negative integers"),
    "float seed": ({"seeds": "[0.5]"}, "'seeds' must be"),
    "bool seed": ({"seeds": "[true]"}, "'seeds' must be"),
    "seed not a list": ({"seeds": "3"}, "'seeds' must be"),
    "no seeds": ({"seeds": "[]"}, "'seeds' must be"),
    "override without =": ({"overrides": "[train.max_epochs]"}, "'overrides' must be a list of key=value"),
    "bad override": ({"overrides": "[train.max_epochs=0]"}, "bad value for 'train.max_epochs'"),
    "num_samples 0": ({"num_samples": "0"}, "'num_samples' must be an integer >= 1"),
    "cpus_per_trial 0": ({"cpus_per_trial": "0"}, "'cpus_per_trial' must be a number > 0"),
    "cpus_per_trial negative": ({"cpus_per_trial": "-1"}, "'cpus_per_trial' must be a number > 0"),
    "max_concurrent 0": ({"max_concurrent": "0"}, "'max_concurrent' must be null or an integer >= 1"),
    "reuse_processes not a boolean": ({"reuse_processes": "yes_please"}, "'reuse_processes' must be true or false"),
    "reuse_processes null": ({"reuse_processes": "null"}, "'reuse_processes' must be true or false"),
    "space not a mapping": ({"space": "[optim.lr]"}, "'space' must map config keys"),
    "unknown space type": ({"space": "{optim.lr: {type: gaussian}}"}, "type 'gaussian'"),
    "space entry not a mapping": ({"space": "{optim.lr: 0.1}"}, "has type 0.1"),
    "grid without values": ({"space": "{task.babi_id: {type: grid}}"}, "missing: values"),
    "grid with empty values": ({"space": "{task.babi_id: {type: grid, values: []}}"}, "'values' must be a non-empty"),
    "unknown space field": ({"space": "{task.babi_id: {type: grid, values: [1], value: 2}}"}, "unknown: value"),
    "loguniform low 0": ({"space": "{optim.lr: {type: loguniform, low: 0, high: 0.1}}"}, "low must be > 0"),
    "loguniform low >= high": ({"space": "{optim.lr: {type: loguniform, low: 0.1, high: 0.01}}"},
                               "low must be below high"),
    "loguniform bound a string": ({"space": "{optim.lr: {type: loguniform, low: 1e-4, high: 0.1}}"},
                                  "must be numbers.*write 1.0e-4"),
    "uniform without high": ({"space": "{optim.lr: {type: uniform, low: 0.1}}"}, "missing: high"),
    "randint float bounds": ({"space": "{task.babi_id: {type: randint, low: 1.5, high: 4}}"}, "must be integers"),
    "randint low >= high": ({"space": "{task.babi_id: {type: randint, low: 4, high: 4}}"}, "low must be below high"),
    "space key not a config key": ({"space": "{optim.lrr: {type: grid, values: [0.1]}}"},
                                   "unknown config key 'optim.lrr'"),
    "space key set by the sweep": ({"space": "{seed: {type: grid, values: [1, 2]}}"}, "set by the sweep itself"),
    "grid value of the wrong type": ({"space": "{task.babi_id: {type: grid, values: [1, six]}}"},
                                     "space 'task.babi_id' with lstm: bad value for 'task.babi_id'"),
    "float range on an int key": ({"space": "{task.babi_id: {type: uniform, low: 1.0, high: 5.0}}"},
                                  "bad value for 'task.babi_id'.*1.0 is not one of 1..20, all"),
    "range end out of bounds": ({"space": "{task.babi_id: {type: randint, low: 1, high: 30}}"},
                                "29 is not one of 1..20, all"),
    # one run trained twice, two trials at once in one run folder
    "grid value twice": ({"space": "{task.babi_id: {type: grid, values: [1, 2, 1]}}"},
                         "space 'task.babi_id' lists 1 twice: the same run would train twice"),
    "grid sampled twice": ({"space": "{task.babi_id: {type: grid, values: [1, 2]}}", "num_samples": "2"},
                           "'num_samples' > 1 repeats each point of a grid with the same seed"),
    "task twice": ({"task": None, "tasks": "[babi, babi]"}, "'tasks' lists babi twice"),
    "task_grid value twice": ({"task": None, "tasks": "[babi]", "task_grid": "{babi: {task.babi_id: [3, 3]}}"},
                              "task_grid babi 'task.babi_id' lists 3 twice"),
    # overrides the trial's own values would silently replace
    "seed in overrides": ({"overrides": "[seed=5]"}, "overrides: seed=5: set by the sweep itself"),
    "group in overrides": ({"overrides": "[tracking.group=mine]"}, "overrides: tracking.group=mine: set by the sweep"),
    "override of a space key": ({"overrides": "[optim.lr=0.1]", "space": "{optim.lr: {type: grid, values: [0.01]}}"},
                                "overrides: optim.lr=0.1: optim.lr is also in the space"),
    "runs folder a file": ({}, "runs folder .* is a file, not a folder"),
}


def _write_sweep(tmp_path, content: None | str | dict[str, str | None]):
    path = tmp_path / "sweep.yaml"
    if isinstance(content, dict):
        fields = {key: value for key, value in {**GOOD, **content}.items() if value is not None}
        path.write_text("".join(f"{key}: {value}\n" for key, value in fields.items()))
    elif content is not None:
        path.write_text(content)
    return path


@pytest.mark.parametrize("case", sorted(BAD_SWEEPS))
def test_a_bad_sweep_file_is_a_one_line_user_error_before_ray_starts(case, tmp_path, monkeypatch, capsys):
    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started")

    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)
    content, message = BAD_SWEEPS[case]
    path = _write_sweep(tmp_path, content)
    if case == "runs folder a file":
        (tmp_path / "runs").write_text("")
    with pytest.raises(UserError, match=message):
        run_sweep(load_sweep(path), tmp_path / "runs")
    assert cli.main(["sweep", str(path), "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert not (tmp_path / "runs").is_dir()


def test_a_sampled_sweep_draws_the_same_trials_each_time_it_runs():
    """An unseeded sampler drew new values each time: an interrupted trial was never resumed, a completed one never
    reported; seeded by the sweep's name, the same command draws the same trials (the same run ids)."""
    from ray.tune.search.variant_generator import generate_variants

    from harness.runners.tune import _tune_space, sampler

    sweep = load_sweep(_write_sweep(Path(tempfile.mkdtemp()), {
        "space": "{optim.lr: {type: loguniform, low: 1.0e-4, high: 0.1}}", "num_samples": "3"}))

    def drawn() -> list[float]:
        generator = sampler(sweep)
        random_state = generator._random_state  # what BasicVariantGenerator hands each draw
        return [variant["space"]["optim.lr"] for _ in range(sweep.num_samples)
                for _, variant in generate_variants(_tune_space(sweep), random_state=random_state)]

    first = drawn()
    assert first == drawn() and len(set(first)) == 3


def test_the_good_sweep_of_the_bad_sweep_cases_reaches_ray(tmp_path, monkeypatch):
    """The cases above differ from a sweep that is accepted (so each fails for its own reason)."""
    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started")

    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)
    path = _write_sweep(tmp_path, {"space": "{optim.lr: {type: loguniform, low: 1.0e-4, high: 0.1}, "
                                            "task.babi_id: {type: randint, low: 1, high: 21}}"})
    with pytest.raises(AssertionError, match="Ray was started"):
        run_sweep(load_sweep(path), tmp_path / "runs")


class _MemoryMonitorKill(Exception):
    """Stands for ray.exceptions.OutOfMemoryError, which Tune 2.60's controller wraps in a RuntimeError."""


class _GivingUpTuner:
    def fit(self):
        try:
            raise _MemoryMonitorKill("2 worker(s) were killed due to the node running low on memory.\nMemory on the "
                                     "node was 22.77GB used / 23.59GB limit")
        except _MemoryMonitorKill as cause:
            raise RuntimeError(f"Caught unexpected exception: {cause}") from cause


def test_a_sweep_that_ray_tune_gives_up_on_is_one_line_exit_1_and_says_how_to_go_on(tmp_path, monkeypatch, capsys):
    with pytest.raises(SweepStopped) as stopped:
        fit_sweep(_GivingUpTuner(), "matrix_cpu")
    message = str(stopped.value)
    assert "\n" not in message
    assert message.startswith("sweep matrix_cpu stopped part-way: _MemoryMonitorKill: 2 worker(s)")
    assert "node running low on memory. Memory on the node" in message and message.endswith("runs the rest")

    def stopping_sweep(*args, **kwargs):
        fit_sweep(_GivingUpTuner(), "good")

    monkeypatch.setattr("harness.runners.tune.run_sweep", stopping_sweep)
    path = _write_sweep(tmp_path, {})
    assert cli.main(["sweep", str(path), "--runs-dir", str(tmp_path / "runs")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: sweep good stopped part-way: "), err


def test_the_table_lists_every_trial_with_its_status_and_reason():
    rows = [{"trial": "lstm seed=0 task.babi_id=6", "run_id": None, "status": "failed",
             "reason": "qa6_train.txt: no question lines", "metrics": {}},
            {"trial": "lstm seed=0 task.babi_id=1", "run_id": "babi-lstm-x", "status": "completed", "reason": "",
             "metrics": {"test/acc": 0.5, "test/loss": 1.0}}]
    table = sweep_table(rows)
    assert table[1] == ["lstm seed=0 task.babi_id=6", "-", "failed", "qa6_train.txt: no question lines"]
    assert table[2] == ["lstm seed=0 task.babi_id=1", "babi-lstm-x", "completed", "test/acc=0.5000"]


@pytest.mark.slow
def test_every_shipped_sweep_composes(env):
    for path in sorted((ROOT / "sweeps").glob("*.yaml")):
        done = subprocess.run([sys.executable, "-m", "harness.cli", "sweep", str(path), "--dry-run"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (path, done.stderr)


@requires_loopback_only
@pytest.mark.slow
def test_sweep_of_two_models_and_two_seeds_fills_the_store_and_lists_the_failing_trials(env, tmp_path):
    data = tmp_path / "data" / "babi" / "en-10k"
    data.mkdir(parents=True)
    (data / "qa6_yes-no-questions_train.txt").write_text("1 Mary moved.\n")  # malformed: no question
    (data / "qa6_yes-no-questions_test.txt").write_text("1 Mary moved.\n")
    sweep = tmp_path / "sweep.yaml"
    # reuse_processes: failing trials must be listed, and leave no run, in a process that goes on to the next
    # trial too (the default, a process per trial, is the two-node cluster test's: tests/test_cluster.py)
    sweep.write_text("name: tiny\ntask: babi\nmodels: [tpr_rnn, lstm]\nprofile: smoke\nseeds: [0, 1]\n"
                     "reuse_processes: true\noverrides: [train.max_epochs=1]\n"
                     "space: {task.babi_id: {type: grid, values: [1, 6]}}\n")
    runs = tmp_path / "runs"
    done = run_sweep_cli([str(sweep), "--runs-dir", str(runs)], {**env, "HARNESS_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # the task-6 trials failed
    results = [json.loads(p.read_text()) for p in runs.glob("babi/*/*/results.json")]
    assert len(results) == 4 and all(r["status"] == "completed" for r in results)  # the data error left no run
    lines = done.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if line.split()[:3] == ["trial", "run_id", "status"]]
    assert headers, "no final table (trial, run_id, status, ...):\n" + done.stdout[-2000:]
    table = lines[headers[-1] + 1:]  # the sweep's final table, one line per trial
    failed = [line for line in table if "task.babi_id=6" in line]
    assert len(failed) == 4 and all(" failed " in line and "no question lines" in line for line in failed)
    completed = [line for line in table if "task.babi_id=1" in line]
    assert len(completed) == 4 and all(" completed " in line and "test/acc=" in line for line in completed)

    site = tmp_path / "site"  # the sweep's runs appear in the report (built from them alone: not results/)
    built = subprocess.run([sys.executable, "-m", "harness.cli", "report", "--runs-dir", str(runs), "--results-dir", "",
                            "--out", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    index = (site / "index.html").read_text()
    assert "tpr_rnn" in index and "lstm" in index
    for r in results:
        assert (site / "runs" / f"{r['run_id']}.html").exists()


def test_rl_trials_reserve_a_cpu_for_each_env_runner():
    """RLlib places its EnvRunners in the trial's placement group: bundle 0 is the trial (driver and
    learner), then one bundle per runner. A supervised trial is one bundle, its own."""
    rl_sweep = load_sweep(ROOT / "sweeps" / "simplicial_bridge_boxworld.yaml")
    assert trial_bundles(rl_sweep, "bridge_boxworld", "simplicial") == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert trial_bundles(load_sweep(ROOT / "sweeps" / "babi_smoke.yaml"), "babi", "lstm") == [{"CPU": 1.0}]
    matrix = load_sweep(ROOT / "sweeps" / "matrix_cpu.yaml")  # each cell its own: RL cells reserve their runners
    cells = sweep_cells(matrix)
    assert ("babi", "predinet") in cells and ("cartpole", "lstm") in cells and ("babi", "mlp_agent") not in cells
    assert trial_bundles(matrix, "cartpole", "predinet") == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert trial_bundles(matrix, "babi", "predinet") == [{"CPU": 1.0}]
    smoke = load_sweep(ROOT / "sweeps" / "matrix_smoke.yaml")  # its task_overrides sample in the trial's process
    assert trial_bundles(smoke, "cartpole", "predinet") == [{"CPU": 1.0}]
    # a remote learner is one more bundle (without it, Tune could never place RLlib's learner actor)
    learners = _write_sweep(Path(tempfile.mkdtemp()), {"task": "boxworld", "models": "[relational]", "overrides":
                                                       "[rl.num_env_runners=0, rl.num_learners=1]"})
    assert trial_bundles(load_sweep(learners), "boxworld", "relational") == [{"CPU": 1.0}, {"CPU": 1.0}]


def test_matrix_sweeps_set_per_task_overrides_grids_and_a_time_cap(tmp_path):
    sweep = load_sweep(ROOT / "sweeps" / "matrix_cpu.yaml")
    entries = trial_cells(sweep)
    assert "babi/predinet; task.babi_id=1" in entries and "babi/predinet; task.babi_id=2" in entries
    babi_cells = sum(task == "babi" for task, _ in sweep_cells(sweep))
    assert "relations_game/lstm" in entries and len(entries) == len(sweep_cells(sweep)) + babi_cells  # bAbI twice
    babi = cell_overrides(sweep, "babi/mha; task.babi_id=2")
    assert "task.babi_id=2" in babi and babi[-1] == "train.max_time_s=600"
    assert cell_overrides(sweep, "relations_game/lstm")[-1] == "train.max_time_s=270"  # the profile's, smaller
    assert cell_overrides(sweep, "cartpole/mha")[-1] == "rl.max_time_s=600"
    assert cell_overrides(sweep, "game_of_life/updater_extractor")[-1] == "stepwise.max_time_s=600"
    sweep.cells = ["babi/*", "cartpole/mha"]
    assert {t for t, _ in sweep_cells(sweep)} == {"babi", "cartpole"} and ("cartpole", "lstm") not in sweep_cells(sweep)
    sweep.cells = ["nothing/*"]
    with pytest.raises(UserError, match="none of its tasks and models match nothing/"):
        sweep_cells(sweep)
    sweep.cells = ["babi/tpr_rnn", "babi/memn2m", "bogus/*"]  # misspelt beside a good one: refused, not left out
    with pytest.raises(UserError, match=r"--cells babi/memn2m, bogus/\* match none of the cells that can run "
                                        r"\(did you mean babi/memn2n\? "):
        sweep_cells(sweep)
    bad = tmp_path / "bad.yaml"
    for text, message in (("task: babi\nmodels: [lstm]\ntask_grid: {babi: {task.babi_id: [1]}}",
                           "are for matrix sweeps"),
                          ("tasks: [babi]\nmodels: all\ntask_overrides: {babi: oops}", "'task_overrides' must map"),
                          ("tasks: [babi]\nmodels: all\ntask_grid: {babi: {task.babi_id: []}}", "'task_grid' must map"),
                          ("tasks: [babi]\nmodels: all\ncell_time_cap_s: -1", "'cell_time_cap_s' must be"),
                          ("tasks: [babi]\nmodels: all\ncells: [babi/*]", "choose cells on the command line")):
        bad.write_text("name: x\n" + text + "\n")
        with pytest.raises(UserError, match=message):
            load_sweep(bad)
    bad.write_text("name: x\ntasks: [babi]\nmodels: all\ntask_overrides: {cartpole: [rl.gamma=0.9]}\n")
    with pytest.raises(UserError, match="'cartpole', which is not one of its tasks"):
        sweep_cells(load_sweep(bad))


def test_only_narrows_a_grid_to_values_the_file_lists_in_its_order():
    sweep = load_sweep(ROOT / "sweeps" / "babi_tpr_rnn_ablations_cpu.yaml")
    narrow_grid(sweep, "task.babi_id=15,1")
    narrow_grid(sweep, "model.operations=[write, backlink],[write]")
    assert sweep.space["task.babi_id"]["values"] == [1, 15]  # the file's order, so the trials are the file's
    assert sweep.space["model.operations"]["values"] == [["write"], ["write", "backlink"]]
    for choice, message in (("task.babi_id=21", "21 not among the sweep's values"),
                            ("optim.lr=1e-3", "not a grid of sweep babi_tpr_rnn_ablations_cpu"),
                            ("task.babi_id", "expected KEY=VALUE"), ("task.babi_id=", "comma-separated list"),
                            ("task.babi_id=[1", "comma-separated list")):
        with pytest.raises(UserError, match=message):
            narrow_grid(load_sweep(ROOT / "sweeps" / "babi_tpr_rnn_ablations_cpu.yaml"), choice)
    matrix = load_sweep(ROOT / "sweeps" / "matrix_cpu.yaml")
    matrix.cells = ["babi/lstm", "cartpole/lstm"]
    narrow_grid(matrix, "task.babi_id=2")
    assert trial_cells(matrix) == ["babi/lstm; task.babi_id=2", "cartpole/lstm"]


def test_cells_of_a_one_task_sweep_refuse_a_pattern_that_matches_none(capsys):
    """``--cells tpr_rnn,memn2m`` on a sweep of one task: the misspelt model is named, not quietly left out."""
    for cells in ("tpr_rnn,memn2m", "babi/tpr_rnn,babi/memn2m"):
        assert cli.main(["sweep", str(ROOT / "sweeps" / "tutorial_babi2.yaml"), "--cells", cells, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--cells {cells.split(',')[1]} matches none of its cells; its cells: " \
            "babi/tpr_rnn, babi/memn2n" in err, err
