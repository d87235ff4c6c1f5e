"""SIGTERM and Ctrl-C while a run trains and while its final status is stored: SIGTERM taken as Ctrl-C
(:func:`terminate_as_interrupt`), and both held back while a status is written (:func:`signals_deferred`); and a
run trained by a child process, to which both are passed on (:func:`wait_passing_on_signals`)."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block, the first SIGTERM raises KeyboardInterrupt (as Ctrl-C does) and later ones are ignored,
    so the run is stored as interrupted; a SIGTERM after a Ctrl-C is ignored too (``harness reproduce`` passes a
    terminal's Ctrl-C on as SIGTERM to the run it trains, which the terminal's Ctrl-C reached already), while a
    second Ctrl-C raises again, as it would without the block. Only the main thread can own signal handlers;
    elsewhere (a Ray trial's thread) nothing changes. A Ctrl-C the shell told this process to ignore (a background
    job) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    fired = False

    def on_terminate(signum: int, frame: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise KeyboardInterrupt

    def on_ctrl_c(signum: int, frame: Any) -> None:
        nonlocal fired
        fired = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_terminate)
    if previous[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C (SIGINT) and SIGTERM are held back instead of interrupting it (the block writes a
    run's final status, which a second Ctrl-C must not cut short); the list it yields collects the signals that
    came, for the caller to act on after the block. A signal this process ignores (a background job's Ctrl-C)
    stays ignored: it neither comes nor interrupts afterwards. Only the main thread can own signal handlers;
    elsewhere nothing changes."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = [number for number in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(number) is not signal.SIG_IGN]
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


def wait_passing_on_signals(child: subprocess.Popen[bytes]) -> tuple[int, bool]:
    """Wait for ``child`` (a process training a run: ``harness bench``) to end, passing each Ctrl-C or SIGTERM that
    reaches this process on to it as SIGTERM, which a run takes as Ctrl-C, and only once
    (:func:`terminate_as_interrupt`: a terminal's Ctrl-C reaches the child itself too). This process keeps waiting
    until the child has stored its run as interrupted: ``subprocess.run`` kills its child a quarter of a second
    after a Ctrl-C, before a large run is stored, and a SIGTERM sent to this process alone would end it and leave
    the child training. A signal this process ignores (a background job's Ctrl-C) stays ignored. Returns the child's
    exit code and whether a signal came. Only the main thread can own signal handlers; elsewhere this only waits."""
    if threading.current_thread() is not threading.main_thread():
        return child.wait(), False
    came: list[int] = []

    def pass_on(signum: int, frame: Any) -> None:
        came.append(signum)
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    passed = [number for number in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, pass_on) for number in passed}  # one ignored (a background job) stays so
    try:
        return child.wait(), bool(came)
    finally:
        for number, before in previous.items():
            signal.signal(number, before)
