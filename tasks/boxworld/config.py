"""Plain configuration records of the two BoxWorld variants (ints, bools and int ranges, YAML-friendly).

Both envs take either keyword arguments or one mapping (RLlib passes its ``env_config`` dict positionally);
unknown keys raise ``TypeError`` so a misspelt YAML key is not silently ignored. Ranges are inclusive
``(min, max)`` pairs sampled uniformly per episode; a single int means a fixed value; a YAML list of two ints
is read as a range. A horizon of ``None`` or ``-1`` means no horizon (the reference convention: ``episode_horizon``
-1 in the ``env_config`` of dmurfet/2simplicialtransformer, notebooks/training.ipynb).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Self

IntRange = tuple[int, int]

MAX_COLOUR: int = 20  # colour indices are 0 (the gem) .. 20; 20 key/lock hues (palette.N_HUES)


def as_range(value: int | IntRange | list[int], name: str) -> IntRange:
    """Normalise an int or an inclusive (min, max) pair to a validated ``(min, max)`` tuple."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int or a (min, max) pair, got {value!r}")
    if isinstance(value, int):
        lo = hi = value
    elif isinstance(value, tuple | list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        lo, hi = int(value[0]), int(value[1])
    else:
        raise TypeError(f"{name} must be an int or a (min, max) pair, got {value!r}")
    if lo > hi:
        raise ValueError(f"{name}: min {lo} > max {hi}")
    return lo, hi


def as_int(value: Any, name: str) -> int:
    """An int setting (a bool or a float is a mistake, not a number of cells or boxes)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return value


def as_bool(value: Any, name: str) -> bool:
    """A yes/no setting (a string such as 'no' would read as true)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be true or false, got {value!r}")
    return value


def as_horizon(value: int | None) -> int | None:
    """``None`` and ``-1`` mean no horizon; otherwise a positive number of steps."""
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"horizon must be a positive int, -1 or None, got {value!r}")
    return value


class _FromMapping:
    """Build a frozen config from an optional mapping plus keyword overrides."""

    @classmethod
    def build(cls, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Self:
        merged = {**dict(config or {}), **kwargs}
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(merged) - known)
        if unknown:
            raise TypeError(f"{cls.__name__}: unknown keys {unknown}; valid: {sorted(known)}")
        return cls(**merged)


@dataclass(frozen=True)
class BoxWorldConfig(_FromMapping):
    """Original BoxWorld (defaults of google-deepmind/pycolab, pycolab/examples/research/box_world/box_world.py).

    n: room side (the observation adds a 1-cell border: (n+2) x (n+2)); solution_length: boxes on the path from
    the loose key to the gem, gem box included; num_distractors: forward distractor branches (each starts with a
    lock whose colour is a key of the solution path); distractor_length: boxes per branch; num_backward: backward
    distractors (a solution-key colour inside a box whose lock is never obtainable); horizon: steps before
    truncation (pycolab: 120); seed: used on the first ``reset()`` without a seed.
    """

    n: int = 12
    solution_length: int | IntRange = (1, 4)
    num_distractors: int | IntRange = (0, 4)
    distractor_length: int = 1
    num_backward: int | IntRange = 0
    horizon: int | None = 120
    seed: int | None = None

    def __post_init__(self) -> None:
        sol = as_range(self.solution_length, "solution_length")
        object.__setattr__(self, "solution_length", sol)
        object.__setattr__(self, "num_distractors", as_range(self.num_distractors, "num_distractors"))
        object.__setattr__(self, "num_backward", as_range(self.num_backward, "num_backward"))
        object.__setattr__(self, "horizon", as_horizon(self.horizon))
        for name in ("n", "distractor_length"):
            as_int(getattr(self, name), name)
        for name in ("num_distractors", "num_backward"):
            if getattr(self, name)[0] < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.n < 6:
            raise ValueError(f"n must be >= 6 (room for the gem box and the loose key), got {self.n}")
        if sol[0] < 1:
            raise ValueError(f"solution_length must be >= 1, got {sol}")
        if sol[1] > MAX_COLOUR - 1:  # the path's keys take colours 1..L of the 19 a level can draw
            raise ValueError(f"solution_length must be <= {MAX_COLOUR - 1} (one key colour per box), got {sol}")
        # pycolab draws distractor colours from {L+1, ..., 19}; a chain needs two of them (content != lock)
        spare = MAX_COLOUR - 1 - sol[1]
        needed = 2 if self.distractor_length > 1 else 1
        if (self.num_distractors[1] > 0 or self.num_backward[1] > 0) and spare < needed:
            raise ValueError("solution_length too long to leave colours for the distractors")
        if self.distractor_length < 1:
            raise ValueError(f"distractor_length must be >= 1, got {self.distractor_length}")


