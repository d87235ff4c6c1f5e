"""A fingerprint of what the stacked trainers compute, for showing that an edit to their code changes nothing a
stacked run computed (``harness carry ... --probe harness.runners.stacked_probe``; :mod:`harness.code_changes`).

The shipped stacks trained for about an hour each on the CPU (or on a GPU), too long to train again as evidence.
This trains three small stacks instead, one per trainer, at the ``smoke`` profile on generated Relations Game
data, in a temporary store with no data folder (so that nothing outside the project enters): PrediNet seeds 0
and 1 (:class:`~harness.runners.stacked.StackedTrainer`), seed 0 on two relations
(:class:`~harness.runners.stacked_data.MixedStackedTrainer`) and seed 0 at two learning rates
(:class:`~harness.runners.stacked_optim.OptimStackedTrainer`). Every member's curves (timings aside), test
metrics and best weights go into one hash.

    python -m harness.runners.stacked_probe          # prints the hash (about a minute on 2 cores)
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

STACKS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("seed=0",), ("seed=1",)),
    (("seed=0", "task.tasks=[same]"), ("seed=0", "task.tasks=[between]")),
    (("seed=0", "optim.lr=0.001"), ("seed=0", "optim.lr=0.003")),
)
TIMING = ("per_s", "time", "_s")  # curve columns that measure the machine, not the computation


def _member_digest(run: Path, digest: Any) -> None:
    import torch

    from harness.runners.supervised import load_checkpoint

    with (run / "metrics.csv").open() as handle:
        for row in csv.DictReader(handle):
            digest.update(repr(sorted((k, v) for k, v in row.items() if not any(t in k for t in TIMING))).encode())
    metrics = json.loads((run / "results.json").read_text())["metrics"]
    digest.update(repr(sorted((k, v) for k, v in metrics.items() if not any(t in k for t in TIMING))).encode())
    state = load_checkpoint(run / "checkpoints" / "best.ckpt")["state_dict"]
    for name in sorted(state):
        digest.update(name.encode() + state[name].to(torch.float64).numpy().tobytes())


def probe() -> str:
    """The hash (module docstring)."""
    from harness.config import compose
    from harness.runners.stacked_launch import launch_stack

    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="stacked-probe-") as folder:
        root = Path(folder)
        (root / "data").mkdir()
        os.environ.update(HARNESS_DATA_DIR=str(root / "data"), HARNESS_CACHE_DIR=str(root / "cache"),
                          WANDB_MODE="disabled")
        for number, members in enumerate(STACKS):
            stack = [compose("relations_game", "predinet", "smoke", ["train.threads=1", *overrides])
                     for overrides in members]
            store = root / f"stack{number}"
            if launch_stack(stack, runs_dir=store) != 0:
                raise RuntimeError(f"stack {number} did not complete")
            members = sorted((store / "relations_game" / "predinet").iterdir())
            if len(members) != len(stack):
                raise RuntimeError(f"stack {number}: {len(members)} runs stored for {len(stack)} members")
            for run in members:
                _member_digest(run, digest)
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    print(probe())
