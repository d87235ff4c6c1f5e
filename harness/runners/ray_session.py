"""One way to start (or join) Ray for every runner: sweeps (``tune.py``) and RL runs (``rl.py``).

* inside a Ray worker (an RL run that is a trial of a sweep) the existing connection is used;
* with ``RAY_ADDRESS`` set, the cluster it names is joined, after :func:`check_cluster` has made sure it
  answers and accepts this process's credentials (a mistake there is one line, not a 20-second retry
  loop and a screen of C++ log lines);
* otherwise a local Ray sized to this machine starts, with a small object store, no dashboard and
  a short temp dir (AF_UNIX socket paths are limited to 107 bytes).

The environment settings are made before ``import ray``, which reads some of them at import time.
Workers run at niceness 0: at Ray's default of 15 they starve beside the driver on a 2-core machine.
On machines without a network, start Ray inside a loopback-only namespace (``unshare -n``): its
dashboard head probes cloud metadata addresses otherwise.

Token authentication (Ray >= 2.52; ``python/ray/_private/authentication/authentication_token_setup.py``
and ``python/ray/scripts/scripts.py`` in ray-project/ray, release 2.60.0): ``ray.init()`` without an
address turns it on and writes a token to ``~/.ray/auth_token`` when none exists; ``ray start --head``
turns it on when a token already exists (``RAY_AUTH_TOKEN``, the file named by ``RAY_AUTH_TOKEN_PATH``,
or ``~/.ray/auth_token``); a driver joining an explicit address (``RAY_ADDRESS``) and ``ray start
--address`` send a token only when ``RAY_AUTH_MODE=token`` is set. So after any local run, a cluster
started by hand usually demands a token that a driver does not send unless told to.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.tracking import configure_environment

# RAY_DISABLE_FAILURE_SIGNAL_HANDLER: Ray's core worker otherwise installs absl's failure-signal handler for
# SIGTERM too (python/ray/_raylet.pyx), which logs a stack dump and aborts the driver (exit -6) after Python has
# stored the run as interrupted; without it SIGTERM ends an RL run or a sweep like Ctrl-C (exit 130). It is read
# when ray is imported, so the settings are made when this module is imported (runners import it before ray).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "RAY_CHDIR_TO_TRIAL_DIR": "0",
           "RAY_AIR_NEW_OUTPUT": "0", "RAY_worker_niceness": "0", "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1"}
for _key, _value in RAY_ENV.items():  # at import, before any `import ray`: some are read when ray is imported
    os.environ.setdefault(_key, _value)
OBJECT_STORE_BYTES = 256 * 1024**2
PROBE_TIMEOUT_S = 5.0
TOKEN_WHERE = ("the cluster's token in RAY_AUTH_TOKEN (or in a file named by RAY_AUTH_TOKEN_PATH, or in "
               "~/.ray/auth_token); `ray get-auth-token` on the head node prints it")


def local_cpus(num_cpus: int | None) -> int:
    """The CPUs a local Ray starts with: ``num_cpus`` (``rl.num_cpus``), else this machine's."""
    return int(num_cpus or os.cpu_count() or 1)


def local_gpus() -> int:
    """The GPUs a local Ray starts with: those torch sees (both read ``CUDA_VISIBLE_DEVICES``)."""
    import torch

    return torch.cuda.device_count()


def learner_gpus(rl: Any) -> float:
    """The GPUs an RL run's learners ask for: ``rl.num_gpus_per_learner`` for each remote learner, or for the
    driver's local one when ``rl.num_learners`` is 0 (the value RLlib is given:
    :func:`harness.runners.rl.gpus_per_learner`)."""
    from harness.runners.rl import gpus_per_learner

    return float(gpus_per_learner(rl)) * max(int(rl.num_learners), 1)


