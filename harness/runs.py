"""The run store: the single source of truth for every run.

Layout::

    runs/<task>/<model>/<run_id>/
      config.yaml     resolved config
      results.json    schema_version, status, final and best metrics, seed, git, versions, device,
                      wall time, steps, throughput, data source, error
      metrics.csv     curves, one row per logged step
      checkpoints/    last.ckpt and best.ckpt
      wandb/          the offline W&B run

Every write is atomic (a temporary file in the same directory, then ``os.replace``), so a killed run
never leaves a half-written file. A run whose status is not ``completed`` is resumed by the same
command from ``checkpoints/last.ckpt``.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import math
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from harness.provenance import CodeStatus, attempt_record

if TYPE_CHECKING:
    from reports.store import RunRecord

KEPT = ".damaged-"  # the mark of a file set aside because it could not be read (Run.set_aside)
SCHEMA_VERSION = 2  # 2: attempts is a list of per-attempt provenance records; code and data fingerprints
FLOAT32_SLACK = 1e-6
"""How far apart two figures of a run may be and still be one figure: a run stores its metrics as float32 (950 right of
1,000 is stored as 0.94999999), so a figure recomputed in float64 differs from it in the last places."""
STATUSES = ("running", "completed", "failed", "diverged", "interrupted")
REQUIRED_KEYS = ("run_id", "task", "model", "status")
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")  # atomic_write's temporary files (tempfile.mkstemp's names)
_UMASK = os.umask(0)
os.umask(_UMASK)


def default_runs_dir() -> Path:
    """``$HARNESS_RUNS_DIR`` or ``./runs`` (a variable set to an empty value is refused: :func:`harness.paths.
    environment_folder`)."""
    from harness.paths import environment_folder

    return environment_folder("HARNESS_RUNS_DIR", "runs")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _wrong_types(results: dict[str, Any]) -> list[str]:
    """The keys of a results record whose value is not of the type the harness writes (and its commands read): names
    are strings, ``metrics`` maps names to numbers, ``seed``, ``steps`` and ``epochs`` are integers (null allowed
    where the harness may write it), ``best``, ``data`` and ``code`` are objects or null, ``attempts`` a list (or
    schema 1's count)."""
    def fits(key: str, test: Callable[[Any], bool]) -> bool:
        return key not in results or test(results[key])

    checks: dict[str, Callable[[Any], bool]] = {
        **{key: lambda v: isinstance(v, str) and bool(v) for key in ("run_id", "task", "model")},
        "metrics": lambda v: isinstance(v, dict) and all(x is None or _is_number(x) for x in v.values()),
        **{key: lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool))
           for key in ("seed", "steps", "epochs")},
        **{key: lambda v: v is None or isinstance(v, dict) for key in ("best", "data", "code")},
        "attempts": lambda v: isinstance(v, list) or (isinstance(v, int) and not isinstance(v, bool)),
    }
    return [key for key, test in checks.items() if not fits(key, test)]


def record_damage(results: Any) -> str | None:
    """Why a parsed ``results.json`` cannot be used (not an object, keys missing, an unknown status, a key of the
    wrong type: :func:`_wrong_types`), or None. A record edited by hand into another shape is named by every command
    that reads it, in one line, rather than failing inside one of them."""
    if not isinstance(results, dict):
        return f"results.json holds a {type(results).__name__}, not an object"
    missing = [key for key in REQUIRED_KEYS if key not in results]
    if missing:
        return f"results.json lacks {', '.join(missing)}"
    if results["status"] not in STATUSES:
        return f"results.json has an unknown status {results['status']!r}"
    return type_damage(results)


def type_damage(results: dict[str, Any]) -> str | None:
    """Which keys of a results record hold a value of the wrong type (:func:`_wrong_types`), as one clause, or None:
    what a listing (``harness runs``, the report) shows as unreadable rather than misread."""
    wrong = _wrong_types(results)
    if not wrong:
        return None
    shown = ", ".join(f"{key} {json.dumps(results[key], default=str)[:40]}" for key in wrong)
    return f"results.json has a value of the wrong type: {shown}"


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, then rename it over ``path``: readers see
    the old file or the new one, never a mix, and a killed process leaves no half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        _lock_while_open(fd)  # :func:`remove_stale_temporaries` leaves a file being written alone
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file ordinary permissions
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda handle: handle.write(text.encode()))


