"""The RLlib side of an RL run (harness/runners/rl.py, rl_learner.py, rl_module.py) without starting Ray:

* every value of the run's ``rl`` section reaches RLlib's ``AlgorithmConfig`` unchanged, under the name RLlib 2.x
  gives it (ray-project/ray, ``rllib/algorithms/algorithm_config.py``, ``impala/impala.py``, ``ppo/ppo.py``):
  learning rate, discount, entropy and value coefficients, gradient clip (0: none), V-trace clips, rollout length
  (the paper's ``sample_batch_size``), runners, boards per runner, learners, reporting and seed (Clift et al. 2020,
  "Logic and the 2-Simplicial Transformer", ICLR, Table 1, for the IMPALA values);
* the learner's optimiser is the one ``rl.optim`` names with its settings (e.g. TF1 RMSProp: decay, momentum,
  epsilon), its learning rate RLlib's ``config.lr``;
* ``loss_reduction: sum`` multiplies RLlib 2.x's masked-mean IMPALA loss by the number of valid timesteps (RLlib 0.7's
  ``tf.reduce_sum`` over the train batch); ``mean`` leaves it;
* the RLModule builds the registry's agent from the run's ``model`` and ``agent`` sections and the env's spaces, and
  reads the policy logits and the value from one forward pass;
* the rl section's checks, the GPU count RLlib takes, the median throughput and the resume step.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.config import compose
from harness.errors import UserError
from harness.runners.rl import (
    ENV_NAME,
    _median_rate,
    _resume_position,
    build_algorithm_config,
    check_rl_config,
    gpus_per_learner,
)

AGENT = "models.control.mlp_agent:MLPAgent"
DISTINCT = ["rl.optim.name=tf1_rmsprop", "rl.optim.lr=0.00031", "rl.optim.decay=0.97", "rl.optim.momentum=0.1",
            "rl.optim.eps=0.07", "rl.gamma=0.93", "rl.entropy_coeff=0.013", "rl.vf_loss_coeff=0.37",
            "rl.grad_clip=17.0", "rl.vtrace_clip_rho=1.3", "rl.vtrace_clip_pg_rho=0.8", "rl.unroll=23",
            "rl.train_batch_size=460", "rl.num_env_runners=3", "rl.envs_per_runner=5", "rl.num_learners=0",
            "rl.sampler_timeout_s=0.07", "rl.min_steps_per_iteration=333", "rl.min_time_per_iteration_s=2.5",
            "rl.smoothing_episodes=41", "rl.loss_reduction=sum", "seed=11", "rl.ppo.num_epochs=3",
            "rl.ppo.minibatch_size=115", "rl.ppo.clip_param=0.23", "rl.ppo.gae_lambda=0.91"]


class _Task:
    """A task with an env config of its own; ``has_vector_env`` as given."""

    env_creator = staticmethod(lambda config: gym.make("CartPole-v1"))

    def __init__(self, vector: bool) -> None:
        self.has_vector_env = vector

    def env_config(self) -> dict[str, Any]:
        return {"size": 3}


def _cfg(*overrides: str) -> Any:
    return compose("cartpole", "mlp_agent", "smoke", [*DISTINCT, *overrides]).cfg


def test_every_impala_setting_reaches_rllib_unchanged() -> None:
    cfg = _cfg()
    algo = build_algorithm_config(cfg, _Task(vector=False), AGENT)
    assert type(algo).__name__ == "IMPALAConfig" and algo.vtrace
    assert (algo.lr, algo.gamma, algo.entropy_coeff, algo.vf_loss_coeff) == (0.00031, 0.93, 0.013, 0.37)
    assert (algo.grad_clip, algo.grad_clip_by) == (17.0, "global_norm")
    assert (algo.vtrace_clip_rho_threshold, algo.vtrace_clip_pg_rho_threshold) == (1.3, 0.8)
    assert algo.timeout_s_sampler_manager == 0.07
    assert (algo.rollout_fragment_length, algo.train_batch_size_per_learner) == (23, 460)
    assert (algo.num_env_runners, algo.num_envs_per_env_runner, algo.gym_env_vectorize_mode) == (3, 5, "sync")
    assert (algo.num_learners, algo.num_gpus_per_learner) == (0, 0)
    assert (algo.min_sample_timesteps_per_iteration, algo.min_time_s_per_iteration) == (333, 2.5)
    assert algo.metrics_num_episodes_for_smoothing == 41 and algo.seed == 11
    assert (algo.env, algo.env_config) == (ENV_NAME, {"size": 3})
    assert algo.learner_class.__name__ == "HarnessIMPALALearner"
    assert algo.learner_config_dict == {
        "optim": {"name": "tf1_rmsprop", "lr": 0.00031, "decay": 0.97, "momentum": 0.1, "eps": 0.07,
                  "betas": [0.9, 0.999], "weight_decay": 0.0},
        "loss_reduction": "sum"}
    assert algo.callbacks_class.__name__ == "EpisodeOutcomes"
    spec = algo.rl_module_spec
    assert spec.module_class.__name__ == "AgentRLModule"
    assert spec.model_config == {"entry": AGENT, "model": OmegaConf.to_container(cfg.model),
                                 "agent": OmegaConf.to_container(cfg.agent)}


def test_every_ppo_setting_reaches_rllib_unchanged() -> None:
    algo = build_algorithm_config(_cfg("rl.algorithm=ppo"), _Task(vector=False), AGENT)
    assert type(algo).__name__ == "PPOConfig" and algo.learner_class.__name__ == "HarnessPPOLearner"
    assert (algo.lr, algo.gamma, algo.entropy_coeff, algo.vf_loss_coeff, algo.grad_clip) == (
        0.00031, 0.93, 0.013, 0.37, 17.0)
    assert (algo.num_epochs, algo.minibatch_size, algo.clip_param, algo.lambda_) == (3, 115, 0.23, 0.91)
    assert (algo.rollout_fragment_length, algo.train_batch_size_per_learner) == (23, 460)


@pytest.mark.parametrize(("vector", "batched", "mode"), [
    (True, "true", "vector_entry_point"), (True, "false", "sync"), (False, "true", "sync")])
def test_a_task_s_vector_env_is_used_only_when_asked_for(vector: bool, batched: str, mode: str) -> None:
    algo = build_algorithm_config(_cfg(f"rl.batched_env={batched}"), _Task(vector=vector), AGENT)
    assert algo.gym_env_vectorize_mode == mode


def test_a_grad_clip_of_zero_is_no_clip() -> None:
    assert build_algorithm_config(_cfg("rl.grad_clip=0"), _Task(vector=False), AGENT).grad_clip is None


@pytest.mark.parametrize("bad", ["rl.algorithm=sac", "rl.loss_reduction=max", "rl.unroll=0", "rl.total_env_steps=0",
                                 "rl.train_batch_size=0", "rl.envs_per_runner=0"])
def test_bad_rl_sections_are_refused(bad: str) -> None:
    key, value = bad.split("=")
    cfg = OmegaConf.create({"rl": {"algorithm": "impala", "loss_reduction": "sum", "total_env_steps": 1,
                                   "train_batch_size": 1, "unroll": 1, "envs_per_runner": 1}})
    check_rl_config(cfg)  # the smallest good values pass
    OmegaConf.update(cfg, key, value if not value.isdigit() else int(value))
    with pytest.raises(UserError, match=key.replace(".", r"\.")):
        check_rl_config(cfg)


def test_gpus_per_learner_and_the_median_rate_and_the_resume_step() -> None:
    assert [gpus_per_learner(OmegaConf.create(rl)) for rl in
            ({"num_gpus_per_learner": 2.0}, {"num_gpus_per_learner": 0.25}, {})] == [2, 0.25, 0]
    curves = SimpleNamespace(rows=[{"perf/env_steps_per_s": v} for v in (5.0, 1.0, 4.0, 2.0)] + [{"step": 9}])
    assert _median_rate(curves) == {"env_steps_per_s": 4.0}  # sorted 1, 2, 4, 5: the upper middle
    curves.rows = curves.rows[:3]
    assert _median_rate(curves) == {"env_steps_per_s": 4.0}  # sorted 1, 4, 5
    assert _median_rate(SimpleNamespace(rows=[])) == {}
    rows = SimpleNamespace(rows=[{"step": 200, "epoch": 2}, {"step": 400, "epoch": 4}])
    restored = SimpleNamespace(metrics=SimpleNamespace(peek=lambda key, default: 500), training_iteration=5)
    stateless = SimpleNamespace(metrics=SimpleNamespace(peek=lambda key, default: default), training_iteration=0)
    assert _resume_position(restored, {"env_steps": 300, "iterations": 3}, rows) == (500, 5)  # the checkpoint's own
    assert _resume_position(stateless, {"env_steps": 300, "iterations": 3}, rows) == (300, 3)
    assert _resume_position(stateless, {}, rows) == (400, 4)
    assert _resume_position(stateless, {}, SimpleNamespace(rows=[])) == (0, 0)


# learners ------------------------------------------------------------------------------------------------------


def test_the_learner_builds_the_named_optimiser_at_rllib_s_rate() -> None:
    from harness.optim import TF1RMSProp
    from harness.runners.rl_learner import HarnessIMPALALearner

    cfg = _cfg()
    algo = build_algorithm_config(cfg, _Task(vector=False), AGENT)
    learner = object.__new__(HarnessIMPALALearner)
    net = nn.Linear(3, 2)
    registered: dict[str, Any] = {}
    learner._module = {"default_policy": net}
    learner.get_parameters = lambda module: list(module.parameters())
    learner.register_optimizer = lambda **kwargs: registered.update(kwargs)
    learner.configure_optimizers_for_module("default_policy", config=algo)
    optimizer = registered["optimizer"]
    assert isinstance(optimizer, TF1RMSProp)
    group = optimizer.param_groups[0]
    assert (group["lr"], group["decay"], group["momentum"], group["eps"]) == (0.00031, 0.97, 0.1, 0.07)
    assert registered["lr_or_lr_schedule"] == 0.00031 and registered["module_id"] == "default_policy"
    assert [id(p) for p in registered["params"]] == [id(p) for p in net.parameters()]


@pytest.mark.parametrize(("reduction", "factor"), [("sum", 3.0), ("mean", 1.0), (None, 1.0)])
def test_a_summed_loss_is_the_mean_times_the_valid_timesteps(monkeypatch: pytest.MonkeyPatch, reduction: str | None,
                                                             factor: float) -> None:
    """RLlib's loss is a masked mean over the batch's valid timesteps; 3 of the 5 are valid (the mask)."""
    from ray.rllib.algorithms.impala.torch.impala_torch_learner import IMPALATorchLearner
    from ray.rllib.core.columns import Columns

    from harness.runners.rl_learner import HarnessIMPALALearner

    monkeypatch.setattr(IMPALATorchLearner, "compute_loss_for_module", lambda self, **kwargs: torch.tensor(0.75))
    settings = {} if reduction is None else {"loss_reduction": reduction}
    config = SimpleNamespace(learner_config_dict=settings)
    batch = {Columns.LOSS_MASK: torch.tensor([True, False, True, True, False])}
    loss = object.__new__(HarnessIMPALALearner).compute_loss_for_module(module_id="p", config=config, batch=batch,
                                                                        fwd_out={})
    assert float(loss) == 0.75 * factor


# the RLModule ----------------------------------------------------------------------------------------------------


class _Recording(nn.Module):
    """An agent that records how it was built; logits [B, A] = obs @ W, value [B] = obs.sum(-1)."""

    built: list[tuple[Any, ...]] = []

    def __init__(self, model_cfg: Any, agent_cfg: Any, observation_shape: tuple[int, ...], num_actions: int) -> None:
        super().__init__()
        _Recording.built.append((OmegaConf.to_container(model_cfg), OmegaConf.to_container(agent_cfg),
                                 observation_shape, num_actions))
        self.w = nn.Parameter(torch.arange(observation_shape[0] * num_actions, dtype=torch.float32)
                              .reshape(observation_shape[0], num_actions))
        self.calls = 0

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.calls += 1
        return obs @ self.w, obs.sum(-1)


def test_the_rl_module_builds_the_agent_from_the_run_s_sections_and_the_spaces() -> None:
    from ray.rllib.core.columns import Columns

    from harness.runners.rl_module import AgentRLModule

    _Recording.built.clear()
    config = {"entry": f"{__name__}:_Recording", "model": {"width": 7}, "agent": {"heads": 2}}
    module = AgentRLModule(observation_space=gym.spaces.Box(-1, 1, (4,), np.float32),
                           action_space=gym.spaces.Discrete(3), model_config=config)
    assert _Recording.built == [({"width": 7}, {"heads": 2}, (4,), 3)]
    obs = torch.randn(5, 4)  # [B, obs]
    out = module.forward_train({Columns.OBS: obs})
    torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], obs @ module.agent.w)  # [B, A]
    torch.testing.assert_close(module.compute_values({Columns.OBS: obs}, out[Columns.EMBEDDINGS]), obs.sum(-1))
    assert module.agent.calls == 1  # the value came from the same pass
    torch.testing.assert_close(module.compute_values({Columns.OBS: obs}), obs.sum(-1))  # [B]
    exploring = module.forward_exploration({Columns.OBS: obs})
    torch.testing.assert_close(exploring[Columns.ACTION_DIST_INPUTS], obs @ module.agent.w)
