"""CartPole (gymnasium ``CartPole-v1``): the first rung of the RL ladder.

Not a reasoning task. It checks the RL runner end to end on a problem IMPALA is known to solve in a
few ten thousand steps (about 70k with Adam on this kind of 2-core machine), so that a BoxWorld agent that does not
learn points at the agent or the environment, not at the runner. The measure is the episode return (500 =
balanced for the whole episode); an episode that lasts to CartPole-v1's limit of 500 steps without the pole
falling or the cart leaving the track is also reported as a *win* (``info["win"]`` at the episode's end), so
that a run can stop once it has solved the task (``rl.stop_at_win_rate``): trained on at a constant learning
rate, IMPALA's CartPole policies can collapse after solving it.
"""

from __future__ import annotations

from typing import Any

ENV_ID = "CartPole-v1"


def make_cartpole(env_config: dict[str, Any]) -> Any:
    """RLlib's env creator: one CartPole (no vector env of our own) that reports its wins."""
    import gymnasium as gym

    from tasks.cartpole.win import WinAtTimeLimit

    return WinAtTimeLimit(gym.make(ENV_ID))


class CartPoleTask:
    """The harness face of CartPole: an env creator and its (empty) config."""

    has_vector_env = False
    reports_wins = True  # info["win"] at each episode's end: balanced until the time limit
    env_creator = staticmethod(make_cartpole)

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg

    def env_config(self) -> dict[str, Any]:
        return {}

    def describe_data(self) -> dict[str, Any]:
        import gymnasium as gym

        return {"source": f"gymnasium {ENV_ID}", "files": {}, "fingerprint": f"gymnasium {gym.__version__} {ENV_ID}"}