def _lock_while_open(fd: int) -> None:
    """An exclusive ``flock`` on an open file, let go when it is closed (a file system without locks: none)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


STALE_TEMPORARY_S = 60.0  # a temporary file untouched this long, which no process holds, was left by a kill


def remove_stale_temporaries(folder: Path, older_than_s: float = STALE_TEMPORARY_S) -> list[Path]:
    """Delete the temporary files that killed :func:`atomic_write` calls left anywhere under ``folder`` (a shared
    one, such as the cache of generated data, where several processes may write at once): those no process is
    writing (a writer holds a lock on its file) and unchanged for ``older_than_s`` seconds. Returns them."""
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for parent, _, files in os.walk(folder):
        for name in files:
            path = Path(parent, name)
            if is_atomic_temporary(path) and _stale(path, older_than_s):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _stale(path: Path, older_than_s: float) -> bool:
    """Whether a temporary file is unchanged for ``older_than_s`` seconds and no process holds its lock."""
    try:
        if datetime.now(UTC).timestamp() - path.stat().st_mtime < older_than_s:
            return False
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no locks here: its age decides
        return True
    finally:
        os.close(handle)
    return True


def free_name(target: Path) -> Path:
    """``target``, or the first of ``<target>-2``, ``<target>-3``, ... that does not exist: names stamped to the second
    (a file set aside, a W&B folder kept) stay apart when two are made within one second, so none replaces another."""
    free, n = target, 1
    while free.exists():
        n += 1
        free = target.with_name(f"{target.name}-{n}")
    return free


def set_aside(path: Path, why: str = "damaged") -> Path:
    """Rename a file to ``<name>.<why>-<time>`` beside it (nothing is deleted; :func:`free_name` keeps two set aside
    within one second apart); returns the new path. ``why`` is ``damaged`` for a file that cannot be read,
    ``unused`` for an intact one a restart leaves behind."""
    target = free_name(path.with_name(f"{path.name}.{why}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"))
    os.replace(path, target)
    return target


@dataclass
class Run:
    """One run directory and its files."""

    path: Path

    @property
    def results_path(self) -> Path:
        return self.path / "results.json"

    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.csv"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def last_checkpoint(self) -> Path:
        return self.checkpoint_dir / "last.ckpt"

    @property
    def best_checkpoint(self) -> Path:
        return self.checkpoint_dir / "best.ckpt"

    @property
    def has_epoch_checkpoint(self) -> bool:
        """Whether ``last.ckpt`` or ``best.ckpt`` exists (the checkpoints of supervised, stepwise and stacked runs),
        intact or not."""
        return self.last_checkpoint.exists() or self.best_checkpoint.exists()

    def exists(self) -> bool:
        return self.results_path.exists()

    def read_results(self) -> dict[str, Any]:
        return json.loads(self.results_path.read_text())

    def completed_results(self, doing: str, finished: tuple[str, ...] = ("completed",)) -> dict[str, Any]:
        """The results of a run whose status is one of ``finished`` (by default: completed), for ``doing``
        (e.g. "published"); otherwise a one-line error."""
        from harness.errors import UserError

        problem = self.damage()
        if problem:
            raise UserError(f"{self.path}: {problem}; cannot be {doing}")
        results = self.read_results()
        if results.get("status") not in finished:
            gone = ("; its process is gone (killed?): the command that trained it resumes it"
                    if listed_status(results) == GONE else "")
            raise UserError(f"{self.path}: status {results.get('status')!r}; only a {' or '.join(finished)} run "
                            f"can be {doing}{gone}")
        return results

    def damage(self) -> str | None:
        """Why ``results.json`` cannot be used (unreadable, not an object, keys missing or of the wrong type), or
        None."""
        try:
            results = self.read_results()
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return f"results.json is not readable JSON ({type(exc).__name__}: {str(exc)[:80]})"
        return record_damage(results)

    def set_aside(self, path: Path, why: str = "damaged") -> Path:
        """A file of the run set aside (:func:`set_aside`); returns the new path."""
        return set_aside(path, why)

    def write_results(self, results: dict[str, Any]) -> None:
        atomic_write_text(self.results_path, json.dumps(results, indent=2, sort_keys=False, default=float) + "\n")

    def update_results(self, **fields: Any) -> dict[str, Any]:
        results = self.read_results()
        results.update(fields)
        self.write_results(results)
        return results

    @property
    def status(self) -> str | None:
        if not self.exists() or self.damage():
            return None
        return self.read_results().get("status")

    def owner_alive(self) -> bool:
        """Whether a process on this host is still running this run (guards against two writers)."""
        if not self.exists() or self.damage():
            return False
        return owner_state(self.read_results()) == "alive"

    def remove_leftover_temporaries(self) -> list[Path]:
        """Delete the temporary files that a killed :func:`atomic_write` left in the run's folder (``.NAME.XXXXXXXX
        .tmp``, nothing else); returns them. Only for a run no live process writes."""
        if not self.path.is_dir():
            return []
        leftovers = []
        for folder, subfolders, files in os.walk(self.path):
            subfolders[:] = [name for name in subfolders if name != "wandb"]  # W&B's own files: never ours
            leftovers += [Path(folder, name) for name in files if is_atomic_temporary(Path(name))]
        for path in leftovers:
            path.unlink(missing_ok=True)
        return leftovers

    def remove(self) -> None:
        """Delete the run's folder, its ``results.json`` first: a process killed part-way leaves a folder without a
        record (an unfinished run the same command trains afresh), never a record of files that are gone."""
        self.results_path.unlink(missing_ok=True)
        shutil.rmtree(self.path, ignore_errors=True)

    def clear(self, keep: str = KEPT) -> list[Path]:
        """Delete the run's files except those whose name contains ``keep`` (files set aside as damaged, which
        are never deleted), its ``results.json`` first (as :meth:`remove`); returns the files kept."""
        self.results_path.unlink(missing_ok=True)
        kept = [path for path in self.path.rglob(f"*{keep}*") if path.is_file()]
        if not kept:
            self.remove()
            return []
        for path in sorted(self.path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.is_file() or path.is_symlink():
                if keep not in path.name:
                    path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        return kept


@contextlib.contextmanager
def held_folder(folder: Path) -> Iterator[bool]:
    """An exclusive ``flock`` on ``folder`` for the block (the kernel lets go when the process ends, however it
    ends); yields whether it was taken (False: another process holds it; a file system without locks: True)."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError:  # no locks here
            pass
        yield True
    finally:
        os.close(handle)


