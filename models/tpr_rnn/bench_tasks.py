"""Training throughput of TPR-RNN on each bAbI task, the tasks measured side by side in one process.

    python -m models.tpr_rnn.bench_tasks [--tasks 1 3 16 19] [--threads 1] [--repeats 20] [--memory parallel]

Each task is composed and loaded as ``harness bench --task babi --model tpr_rnn task.babi_id=N`` composes and
loads it at the ``cpu`` profile (the official files when ``HARNESS_DATA_DIR`` has them, else the generator), and
the model is built from that task's vocabulary and story limit (task 3 keeps 130 statements, the others 70). A
timed step is a whole training step on the task's own training examples, batch ``train.batch_size``, in a
seeded random order: forward, cross-entropy, backward, global-norm clipping (``optim.grad_clip``) and the
optimiser's update. The tasks take turns, one step each per round, so that a load on the machine slows them
alike; each keeps its median over ``--repeats`` rounds after ``--warmup``. The figures are training examples per
second and its ratio to task 1's (the target: every task within 3x of task 1, ratio >= 0.33), and the real
statements (story_len, padding not counted) read per second, with the mean per example over the timed batches.
The second ratio says how much a statement costs beside task 1's: a model that does the same work per statement
on every task stays at or below the ratio of the mean statements (task 1's 6.0 over task 3's 49.0 in en-10k:
0.12 of task 1's examples/s), whatever its implementation.

A run's own ``train/examples_per_s`` also counts data loading, logging and validation; this measures the model's
step alone, which is what the story length changes. The last line is one JSON object.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F

from harness.bench_args import at_least, bench_parser
from harness.config import compose
from harness.data import TARGET
from harness.optim import build_optimizer
from harness.registry import load_entry
from harness.runners.build import prepare_task
from models.step_timing import median_step_ms


def task_step(babi_id: int, memory: str, seed: int = 0,
              trim: bool = False) -> tuple[Callable[[], None], int, int, float]:
    """(one training step of TPR-RNN on task ``babi_id``, batch size, the first timed batch's story length (the
    stored one; with ``trim``, that batch's longest story), mean real statements per example over the timed
    batches). ``trim``: each batch's statement axis is cut to its longest story (``task.trim_batches=true``; the
    model reads the same statements, ``story_len`` masks the rest)."""
    overrides = [f"task.babi_id={babi_id}", f"model.memory={memory}", f"task.trim_batches={str(trim).lower()}"]
    composed = compose("babi", "tpr_rnn", "cpu", overrides)
    cfg = composed.cfg
    data = prepare_task(composed).task.load()
    pl.seed_everything(seed, verbose=False)
    model = load_entry(composed.model.interfaces[composed.task.interface])(cfg.model, data.info)
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    batch_size = int(cfg.train.batch_size)
    order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(seed)).tolist()
    batches = [data.train.__getitems__(order[i:i + batch_size])
               for i in range(0, len(order) - batch_size + 1, batch_size)][:64]
    cycle = itertools.cycle(batches)

    def step() -> None:
        batch = next(cycle)
        optimizer.zero_grad(set_to_none=True)
        logits = model(**{name: t for name, t in batch.items() if name != TARGET})  # [B, C]
        F.cross_entropy(logits, batch[TARGET]).backward()
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), float(cfg.optim.grad_clip))
        optimizer.step()
    statements = float(torch.cat([batch["story_len"] for batch in batches]).double().mean())
    return step, batch_size, int(batches[0]["story"].shape[1]), statements


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = bench_parser("models.tpr_rnn.bench_tasks", __doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", type=at_least(1, 20), default=list(range(1, 21)),
                        help="bAbI task ids (1 to 20)")
    parser.add_argument("--threads", type=at_least(1), default=1, help="torch threads")
    parser.add_argument("--repeats", type=at_least(1), default=20)
    parser.add_argument("--warmup", type=at_least(0), default=3)
    parser.add_argument("--memory", default="parallel", choices=["parallel", "factored", "dense"])
    parser.add_argument("--trim", action="store_true",
                        help="cut each batch's statement axis to its longest story (task.trim_batches=true; by default "
                             "runs pad to the task's longest)")
    args = parser.parse_args(argv)
    tasks = sorted(set(args.tasks) | {1})  # task 1 is the reference
    torch.set_num_threads(args.threads)
    steps, sizes, lengths, means = {}, {}, {}, {}
    for babi_id in tasks:
        measured = task_step(babi_id, args.memory, trim=args.trim)
        steps[babi_id], sizes[babi_id], lengths[babi_id], means[babi_id] = measured
    ms = median_step_ms({str(k): v for k, v in steps.items()}, args.repeats, args.warmup, torch.device("cpu"))
    rates = {babi_id: sizes[babi_id] * 1000.0 / ms[str(babi_id)] for babi_id in tasks}
    read = {babi_id: rates[babi_id] * means[babi_id] for babi_id in tasks}  # real statements read per second
    print(f"{'task':>4} {'statements':>10} {'mean':>6} {'examples/s':>11} {'x task 1':>9} {'statements/s':>13} "
          f"{'x task 1':>9}")
    for babi_id in tasks:
        print(f"{babi_id:>4} {lengths[babi_id]:>10} {means[babi_id]:>6.1f} {rates[babi_id]:>11,.0f} "
              f"{rates[babi_id] / rates[1]:>9.2f} {read[babi_id]:>13,.0f} {read[babi_id] / read[1]:>9.2f}", flush=True)
    figures = {"benchmark": "babi_tpr_rnn_tasks", "memory": args.memory, "threads": args.threads, "trim": args.trim,
               "torch": torch.__version__,
               "tasks": {str(k): {"statements": lengths[k], "mean_statements": round(means[k], 2),
                                  "examples_per_s": round(rates[k], 1), "vs_task_1": round(rates[k] / rates[1], 3),
                                  "statements_per_s": round(read[k]),
                                  "statements_vs_task_1": round(read[k] / read[1], 3)} for k in tasks}}
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
