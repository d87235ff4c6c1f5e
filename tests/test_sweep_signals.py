"""A sweep's driver stopped by SIGTERM ends as Ctrl-C ends it: Tune stops its trials, the table lists each with what
the run store holds, the command says that it resumes the sweep, and it exits 130. (Ray's driver handler for
SIGTERM raises ``SystemExit(15)`` wherever the main thread is: the sweep used to end with exit code 15 and not a
word.) That holds from the command's start to its end, Ray's start and stop included, for a SIGTERM to the driver
alone and for one to its whole process group (GNU ``timeout``, ``kill -TERM -PGID``), which ends Ray's own processes
too. The end-to-end tests run Ray in a loopback-only network namespace, as tests/test_sweep.py does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.runners import tune
from harness.runs import GONE, listed_status, owner_state
from tests.conftest import ROOT, requires_loopback_only

LONG_SWEEP = """name: sigterm_check
task: babi
models: [lstm]
profile: smoke
seeds: [0]
overrides: [train.max_epochs=300]
cpus_per_trial: 1
"""


def test_sigterm_inside_the_block_calls_the_ctrl_c_handler_of_the_moment():
    called: list[int] = []
    before_int = signal.signal(signal.SIGINT, lambda signum, frame: called.append(signum))
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        with tune.sigterm_as_ctrl_c():
            signal.raise_signal(signal.SIGTERM)
        assert called == [signal.SIGINT]  # what Tune's own Ctrl-C handler receives: it ends the sweep in order
        assert signal.getsignal(signal.SIGTERM) == before_term  # restored on the way out
    finally:
        signal.signal(signal.SIGINT, before_int)


def test_sigterm_inside_the_block_is_a_keyboard_interrupt_where_ctrl_c_is_ignored():
    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a script
    try:
        with pytest.raises(KeyboardInterrupt), tune.sigterm_as_ctrl_c():
            signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, before_int)


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if text in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared:\n{path.read_text(errors='replace')[-3000:]}")


@requires_loopback_only
@pytest.mark.parametrize("to_group", [False, True], ids=["driver", "group"])
@pytest.mark.slow
def test_sigterm_stops_the_sweep_as_ctrl_c_does(to_group, env, tmp_path):
    """SIGTERM to the driver alone: Tune ends the sweep in order and the table follows. A SIGTERM to its whole
    process group also ends Ray's GCS server and raylet, which are in that group; the sweep then stops without the
    table, and its run is left as a kill leaves it (resumable)."""
    sweep, runs, out = tmp_path / "sigterm_check.yaml", tmp_path / "runs", tmp_path / "out.txt"
    sweep.write_text(LONG_SWEEP)
    command = " ".join([sys.executable, "-m", "harness.cli", "sweep", str(sweep), "--runs-dir", str(runs)])
    with out.open("w") as sink:
        proc = subprocess.Popen(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {command}"], cwd=ROOT,
                                env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(out, "epoch 2/300", proc, 120)  # the trial is training, with a checkpoint stored
        os.killpg(proc.pid, signal.SIGTERM) if to_group else proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.read_text(errors="replace")
    assert code == 130, text[-3000:]
    assert "interrupted; the same command resumes the sweep" in text
    table = [line for line in text.splitlines() if line.startswith("lstm seed=0 ")]
    assert to_group or (table and " interrupted " in table[-1]), text[-3000:]
    (results,) = runs.glob("babi/lstm/*/results.json")
    # Tune ends its trials' workers outright, so the run says running with its process gone, as after a kill
    assert listed_status(json.loads(results.read_text())) in ("interrupted", GONE)


def test_ray_installs_no_sigterm_handler_of_its_own_while_it_starts():
    import ray._private.utils as ray_utils

    from harness.runners.ray_session import signals_kept_through_ray_init

    install = ray_utils.set_sigterm_handler
    before = signal.getsignal(signal.SIGTERM)
    try:
        with signals_kept_through_ray_init():
            ray_utils.set_sigterm_handler(lambda signum, frame: None)  # as ray.init does as it starts
            assert signal.getsignal(signal.SIGTERM) == before
        assert ray_utils.set_sigterm_handler is install
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_signal_while_ray_connects_the_driver_waits_until_the_connection_is_made(monkeypatch):
    """A KeyboardInterrupt inside Ray's ``connect`` leaves a half-built core worker (a segmentation fault at exit):
    a SIGTERM that comes meanwhile reaches the sweep's handler once ``connect`` has returned."""
    import ray._private.worker as ray_worker

    from harness.runners.ray_session import signals_kept_through_ray_init

    events: list[str] = []

    def connect(*args: object, **kwargs: object) -> str:
        signal.raise_signal(signal.SIGTERM)
        events.append("connected")
        return "worker"

    monkeypatch.setattr(ray_worker, "connect", connect)
    before = signal.signal(signal.SIGTERM, lambda signum, frame: events.append("sigterm"))
    try:
        with signals_kept_through_ray_init():
            assert ray_worker.connect() == "worker"
        assert events == ["connected", "sigterm"]
        assert ray_worker.connect is connect
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_ctrl_c_while_ray_shuts_down_waits_until_the_shutdown_is_done(monkeypatch, foreground_ctrl_c):
    """A KeyboardInterrupt inside ``ray.shutdown`` (just after the core worker's shutdown, before Ray forgets it)
    made the next ObjectRef released end the process with exit code 1: an RL run stopped by a Ctrl-C as it ended
    exited 1, not 130. The shutdown runs whole and the Ctrl-C comes after it."""
    import ray

    from harness.runners.ray_session import ray_session

    events: list[str] = []

    def shutdown() -> None:
        signal.raise_signal(signal.SIGINT)
        events.append("shut down")

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: events.append("started"))
    monkeypatch.setattr(ray, "shutdown", shutdown)
    with pytest.raises(KeyboardInterrupt), ray_session(num_cpus=1):
        events.append("inside")
    assert events == ["started", "inside", "shut down"]


