"""The registry of central modules: the part of a Relations Game model between the conv encoder and
the output MLP (Shanahan et al., ICML 2020, §4 and Fig. 3: "identical ... and differ only in the central
module").

A central module knows nothing of images or tasks. Its contract:

    __init__(self, n_entities: int, d_entity: int, cfg)   cfg: the model's config node (heads, ...)
    forward(entities [B, N, D]) -> [B, out_dim]
    out_dim: int

To add one (as the relational and 2-simplicial Transformer blocks were), write its file in this folder and add one
entry to :data:`CENTRAL_MODULES`; ``model.central: <name>`` then selects it, nothing else changes.
Its parameters get the paper's initialisation unless it defines ``reset_parameters_paper()``
(see :mod:`models.relational.init`).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from models.relational.mha import MultiHeadAttention
from models.relational.mlp import MLP1, MLP2
from models.relational.predinet import PrediNet
from models.relational.relation_net import RelationNet
from models.relational.simplicial import SimplicialTransformer
from models.relational.transformer import RelationalTransformer

CENTRAL_MODULES: dict[str, type] = {
    "predinet": PrediNet,
    "mlp1": MLP1,
    "mlp2": MLP2,
    "relation_net": RelationNet,
    "mha": MultiHeadAttention,
    "relational": RelationalTransformer,
    "simplicial": SimplicialTransformer,
}


def build_central(name: str, n_entities: int, d_entity: int, cfg: Any) -> nn.Module:
    """The central module registered as ``name``, for N = n_entities entities of D = d_entity features."""
    if name not in CENTRAL_MODULES:
        raise ValueError(f"model.central must be one of {sorted(CENTRAL_MODULES)}, got {name!r}")
    module = CENTRAL_MODULES[name](n_entities, d_entity, cfg)
    if not isinstance(getattr(module, "out_dim", None), int):
        raise TypeError(f"central module {name!r} ({type(module).__name__}) has no integer attribute out_dim")
    return module
