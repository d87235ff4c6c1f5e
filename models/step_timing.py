"""Timing of training steps for the model benchmarks (``make perf``), and their work in matrix products."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode


def median_step_ms(steps: dict[str, Callable[[], None]], repeats: int, warmup: int,
                   device: torch.device) -> dict[str, float]:
    """Median milliseconds of each named step over ``repeats`` timings after ``warmup`` untimed ones. The steps
    take turns, one call each per round, so that a load on the machine slows them alike; on CUDA the device
    is synchronised around each call, so the time covers the kernels the step launched."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_index in range(warmup + repeats):
        for name, step in steps.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            if round_index >= warmup:
                times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: statistics.median(values) for name, values in times.items()}


def step_gflop(step: Callable[[], None]) -> float:
    """GFLOP of one call of ``step`` in matrix products and convolutions (``mm``, ``bmm``, ``addmm``, convolutions,
    forward and backward as ``torch.utils.flop_counter`` counts them); elementwise work is not counted."""
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops() / 1e9