@contextlib.contextmanager
def holding_run(run: Run, doing: str) -> Iterator[None]:
    """Hold a run's folder for the block (:func:`held_folder`), with the exclusive ``flock`` a training of it holds
    (:func:`harness.runners.launch.claim_run`; the kernel lets go when the process ends, however it ends): a command
    that reads a run and writes it back (retest, predict) then never writes an old record over a training started
    meanwhile (``bench --force``), nor does a training start under it. A one-line UserError when another process
    holds it; a file system without locks is used as before."""
    from harness.errors import UserError

    with held_folder(run.path) as free:
        if not free:
            raise UserError(f"{run.path.name} cannot be {doing} now: another process holds it (a bench command "
                            "training it, or a retest or predict of it); run this again once it has ended")
        yield


def store_named_as(given: bool) -> str:
    """How the user named the run store, for a message that quotes it: ``--runs-dir `` when the flag was
    ``given`` (or nothing named it: the default), ``HARNESS_RUNS_DIR=`` when the environment did."""
    return "--runs-dir " if given or "HARNESS_RUNS_DIR" not in os.environ else "HARNESS_RUNS_DIR="


_LEVELS = ("a run folder", "a model's folder", "a task's folder")


def check_named_store(path: Path | None, flag: str) -> None:
    """A one-line UserError when a folder the user named explicitly (``flag``) does not exist: a typo must not
    list no runs, or give a report that silently leaves its runs out."""
    from harness.errors import UserError

    if path is not None and not Path(path).is_dir():
        raise UserError(f"{flag} {path}: no such folder" + (" (it is a file)" if Path(path).exists() else ""))


