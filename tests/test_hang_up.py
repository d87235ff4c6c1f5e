"""A run whose terminal goes away (a closed window, a dropped SSH connection) is stored as interrupted and the same
command resumes it, as after Ctrl-C: the SIGHUP the kernel sends the terminal's session leader is taken as Ctrl-C,
and a write to the hung-up terminal (``EIO``), which comes first, or alone where ``make`` leads the session, stops
the run the same way instead of failing it. The end-to-end tests run ``harness bench`` (bAbI / LSTM, smoke profile,
generated data, one thread: seconds) on a pseudo-terminal and close it once the first epoch is stored."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from harness.runners.signals import (
    TERMINAL_WENT_AWAY,
    signals_deferred,
    silence_hung_up_terminals,
    terminal_went_away,
    terminate_as_interrupt,
)
from tests.conftest import ROOT, command_environ, only_run, run_cli

BENCH = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator",
         "train.max_epochs=30", "train.batch_size=8", "train.eval_batch_size=16", "train.threads=1"]

MAKE_LIKE = ("import signal, subprocess, sys\n"
             "signal.signal(signal.SIGHUP, lambda signum, frame: None)  # as make: it waits for its children\n"
             "sys.exit(subprocess.call(sys.argv[1:]))\n")
"""A session leader that outlives a hang-up, as ``make`` does: the kernel sends the SIGHUP to it alone, so the run it
started learns that its terminal went away from a failed write."""


def _pseudo_terminal() -> tuple[int, int]:
    try:
        return os.openpty()
    except OSError as exc:  # a container without /dev/ptmx
        pytest.skip(f"no pseudo-terminal here: {exc}")


def test_a_hang_up_interrupts_once_and_one_the_shell_ignores_stays_ignored() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as in a terminal's job, whatever the suite's is
    try:
        with terminate_as_interrupt():
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: the run is being interrupted already
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
        with terminate_as_interrupt():
            os.kill(os.getpid(), signal.SIGHUP)  # nothing happens
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        with signals_deferred() as came:
            os.kill(os.getpid(), signal.SIGHUP)
        assert came == []
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        with signals_deferred() as came:  # a final status being written: the hang-up waits
            os.kill(os.getpid(), signal.SIGHUP)
        assert came == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, before)


def test_only_a_terminal_that_hung_up_is_silenced() -> None:
    master, terminal = _pseudo_terminal()
    try:
        hung_up = OSError(errno.EIO, "Input/output error")
        assert not silence_hung_up_terminals([terminal])  # still there
        assert not terminal_went_away(hung_up, [terminal])
        assert os.isatty(terminal)
        os.close(master)  # the window closes: the kernel hangs the terminal up
        master = -1
        with pytest.raises(OSError) as failed:
            os.write(terminal, b"a line\n")
        assert failed.value.errno == errno.EIO
        assert not terminal_went_away(BrokenPipeError(errno.EPIPE, "Broken pipe"), [terminal])
        assert terminal_went_away(hung_up, [terminal])
        assert os.write(terminal, b"a line\n") == 7  # dropped, at /dev/null
    finally:
        for fd in (master, terminal):
            if fd >= 0:
                os.close(fd)


def _on_terminal_of_its_own() -> None:
    """In the child: lead a session (``start_new_session``) whose controlling terminal is the pseudo-terminal on its
    standard streams, with SIGHUP as a terminal's job has it (not inherited from the suite)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _close_terminal_when(pattern: str, runs: Path, master: int, proc: subprocess.Popen[bytes],
                         timeout: float = 180) -> None:
    """Read what the command prints until ``pattern`` exists under ``runs``, then close the terminal."""
    deadline = time.monotonic() + timeout
    printed = bytearray()
    try:
        while not list(runs.glob(pattern)):
            assert proc.poll() is None, f"ended with exit code {proc.returncode}: {printed[-3000:].decode()}"
            assert time.monotonic() < deadline, f"no {pattern} after {timeout} s"
            if select.select([master], [], [], 0.05)[0]:
                try:
                    printed += os.read(master, 65536)
                except OSError:  # EIO: no process holds the terminal any more, it has ended
                    time.sleep(0.05)
    finally:
        os.close(master)


@pytest.mark.parametrize("leader", ["the run", "a make-like parent"])
@pytest.mark.slow
def test_a_run_whose_terminal_goes_away_is_stored_as_interrupted_and_the_same_command_resumes_it(
        tmp_path: Path, leader: str) -> None:
    environ = command_environ(tmp_path)
    args = [*BENCH, "--runs-dir", str(tmp_path / "runs")]
    command = [sys.executable, "-m", "harness.cli", *args]
    if leader != "the run":
        command = [sys.executable, "-c", MAKE_LIKE, *command]
    master, terminal = _pseudo_terminal()
    try:
        proc = subprocess.Popen(command, cwd=ROOT, env=environ, stdin=terminal, stdout=terminal, stderr=terminal,
                                start_new_session=True, preexec_fn=_on_terminal_of_its_own)
    finally:
        os.close(terminal)
    _close_terminal_when("*/*/*/checkpoints/last.ckpt", tmp_path / "runs", master, proc)  # it trains
    assert proc.wait(timeout=120) == 130
    left = json.loads((only_run(tmp_path / "runs") / "results.json").read_text())
    assert left["status"] == "interrupted" and left["epochs"] < 30, left.get("error")
    if leader != "the run":  # no SIGHUP reached the run: a write to the terminal failed
        assert left["error"] == TERMINAL_WENT_AWAY
    again = run_cli(args, environ)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((only_run(tmp_path / "runs") / "results.json").read_text())["status"] == "completed"
