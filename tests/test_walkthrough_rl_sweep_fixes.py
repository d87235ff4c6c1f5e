"""Mistakes a user can make around RL runs and sweeps that Ray would otherwise turn into a silent wait or a stored
failed run: a sweep whose trial needs more CPUs than the Ray session has (Tune keeps it PENDING forever), a sweep
whose space sets ``rl.num_env_runners`` (each trial's placement group must follow the trial's own value), an RL run
pointed at a ``RAY_ADDRESS`` where no cluster answers, and a local RL run with more EnvRunners than its Ray has CPUs
(RLlib waits for them forever): one line and exit 2, before any run directory exists."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import cell_cpu_needs, check_trial_cpus, runner_choices, trial_bundles


def _sweep(tmp_path: Path, text: str) -> object:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_sweep(path)


RL = "name: s\ntask: cartpole\nmodels: [mlp_agent]\nprofile: smoke\n"


def _cpu_refusal(sweep, cpus: int) -> tuple[dict[str, float], str]:
    """The CPUs a cartpole/mlp_agent trial of ``sweep`` needs, and the line that refuses it on a local Ray of
    ``cpus``."""
    needs = {"cartpole/mlp_agent": sum(b["CPU"] for b in trial_bundles(sweep, "cartpole", "mlp_agent"))}
    with pytest.raises(UserError) as caught:
        check_trial_cpus(sweep, needs, float(cpus), cluster=False)
    return needs, str(caught.value)


def test_a_trial_larger_than_the_ray_session_is_refused_in_one_line(tmp_path, capsys):
    sweep = _sweep(tmp_path, RL + "overrides: [rl.num_env_runners=4]\n")
    needs, message = _cpu_refusal(sweep, 2)
    assert needs == {"cartpole/mlp_agent": 5.0}
    assert "\n" not in message and "needs 5 CPUs" in message and "the local Ray has 2" in message
    # a cluster may grow (an autoscaler): a warning line, not a refusal
    check_trial_cpus(sweep, needs, 4.0, cluster=True)
    assert "warning: sweep s: a trial of cartpole/mlp_agent needs 5 CPUs" in capsys.readouterr().err
    check_trial_cpus(sweep, needs, 5.0, cluster=True)  # fits: nothing said
    assert capsys.readouterr().err == ""


def test_the_refusal_counts_the_remote_learners_cpus_it_adds(tmp_path):
    """A remote learner (rl.num_learners) takes a CPU of the trial's placement group too; the line that refuses the
    trial says so, so that its count adds up (1 + 2 runners + 1 learner = 4, not "1 plus one per env runner")."""
    sweep = _sweep(tmp_path, RL + "overrides: [rl.num_env_runners=2, rl.num_learners=1]\n")
    needs, message = _cpu_refusal(sweep, 2)
    assert needs == {"cartpole/mlp_agent": 4.0}
    assert "needs 4 CPUs" in message and "one per remote learner" in message, message


def test_the_space_s_env_runner_values_size_each_trial(tmp_path):
    sweep = _sweep(tmp_path, RL + "space:\n  rl.num_env_runners: {type: grid, values: [0, 3]}\n")
    choices = runner_choices(sweep)
    assert choices == [("rl.num_env_runners=0",), ("rl.num_env_runners=3",)]
    assert [len(trial_bundles(sweep, "cartpole", "mlp_agent", c)) for c in choices] == [1, 4]
    assert runner_choices(_sweep(tmp_path, RL)) == [()]
    # the cell needs its largest choice's CPUs, whichever order the space lists them in
    last_small = _sweep(tmp_path, RL + "space:\n  rl.num_env_runners: {type: grid, values: [3, 0]}\n")
    bundles = {("cartpole/mlp_agent", c): trial_bundles(last_small, "cartpole", "mlp_agent", c)
               for c in runner_choices(last_small)}
    assert cell_cpu_needs(bundles) == {"cartpole/mlp_agent": 4.0}


def test_an_rl_run_with_an_unreachable_ray_address_is_one_line_before_its_run_exists(tmp_path, monkeypatch):
    from harness.config import compose
    from harness.runners.launch import launch

    with socket.socket() as probe:  # a loopback port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    composed = compose("cartpole", "mlp_agent", "smoke", ["seed=11"])
    with pytest.raises(UserError, match=f"RAY_ADDRESS=127.0.0.1:{port}: no Ray cluster answers there"):
        launch(composed, runs_dir=tmp_path)
    assert not any(tmp_path.rglob("results.json"))


def test_a_local_rl_run_with_more_env_runners_than_cpus_is_one_line_before_its_run_exists(tmp_path, monkeypatch):
    import os

    from harness.config import compose
    from harness.runners.launch import launch

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cpus = os.cpu_count() or 1
    composed = compose("cartpole", "mlp_agent", "smoke", ["seed=12", f"rl.num_env_runners={cpus + 1}"])
    with pytest.raises(UserError, match=f"rl.num_env_runners={cpus + 1} needs a CPU for each EnvRunner"):
        launch(composed, runs_dir=tmp_path)
    assert not any(tmp_path.rglob("results.json"))
    explicit = compose("cartpole", "mlp_agent", "smoke", ["seed=12", "rl.num_env_runners=3", "rl.num_cpus=2"])
    with pytest.raises(UserError, match="the local Ray has 2"):
        launch(explicit, runs_dir=tmp_path)
    learners = compose("cartpole", "mlp_agent", "smoke", ["seed=12", "rl.num_learners=2", "rl.num_cpus=2"])
    with pytest.raises(UserError, match=r"rl.num_env_runners=1 and rl.num_learners=2 needs a CPU for each EnvRunner "
                                        r"and each remote learner \(3\) but the local Ray has 2"):
        launch(learners, runs_dir=tmp_path)  # RLlib waited for the learners' CPUs for ever, printing nothing
    assert not any(tmp_path.rglob("results.json"))


def test_a_local_rl_run_asking_for_more_learner_gpus_than_the_machine_has_is_one_line(tmp_path, monkeypatch):
    """``rl.num_gpus_per_learner`` beyond the machine's GPUs: RLlib would wait for them for ever."""
    from harness.config import compose
    from harness.runners import ray_session
    from harness.runners.launch import launch

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_session, "local_gpus", lambda: 1)
    two = compose("cartpole", "mlp_agent", "smoke", ["seed=12", "rl.num_learners=1", "rl.num_gpus_per_learner=2",
                                                     "rl.num_cpus=2"])
    with pytest.raises(UserError, match=r"rl.num_gpus_per_learner=2 asks for 2 GPU for the learners but this "
                                        r"machine has 1, .*set rl.num_gpus_per_learner=0"):
        launch(two, runs_dir=tmp_path)
    assert not any(tmp_path.rglob("results.json"))


