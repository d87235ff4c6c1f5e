"""The argument types of the speed benchmarks follow their documented rules, boundaries included.

Source: the docstrings of ``harness/bench_args.py`` (the command lines of the ``bench_*.py`` modules of ``make perf``):
``at_least(low, high)`` takes an integer of at least ``low`` and at most ``high`` (both ends inclusive);
``device_name`` takes exactly ``cpu``, ``cuda`` or ``cuda:N`` (any number of digits); ``check_device`` refuses a
CUDA device whose index this machine's torch does not have (``cuda:0`` to ``cuda:<count - 1>``).
Each rule is checked against a literal transcription over a small grid, edges first.
"""

from __future__ import annotations

import argparse
import re

import pytest

from harness.bench_args import at_least, bench_parser, check_device, device_name


def documented_at_least(text: str, low: int, high: int | None) -> int | None:
    """The docstring's rule, written out: the integer if ``low <= value <= high``, else None."""
    try:
        value = int(text)
    except ValueError:
        return None
    if value < low:
        return None
    if high is not None and value > high:
        return None
    return value


@pytest.mark.parametrize(("low", "high"), [(0, None), (1, None), (1, 20), (3, 3), (-2, 2)])
def test_at_least_takes_exactly_the_closed_range(low: int, high: int | None) -> None:
    parse = at_least(low, high)
    for value in range(low - 3, (high if high is not None else low) + 4):
        expected = documented_at_least(str(value), low, high)
        if expected is None:
            with pytest.raises(argparse.ArgumentTypeError) as refused:
                parse(str(value))
            word = "below" if value < low else "above"
            bound = low if value < low else high
            assert str(refused.value) == f"{value} is {word} {bound}"
        else:
            assert parse(str(value)) == expected


def test_at_least_refuses_a_non_integer_naming_it() -> None:
    for text in ("x", "1.5", "", "1e3"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not an integer"):
            at_least(0)(text)


def documented_device(text: str) -> bool:
    """``cpu``, ``cuda`` or ``cuda:`` followed by one or more digits, and nothing else."""
    if text in ("cpu", "cuda"):
        return True
    if not text.startswith("cuda:"):
        return False
    index = text[len("cuda:"):]
    return index != "" and all(ch in "0123456789" for ch in index)


DEVICES = ["cpu", "cuda", "cuda:0", "cuda:7", "cuda:10", "cuda:123", "cpu0", "cpux", "cuda0", "cudax", "cuda:",
           "cuda:1x", "cuda:-1", "gpu", "CPU", " cpu", "cpu ", "cuda:1:2", "mps"]


@pytest.mark.parametrize("text", DEVICES)
def test_device_name_takes_exactly_cpu_cuda_and_cuda_n(text: str) -> None:
    if documented_device(text):
        assert device_name(text) == text
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"{text!r} is not a device")):
            device_name(text)


@pytest.mark.parametrize("count", [1, 2, 4])
def test_check_device_refuses_exactly_the_indices_torch_lacks(count: int, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    parser = bench_parser("harness.bench_args_demo", "demo")
    check_device(parser, "cpu")
    check_device(parser, "cuda")
    for index in range(count + 3):
        device = f"cuda:{index}"
        if index < count:  # cuda:0 .. cuda:<count - 1> exist
            check_device(parser, device)
            continue
        with pytest.raises(SystemExit) as stopped:
            check_device(parser, device)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert f"--device {device}: this machine's torch sees {count} CUDA GPU" in err
        assert f"(cuda:0 to cuda:{count - 1})" in err


def test_check_device_without_cuda_refuses_every_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    parser = bench_parser("harness.bench_args_demo", "demo")
    check_device(parser, "cpu")  # never asks torch
    for device in ("cuda", "cuda:0"):
        with pytest.raises(SystemExit):
            check_device(parser, device)


def test_bench_parser_names_the_module_command() -> None:
    assert bench_parser("tasks.listops.bench_generator", "d").prog == "python -m tasks.listops.bench_generator"
