"""A CartPole episode's outcome as a win: balanced until the time limit.

gymnasium's ``CartPole-v1`` ends an episode in one of two ways: *terminated* (the pole tipped past 12 degrees
or the cart left the track) or *truncated* (its ``TimeLimit`` of 500 steps ran out with the pole still up).
The second is what solving the task means for that episode, so :class:`WinAtTimeLimit` adds
``info["win"] = truncated and not terminated`` on the last step of every episode, the key the RL runner's
win rates and ``rl.stop_at_win_rate`` read (``harness/runners/rl_metrics.py``). Nothing else changes:
observations, rewards and the episode's end are the wrapped env's own.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class WinAtTimeLimit(gym.Wrapper):
    """``info["win"]`` on an episode's last step: True when it was truncated by the time limit, not terminated."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = {**info, "win": bool(truncated and not terminated)}
        return obs, reward, terminated, truncated, info