def test_the_boxworld_paper_profiles_train_their_learner_on_a_gpu():
    """Table 1 of the 2-simplicial Transformer paper: one GPU learner beside the env runners; the key stays out of
    the run id at its neutral 0 (a config from before it keeps its id)."""
    from harness.config import NEUTRAL_ADDED_KEYS, compose

    for task in ("boxworld", "bridge_boxworld"):
        rl = compose(task, "simplicial", "paper", []).cfg.rl
        assert (rl.num_learners, rl.num_gpus_per_learner) == (1, 1)
        assert compose(task, "simplicial", "cpu", []).cfg.rl.num_gpus_per_learner == 0
    assert NEUTRAL_ADDED_KEYS["rl.num_gpus_per_learner"] == 0


def test_rllib_is_given_the_learner_gpus_as_it_takes_them():
    """A whole number as an int (RLlib's default 0 is one, so the algorithm settings of the runs stored before the key
    are unchanged: harness.runners.rl_probe), a share as a float; absent (a config stored before the key): 0."""
    from omegaconf import OmegaConf

    from harness.runners.rl import gpus_per_learner

    given = [gpus_per_learner(OmegaConf.create(rl)) for rl in
             ({"num_gpus_per_learner": 1.0}, {"num_gpus_per_learner": 0.5}, {"num_gpus_per_learner": 0}, {})]
    assert given == [1, 0.5, 0, 0] and [type(value) for value in given] == [int, float, int, int]


def test_a_bad_value_in_a_sweep_file_is_placed_in_the_sweep_file(tmp_path):
    """A value of the wrong type in a sweep's overrides or space is the sweep file's mistake, not the command
    line's."""
    from harness.runners.sweep_file import check_sweep

    base = "name: s\ntask: babi\nmodels: [lstm]\nprofile: smoke\n"
    for text in (base + "overrides: [optim.lr=fast]\n", base + "space:\n  optim.lr: {type: grid, values: [fast]}\n"):
        with pytest.raises(UserError) as caught:
            check_sweep(_sweep(tmp_path, text))
        assert "(sweep file)" in str(caught.value) and "command line" not in str(caught.value), str(caught.value)


def test_the_header_of_a_rerun_that_has_no_checkpoint_says_it_starts_again(tmp_path):
    """An attempt stopped before its first checkpoint (a Ctrl-C during an RL run's first iterations) leaves
    nothing to resume: the next attempt's header says it starts again, not that it resumes."""
    from harness.runners.existing_run import start_word
    from harness.runs import Run

    run = Run(tmp_path / "r")
    run.checkpoint_dir.mkdir(parents=True)
    assert start_word(run, {"attempts": [{}]}) == "new"
    assert start_word(run, {"attempts": [{}, {}]}) == "starting again: no checkpoint was saved"
    (run.checkpoint_dir / "algorithm").mkdir()
    assert start_word(run, {"attempts": [{}, {}]}) == "resuming"


def test_the_rl_probe_reads_the_rl_reference_runs_of_the_project_it_is_given(tmp_path, monkeypatch):
    """``harness.runners.rl_probe`` (the evidence for edits to the RL runner) hashes the algorithm settings of every
    RL reference run: it finds them in this project, or in the one ``harness carry`` names (its run on an older
    revision's code, unpacked elsewhere), and writes classes by name, never by an address."""
    from omegaconf import OmegaConf

    from harness.runners.rl_probe import _plain, rl_configs

    configs = rl_configs()
    assert len(configs) >= 60 and all("rl" in cfg and cfg == OmegaConf.load(path) for path, cfg in configs)
    monkeypatch.setenv("HARNESS_PROBE_PROJECT", str(tmp_path))
    assert rl_configs() == []

    class Learner:
        pass

    named = f"{__name__}.{Learner.__qualname__}"
    assert _plain({"b": Learner, "a": [Learner(), 1, None]}) == {"a": [Learner.__qualname__, 1, None], "b": named}