@contextmanager
def ray_session(num_cpus: int | None = None, log_to_driver: bool = True) -> Iterator[None]:
    """Ray is up inside the block; it is shut down afterwards only if this block started it.

    The shutdown runs whole, a Ctrl-C or SIGTERM that comes meanwhile delivered again once it has returned
    (:func:`_whole`). In Ray 2.60 a KeyboardInterrupt inside ``ray.shutdown`` can leave the driver's Python
    ``CoreWorker`` in place over a core worker that is gone; the next ``ObjectRef`` released (the interrupted run's
    RLlib algorithm, held by the exception's traceback until the command has printed that it was interrupted) then
    ends the process at once with exit code 1 (``ray::QuickExit`` in ``CoreWorkerProcess::GetCoreWorker``): an RL
    run stopped by a Ctrl-C as it finished exited 1, not 130."""
    configure_environment()  # W&B mode chosen before Ray starts, so workers inherit it
    for key, value in RAY_ENV.items():
        os.environ.setdefault(key, value)
    if not sys.stdout.isatty():  # workers' lines reach a file or a pipe: without the terminal's colour codes
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")
    import ray

    if ray.is_initialized():
        yield
        return
    address = os.environ.get("RAY_ADDRESS")
    if address:
        check_cluster(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=log_to_driver)
        except (ConnectionError, ray.exceptions.AuthenticationError, ray.exceptions.RpcError) as exc:
            raise UserError(f"RAY_ADDRESS={address}: cannot join the Ray cluster ({_first_line(exc)}); "
                            f"unset RAY_ADDRESS to run on a local Ray") from None
    else:
        temp = Path(os.environ.get("RAY_TMPDIR", "/tmp/rh"))
        ray.init(num_cpus=local_cpus(num_cpus), include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
                 _temp_dir=str(temp), log_to_driver=log_to_driver)
    try:
        yield
    finally:
        _whole(ray.shutdown)()


@contextmanager
def signals_kept_through_ray_init() -> Iterator[None]:
    """Around ``ray.init``: the SIGTERM handler in place (a sweep's, :func:`harness.runners.tune.sigterm_as_ctrl_c`)
    stays, and it and Ctrl-C wait while Ray connects this driver. In Ray 2.60:

    * ``ray.init`` installs ``sys.exit(signum)`` as the driver's SIGTERM handler, through
      ``ray._private.utils.set_sigterm_handler`` (Ray's node and worker processes install theirs the same way),
      and it stays after ``ray.init`` returns: a SIGTERM that landed while Ray started ended a sweep with exit code
      15 and not a word. Inside the block that function installs nothing;
    * a KeyboardInterrupt raised inside ``ray._private.worker.connect`` (in the Python code that ``CoreWorker``'s
      constructor runs after its C++ part) leaves a half-built core worker, and the process ends in a segmentation
      fault (exit code 139) as the interpreter exits. Inside the block ``connect`` runs whole and a SIGTERM or
      Ctrl-C that came meanwhile is delivered again as it returns
      (:func:`harness.runners.signals.signals_deferred`).

    Ray's processes are still ended: by ``ray.shutdown`` when the block that started Ray ends, or by the exit
    handlers Ray registers when its start is cut short."""
    import ray._private.utils as ray_utils
    import ray._private.worker as ray_worker

    install, connect = ray_utils.set_sigterm_handler, ray_worker.connect
    ray_utils.set_sigterm_handler = _handler_not_installed
    ray_worker.connect = _whole(connect)
    try:
        yield
    finally:
        ray_utils.set_sigterm_handler, ray_worker.connect = install, connect


def _handler_not_installed(handler: Any) -> None:
    """Stands in for Ray's ``set_sigterm_handler`` inside :func:`signals_kept_through_ray_init`."""


def _whole(call: Any) -> Any:
    """``call`` (``ray._private.worker.connect``, ``ray.shutdown``) with Ctrl-C and SIGTERM held until it
    returns, then the first of them delivered again."""
    import signal

    from harness.runners.signals import signals_deferred

    def whole(*args: Any, **kwargs: Any) -> Any:
        came: list[int] = []
        try:
            with signals_deferred() as came:
                return call(*args, **kwargs)
        finally:
            if came:  # the handlers of before are back: the first signal reaches its own
                signal.raise_signal(came[0])

    return whole


