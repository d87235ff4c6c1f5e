"""Training-step time of the Relations Game models at the reference's batch size (Shanahan et al. 2020:
SGD lr 0.01, batch 10; the notebook trains for 100,000 batches).

    python -m models.relational.bench_models [--models predinet mha ...] [--batch-size 10] [--threads 1]

Per model: random uint8 images [B, 36, 36, 3] and labels; one SGD step (forward, cross-entropy, backward,
update) per timing, the models taking turns so that a load on the machine slows them alike; the median
over ``repeats`` after ``warmup`` untimed steps. This is the model's own cost, without the training loop
around it (batching, validation, logging, checkpoints), which a run's examples/s includes. Prints one
line per model with ms per step, batches/s and the minutes 100,000 batches take at that rate, then a JSON
line with every figure.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import torch
import torch.nn.functional as F

from harness.bench_args import add_timing_arguments, at_least, bench_parser, parse_timing_arguments
from models.relational.image_model import ImageRelationalModel
from models.relational.shipped import shipped_model_cfg
from models.step_timing import median_step_ms

MODELS = ("predinet", "mlp1", "mlp2", "relation_net", "mha", "relational", "simplicial")
IMAGE_SHAPE = (36, 36, 3)
PAPER_BATCHES = 100_000


def time_steps(models: dict[str, ImageRelationalModel], batch: int, repeats: int, warmup: int,
               device: torch.device) -> dict[str, float]:
    """Median milliseconds of one SGD step of each model on the same random batch."""
    gen = torch.Generator().manual_seed(batch)
    images = torch.randint(0, 256, (batch, *IMAGE_SHAPE), dtype=torch.uint8, generator=gen).to(device)
    labels = torch.randint(0, 2, (batch,), generator=gen).to(device)

    def sgd_step(model: ImageRelationalModel) -> Callable[[], None]:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
        return step

    return median_step_ms({name: sgd_step(model) for name, model in models.items()}, repeats, warmup, device)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = bench_parser("models.relational.bench_models", __doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batch-size", type=at_least(1), default=10)
    add_timing_arguments(parser, repeats=200, warmup=20, threads=1,
                         threads_help="torch intra-op threads (CPU); runs use 1")
    args, device = parse_timing_arguments(parser, argv)
    info = {"image_shape": IMAGE_SHAPE, "num_classes": 2, "num_tasks": 1}
    models = {name: ImageRelationalModel(shipped_model_cfg(name), info).to(device) for name in args.models}
    ms = time_steps(models, args.batch_size, args.repeats, args.warmup, device)
    figures: dict[str, object] = {"device": str(device), "threads": args.threads, "batch_size": args.batch_size,
                                  "repeats": args.repeats, "torch": torch.__version__, "ms_per_step": {},
                                  "minutes_per_100k_batches": {}}
    for name, value in ms.items():
        minutes = value * PAPER_BATCHES / 60_000.0
        print(f"{name:>12}  {value:7.2f} ms per SGD step  {1000.0 / value:7.1f} batches/s  "
              f"{minutes:6.1f} min per 100,000 batches")
        figures["ms_per_step"][name] = round(value, 3)  # type: ignore[index]
        figures["minutes_per_100k_batches"][name] = round(minutes, 1)  # type: ignore[index]
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
