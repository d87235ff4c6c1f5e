"""The harness face of the two BoxWorld variants: RL tasks whose environment comes from a config dict.

``task.env`` holds the env's keyword arguments (see :mod:`tasks.boxworld.config`); the RL runner
(:mod:`harness.runners.rl`) registers :func:`make_boxworld` / :func:`make_bridge_boxworld` with RLlib.
RLlib calls them with ``num_envs`` added when it asks for a vector env (``rl.batched_env``), and they
then return the numpy batched implementation that steps all boards at once.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

from harness.errors import UserError

LEVELS_VERSION = "levels v2"  # bump when the same seed would draw other levels (v2: batched generators)


def _split(env_config: Any) -> tuple[dict[str, Any], int | None]:
    config = dict(env_config)
    num_envs = config.pop("num_envs", None)
    return config, None if num_envs is None else int(num_envs)


def make_boxworld(env_config: Any) -> Any:
    """One original-BoxWorld env, or ``num_envs`` boards batched when the config names ``num_envs``."""
    from tasks.boxworld.classic import BoxWorldEnv
    from tasks.boxworld.vector import BoxWorldVectorEnv

    config, num_envs = _split(env_config)
    return BoxWorldEnv(config) if num_envs is None else BoxWorldVectorEnv(num_envs=num_envs, config=config)


def make_bridge_boxworld(env_config: Any) -> Any:
    """One bridge-BoxWorld env, or ``num_envs`` boards batched when the config names ``num_envs``."""
    from tasks.boxworld.bridge import BridgeBoxWorldEnv
    from tasks.boxworld.vector import BridgeBoxWorldVectorEnv

    config, num_envs = _split(env_config)
    return BridgeBoxWorldEnv(config) if num_envs is None else BridgeBoxWorldVectorEnv(num_envs=num_envs, config=config)


class _BoxWorldTaskBase:
    has_vector_env = True
    reports_wins = True  # info["win"] and info["puzzle_type"] at each episode's end
    env_creator: Any = None

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        try:  # a bad env setting is the user's mistake: say which, before Ray starts
            self.env_creator(self.env_config()).close()
        except (TypeError, ValueError) as exc:
            raise UserError(f"bad 'task.env' for {cfg.task.name}: {exc}") from None

    def env_config(self) -> dict[str, Any]:
        config = OmegaConf.to_container(self.cfg.task.env, resolve=True)
        assert isinstance(config, dict)
        return config

    def describe_data(self) -> dict[str, Any]:
        """Levels come from the env's own generator, seeded per episode; its settings are in the config."""
        return {"source": f"generator: {self.cfg.task.name} levels ({LEVELS_VERSION})", "files": {},
                "fingerprint": LEVELS_VERSION}


class BoxWorldTask(_BoxWorldTaskBase):
    """Original BoxWorld (Zambaldi et al., ICLR 2019)."""

    env_creator = staticmethod(make_boxworld)


class BridgeBoxWorldTask(_BoxWorldTaskBase):
    """Bridge BoxWorld (Clift et al., ICLR 2020, §3.2 and §5)."""

    env_creator = staticmethod(make_bridge_boxworld)
