"""Run directories sent through Ray, so that a sweep on a cluster needs no storage every node sees.

A trial on a cluster trains into a node-local run store. Its run directory travels as an uncompressed
tar archive (bytes; Ray moves large arguments through its object store) to :class:`DriverStore`, a small
actor pinned to the driver's node (``NodeAffinitySchedulingStrategy``, not soft), which is the only
process that writes the driver's run store. The other way, the actor sends a trial the driver's copy of
its run before the trial starts, so a completed run is reported without retraining and an unfinished
one resumes from its checkpoints.

A received run is unpacked beside the store (``<runs>/.incoming/staging/``, deeper than the
``task/model/run`` layout that readers glob) and swapped into place with one
``renameat2(RENAME_EXCHANGE)`` (Linux >= 3.15), so a reader sees the old directory or the new one, never
a mix; where the exchange is not available, two renames leave a window of microseconds without it.
"""

from __future__ import annotations

import ctypes
import io
import os
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGING = ".incoming/staging"
SYNC_EVERY_S = 30.0  # how often a running trial sends its run directory home when something in it changed
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2

Signature = frozenset[tuple[str, int, int]]


def run_key(task: str, model: str, run_id: str) -> str:
    """``task/model/run_id``, refusing anything that could name a path outside the store."""
    for part in (task, model, run_id):
        if not part or part in (".", "..") or "/" in part or "\0" in part or part.startswith("."):
            raise ValueError(f"not a run store name: {part!r}")
    return f"{task}/{model}/{run_id}"


def pack(path: Path) -> bytes:
    """The directory's files (links kept as links) as an uncompressed tar archive with relative names. Each file
    is read through one open handle, so a file replaced meanwhile (every run file is written by rename) is
    archived whole, old or new; the temporary files of writes in progress are left out."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                full = Path(root) / name
                arcname = full.relative_to(path).as_posix()
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                if full.is_symlink():
                    archive.add(full, arcname=arcname, recursive=False)
                    continue
                try:
                    with full.open("rb") as handle:
                        archive.addfile(archive.gettarinfo(arcname=arcname, fileobj=handle), handle)
                except FileNotFoundError:  # removed since the walk listed it
                    continue
    return buffer.getvalue()


def unpack(payload: bytes, dest: Path) -> None:
    """Extract an archive from :func:`pack` into ``dest`` (the ``data`` filter: nothing outside ``dest``)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r") as archive:
        archive.extractall(dest, filter="data")


def signature(path: Path) -> Signature:
    """(relative path, size, mtime in ns) of every file under ``path``: whether a run directory changed."""
    found = set()
    for root, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(root, name))
            found.add((os.path.relpath(os.path.join(root, name), path), stat.st_size, stat.st_mtime_ns))
    return frozenset(found)


def install(payload: bytes, runs_dir: Path, key: str) -> Path:
    """Write a packed run directory into the store at ``runs_dir/key``, replacing any older copy at once."""
    target = runs_dir / key
    staging = runs_dir / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(dir=staging, prefix=key.replace("/", "~") + "."))
    try:
        unpack(payload, incoming)
        _fsync_tree(incoming)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.rename(incoming, target)
        elif _exchange(incoming, target):
            shutil.rmtree(incoming)  # now the old copy
        else:
            old = incoming.with_name(incoming.name + ".old")
            os.rename(target, old)
            os.rename(incoming, target)
            shutil.rmtree(old)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return target


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2 with RENAME_EXCHANGE); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


def _fsync_tree(path: Path) -> None:
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                with open(full, "rb") as handle:
                    os.fsync(handle.fileno())


class DriverStore:
    """The driver's run store, served from the driver's node (wrapped by :func:`start_driver_store`)."""

    def __init__(self, runs_dir: str) -> None:
        self.runs_dir = Path(runs_dir)

    def fetch(self, key: str) -> bytes | None:
        """The driver's copy of a run directory, or None when the store has none."""
        path = self.runs_dir / run_key(*key.split("/"))
        return pack(path) if (path / "results.json").exists() else None

    def install(self, key: str, payload: bytes) -> None:
        """Write a trial's run directory into the store."""
        install(payload, self.runs_dir, run_key(*key.split("/")))


def node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def start_driver_store(runs_dir: Path) -> Any:
    """A :class:`DriverStore` actor on this (the driver's) node; it needs no CPU."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(node_id=node_id(), soft=False)
    actor = ray.remote(num_cpus=0, scheduling_strategy=here)(DriverStore).remote(str(runs_dir))
    ray.get(actor.fetch.remote("_/_/_"))  # fails here, not in the first trial, if the actor cannot start
    return actor


def through_ray(actor: Any) -> tuple[Callable[[str], bytes | None], Callable[[str, bytes], None]]:
    """A :class:`DriverStore` actor's ``fetch`` and ``install`` as blocking calls, for :class:`RunSender`."""
    import ray

    return (lambda key: ray.get(actor.fetch.remote(key)),
            lambda key, payload: ray.get(actor.install.remote(key, payload)))


class RunSender:
    """A trial's side of the transfer: receive the driver's copy, send changes home while training (every
    ``every_s`` from a background thread) and once more at the end. ``fetch`` and ``install`` are the
    driver store's (:func:`through_ray`)."""

    def __init__(self, fetch: Callable[[str], bytes | None], install: Callable[[str, bytes], None], key: str,
                 local_run: Path, every_s: float = SYNC_EVERY_S) -> None:
        self.fetch, self.install, self.key, self.path, self.every_s = fetch, install, key, local_run, every_s
        self.sent: Signature = frozenset()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="run-sender", daemon=True)

    def receive(self) -> bool:
        """Unpack the driver's copy of the run (if any) into the local store; True when there was one."""
        payload = self.fetch(self.key)
        if payload is None:
            return False
        unpack(payload, self.path)
        self.sent = signature(self.path)
        return True

    def send(self) -> bool:
        """Send the run directory home if it exists and changed since the last send; True when sent."""
        with self._lock:
            if not (self.path / "results.json").exists():
                return False
            now = signature(self.path)
            if now == self.sent:
                return False
            self.install(self.key, pack(self.path))
            self.sent = now  # taken before packing: a change in between is sent again next time
            return True

    def home(self) -> bool:
        """Whether the driver has the run as it is here (or there is no run to send)."""
        return not (self.path / "results.json").exists() or signature(self.path) == self.sent

    def __enter__(self) -> RunSender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.send()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.send()
            except Exception as exc:  # noqa: BLE001  retried at the next send or at the end
                print(f"sending the run home failed for now ({type(exc).__name__}: {exc}); retrying later",
                      flush=True)
