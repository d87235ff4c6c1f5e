"""``gpus_per_trial``: a sweep's trials ask Ray for a share of a GPU, and a local Ray without one refuses the sweep
in one line instead of leaving every trial waiting."""

from __future__ import annotations

import pytest

from harness.errors import UserError
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import check_trial_gpus, trial_bundles

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
