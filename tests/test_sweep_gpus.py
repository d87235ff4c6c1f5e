"""``gpus_per_trial``: a sweep's trials ask Ray for a share of a GPU, and a local Ray without one refuses the sweep
in one line instead of leaving every trial waiting."""

from __future__ import annotations

import pytest

from harness.errors import UserError
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import check_trial_gpus, trial_bundles, trial_gpu_need

SWEEP = "name: gpus\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\n"


@pytest.mark.parametrize("value", ["-1", "yes", "[0.5]"])
def test_gpus_per_trial_must_be_a_number_at_least_zero(value: str, tmp_path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"{SWEEP}gpus_per_trial: {value}\n")
    with pytest.raises(UserError, match="'gpus_per_trial' must be a number >= 0"):
        load_sweep(path)


def test_a_trial_asks_for_its_share_of_a_gpu_only_when_told(tmp_path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    assert trial_bundles(load_sweep(path), "relations_game", "mlp1") == [{"CPU": 1.0}]
    path.write_text(f"{SWEEP}gpus_per_trial: 0.25\ncpus_per_trial: 2\n")
    assert trial_bundles(load_sweep(path), "relations_game", "mlp1") == [{"CPU": 2.0, "GPU": 0.25}]


def test_a_local_ray_without_a_gpu_refuses_trials_that_need_one(tmp_path, capsys) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"{SWEEP}gpus_per_trial: 0.5\n")
    sweep = load_sweep(path)
    check_trial_gpus(sweep, 1.0, cluster=False)  # one GPU: two such trials share it
    with pytest.raises(UserError, match=r"asks for 0.5 GPU \(gpus_per_trial\) but the local Ray has 0, so no trial "
                                        r"would start; set gpus_per_trial: 0"):
        check_trial_gpus(sweep, 0.0, cluster=False)
    check_trial_gpus(sweep, 0.0, cluster=True)  # a cluster may grow: a warning
    assert "warning: sweep gpus: each trial asks for 0.5 GPU" in capsys.readouterr().err


RL_SWEEP = "name: learners\ntask: cartpole\nmodels: [mlp_agent]\nprofile: smoke\n"


@pytest.mark.parametrize(("overrides", "bundles"), [
    ("[rl.num_gpus_per_learner=1]", [{"CPU": 1.0, "GPU": 1.0}, {"CPU": 1.0}]),  # the trial's own learner
    ("[rl.num_learners=2, rl.num_gpus_per_learner=0.5]",
     [{"CPU": 1.0}, {"CPU": 1.0}, {"CPU": 1.0, "GPU": 0.5}, {"CPU": 1.0, "GPU": 0.5}]),
    ("[rl.num_learners=1]", [{"CPU": 1.0}, {"CPU": 1.0}, {"CPU": 1.0}]),
])
def test_an_rl_trial_holds_the_gpus_its_learners_ask_for(tmp_path, overrides: str, bundles: list) -> None:
    """RLlib's learner actors take ``rl.num_gpus_per_learner`` each from the trial's placement group (driver,
    EnvRunners, learners); a local learner (``rl.num_learners=0``) uses the trial process's GPU."""
    path = tmp_path / "sweep.yaml"
    path.write_text(f"{RL_SWEEP}overrides: {overrides}\n")
    sweep = load_sweep(path)
    assert trial_bundles(sweep, "cartpole", "mlp_agent") == bundles
    need = trial_gpu_need({("cartpole/mlp_agent", ()): bundles})
    if need:
        with pytest.raises(UserError, match=rf"a trial asks for {need:g} GPU \(rl.num_gpus_per_learner\) but the "
                                            r"local Ray has 0, .*set rl.num_gpus_per_learner=0 in the sweep's"):
            check_trial_gpus(sweep, 0.0, cluster=False, needed=need)
    check_trial_gpus(sweep, 1.0, cluster=False, needed=need)
