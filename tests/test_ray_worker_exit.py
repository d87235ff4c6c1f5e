"""A sweep's worker ends on Ray's SIGTERM without a traceback even when the signal lands inside a weakref callback,
where Python cannot raise the handler's ``SystemExit`` (``harness.runners.ray_session.exit_on_stray_system_exit``).

Each test runs a small Python process that installs a SIGTERM handler raising ``SystemExit(1)`` as Ray's does,
then sends itself the signal from inside a weakref callback. Seconds each; Ray itself is not started."""

from __future__ import annotations

import subprocess
import sys
import textwrap

WORKER = textwrap.dedent("""
    import signal, sys, weakref

    if {install}:
        from harness.runners.ray_session import exit_on_stray_system_exit
        exit_on_stray_system_exit()
        exit_on_stray_system_exit()  # a reused worker installs it again: still one hook

    def ray_like_handler(signum, frame):
        raise SystemExit(1)

    signal.signal(signal.SIGTERM, ray_like_handler)

    class Thing:
        pass

    def callback(_ref):
        {inside}

    thing = Thing()
    ref = weakref.ref(thing, callback)
    print("before", flush=True)
    del thing  # the callback runs here, and the signal's handler inside it
    print("still running", flush=True)
""")


def _worker(install: bool, inside: str = "signal.raise_signal(signal.SIGTERM)") -> subprocess.CompletedProcess:
    code = WORKER.format(install=install, inside=inside)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_without_the_hook_the_signal_is_swallowed_with_a_traceback() -> None:
    """What a sweep printed before: Python prints the stray SystemExit and the worker goes on."""
    done = _worker(install=False)
    assert "Exception ignored" in done.stderr and "SystemExit: 1" in done.stderr
    assert done.stdout.splitlines() == ["before", "still running"]
    assert done.returncode == 0


def test_the_hook_ends_the_worker_as_the_signal_asked_without_a_traceback() -> None:
    done = _worker(install=True)
    assert done.stdout.splitlines() == ["before"]  # its output before the signal is kept; nothing runs after it
    assert done.stderr == ""
    assert done.returncode == 1


def test_other_exceptions_go_to_the_previous_hook() -> None:
    """A callback's own error is still printed and the process goes on."""
    done = _worker(install=True, inside="raise ValueError('a bug in a callback')")
    assert "ValueError: a bug in a callback" in done.stderr
    assert done.stdout.splitlines() == ["before", "still running"] and done.returncode == 0


def test_a_system_exit_without_an_integer_code_ends_the_process_with_code_1() -> None:
    """Only code raises such a SystemExit (Ray's handler gives 1), and it too ends the process."""
    done = _worker(install=True, inside="raise SystemExit('text')")
    assert done.stdout.splitlines() == ["before"] and done.returncode == 1