def check_store_root(path: Path | None, named_as: str) -> None:
    """A one-line UserError when a store the user named holds no ``<task>/<model>/<run_id>/results.json`` but is
    a folder inside a store (a task's, a model's or a run's): its runs would be left out without a word; or when it
    is a file (``HARNESS_RUNS_DIR`` set to one listed no runs, as if the store were empty).
    ``named_as``: how the user named it, with its separator (``"--runs-dir "``, ``"HARNESS_RUNS_DIR="``)."""
    from harness.errors import UserError

    if path is not None and Path(path).exists() and not Path(path).is_dir():  # no run can ever be stored there
        raise UserError(f"{named_as}{path} is a file, not a run store folder")
    if path is None or not Path(path).is_dir() or next(Path(path).glob("*/*/*/results.json"), None):
        return
    for depth, what in enumerate(_LEVELS):
        if next(Path(path).glob("/".join(["*"] * depth + ["results.json"])), None):
            root = Path(path).resolve().parents[len(_LEVELS) - 1 - depth]
            raise UserError(f"{named_as}{path} is {what} of a run store, not a store: "
                            f"name the store itself, e.g. {named_as}{root}")


def is_atomic_temporary(path: Path) -> bool:
    """Whether ``path`` is named as :func:`atomic_write` names its temporary files (``tempfile.mkstemp`` with
    prefix ``.NAME.`` and suffix ``.tmp``: eight characters of its alphabet between them)."""
    return bool(_TEMPORARY.fullmatch(path.name))


def owner_state(results: dict[str, Any]) -> str | None:
    """Of a run's ``results.json`` contents: ``"alive"`` when another process on this host still runs it, ``"gone"``
    when it says ``running`` but its process on this host has ended (killed), None otherwise (not running, run by
    this process, or by a process on another host, which cannot be checked from here)."""
    owner = results.get("owner") if isinstance(results.get("owner"), dict) else {}
    if results.get("status") != "running" or owner.get("host") != socket.gethostname():
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        return "alive"
    return "alive" if _may_own_a_run(pid) else "gone"  # else the pid was reused


OWNER_TITLES = ("harness", "ray::")  # a run's process: the command line's, or a Ray worker's (a sweep's trial)


