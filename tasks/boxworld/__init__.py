"""BoxWorld (Zambaldi et al. 2019) and bridge BoxWorld (Clift et al. 2020) as seedable gymnasium envs.

Importing this package registers ``harness/BoxWorld-v0`` and ``harness/BridgeBoxWorld-v0`` (each with a
``vector_entry_point`` for ``gym.make_vec(..., vectorization_mode="vector_entry_point")``), so
``gym.make("tasks.boxworld:harness/BridgeBoxWorld-v0")`` works in a fresh process. See README.md.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from tasks.boxworld.bridge import BridgeBoxWorldEnv
from tasks.boxworld.classic import BoxWorldEnv
from tasks.boxworld.config import BoxWorldConfig, BridgeBoxWorldConfig

BOXWORLD_ID = "harness/BoxWorld-v0"
BRIDGE_BOXWORLD_ID = "harness/BridgeBoxWorld-v0"

_ENVS = {
    BOXWORLD_ID: ("tasks.boxworld.classic:BoxWorldEnv", "tasks.boxworld.vector:BoxWorldVectorEnv"),
    BRIDGE_BOXWORLD_ID: ("tasks.boxworld.bridge:BridgeBoxWorldEnv", "tasks.boxworld.vector:BridgeBoxWorldVectorEnv"),
}
for _id, (_entry, _vector_entry) in _ENVS.items():
    if _id not in registry:
        register(id=_id, entry_point=_entry, vector_entry_point=_vector_entry)

__all__ = [
    "BOXWORLD_ID",
    "BRIDGE_BOXWORLD_ID",
    "BoxWorldConfig",
    "BoxWorldEnv",
    "BridgeBoxWorldConfig",
    "BridgeBoxWorldEnv",
]
