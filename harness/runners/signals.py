"""SIGTERM and Ctrl-C while a run trains and while its final status is stored: SIGTERM taken as Ctrl-C
(:func:`terminate_as_interrupt`), and both held back while a status is written (:func:`signals_deferred`)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block, the first SIGTERM raises KeyboardInterrupt (as Ctrl-C does) and later ones are ignored,
    so the run is stored as interrupted. Only the main thread can own signal handlers; elsewhere (a Ray
    trial's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    fired = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C (SIGINT) and SIGTERM are held back instead of interrupting it (the block writes a
    run's final status, which a second Ctrl-C must not cut short); the list it yields collects the signals that
    came, for the caller to act on after the block. Only the main thread can own signal handlers; elsewhere
    nothing changes."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in held}

    def handler(signum: int, frame: Any) -> None:
        came.append(signum)

    for number in held:
        signal.signal(number, handler)
    try:
        yield came
    finally:
        for number, before in previous.items():
            signal.signal(number, before)