@dataclass(frozen=True)
class BridgeBoxWorldConfig(_FromMapping):
    """Bridge BoxWorld (the 2-simplicial Transformer paper §3.2 and §5; dmurfet/2simplicialtransformer).

    Key names follow the reference notebook's ``env_config`` (notebooks/training.ipynb); defaults are the paper's
    training setting: a 7 x 9 board, solution length L ~ U{1..3} for each of the two paths, a gem box with two
    locks (``multi_lock``), a bridge in half of the episodes (``bridge_prob``), no other distractors, no horizon.
    ``episode_horizon`` is the reference's name for ``horizon``.
    """

    num_rows: int = 7
    num_cols: int = 9
    min_sol_length: int = 1
    max_sol_length: int = 3
    multi_lock: bool = True
    has_bridge: bool = True
    bridge_prob: float = 0.5
    max_decoy_paths: int = 0
    max_decoy_length: int = 1
    horizon: int | None = None
    episode_horizon: int | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("num_rows", "num_cols", "min_sol_length", "max_sol_length", "max_decoy_paths",
                     "max_decoy_length"):
            as_int(getattr(self, name), name)
        for name in ("multi_lock", "has_bridge"):
            as_bool(getattr(self, name), name)
        if isinstance(self.bridge_prob, bool) or not isinstance(self.bridge_prob, int | float):
            raise TypeError(f"bridge_prob must be a number in [0, 1], got {self.bridge_prob!r}")
        horizon = as_horizon(self.horizon)
        other = as_horizon(self.episode_horizon)
        if horizon is not None and other is not None and horizon != other:
            raise ValueError(f"horizon ({horizon}) and episode_horizon ({other}) name one setting; give one of them")
        if horizon is None:
            horizon = other
        object.__setattr__(self, "horizon", horizon)
        object.__setattr__(self, "episode_horizon", horizon)
        if self.num_rows < 3 or self.num_cols < 4:
            raise ValueError("the board needs at least 3 rows and 4 columns")
        if not 1 <= self.min_sol_length <= self.max_sol_length:
            raise ValueError(f"need 1 <= min_sol_length <= max_sol_length, got {self.min_sol_length}, "
                             f"{self.max_sol_length}")
        if not 0.0 <= self.bridge_prob <= 1.0:
            raise ValueError(f"bridge_prob must be in [0, 1], got {self.bridge_prob}")
        if self.max_decoy_paths < 0 or self.max_decoy_length < 1:
            raise ValueError("need max_decoy_paths >= 0 and max_decoy_length >= 1")
        slots = len(self.slots())
        need = self.max_sol_length + 1 + self.max_decoy_paths * self.max_decoy_length
        colours = self.max_sol_length + self.max_decoy_paths * self.max_decoy_length
        if self.multi_lock:
            slots -= 1  # the slot below the gem box holds the gem's second row
            need += self.max_sol_length + (1 if self.has_bridge else 0)
            colours += self.max_sol_length
            if not self.gem_slots():
                raise ValueError("no box slot leaves room for a two-row gem box")
        if need > slots:
            raise ValueError(f"the worst case needs {need} box slots but the board has {slots}")
        if colours > MAX_COLOUR:
            raise ValueError(f"the worst case needs {colours} key colours but there are {MAX_COLOUR}")

    def slots(self) -> list[tuple[int, int]]:
        """Box (key) positions (x, y): x in range(1, cols-1, 3), y in range(1, rows, 2) (env/bridge_boxworld.py)."""
        return [(x, y) for x in range(1, self.num_cols - 1, 3) for y in range(1, self.num_rows, 2)]

    def gem_slots(self) -> list[tuple[int, int]]:
        """Slots allowed for the two-row gem box: x <= cols-3 and y <= rows-3 (paper §5: not in the last column
        or bottom row)."""
        return [(x, y) for x, y in self.slots() if x <= self.num_cols - 3 and y <= self.num_rows - 3]
