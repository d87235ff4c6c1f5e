"""The command lines of the speed benchmarks (the ``bench_*.py`` modules that ``make perf`` runs): a mistake in a
value is refused before anything is measured, in one line on stderr with exit code 2 (the harness's way,
:class:`harness.cli_parser.HarnessParser`), never a traceback or a record of nonsense.

    parser = bench_parser("tasks.listops.bench_generator", __doc__.splitlines()[0])
    parser.add_argument("--n", type=at_least(1), default=2000)
    parser.add_argument("--device", type=device_name, default="cpu")
    args = parser.parse_args(argv)
    check_device(parser, args.device)   # "cuda" on a machine whose torch sees no GPU

torch is imported only by :func:`check_device`, for a CUDA device, and by :func:`parse_timing_arguments`, which
sets up the step-timing benchmarks (``--repeats``, ``--warmup``, ``--threads``, ``--device``:
:func:`add_timing_arguments`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.cli_parser import HarnessParser

if TYPE_CHECKING:
    import torch


def bench_parser(module: str, description: str) -> HarnessParser:
    """The parser of ``python -m <module>``: its mistakes are one line, exit code 2, naming the command."""
    return HarnessParser(prog=f"python -m {module}", description=description)


def at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low`` (and at most ``high``, when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value} is above {high}")
        return value

    return parse


def device_name(text: str) -> str:
    """An argparse type: ``cpu``, ``cuda`` or ``cuda:N``, as given (whether the machine has it:
    :func:`check_device`)."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device; devices: cpu, cuda, cuda:N")
    return text


def check_device(parser: argparse.ArgumentParser, device: str) -> None:
    """Refuse (``parser.error``) a CUDA ``device`` that this machine's torch cannot use."""
    kind, _, index = device.partition(":")
    if kind != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        parser.error(f"--device {device}: this machine's torch sees no CUDA GPU")
    count = torch.cuda.device_count()
    if index and int(index) >= count:
        parser.error(f"--device {device}: this machine's torch sees {count} CUDA GPU{'s' if count > 1 else ''} "
                     f"(cuda:0 to cuda:{count - 1})")


def add_timing_arguments(parser: argparse.ArgumentParser, repeats: int, warmup: int, threads: int,
                         threads_help: str) -> None:
    """The options of a step-timing benchmark, with its defaults: ``--repeats`` timed steps after ``--warmup``
    untimed ones, on ``--threads`` torch threads and ``--device``."""
    parser.add_argument("--repeats", type=at_least(1), default=repeats)
    parser.add_argument("--warmup", type=at_least(0), default=warmup)
    parser.add_argument("--threads", type=at_least(1), default=threads, help=threads_help)
    parser.add_argument("--device", type=device_name, default="cpu", help="cpu, cuda or cuda:N")


def parse_timing_arguments(parser: argparse.ArgumentParser,
                           argv: list[str] | None) -> tuple[argparse.Namespace, torch.device]:
    """The arguments of a step-timing benchmark (:func:`add_timing_arguments`) and their device, checked; torch set
    to ``--threads`` threads and seeded with 0."""
    args = parser.parse_args(argv)
    check_device(parser, args.device)
    import torch

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    return args, device