def _may_own_a_run(pid: int) -> bool:
    """Whether process ``pid`` may be one that runs a harness run: its command line names the harness, or it is a
    Ray worker, which replaces its command line by its task's name (``ray::ImplicitFunc.train`` for a sweep's
    trial); an unreadable command line counts as one."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True
    return any(title in cmdline for title in OWNER_TITLES)


def run_dir(task: str, model: str, run_id: str, runs_dir: Path | None = None) -> Run:
    return Run((runs_dir or default_runs_dir()) / task / model / run_id)


def owner_record() -> dict[str, Any]:
    """Which process is writing a run (so a second command does not write beside it)."""
    return {"host": socket.gethostname(), "pid": os.getpid()}


def new_results(run_id: str, cfg_summary: dict[str, Any], started_at: str) -> dict[str, Any]:
    """The initial results.json of a run (status running, one attempt)."""
    attempt = attempt_record(started_at)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        **cfg_summary,
        "status": "running",
        "metrics": {},
        "best": None,
        "steps": 0,
        "epochs": 0,
        "wall_time_s": 0.0,
        "throughput": {},
        "data_source": None,
        "data": None,
        "code": None,
        "git": attempt["git"],
        "versions": attempt["versions"],
        "machine": attempt["machine"],
        "device": None,
        "started_at": started_at,
        "finished_at": None,
        "attempts": [attempt],
        "owner": owner_record(),
        "error": None,
    }


def attempt_count(results: dict[str, Any]) -> int:
    """How many times a run was started (schema 1 kept a count, schema 2 a list of records)."""
    attempts = results.get("attempts")
    return len(attempts) if isinstance(attempts, list) else int(attempts or 1)


def index(runs_dir: Path | None = None) -> list[dict[str, Any]]:
    """Every run's results.json under ``runs_dir`` (sorted by path), each with its ``path`` added.

    A results file that cannot be read is listed with status ``unreadable`` rather than dropped.
    """
    rows = []
    for path in sorted((runs_dir or default_runs_dir()).glob("*/*/*/results.json")):
        try:
            row = json.loads(path.read_text())
            if not isinstance(row, dict):
                raise ValueError("results.json is not a JSON object")
            problem = type_damage(row)
            if problem:
                raise ValueError(problem)
        except (OSError, ValueError) as exc:
            row = {"run_id": path.parent.name, "status": "unreadable", "error": str(exc)}
        rows.append({**row, "path": str(path.parent)})
    return rows


class CurveWriter:
    """``metrics.csv``: one row per logged step, columns grown as new metrics appear.

    Rows are kept in memory and the whole file is rewritten atomically at each flush (the files are
    small), so the CSV is always complete and well-formed. On resume, rows past the restored step are
    dropped, so a curve never holds the same step twice.
    """

    KEY_COLUMNS = ("step", "epoch")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        if path.exists():
            problem = curve_damage(path)
            if problem is None:
                with path.open(newline="") as handle:
                    self.rows = [self._parse(row) for row in csv.DictReader(handle)]
            else:
                aside = set_aside(path)
                print(f"{path} is damaged ({problem}); kept as {aside.name}; the curve restarts", flush=True)

    @staticmethod
    def _parse(row: dict[str, str]) -> dict[str, Any]:
        parsed: dict[str, Any] = {}
        for key, value in row.items():
            if value in ("", None):
                continue
            parsed[key] = int(value) if key in CurveWriter.KEY_COLUMNS else float(value)
        return parsed

    def truncate_after(self, step: int) -> None:
        self.rows = [row for row in self.rows if row.get("step", 0) <= step]
        self.flush()

    def append(self, step: int, epoch: int, values: dict[str, float]) -> None:
        self.rows.append({"step": step, "epoch": epoch, **values})

    def flush(self) -> None:
        columns = list(self.KEY_COLUMNS)
        for row in self.rows:
            columns.extend(key for key in row if key not in columns)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows)
        atomic_write_text(self.path, buffer.getvalue())


def curve_damage(path: Path) -> str | None:
    """Why a ``metrics.csv`` cannot be trusted, or None (also when there is none). :meth:`CurveWriter.flush`
    writes whole files: a header starting ``step,epoch``, the same number of fields on every line, a newline
    at the end; anything else was cut short or written by something else."""
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"not readable ({type(exc).__name__})"
    if not text:
        return None
    if not text.endswith("\n"):
        return f"it ends in the middle of line {text.count(chr(10)) + 1} (cut short)"
    try:
        rows = list(csv.reader(io.StringIO(text)))
        header = rows[0]
        if header[: len(CurveWriter.KEY_COLUMNS)] != list(CurveWriter.KEY_COLUMNS):
            return "its header does not start with " + ",".join(CurveWriter.KEY_COLUMNS)
        for number, row in enumerate(rows[1:], start=2):
            if len(row) != len(header):
                return f"line {number} has {len(row)} fields, the header {len(header)}"
            CurveWriter._parse(dict(zip(header, row, strict=True)))
    except (csv.Error, ValueError, IndexError) as exc:
        return f"it does not parse ({type(exc).__name__})"
    return None


# What `harness runs` lists, and its records for other programs (--format json / csv, run_table) --------------------

GONE = "running (its process is gone: killed?)"  # a listed run whose process on this host has ended
LEADING_COLUMNS = ("run_id", "task", "model", "setting", "variant", "config", "profile", "seed", "status", "stale",
                   "carried_over", "reproduced", "error", "steps",
                   "max_steps", "epochs", "max_epochs", "wall_time_s", "max_time_s", "stopped_by", "sweep", "stack",
                   "run_dir")
"""The fields every exported run record starts with (:func:`run_records`); its held-out metrics follow, sorted."""


def listed_status(results: dict[str, Any]) -> str:
    """A run's status as ``harness runs`` lists it: its ``results.json``'s, except that a ``running`` run whose
    process on this host has ended (a kill) is :data:`GONE`; one run from another host stays ``running`` (its
    process cannot be checked from here)."""
    return GONE if owner_state(results) == "gone" else str(results.get("status"))


@dataclass
class Listing:
    """The runs ``harness runs`` lists (:func:`select_runs`)."""

    store: Path  # the run store they were read from
    rows: list[dict[str, Any]]  # their index() rows, sorted by path
    code: dict[str, CodeStatus]  # by run directory (a row's "path"): its files changed since, and those carried over
    considered: list[dict[str, Any]]  # the store's runs of the task and model asked for, before --stale and --imports

    @property
    def everything(self) -> int:
        """How many runs --stale and --imports chose from."""
        return len(self.considered)

    def stale(self, row: dict[str, Any]) -> list[str]:
        """The source files changed since ``row``'s run that no recorded change carries; [] if none."""
        return self.code[row["path"]].stale


