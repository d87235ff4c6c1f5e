"""SIGTERM, SIGHUP and Ctrl-C while a run trains and while its final status is stored: SIGTERM and SIGHUP taken as
Ctrl-C (:func:`terminate_as_interrupt`), all three held back while a status is written (:func:`signals_deferred`);
and a run trained by a child process, to which they are passed on (:func:`wait_passing_on_signals`).

SIGHUP is what a run gets when its terminal goes away (a closed window, a dropped SSH connection): the run is
stored as interrupted, as for SIGTERM, rather than killed where it stood. A hung-up terminal fails every write
(``EIO``), so the standard output and error that were that terminal are pointed at ``/dev/null`` first
(:func:`silence_hung_up_terminals`): the lines the run prints as it stops would otherwise raise in the middle of
storing it. A write that fails before any SIGHUP came stops the run the same way (:func:`terminal_went_away`). A
SIGHUP the shell told the process to ignore (``nohup``) stays ignored."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a run as Ctrl-C does (SIGTERM and SIGHUP: :func:`terminate_as_interrupt`)."""


def terminal_outputs() -> list[int]:
    """This process's standard output and error file descriptors that are terminals, as they are now (a terminal
    that has hung up no longer answers as one)."""
    return [fd for fd in (1, 2) if os.isatty(fd)]


def silence_hung_up_terminals(terminals: list[int]) -> bool:
    """Point each of ``terminals`` (:func:`terminal_outputs`, taken before) that has hung up at ``/dev/null``, so
    that what the process prints from now on is dropped instead of failing with ``EIO``; True when one had. Nothing
    changes while the terminal is still there (a ``kill -HUP``, a Ctrl-C)."""
    gone = [fd for fd in terminals if not os.isatty(fd)]
    if not gone:
        return False
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in gone:
            os.dup2(null, fd)
    finally:
        os.close(null)
    return True


TERMINAL_WENT_AWAY = "interrupted: its terminal went away (the same command resumes the run)"
"""The stored error of a run whose terminal hung up (:func:`terminal_went_away`)."""


def terminal_went_away(exc: BaseException, terminals: list[int]) -> bool:
    """Whether ``exc`` is a write to one of ``terminals`` that has hung up (``EIO``), a run then stopped as by
    Ctrl-C; the terminal is silenced first (:func:`silence_hung_up_terminals`). The error can come before the
    SIGHUP, or with none at all: the kernel signals the terminal's session leader, and ``make bench`` typed as a
    terminal's command (``xterm -e``, ``ssh host make ...``) is that leader, not the run."""
    return isinstance(exc, OSError) and exc.errno == errno.EIO and silence_hung_up_terminals(terminals)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block, the first SIGTERM or SIGHUP raises KeyboardInterrupt (as Ctrl-C does) and later ones are
    ignored, so the run is stored as interrupted; a SIGTERM after a Ctrl-C is ignored too (``harness reproduce``
    passes a terminal's Ctrl-C on as SIGTERM to the run it trains, which the terminal's Ctrl-C reached already),
    while a second Ctrl-C raises again, as it would without the block. Only the main thread can own signal handlers;
    elsewhere (a Ray trial's thread) nothing changes. A Ctrl-C the shell told this process to ignore (a background
    job) stays ignored, as does an ignored SIGHUP (``nohup``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in STOPPING}
    terminals = terminal_outputs()
    fired = False

    def on_terminate(signum: int, frame: Any) -> None:
        nonlocal fired
        silence_hung_up_terminals(terminals)
        if fired:
            return
        fired = True
        raise KeyboardInterrupt

    def on_ctrl_c(signum: int, frame: Any) -> None:
        nonlocal fired
        fired = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_terminate)
    if previous[signal.SIGHUP] is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, on_terminate)
    if previous[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C (SIGINT), SIGTERM and SIGHUP are held back instead of interrupting it (the block
    writes a run's final status, which a second Ctrl-C must not cut short); the list it yields collects the signals
    that came, for the caller to act on after the block. A signal this process ignores (a background job's Ctrl-C)
    stays ignored: it neither comes nor interrupts afterwards. Only the main thread can own signal handlers;
    elsewhere nothing changes."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = [number for number in STOPPING if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.getsignal(number) for number in held}
    terminals = terminal_outputs()

    def handler(signum: int, frame: Any) -> None:
        silence_hung_up_terminals(terminals)
        came.append(signum)

    for number in held:
        signal.signal(number, handler)
    try:
        yield came
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def wait_passing_on_signals(child: subprocess.Popen[bytes]) -> tuple[int, bool]:
    """Wait for ``child`` (a process training a run: ``harness bench``) to end, passing each Ctrl-C, SIGTERM or
    SIGHUP that reaches this process on to it as SIGTERM, which a run takes as Ctrl-C, and only once
    (:func:`terminate_as_interrupt`: a terminal's Ctrl-C reaches the child itself too). This process keeps waiting
    until the child has stored its run as interrupted: ``subprocess.run`` kills its child a quarter of a second
    after a Ctrl-C, before a large run is stored, and a SIGTERM sent to this process alone would end it and leave
    the child training. A signal this process ignores (a background job's Ctrl-C) stays ignored. Returns the child's
    exit code and whether a signal came. Only the main thread can own signal handlers; elsewhere this only waits."""
    if threading.current_thread() is not threading.main_thread():
        return child.wait(), False
    came: list[int] = []
    terminals = terminal_outputs()

    def pass_on(signum: int, frame: Any) -> None:
        silence_hung_up_terminals(terminals)
        came.append(signum)
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    passed = [number for number in STOPPING if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, pass_on) for number in passed}  # one ignored (a background job) stays so
    try:
        return child.wait(), bool(came)
    finally:
        for number, before in previous.items():
            signal.signal(number, before)
