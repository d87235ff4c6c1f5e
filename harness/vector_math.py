"""Warm up the CPU vector-math functions on one thread before a run uses them on several.

PyTorch's x86 CPU build computes elementwise tanh, exp, log, erf, sin, ... of large float tensors with the
vector-math (VML) functions of Intel's MKL, each call split across the intra-op threads. When the first call
of such a function in a process comes from two threads at once, some processes go on computing it with
different rounding in the last bit of some elements for the rest of their life. Measured on a 2-core Intel
Xeon with torch 2.13 (MKL 2024.2): ``torch.tanh`` of one fixed [2, 32, 10, 40] tensor, each in a fresh
process, gave a second result in 4 of 40 processes with 2 threads, none of 40 with one thread, and none of 60
after one call on an 8-element tensor (one thread) first; ``MKL_CBWR`` did not change it. In a training run
the differing last bit of TPR-RNN's first tanh grew to 1e-6 in the loss within 15 steps, enough to make two
runs of the same config, or a killed run resumed and its uninterrupted twin, disagree (PyTorch's
deterministic algorithms, which the runners switch on, do not cover it).

:func:`warm_vector_math` calls each of them once on a small tensor, which one thread computes, before a run
builds its data or its model (the launchers), and before ``harness retest`` or ``harness predict`` evaluates a
stored run. It changes no value a run computes, only which of the two roundings a process
gets: always the one that one thread gives.
"""

from __future__ import annotations

# The functions ATen may hand to MKL's VML on x86 builds (PyTorch's aten/src/ATen/cpu/vml.h, IMPLEMENT_VML_MKL).
VML_FUNCTIONS = ("acos", "asin", "atan", "cos", "erf", "erfc", "erfinv", "exp", "log", "log10", "log2", "sin",
                 "sqrt", "tan", "tanh", "trunc")
_WARMED = False


def warm_vector_math() -> None:
    """Call every VML-backed elementwise function once on 8 float32 and 8 float64 values (one thread each);
    later calls in this process do nothing."""
    global _WARMED
    if _WARMED:
        return
    import torch

    for dtype in (torch.float32, torch.float64):
        values = torch.linspace(0.1, 0.9, 8, dtype=dtype)  # inside every function's domain
        for name in VML_FUNCTIONS:
            getattr(torch, name)(values)
    _WARMED = True
