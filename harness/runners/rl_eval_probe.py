"""A fingerprint of what an RL run's evaluation computes, for showing that an edit to it changes none of the figures
an RL run reported (``harness carry harness/runners/rl_eval.py ... --probe harness.runners.rl_eval_probe``;
:mod:`harness.code_changes`).

RL runs cannot be trained again bit for bit (the learner and the env runners are separate processes), so an edit
to :mod:`harness.runners.rl_eval` is shown instead on the evaluation itself: for the env of every RL reference run
in ``results/`` (each distinct task setting once, as stored in ``config.yaml``), a fixed scripted policy (a seeded
linear map of the observation to the action logits) plays the final evaluation's boards and a selection round's
(:func:`harness.runners.rl_eval.evaluate`, ``EVAL_BOARDS`` boards a wave and a part wave, the run's own
``rl.eval_max_steps``), and the figures the stored runs report (``PROBED``: return, episodes, win rates) go into one
hash. A figure an edit adds is not hashed: no stored run has it to compare. Nothing is trained and Ray is not
started.

    python -m harness.runners.rl_eval_probe       # prints the hash
"""

from __future__ import annotations

import hashlib

import torch

from harness.runners.rl_probe import rl_configs

PROBED = ("eval/episode_return", "eval/episodes", "eval/win_rate")  # a key, or the prefix of a key and a "/"
EPISODES = 40  # a wave of EVAL_BOARDS (32) boards and a part wave


class ScriptedPolicy:
    """Stands in for an RL module: ``agent(obs)`` gives ``(logits,)``, logits = tanh(flattened obs @ W / sqrt(D))
    [B, actions], W drawn once from a fixed seed for the observation's size D: a policy close to uniform that
    depends on what it sees, so episodes differ in length and outcome and some are won."""

    def __init__(self, actions: int) -> None:
        self.actions = actions
        self.weight: torch.Tensor | None = None

    def eval(self) -> ScriptedPolicy:
        return self

    def agent(self, obs: torch.Tensor) -> tuple[torch.Tensor]:
        flat = obs.reshape(obs.shape[0], -1).float()  # [B, D]
        if self.weight is None:
            self.weight = torch.randn(flat.shape[1], self.actions, generator=torch.Generator().manual_seed(0))
        return (torch.tanh(flat @ self.weight / flat.shape[1] ** 0.5),)  # [B, actions], near uniform: boards get won


def _probed(metrics: dict[str, float]) -> list[tuple[str, float]]:
    return sorted((key, value) for key, value in metrics.items()
                  if any(key == name or key.startswith(f"{name}/") for name in PROBED))


def probe() -> str:
    """The hash (module docstring)."""
    from omegaconf import OmegaConf

    from harness.registry import REGISTRY, load_entry
    from harness.runners.rl_eval import SELECT_LEVELS, TEST_LEVELS, evaluate

    digest, seen = hashlib.sha256(), set()
    for _, cfg in rl_configs():
        setting = (str(cfg.task.name), repr(OmegaConf.to_container(cfg.task, resolve=True)),
                   int(cfg.rl.eval_max_steps))
        if setting in seen:
            continue
        seen.add(setting)
        task = load_entry(REGISTRY.tasks[cfg.task.name].entry)(cfg)
        env = task.env_creator(task.env_config())
        actions = int(env.action_space.n)
        env.close()
        for levels in (TEST_LEVELS, SELECT_LEVELS):
            metrics = evaluate(ScriptedPolicy(actions), task, EPISODES, int(cfg.rl.eval_max_steps), seed=1,
                               levels=levels)
            digest.update(f"{setting!r}\n{levels}\n{_probed(metrics)!r}\n".encode())
    return digest.hexdigest()


if __name__ == "__main__":
    print(probe())
