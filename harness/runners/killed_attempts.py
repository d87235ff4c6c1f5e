"""The attempts of a run whose process was killed before it stored a status: closed as ``interrupted``, the last
one with the time it ran, when the run resumes (:func:`close_killed_attempts`) or when a sweep finds its trial's
worker gone (:func:`close_killed_run`)."""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, datetime
from typing import Any

from harness.runs import Run

KILLED = "killed: its process ended before it stored a status"


def close_killed_attempts(run: Run, results: dict[str, Any], attempts: list[Any]) -> None:
    """Mark the earlier attempts a resumed run's record still says are ``running`` as ``interrupted``: their process
    was killed (this one holds the run's folder, so none of them runs it now), and the run page listed them as
    running beside the attempt that completed the run. The last of them, the one the kill ended, is given the time
    from its start to the run's last file write as its end, and that time is added to the run's ``wall_time_s``
    (which a kill left without it: a run killed half way and resumed read as trained in the second half's time);
    the time between that write and the kill is not known, so the figure is a lower bound."""
    for index, attempt in enumerate(attempts):
        if not (isinstance(attempt, dict) and attempt.get("status") == "running"):
            continue
        attempt.update(status="interrupted", error=KILLED)
        lasted = _killed_attempt_seconds(run, attempt) if index == len(attempts) - 1 else None
        if lasted is not None:
            ended = datetime.fromtimestamp(_parsed_time(attempt["started_at"]) + lasted, UTC)
            attempt["finished_at"] = ended.strftime("%Y-%m-%dT%H:%M:%SZ")
            results["wall_time_s"] = float(results.get("wall_time_s") or 0.0) + lasted


def close_killed_run(run: Run, error: str) -> dict[str, Any] | None:
    """Store as ``interrupted`` (with ``error``) a run whose record says ``running`` but whose process on this host
    has ended: a sweep's trial that Tune stopped by ending its Ray worker, which had no chance to store its status.
    Its killed attempt is closed as a resumed run closes it (:func:`close_killed_attempts`), so the same command
    resumes it as before. Done under the folder's lock (:func:`harness.runners.launch.claim_run`), so a command that
    has claimed the run meanwhile is left alone. Returns the results written, or None when the run was left as it
    was (not running, still owned by a live process, claimed by one, damaged, or a store this process cannot
    write)."""
    from harness.runs import owner_state

    try:
        handle = os.open(run.path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not run.exists() or run.damage():
            return None
        results = run.read_results()
        if results.get("status") != "running" or owner_state(results) != "gone":
            return None
        attempts = results.get("attempts") if isinstance(results.get("attempts"), list) else []
        close_killed_attempts(run, results, attempts)
        results.update(status="interrupted", error=error)
        run.write_results(results)
        return results
    except OSError:  # held by another process, or a store this process cannot write: left as it was
        return None
    finally:
        os.close(handle)


def _parsed_time(text: Any) -> float:
    """Seconds since the epoch of a record's ``%Y-%m-%dT%H:%M:%SZ`` time (:func:`harness.runs.now_iso`)."""
    return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _killed_attempt_seconds(run: Run, attempt: dict[str, Any]) -> float | None:
    """Seconds from a killed attempt's start to the last write of a file in the run's folder (None when its start
    is not recorded or nothing was written after it)."""
    try:
        started = _parsed_time(attempt.get("started_at"))
    except ValueError:
        return None
    written = [path.stat().st_mtime for path in run.path.rglob("*") if path.is_file()]
    last = max(written, default=started)
    return last - started if last > started else None
