"""Training throughput of K seeds of one Relations Game model stacked into one computation, and what it makes of
the PrediNet paper's Table 1 grid (Shanahan et al., ICML 2020: 5 relations x 5 models x 3 seeds, 100,000
batches of 10 each).

    python -m harness.runners.bench_stacked [--models predinet mlp1 ...] [--ks 1 3 4 16] [--threads 1 2]
    python -m harness.runners.bench_stacked --device cuda --threads 1 --ks 1 3 16 64   # on a GPU

Each model is composed exactly as ``harness bench --task relations_game --model <name> --profile cpu`` composes
it (its ``model`` and ``optim`` sections, batch size ``train.batch_size``), built once per seed as the run builds
it (seeded, then the model's own init). Inputs are random images of the task's shape, a fresh batch per
member. One timed step is a whole training step: forward, cross-entropy, backward, per-member clipping when
the config clips, the optimiser's update. Variants, all in one process and taking turns (one call each per
round, so that a load on the machine slows them alike), median over ``--repeats`` after ``--warmup``:

* ``plain``: the unstacked module with its optimiser (K = 1, no ``vmap``), the runner's step;
* ``stacked_K``: K members as one :class:`harness.runners.stacked_model.StackedClassifier` (K = 1 runs
  without ``vmap``, as the stacked trainer runs it, K > 1 with it);
* ``vmap_1``: a stack of one forced through ``vmap``, the cost of ``vmap`` itself;
* ``own_optim_K`` (with ``--own-optimisers``): K members each with its own optimiser over views of its slices
  (:mod:`harness.runners.stacked_optim`, the trainer of members whose optimiser settings differ), the price of
  K optimiser steps a step against one (``make perf``: ``bench/stacked_own_optim.json``; no grid projection).

Figures are total batches per second (K x steps per second), per thread count (``torch.set_num_threads``).
The grid's projected wall time is 75 runs x 100,000 batches at the best rate; on 2 cores this is one process
at 2 threads (measured) and, as a bound that assumes no contention, two 1-thread processes (twice the 1-thread
rate; not measured). With ``--device cuda`` the models, their stacks and the batches live on the GPU (the
thread count then only sets the host's threads) and the grid is projected for one process on that GPU. The last
line is one JSON object (``make perf`` keeps it in ``bench/stacked.json``).

A floor under any such projection, whatever the stacking: the floating-point operations of one training step of
each of the five models in matrix products and convolutions (``torch.utils.flop_counter``, forward and backward,
at its ``cpu`` batch; the elementwise work is not counted), summed over the grid (15 runs of each model x 100,000
batches), at the rate this machine reaches in one large matrix product (2048 x 2048 x 2048 float32, per thread
count; no training step of these small models does better). ``grid_floor`` in the JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.bench_args import at_least, bench_parser, check_device
from harness.config import compose
from harness.optim import build_optimizer
from harness.registry import load_entry
from harness.runners.stacked_model import StackedClassifier, clip_per_member, member_losses
from models.step_timing import median_step_ms, step_gflop
from tasks.relations_game.generator import TASKS
from tasks.relations_game.task import IMAGE_SHAPE

TASK = "relations_game"
MODELS = ("predinet", "mlp1", "mlp2", "relation_net", "mha")  # the models of the paper's Table 1
GRID_RUNS = 5 * 5 * 3  # relations x models x seeds
GRID_BATCHES = 100_000  # per run
CPU = torch.device("cpu")


def task_info(cfg: Any) -> dict[str, Any]:
    """What the model is built from, as :meth:`tasks.relations_game.task.RelationsGameTask.load` reports it."""
    tasks = [str(name) for name in cfg.task.tasks]
    vocabulary = cfg.task.get("task_vocabulary") or tasks
    return {"image_shape": IMAGE_SHAPE, "num_classes": max(TASKS[name] for name in tasks),
            "num_tasks": len(vocabulary)}


def build_seeded(cfg: Any, entry: str, info: dict[str, Any], seeds: list[int],
                 device: torch.device = CPU) -> list[nn.Module]:
    """One model per seed, each built as a run builds it: ``seed_everything(seed)``, then the constructor."""
    models = []
    for seed in seeds:
        pl.seed_everything(seed, verbose=False)
        models.append(load_entry(entry)(cfg.model, info).to(device))
    return models


def random_batch(k: int, batch: int, info: dict[str, Any], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """K independent batches: image [K, B, H, W, C] uint8, task_id [K, B], target [K, B]."""
    return {"image": torch.randint(0, 256, (k, batch, *info["image_shape"]), dtype=torch.uint8, generator=generator),
            "task_id": torch.zeros(k, batch, dtype=torch.long),
            "target": torch.randint(0, int(info["num_classes"]), (k, batch), generator=generator)}


def plain_step(model: nn.Module, cfg: Any, batch: dict[str, torch.Tensor]) -> Callable[[], None]:
    """The unstacked model's training step on member 0's batch."""
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    image, task_id, target = batch["image"][0], batch["task_id"][0], batch["target"][0]

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(image=image, task_id=task_id), target).backward()
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), float(cfg.optim.grad_clip))
        optimizer.step()
    return step


def stacked_step(models: list[nn.Module], cfg: Any, batch: dict[str, torch.Tensor],
                 vmap_one: bool = False) -> Callable[[], None]:
    """The stack's training step: each member on its own batch, the members' mean losses summed."""
    stack = StackedClassifier(models, vmap_one=vmap_one)
    optimizer = build_optimizer(stack.parameters(), cfg.optim)
    inputs = {"image": batch["image"], "task_id": batch["task_id"]}

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss, _ = member_losses(stack.logits(inputs), batch["target"])  # [K]
        loss.sum().backward()
        if cfg.optim.grad_clip:
            clip_per_member(stack.parameters(), float(cfg.optim.grad_clip))
        optimizer.step()
    return step


def own_optimiser_step(models: list[nn.Module], cfg: Any, batch: dict[str, torch.Tensor]) -> Callable[[], None]:
    """The step of a stack whose members keep their own optimisers (:mod:`harness.runners.stacked_optim`, used
    when their optimiser settings differ): one forward and backward, then per member its gradient slices, its
    clipping and its optimiser's step. Here every member has the profile's settings: only the cost is measured."""
    from harness.runners.stacked_optim import member_views, step_member

    stack = StackedClassifier(models)
    optimizers = [build_optimizer(member_views(stack, k), cfg.optim) for k in range(stack.k)]
    inputs = {"image": batch["image"], "task_id": batch["task_id"]}

    def step() -> None:
        params = stack.parameters()
        for p in params:
            p.grad = None
        loss, _ = member_losses(stack.logits(inputs), batch["target"])  # [K]
        loss.sum().backward()
        for k, optimizer in enumerate(optimizers):
            step_member(optimizer, params, k, cfg.optim.grad_clip)
    return step


def measure(model_name: str, ks: list[int], threads: list[int], repeats: int, warmup: int,
            device: torch.device = CPU, own_optimisers: bool = False) -> dict[str, Any]:
    """{threads: {variant: total batches/s}} for one model."""
    composed = compose(TASK, model_name, "cpu", [])
    cfg = composed.cfg
    entry = composed.model.interfaces[composed.task.interface]
    info = task_info(cfg)
    batch_size = int(cfg.train.batch_size)
    batch = random_batch(max(ks), batch_size, info, torch.Generator().manual_seed(0))
    batch = {key: tensor.to(device) for key, tensor in batch.items()}
    single = {key: t[:1] for key, t in batch.items()}
    steps = {"plain": plain_step(build_seeded(cfg, entry, info, [0], device)[0], cfg, batch),
             "vmap_1": stacked_step(build_seeded(cfg, entry, info, [0], device), cfg, single, vmap_one=True)}
    members = {f"stacked_{k}": k for k in ks}
    for name, k in members.items():
        part = {key: t[:k] for key, t in batch.items()}
        steps[name] = stacked_step(build_seeded(cfg, entry, info, list(range(k)), device), cfg, part)
    for k in (k for k in ks if k > 1 and own_optimisers):  # members with their own optimisers
        members[f"own_optim_{k}"] = k
        part = {key: t[:k] for key, t in batch.items()}
        steps[f"own_optim_{k}"] = own_optimiser_step(build_seeded(cfg, entry, info, list(range(k)), device), cfg, part)
    rates: dict[str, dict[str, float]] = {}
    for count in threads:
        torch.set_num_threads(count)
        ms = median_step_ms(steps, repeats, warmup, device)
        rates[str(count)] = {name: round(members.get(name, 1) * 1000.0 / value, 1) for name, value in ms.items()}
    return {"batch_size": batch_size, "optimizer": str(cfg.optim.name), "batches_per_s": rates}


def model_step_gflop(model_name: str) -> float:
    """GFLOP in matrix products and convolutions of one training step of ``model_name`` (``cpu`` profile, its batch
    size, forward and backward; the runner's step, :func:`plain_step`)."""
    composed = compose(TASK, model_name, "cpu", [])
    cfg, info = composed.cfg, task_info(composed.cfg)
    model = build_seeded(cfg, composed.model.interfaces[composed.task.interface], info, [0])[0]
    batch = random_batch(1, int(cfg.train.batch_size), info, torch.Generator().manual_seed(0))
    return step_gflop(plain_step(model, cfg, batch))


def matmul_peak_gflops(threads: int, size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of the best of ``repeats`` float32 products of two [size, size] matrices at ``threads`` threads."""
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 / best / 1e9


def grid_floor(threads: list[int]) -> dict[str, Any]:
    """The Table 1 grid's matrix-product work and the hours it needs at this machine's large-product rate."""
    gflop = {name: round(model_step_gflop(name), 2) for name in MODELS}
    total = sum(GRID_RUNS // len(MODELS) * GRID_BATCHES * value for value in gflop.values())  # GFLOP
    peaks = {str(count): round(matmul_peak_gflops(count), 1) for count in threads}
    return {"step_gflop": gflop, "grid_pflop": round(total / 1e6, 2), "peak_gflops": peaks,
            "hours_at_peak": {count: round(total / peak / 3600.0, 1) for count, peak in peaks.items()}}


def best(rates: dict[str, float]) -> tuple[str, float]:
    """The fastest variant and its total batches/s."""
    name = max(rates, key=lambda variant: rates[variant])
    return name, rates[name]


def projections(models: dict[str, Any], on_gpu: bool = False) -> dict[str, float]:
    """Hours of the Table 1 grid (75 runs x 100,000 batches) on 2 cores, each at its best variant: all runs at
    PrediNet's rate, and (when all five were measured) 15 runs of each model at that model's rate. "2 threads" is
    one process at 2 threads (measured); "2 x 1 thread" is two 1-thread processes, twice the 1-thread rate (a
    bound: it assumes the two processes do not slow each other). On a GPU: one process at the first measured
    thread count."""
    hours: dict[str, float] = {}
    setups = {"2 threads": ("2", 1.0), "2 x 1 thread (bound)": ("1", 2.0)}
    if on_gpu:
        first = next(iter(next(iter(models.values()))["batches_per_s"]), "1")
        setups = {"one GPU": (first, 1.0)}
    for setup, (threads, factor) in setups.items():
        if "predinet" in models and threads in models["predinet"]["batches_per_s"]:
            variant, rate = best(models["predinet"]["batches_per_s"][threads])
            hours[f"PrediNet's rate, {setup}, {variant}"] = round(
                GRID_RUNS * GRID_BATCHES / (factor * rate) / 3600.0, 2)
        if set(MODELS) <= set(models) and all(threads in models[m]["batches_per_s"] for m in MODELS):
            runs_each = GRID_RUNS // len(MODELS)
            seconds = sum(runs_each * GRID_BATCHES / (factor * best(models[m]["batches_per_s"][threads])[1])
                          for m in MODELS)
            hours[f"each model's rate, {setup}, best variant each"] = round(seconds / 3600.0, 2)
    return hours


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = bench_parser("harness.runners.bench_stacked", __doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument(
        "--ks", nargs="+", type=at_least(1), default=[1, 3, 4, 16], help="stack sizes (3: one cell's seeds)"
    )
    parser.add_argument("--threads", nargs="+", type=at_least(1), default=[1, 2])
    parser.add_argument("--repeats", type=at_least(1), default=60)
    parser.add_argument("--warmup", type=at_least(0), default=10)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--own-optimisers", action="store_true",
                        help="also time stacks whose members keep their own optimisers (own_optim_K: what members "
                             "of differing optimiser settings cost); no grid projection then")
    args = parser.parse_args(argv)
    check_device(parser, args.device)
    device = torch.device(args.device)
    figures: dict[str, Any] = {"benchmark": "stacked", "task": TASK, "torch": torch.__version__, "device": str(device),
                               "repeats": args.repeats, "models": {}, "grid_hours": {}}
    for name in args.models:
        result = measure(name, args.ks, args.threads, args.repeats, args.warmup, device, args.own_optimisers)
        figures["models"][name] = result
        for count, rates in result["batches_per_s"].items():
            shown = "  ".join(f"{variant}={rate:7.1f}" for variant, rate in rates.items())
            print(f"{name:>12} {count} thread(s), batches/s: {shown}", flush=True)
    if not args.own_optimisers:  # the grid's members share their settings: own-optimiser stacks do not project it
        add_grid_projection(figures, args.threads, device)
    print(json.dumps(figures))
    return figures


def add_grid_projection(figures: dict[str, Any], threads: list[int], device: torch.device) -> None:
    """The Table 1 grid's projected hours (``grid_hours``) and, on the CPU, its FLOP floor (``grid_floor``), added
    to ``figures`` and printed."""
    figures["grid_hours"] = projections(figures["models"], on_gpu=device.type == "cuda")
    for what, value in figures["grid_hours"].items():
        print(f"Table 1 grid (75 runs x 100,000 batches), {what}: {value:.2f} h", flush=True)
    if device.type == "cpu":
        floor = figures["grid_floor"] = grid_floor(threads)
        print("GFLOP per training step in products: " + "  ".join(f"{m}={g}" for m, g in floor["step_gflop"].items())
              + f"; the grid: {floor['grid_pflop']} PFLOP", flush=True)
        for count, hours in floor["hours_at_peak"].items():
            print(f"Table 1 grid at this machine's large-product rate ({floor['peak_gflops'][count]} GFLOP/s, "
                  f"{count} thread(s)): at least {hours:.1f} h", flush=True)


if __name__ == "__main__":
    main()
