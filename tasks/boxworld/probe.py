"""A fingerprint of what the BoxWorld envs compute, for showing that an edit to their code changes nothing an RL
run saw (``harness carry ... --probe tasks.boxworld.probe``; :mod:`harness.code_changes`).

RL runs cannot be trained again bit for bit (the learner and the env runners are separate processes), so an
edit to the env code is shown instead on the envs themselves: for each env setting of the shipped RL runs, the
single env and the batched env (as RLlib builds them, :mod:`tasks.boxworld.task`) are reset with fixed seeds and
stepped with fixed random actions, and every observation, reward, end flag and episode info goes into one hash.
The same hash before and after an edit means the levels drawn and the rules applied are the same, step for step.

    python -m tasks.boxworld.probe            # prints the hash
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

# The env settings of the shipped RL runs (results/boxworld, results/bridge_boxworld: task.env in config.yaml), the
# first and third; the second and fourth add distractors, backward distractors, decoys and a horizon, so that more of
# the generators' code is exercised.
SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("boxworld", {"n": 6, "solution_length": 1, "num_distractors": 0, "distractor_length": 1, "num_backward": 0,
                  "horizon": 120}),
    ("boxworld", {"n": 12, "solution_length": [1, 4], "num_distractors": [0, 4], "distractor_length": 1,
                  "num_backward": [0, 1], "horizon": 120}),
    ("bridge_boxworld", {"num_rows": 7, "num_cols": 9, "min_sol_length": 1, "max_sol_length": 3,
                         "multi_lock": True, "has_bridge": True, "bridge_prob": 0.5, "max_decoy_paths": 0,
                         "horizon": None}),
    ("bridge_boxworld", {"num_rows": 7, "num_cols": 9, "min_sol_length": 1, "max_sol_length": 3,
                         "multi_lock": False, "has_bridge": True, "bridge_prob": 0.5, "max_decoy_paths": 2,
                         "max_decoy_length": 1, "horizon": 50}),
)
STEPS = 400  # per env and setting
BOARDS = 16  # of the batched env


def _feed(digest: Any, *arrays: Any) -> None:
    for array in arrays:
        digest.update(np.ascontiguousarray(np.asarray(array)).tobytes())


def _infos(info: dict[str, Any]) -> str:
    return repr(sorted((key, np.asarray(value).tolist()) for key, value in info.items()))


def probe(steps: int = STEPS, boards: int = BOARDS) -> str:
    """The hash (module docstring)."""
    from tasks.boxworld.task import make_boxworld, make_bridge_boxworld

    makers = {"boxworld": make_boxworld, "bridge_boxworld": make_bridge_boxworld}
    digest = hashlib.sha256()
    for number, (task, env_config) in enumerate(SETTINGS):
        actions = np.random.default_rng(number)
        single = makers[task](dict(env_config))
        obs, info = single.reset(seed=number)
        _feed(digest, obs)
        digest.update(_infos(info).encode())
        for _ in range(steps):
            obs, reward, terminated, truncated, info = single.step(int(actions.integers(4)))
            _feed(digest, obs, reward, terminated, truncated)
            digest.update(_infos(info).encode())
            if terminated or truncated:
                obs, info = single.reset()
                _feed(digest, obs)
        single.close()
        batched = makers[task]({**env_config, "num_envs": boards})
        obs, info = batched.reset(seed=number)
        _feed(digest, obs)
        for _ in range(steps):
            obs, reward, terminated, truncated, info = batched.step(actions.integers(4, size=boards))
            _feed(digest, obs, reward, terminated, truncated)
            digest.update(_infos(info).encode())
        batched.close()
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    print(probe())