SHORT_SWEEP = ("name: sigterm_moment\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0]\n"
               "overrides: [train.max_epochs=1]\n")


@pytest.mark.parametrize("moment", ["start", "stop"])
def test_sigterm_while_ray_starts_or_stops_ends_the_sweep_as_ctrl_c(moment, env, tmp_path, monkeypatch, capsys):
    """Ray replaced by a stand-in that installs a handler as ``ray.init`` does (``sys.exit(signum)``) and gets a
    SIGTERM as Ray starts or as it shuts down: the command says it was interrupted and exits 130. (Ray's handler
    used to win in both places: exit code 15 and not a word.)"""
    import ray._private.utils as ray_utils
    import ray.tune

    import harness.runners.ray_session
    from harness.cli import main

    def ray_exit(signum: int, frame: object) -> None:
        raise SystemExit(signum)

    @contextlib.contextmanager
    def session(*args: object, **kwargs: object) -> Iterator[None]:
        ray_utils.set_sigterm_handler(ray_exit)
        if moment == "start":
            signal.raise_signal(signal.SIGTERM)
        yield
        if moment == "stop":
            signal.raise_signal(signal.SIGTERM)

    class Tuner:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def fit(self) -> list:
            return []

    monkeypatch.setattr(harness.runners.ray_session, "ray_session", session)
    monkeypatch.setattr(ray.tune, "Tuner", Tuner)
    monkeypatch.setattr(ray.tune, "with_parameters", lambda trainable, **kwargs: trainable)
    monkeypatch.setattr(ray.tune, "with_resources", lambda trainable, resources: trainable)
    sweep = tmp_path / "sigterm_moment.yaml"
    sweep.write_text(SHORT_SWEEP)
    before = signal.getsignal(signal.SIGTERM)
    try:
        assert main(["sweep", str(sweep), "--runs-dir", str(tmp_path / "runs")]) == 130
    finally:
        signal.signal(signal.SIGTERM, before)
    assert capsys.readouterr().err.strip() == ("interrupted; the same command resumes the sweep (completed trials "
                                               "are not trained again)")


STARTS_THEN_SIGTERM = """
import os, signal, sys
import harness.runners.ray_session  # Ray's environment, before Ray is imported
import ray._private.node as node
from harness.cli import main

start = node.Node.start_ray_processes

def start_then_sigterm(self):
    start(self)
    os.killpg(0, signal.SIGTERM)  # kill -TERM -PGID as ray.init has just started Ray's processes

node.Node.start_ray_processes = start_then_sigterm
sys.exit(main(sys.argv[1:]))
"""


@requires_loopback_only
def test_sigterm_to_the_group_while_ray_starts_ends_the_sweep_as_ctrl_c(env, tmp_path):
    """The process group's SIGTERM lands inside ``ray.init``, once it has started Ray's processes (Ray's handler ended
    the command with exit code 15 and not a word): exit code 130, the line saying so, and no run in the run store,
    since no trial had started."""
    sweep, runs, driver = tmp_path / "sigterm_check.yaml", tmp_path / "runs", tmp_path / "driver.py"
    sweep.write_text(LONG_SWEEP)
    driver.write_text(STARTS_THEN_SIGTERM)
    command = " ".join([sys.executable, str(driver), "sweep", str(sweep), "--runs-dir", str(runs)])
    env = {**env, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {command}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, start_new_session=True)
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == ("interrupted; the same command resumes the sweep (completed "
                                                    "trials are not trained again)")
    assert not list(runs.glob("*/*/*/results.json"))


class _RayGoneTuner:
    """A Tune run that a SIGTERM asked to end in order, and that then failed because Ray's own processes, which the
    same SIGTERM reached (a process group's), were gone by the time Tune asked them to stop its trials."""

    def fit(self):
        raise RuntimeError("Failed to connect to GCS")


def test_a_tune_error_after_a_sigterm_is_the_interruption_not_ray_giving_up():
    with pytest.raises(KeyboardInterrupt):
        tune.fit_sweep(_RayGoneTuner(), "sigterm_check", terminated=[signal.SIGTERM])
    with pytest.raises(tune.SweepStopped):  # without a SIGTERM: Ray gave up, as before
        tune.fit_sweep(_RayGoneTuner(), "sigterm_check", terminated=[])


def test_the_block_yields_the_sigterms_it_received():
    before_int = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        with tune.sigterm_as_ctrl_c() as terminated:
            assert terminated == []
            signal.raise_signal(signal.SIGTERM)
        assert terminated == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGINT, before_int)


def test_a_stopped_trials_row_waits_for_the_process_still_writing_its_run(monkeypatch):
    """Tune's loop can end while a stopped trial's worker still trains for a moment: its run reads ``running`` with a
    live owner. The row waits (bounded) until that process lets the run go, then reads it again; a run another
    command goes on writing past the wait is read as it is."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)", "harness"])
    running = {"status": "running", "owner": {"host": socket.gethostname(), "pid": child.pid}}
    stopped = {"status": "interrupted"}
    monkeypatch.setattr(tune, "stored_results", lambda composed, runs_dir: stopped if child.poll() is not None
                        else running)
    try:
        started = time.monotonic()
        # once the writer has ended: the run as it left it (here: interrupted), or read just before it ended
        assert owner_state(tune.settled_results(None, Path("."), wait_s=30)) != "alive"
        assert time.monotonic() - started < 25
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "harness"])
        running["owner"]["pid"] = child.pid
        assert tune.settled_results(None, Path("."), wait_s=0.5) == running  # still written after the wait
    finally:
        child.kill()
        child.wait()