def select_runs(runs_dir: str | Path | None = None, *, reference: bool = False, task: str | None = None,
                model: str | None = None, stale: bool = False, imports: Sequence[str] = ()) -> Listing:
    """The runs ``harness runs`` lists: those of ``runs_dir`` (default: $HARNESS_RUNS_DIR or ./runs) or, with
    ``reference``, of the shipped reference store (results/); only ``task``'s and ``model``'s where named; with
    ``stale`` only the stale ones; with ``imports`` (project-relative source paths) only those that imported one of
    them. A mistake is a one-line UserError: a ``runs_dir`` that does not exist or comes with ``reference``, a store
    named at a folder inside a store, a task or model name that neither the registry nor any stored run knows. The
    default store ($HARNESS_RUNS_DIR or ./runs) holds no runs until the first run makes it."""
    from harness.provenance import run_code_status

    if reference:
        from harness.errors import UserError
        from harness.publish import RESULTS_DIR

        if runs_dir:  # one of the two would go unread
            raise UserError(f"--reference lists the reference store ({RESULTS_DIR}) and --runs-dir names another "
                            f"({runs_dir}): give one of them")
        store = Path(RESULTS_DIR)
    else:
        store = Path(runs_dir) if runs_dir else default_runs_dir()
        check_named_store(store if runs_dir else None, "--runs-dir")
        check_store_root(store, store_named_as(bool(runs_dir)))
    stored = index(store)
    check_listed_name("task", task, stored)
    check_listed_name("model", model, stored)
    rows = [row for row in stored
            if (not task or row.get("task") == task) and (not model or row.get("model") == model)]
    code = {row["path"]: run_code_status(row) for row in rows}
    considered = rows
    if imports:
        from harness.rerun import imported

        rows = [row for row in rows if imported(row, list(imports))]
    if stale:
        rows = [row for row in rows if code[row["path"]].stale]
    return Listing(store=store, rows=rows, code=code, considered=considered)


def check_listed_name(what: str, name: str | None, stored: list[dict[str, Any]]) -> None:
    """``runs --task``/``--model``: a name the registry does not know and no stored run carries is the user's
    mistake (a typo would otherwise list nothing, as a name without runs does): a UserError with a did-you-mean."""
    if name is None or any(row.get(what) == name for row in stored):
        return
    from harness.registry import REGISTRY

    if what == "task":
        REGISTRY.task(name)  # raises for an unknown name
    else:
        REGISTRY.model(name)


def run_table(runs_dir: str | Path | None = None, *, reference: bool = False, task: str | None = None,
              model: str | None = None, stale: bool = False) -> list[dict[str, Any]]:
    """The runs ``harness runs`` lists, as plain dicts for a notebook (``pandas.DataFrame(run_table())``): the
    records ``harness runs --format json`` prints (:func:`run_records`), with the same filters and the same
    UserError for a mistake."""
    return run_records(select_runs(runs_dir, reference=reference, task=task, model=model, stale=stale))


def run_records(listing: Listing) -> list[dict[str, Any]]:
    """One record per listed run, every record with the same keys in the same order: :data:`LEADING_COLUMNS`, then
    each held-out metric any of the runs reports (:func:`exported_metrics`), in natural order (``test_qa2/acc``
    before ``test_qa10/acc``).

    ``setting``: what the README's tables call it (``task 1, en-10k (files)``; reports.readme.setting).
    ``variant``: the report's label of its configuration, with the config entries that tell it apart from the other
    listed runs of its task and model (``task 11 [cpu] {model.operations=[write]}``); ``config``: a digest equal for
    runs that differ only in the seed, to group seeds by (reports.store.config_fingerprint). ``status``:
    as ``harness runs`` lists it (:func:`listed_status`; ``unreadable`` for a results.json that cannot be read, then
    ``error`` says why); ``stale``: whether the code that computed it has changed since; ``reproduced``: the latest
    ``harness reproduce --record`` check of it in the store's ``reproductions.json`` (the reference store's), in one
    phrase (:func:`harness.reproductions.summary`). ``steps`` and ``epochs``:
    how far it trained (a run that did not complete: as far as its curves got, where they got further than
    results.json records), of ``max_steps`` (RL: environment steps, ``rl.total_env_steps``; stepwise:
    ``stepwise.iterations``; supervised: ``train.max_steps``, mostly unset) and ``max_epochs`` (supervised:
    ``train.max_epochs``); ``wall_time_s`` of its section's ``max_time_s``. ``sweep``: the sweep that ran it;
    ``stack``: the run ids it trained with as one stacked computation, space-separated. Numbers are numbers;
    whatever a run does not record (or records as NaN) is None, never a stand-in value."""
    from harness.reproductions import summaries
    from reports.store import assign_variants, load_run, natural_key

    runs = [load_run(Path(row["path"]) / "results.json", listing.store) for row in listing.rows]
    assign_variants(runs)
    reproduced = summaries(listing.store)
    records = [{**_record(run, listing.code[row["path"]]), "reproduced": reproduced.get(run.run_id)}
               for run, row in zip(runs, listing.rows, strict=True)]
    metrics = sorted({key for record in records for key in record["metrics"]}, key=natural_key)
    return [{**{key: record[key] for key in LEADING_COLUMNS}, **{key: record["metrics"].get(key) for key in metrics}}
            for record in records]