def check_cluster(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Fail with one line (UserError) unless a Ray cluster answers at ``address`` and accepts this process's
    token. ``auto`` (the cluster started on this machine) is left to ``ray.init``."""
    if address == "auto":
        return
    if address.startswith("ray://"):
        raise UserError(f"RAY_ADDRESS={address}: Ray Client addresses are not supported; run the command on a "
                        "node of the cluster with RAY_ADDRESS=<head host>:<GCS port> (6379 unless set)")
    host, port = split_address(address)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        raise UserError(f"RAY_ADDRESS={address}: no Ray cluster answers there ({exc.strerror or exc}); start one "
                        "with `ray start --head` or unset RAY_ADDRESS to run on a local Ray") from None
    _check_token(address, timeout_s)


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``; port 6379 when left out) as a (host, port) pair."""
    host, sep, port = address.rpartition(":")
    if not sep or "]" in port:
        host, port = address, "6379"
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise UserError(f"RAY_ADDRESS={address} is not host:port (the GCS address of `ray start --head`)")
    return host, int(port)


def _check_token(address: str, timeout_s: float) -> None:
    """Ask the cluster's GCS for its id the way ``ray.init`` does first, with this process's token (if any)."""
    import ray._raylet as raylet
    from ray.exceptions import AuthenticationError, RpcError

    token_mode = raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN
    try:
        has_token = raylet.AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)
    except AuthenticationError:  # RAY_AUTH_TOKEN_PATH names a missing or empty file
        raise UserError(f"RAY_AUTH_TOKEN_PATH={os.environ.get('RAY_AUTH_TOKEN_PATH')} is not a readable, non-empty "
                        f"file; give {TOKEN_WHERE}") from None
    if token_mode and not has_token:  # Ray aborts the process (a failed check) in this state
        raise UserError(f"RAY_AUTH_MODE=token but no token was found; give {TOKEN_WHERE}")
    standalone = getattr(getattr(raylet, "InnerGcsClient", None), "standalone", None)
    if standalone is None:  # another Ray version: ray.init reports the problem itself
        return
    try:
        with _quiet_stderr():  # the GCS client logs each refused attempt from C++
            standalone(address, None, int(timeout_s * 1000))
    except AuthenticationError:
        if token_mode:
            raise UserError(f"RAY_ADDRESS={address}: the Ray cluster refused the token this process sent "
                            f"(RAY_AUTH_MODE=token; the first of RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, "
                            f"~/.ray/auth_token); give {TOKEN_WHERE}") from None
        raise UserError(f"RAY_ADDRESS={address}: the Ray cluster uses token authentication and this process sent "
                        f"no token; set RAY_AUTH_MODE=token and give {TOKEN_WHERE}") from None
    except RpcError as exc:
        raise UserError(f"RAY_ADDRESS={address}: no Ray cluster answers there ({_first_line(exc)}); give the GCS "
                        "address of `ray start --head` (port 6379 unless set) or unset RAY_ADDRESS") from None


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 goes to /dev/null inside the block (C++ logging writes there directly)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


def exit_on_stray_system_exit() -> None:
    """In a Ray worker, end the process when a SIGTERM's ``SystemExit`` cannot propagate.

    Ray's SIGTERM handler (``sigterm_handler`` in ``python/ray/_private/worker.py``) raises ``SystemExit`` wherever
    the main thread is. When Ray shuts a sweep's workers down while one is inside a weakref callback or a
    ``__del__`` (the garbage collector at work), Python cannot raise it there: it prints ``Exception ignored in
    ... SystemExit: 1`` with a traceback, and the worker goes on until Ray kills it. This hook ends the worker as
    the signal asked (its output flushed first, the exit code the ``SystemExit``'s) and passes every other
    exception Python cannot raise to the hook that was there before. Installed once per process."""
    previous = sys.unraisablehook
    if getattr(previous, "exits_on_system_exit", False):
        return

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, SystemExit):
            code = getattr(unraisable.exc_value, "code", 1)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(code if isinstance(code, int) else 1)
        previous(unraisable)

    hook.exits_on_system_exit = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook
