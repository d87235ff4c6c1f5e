"""Fixes from walking through the RL environments' documentation (BoxWorld, bridge BoxWorld, CartPole)."""

from __future__ import annotations

import pytest

from harness.cli import main


def test_a_ppo_minibatch_larger_than_the_batch_is_refused_before_ray_starts(capsys: pytest.CaptureFixture[str]) -> None:
    # CartPole's smoke profile trains on batches of 200 (its minibatch of 100 fits); PPO's default minibatch is 256
    code = main(["validate", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke", "--",
                 "rl.algorithm=ppo", "rl.ppo.minibatch_size=256"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "rl.ppo.minibatch_size (256)" in err[0] and "rl.train_batch_size (200)" in err[0]


def test_a_ppo_minibatch_that_fits_and_impala_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    for task, model in (("cartpole", "mlp_agent"), ("boxworld", "relational"), ("bridge_boxworld", "simplicial")):
        assert main(["validate", "--task", task, "--model", model, "--profile", "smoke", "--", "rl.algorithm=ppo"]) == 0
    for extra in (["rl.algorithm=ppo", "rl.ppo.minibatch_size=100"], ["rl.ppo.minibatch_size=1000"]):
        assert main(["validate", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke", "--", *extra]) == 0
    capsys.readouterr()