def exported_metrics(run: RunRecord) -> dict[str, float | None]:
    """A run's held-out metrics (harness.runners.tune.held_out: its test splits', its RL evaluation's, each
    curriculum stage's) and its long-horizon rollout's (``rollout/step_<t>/acc``, a stepwise run on held-out
    worlds); a value that is not a finite number is None."""
    from harness.runners.tune import held_out

    names = [*held_out(run.metrics), *(key for key in run.metrics if key.startswith("rollout/"))]
    return {name: run.metric(name) for name in names}


def _record(run: RunRecord, code: CodeStatus) -> dict[str, Any]:
    from harness.runners.tune import SWEEP_TAG
    from reports.readme import setting
    from reports.run_progress import curve_progress, recorded_wall_time
    from reports.stops import stop_rule
    from reports.store import cfg_get

    results, reached = run.results, curve_progress(run)
    section = "rl" if run.is_rl else "stepwise" if run.is_stepwise else "train"
    planned_steps = {"rl": "rl.total_env_steps", "stepwise": "stepwise.iterations", "train": "train.max_steps"}[section]
    tags = cfg_get(run.config, "tracking.tags")
    sweeps = [tag.removeprefix(SWEEP_TAG) for tag in (tags if isinstance(tags, list) else [])
              if isinstance(tag, str) and tag.startswith(SWEEP_TAG)]
    stack = results.get("stack")
    try:
        shown = setting(run) if run.config else None
    except (TypeError, ValueError):  # a config too damaged to name its setting
        shown = None
    return {
        "run_id": run.run_id, "task": run.task, "model": run.model,
        "setting": shown if shown not in ("–", "") else None, "variant": run.variant or None,
        "config": run.fingerprint or None,
        "profile": None if run.profile is None else str(run.profile), "seed": _number(run.seed),
        "status": GONE if run.gone else str(results.get("status") or run.status), "stale": bool(code.stale),
        "carried_over": "; ".join(sorted({change.what for _, change in code.carried})) or None,
        "error": None if results.get("error") is None else str(results["error"]),
        "steps": _number(reached.get("steps", results.get("steps"))),
        "max_steps": _number(cfg_get(run.config, planned_steps)),
        "epochs": _number(reached.get("epochs", results.get("epochs"))),
        "max_epochs": _number(cfg_get(run.config, "train.max_epochs")) if section == "train" else None,
        "wall_time_s": recorded_wall_time(run), "max_time_s": _number(cfg_get(run.config, f"{section}.max_time_s")),
        "stopped_by": (str(results["stop_reason"]) if results.get("stop_reason") else None) if run.is_rl
        else stop_rule(run),
        "sweep": sweeps[0] if sweeps else None,
        "stack": " ".join(map(str, stack)) if isinstance(stack, list) and len(stack) > 1 else None,
        "run_dir": str(run.path), "metrics": exported_metrics(run),
    }


def _number(value: Any) -> int | float | None:
    """``value`` where it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def write_records(records: list[dict[str, Any]], form: str, out: TextIO) -> None:
    """``records`` (:func:`run_records`) to ``out`` as ``json`` (a list, one record a line) or ``csv`` (a header
    row, then one row a record; None an empty cell). No record: ``[]``, or the header of :data:`LEADING_COLUMNS`."""
    if form == "json":
        out.write("[\n" + ",\n".join(json.dumps(record, allow_nan=False) for record in records) + "\n]\n"
                  if records else "[]\n")
        return
    writer = csv.DictWriter(out, fieldnames=list(records[0]) if records else list(LEADING_COLUMNS),
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
