"""The reference's initialisation (google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb): every weight ~ truncated
normal with stddev 0.1, every bias = 0.1, in the input conv, the central module and the output MLP alike.

The notebook uses Sonnet 2's ``TruncatedNormal(stddev=0.1)``, i.e. ``tf.random.truncated_normal``: a
normal N(0, 0.1^2) whose draws beyond 2 stddev are re-drawn. The values therefore lie in [-0.2, 0.2] and
their actual standard deviation is 0.1 * 0.8796 = 0.088 (the truncated normal's variance factor
1 - 2*2*phi(2) / (2*Phi(2) - 1) = 0.7737). ``torch.nn.init.trunc_normal_`` with a = -2 std, b = 2 std
samples the same distribution.

Which parameters are biases is read from the name: a parameter whose name ends in ``bias`` is a bias,
every other parameter (linear / conv weights, MHA's per-head combination weights) is a weight. A
module with a different rule (a future central module with layer norms, say) defines
``reset_parameters_paper(self)``; :func:`paper_init_` then calls it and leaves that subtree alone.
"""

from __future__ import annotations

import torch
from torch import nn

WEIGHT_STD = 0.1  # stddev of the normal before truncation (the TF / Sonnet argument)
TRUNCATE_AT = 2.0  # in stddevs, as tf.random.truncated_normal
BIAS_VALUE = 0.1


def truncated_normal_(tensor: torch.Tensor, std: float = WEIGHT_STD) -> torch.Tensor:
    """In place: N(0, std^2) conditioned on |x| <= 2 std (TF's ``truncated_normal``)."""
    with torch.no_grad():
        return nn.init.trunc_normal_(tensor, mean=0.0, std=std, a=-TRUNCATE_AT * std, b=TRUNCATE_AT * std)


def paper_init_(module: nn.Module) -> nn.Module:
    """Re-initialise every parameter of ``module`` (recursively) the reference's way; returns ``module``."""
    hook = getattr(module, "reset_parameters_paper", None)
    if callable(hook):
        hook()
        return module
    with torch.no_grad():
        for name, param in module.named_parameters(recurse=False):
            if name.endswith("bias"):
                param.fill_(BIAS_VALUE)
            else:
                truncated_normal_(param)
    for child in module.children():
        paper_init_(child)
    return module
