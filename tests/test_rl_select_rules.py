"""Which policy an RL run evaluates (harness/runners/rl_select.py), on scripted selection rounds: the rule of the
module's docstring, a best-checkpoint selection as in supervised training, with the evaluation of Espeholt et al.
2018 ("IMPALA", §5) done on boards of its own:

* a round plays ``rl.select_episodes`` episodes of ``rl.eval_max_steps`` steps at most on the *selection* boards
  (``SELECT_LEVELS``, never the final evaluation's ``TEST_LEVELS``), with the run's seed;
* rounds compare (win rate, then mean return) lexicographically; a later round wins a tie;
* rounds are due every ``rl.select_every`` iterations; none with ``select_every: null`` or ``select_episodes: 0``;
* the kept record carries the round's iteration, env steps, win rate, return and episodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from harness.runners import rl_select
from harness.runners.rl_eval import SELECT_LEVELS
from harness.runners.rl_select import PolicySelector, score
from harness.runs import Run


def _selector(tmp_path: Path, every: int | None = 5, episodes: int = 12) -> PolicySelector:
    cfg = OmegaConf.create({"seed": 4, "rl": {"select_every": every, "select_episodes": episodes,
                                              "eval_max_steps": 77}})
    return PolicySelector(cfg, "the task", Run(tmp_path), {})


def test_score_is_win_rate_then_return() -> None:
    assert score({"eval/win_rate": 0.5, "eval/episode_return": 1.0}) == (0.5, 1.0)
    assert score({"eval/episode_return": 3.0}) == (0.0, 3.0)  # an env without wins
    assert score({}) == (0.0, float("-inf"))


def test_rounds_play_the_selection_boards_and_keep_the_best_by_win_rate_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round scores (win rate, return): (0.25, 9), (0.5, 1) kept: a higher win rate beats a higher return,
    (0.5, 0.5) not kept, (0.5, 1) kept again (a tie: the later round)."""
    rounds = iter([(0.25, 9.0), (0.5, 1.0), (0.5, 0.5), (0.5, 1.0)])
    calls: list[tuple[Any, ...]] = []

    def scripted(module: Any, task: Any, episodes: int, max_steps: int, seed: int, levels: int = 0) -> dict[str, float]:
        calls.append((module, task, episodes, max_steps, seed, levels))
        win, ret = next(rounds)
        return {"eval/win_rate": win, "eval/episode_return": ret, "eval/episodes": float(episodes),
                "eval/win_rate/1-0-0": 1.0}

    monkeypatch.setattr(rl_select, "evaluate", scripted)
    selector = _selector(tmp_path)
    kept = []
    for n in range(4):
        row = selector.play(f"policy {n}", {"w": np.array(float(n))}, iteration=5 * (n + 1), steps=100 * (n + 1))
        assert row == {"select/win_rate": [0.25, 0.5, 0.5, 0.5][n], "select/episode_return": [9.0, 1.0, 0.5, 1.0][n]}
        kept.append(selector.best["iteration"])
    assert kept == [5, 10, 10, 20]
    assert selector.best == {"iteration": 20, "env_steps": 400, "win_rate": 0.5, "episode_return": 1.0, "episodes": 12}
    assert float(selector.best_weights()["w"]) == 3.0
    assert calls == [(f"policy {n}", "the task", 12, 77, 4, SELECT_LEVELS) for n in range(4)]


def test_rounds_are_due_every_select_every_iterations_and_never_when_off(tmp_path: Path) -> None:
    selector = _selector(tmp_path, every=5)
    assert [i for i in range(1, 21) if selector.due(i)] == [5, 10, 15, 20]
    assert not _selector(tmp_path, every=None).enabled
    off = _selector(tmp_path, every=5, episodes=0)
    assert not off.enabled and not off.due(5)


def test_an_env_without_wins_is_selected_on_return(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``eval/win_rate`` in the summaries: the record's win rate is 0 and a round with a higher return is kept."""
    returns = iter([2.0, 5.0, 3.0])
    monkeypatch.setattr(rl_select, "evaluate", lambda *args, **kwargs: {"eval/episode_return": next(returns)})
    selector = _selector(tmp_path)
    kept = []
    for n in range(3):
        assert selector.play("policy", {"w": np.array(float(n))}, iteration=n + 1, steps=n) == {
            "select/episode_return": [2.0, 5.0, 3.0][n]}
        kept.append((selector.best["iteration"], selector.best["win_rate"], selector.best["episode_return"]))
    assert kept == [(1, 0.0, 2.0), (2, 0.0, 5.0), (2, 0.0, 5.0)]
