"""Which of TPR-RNN's memory operations run (``model.operations``): the ablations of Schlag & Schmidhuber 2018,
§6 "Ablation Study" and Table 3 (write only; write + move; write + backlink; all three, the default).

The update F_t = F_{t-1} + ΔW + ΔM + ΔB (eqs. 4-6) sums three operations, each keyed by its own role vector:

    ΔW = e1 (x) r1 (x) (e2 - w^)      write      (eq. 10)
    ΔM = e1 (x) r2 (x) (w^ - m^)      move       (eq. 12), m^ = F . (e1, r2)
    ΔB = e2 (x) r3 (x) (e1 - b^)      backlink   (eq. 14), b^ = F . (e2, r3)

Setting a role vector to zero removes its operation exactly: its tensor is zero, whatever the filler, and no
read ever weighs it (a read's weight on a write is the product of the entity and the role dot products). So
an ablated model is the full model with the update module's r2 (move) and/or r3 (backlink) multiplied by zero,
in every memory implementation (``dense``, ``factored``, ``parallel``) and on every route (the story reader and
the sequence core). The MLP that would compute a removed role is still built, so the parameters are created
in the full model's order and a seed gives the same initial weights as the full model; it receives zero
gradients and so never changes (the paper does not say whether its ablated models kept these parameters).

The inference module's three reads (eqs. 17-19) are unchanged: Table 3 ablates memory operations only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.tpr_rnn.core import TPRCore
from models.tpr_rnn.model import TPRRNN, TPRReasoning

OPERATIONS = ("write", "move", "backlink")
ROLE_OF = {"write": 0, "move": 1, "backlink": 2}  # the update module's role vectors r1, r2, r3


def check_operations(operations: Any) -> tuple[str, ...]:
    """``model.operations`` as a tuple; the write is required (without it nothing is ever stored)."""
    chosen = tuple(str(name) for name in operations)
    unknown = [name for name in chosen if name not in OPERATIONS]
    if unknown:
        raise ValueError(f"model.operations: unknown operation(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(OPERATIONS)}")
    if "write" not in chosen:
        raise ValueError("model.operations must include write (move and backlink read what writes stored)")
    return chosen


def keep_operations(model: TPRReasoning, operations: Any) -> TPRReasoning:
    """Remove the operations that ``operations`` leaves out, by zeroing their role vectors (see the module
    docstring); the model itself is returned, unchanged when all three are kept."""
    chosen = check_operations(operations)
    if set(chosen) == set(OPERATIONS):
        return model
    keep = torch.tensor([float(name in chosen) for name in OPERATIONS])  # [3]: r1, r2, r3

    def zero_removed(module: nn.Module, inputs: Any, roles: torch.Tensor) -> torch.Tensor:
        return roles * keep.to(roles).view(3, *([1] * (roles.dim() - 1)))  # roles [3, ..., d_r]

    model.update_roles.register_forward_hook(zero_removed)
    model.operations = chosen
    return model


def story_model(cfg: Any, info: dict[str, Any]) -> TPRReasoning:
    """TPR-RNN on the ``story`` interface (:class:`models.tpr_rnn.model.TPRRNN`) with ``model.operations``."""
    return keep_operations(TPRRNN(cfg, info), cfg.get("operations", OPERATIONS))


def sequence_core(cfg: Any) -> TPRReasoning:
    """TPR-RNN's sequence core (:class:`models.tpr_rnn.core.TPRCore`) with ``model.operations``."""
    return keep_operations(TPRCore(cfg), cfg.get("operations", OPERATIONS))
