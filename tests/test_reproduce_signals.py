"""``harness reproduce`` trains a run in a child process: a SIGTERM sent to it alone, or a Ctrl-C reaching its process
group from a terminal, ends the training as Ctrl-C ends ``harness bench`` (the run stored as interrupted, exit code
130), and the same command resumes it. The stored run trains 30 short epochs (bAbI / LSTM, smoke profile, generated
data, one thread: seconds), so that the signal comes while it trains again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.runners.signals import signals_deferred, terminate_as_interrupt
from tests.conftest import ROOT, command_environ, only_run, run_cli
from tests.test_runs import wait_for

STORED = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator",
          "train.max_epochs=30", "train.batch_size=8", "train.eval_batch_size=16", "train.threads=1"]


@dataclass(frozen=True)
class Store:
    results: Path
    run: Path
    environ: dict[str, str]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    base = tmp_path_factory.mktemp("reproduce-signals")
    environ = command_environ(base)
    trained = run_cli([*STORED, "--runs-dir", str(base / "results")], environ)
    assert trained.returncode == 0, trained.stderr
    return Store(base / "results", only_run(base / "results"), environ)


def _reproduce(store: Store, runs: Path) -> list[str]:
    return ["reproduce", store.run.name, "--results-dir", str(store.results), "--runs-dir", str(runs)]


@pytest.mark.parametrize("how", ["SIGTERM to reproduce alone", "Ctrl-C to its process group"])
@pytest.mark.slow
def test_a_signal_to_reproduce_interrupts_the_run_it_trains_and_the_same_command_resumes_it(
        store: Store, tmp_path: Path, how: str) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *_reproduce(store, runs)], cwd=ROOT,
                            env=store.environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # a process group of its own, as a terminal's job
                            preexec_fn=_ctrl_c_heard)  # not inherited from the suite (ignored under `make test &`)
    wait_for("*/*/*/checkpoints/last.ckpt", runs, proc)  # its first epoch is stored: it trains
    if how.startswith("SIGTERM"):
        proc.send_signal(signal.SIGTERM)  # the training child is not sent it
    else:
        os.killpg(proc.pid, signal.SIGINT)  # both processes get it, as from a terminal
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "interrupted; the same command resumes the run"
    left = json.loads((only_run(runs) / "results.json").read_text())
    assert left["status"] == "interrupted" and left["epochs"] < 30  # stored by the child, which has ended
    if how.startswith("SIGTERM"):
        again = run_cli(_reproduce(store, runs), store.environ)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "figures is equal, bit for bit" in again.stdout


def _ctrl_c_heard() -> None:
    """A child's Ctrl-C disposition as in a terminal's foreground job, whatever this suite's is (SIG_DFL: Python
    installs its KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_sigterm_after_a_ctrl_c_is_not_a_second_interrupt_while_a_second_ctrl_c_is() -> None:
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever the suite's
    try:
        with terminate_as_interrupt():
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: the run is being interrupted already
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def _waited_with(number: int, seconds: float) -> tuple[int, bool]:
    """wait_passing_on_signals for a child that sleeps ``seconds``, this process sent signal ``number`` 0.3 s after
    the child started; the timer is joined before returning, so that no signal lands after the test."""
    from harness.runners.signals import wait_passing_on_signals

    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    timer = threading.Timer(0.3, os.kill, (os.getpid(), number))
    timer.start()
    try:
        return wait_passing_on_signals(child)
    finally:
        timer.join()


def test_a_sigterm_while_waiting_is_passed_on_and_a_ctrl_c_the_shell_ignores_stays_ignored() -> None:
    assert _waited_with(signal.SIGTERM, 30) == (-signal.SIGTERM, True)  # the child ended by the SIGTERM passed on
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job
    try:
        assert _waited_with(signal.SIGINT, 1) == (0, False)  # it slept on
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_the_shell_ignores_stays_ignored_while_a_final_status_is_stored() -> None:
    """A background job's run that completes while a Ctrl-C reaches its process group: still no interruption (it
    was reported as 'interrupted after run ... completed', exit code 130)."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job
    try:
        with signals_deferred() as came:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
        assert came == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
