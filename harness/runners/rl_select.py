"""Which policy of an RL run is evaluated: the best one seen, not the last.

A policy trained at a constant rate can swing between iterations: CartPole agents reach the 500-step limit in
one iteration and fall well short of it a few iterations later, so the policy left when training stops is
often past its peak (the training win rate that stops a run is also a mean over the last five iterations'
episodes, played by several policies before the last update). Like the best validation checkpoint of a supervised run,
every ``rl.select_every`` iterations (and once more when training stops) the current policy plays
``rl.select_episodes`` episodes on the run's *selection* boards, the same boards every round and apart from
the final evaluation's (:mod:`harness.runners.rl_eval`); the best round so far (win rate, then return; a later
round wins a tie, having trained longer) keeps its weights, and the final evaluation plays that policy.
``rl.select_every: null`` evaluates the last policy instead.

Each round appends ``select/episode_return`` and ``select/win_rate`` to the run's curve. The kept weights are
written to ``<run>/checkpoints/best_policy.pt`` (write-then-rename) with the round's iteration, env steps and
score in results.json's ``selection``, so a resumed run keeps its best. A run killed between a selection and
the next algorithm checkpoint resumes from the checkpoint with a best policy that it has already seen, from
later in the same run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.runners.rl_eval import SELECT_LEVELS, evaluate
from harness.runs import Run

BEST_POLICY = "best_policy.pt"


def score(summary: dict[str, float]) -> tuple[float, float]:
    """What a selection round compares: (win rate, or 0 for envs without wins; mean return)."""
    return summary.get("eval/win_rate", 0.0), summary.get("eval/episode_return", float("-inf"))


class PolicySelector:
    """Keeps the best of a run's policies, judged on the selection boards (module docstring)."""

    def __init__(self, cfg: Any, task: Any, run: Run, results: dict[str, Any]) -> None:
        rl = cfg.rl
        self.every = None if rl.select_every is None else int(rl.select_every)
        self.episodes, self.max_steps, self.seed = int(rl.select_episodes), int(rl.eval_max_steps), int(cfg.seed)
        self.task, self.path = task, run.checkpoint_dir / BEST_POLICY
        self.best: dict[str, Any] | None = results.get("selection") if self.path.exists() else None
        self.last_round = -1  # the iteration of the last round played in this attempt

    @property
    def enabled(self) -> bool:
        return self.every is not None and self.episodes > 0

    def due(self, iteration: int) -> bool:
        return self.enabled and iteration % self.every == 0

    def play(self, module: Any, weights: dict[str, Any], iteration: int, steps: int) -> dict[str, float]:
        """One round with the policy ``module`` holds (``weights``, its learner state): the round's curve row;
        the policy is kept when it scores at least the best so far. Returns the row (``select/*``)."""
        summary = evaluate(module, self.task, self.episodes, self.max_steps, self.seed, levels=SELECT_LEVELS)
        self.last_round = iteration
        row = {key.replace("eval/", "select/", 1): value for key, value in summary.items()
               if key in ("eval/episode_return", "eval/win_rate")}
        if self.best is None or score(summary) >= (self.best["win_rate"], self.best["episode_return"]):
            self._keep(weights)
            self.best = {"iteration": iteration, "env_steps": steps, "win_rate": score(summary)[0],
                         "episode_return": score(summary)[1], "episodes": self.episodes}
        return row

    def forget(self) -> None:
        """Drop a kept policy of an earlier attempt (a run that starts training over)."""
        self.path.unlink(missing_ok=True)
        self.best = None

    def _keep(self, weights: dict[str, Any]) -> None:
        import numpy as np
        import torch

        fresh = self.path.with_name(BEST_POLICY + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({name: torch.as_tensor(np.array(value, copy=True)) for name, value in weights.items()}, fresh)
        fresh.replace(self.path)

    def best_weights(self) -> dict[str, Any] | None:
        """The kept policy's learner state (None before the first round)."""
        import torch

        if self.best is None or not Path(self.path).exists():
            return None
        return torch.load(self.path, weights_only=True)
