"""The stored log of ``harness reproduce --record`` checks: which reference run was trained again, where, and how
its figures compared, so that a claim "this run reproduces" can be traced like a result.

``results/reproductions.json`` is a list of checks, oldest first within each run::

    {"run_id": "pathfinder-mha-cpu-s1-10324f0b", "checked_at": "2026-11-30T00:41:07Z",
     "budget": "2 epochs without the cap", "command": "harness bench ...",
     "stored_on": {"processor": "AMD EPYC", ...}, "now_on": {"processor": "AMD EPYC", "cpu_id": ..., ...},
     "cpu": "same", "figures": 8, "equal": 8, "largest": null, "differing": {},
     "training_s": 30.2, "trained_at": "2026-11-30T00:40:31Z",
     "code": {"commit": "...", "dirty": false, "files": {"tasks/babi/task.py": "...", ...}}}

``cpu`` is how the two machines compare (:func:`harness.reproduce.cpu_relation`): ``same`` kind (family, model
and vector kernels recorded by both and equal), ``other`` kind, or ``name`` (the same processor name, the stored run
recording no model). ``trained_at``: when the run trained again finished (checks from before 1 December 2026 lack
it); one training is recorded once, however often it is compared. ``largest``: the differing figure furthest
apart, relative to the stored value. ``code.files``: the digest of each source file the run trained again under
(checks from before 30 November 2026 lack it); a bit for bit check under edited files is the evidence that carries
the reference runs over the edit (:mod:`harness.code_changes`).
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.provenance import recorded_files
from harness.runs import atomic_write_text

FILE = "reproductions.json"
MACHINE_KEYS = ("processor", "cpu_id", "cpu_capability", "system", "gpu")
CPU = {"same": "same kind", "other": "another kind", "name": "same name, model unrecorded"}
"""How a check's two machines compare (its ``cpu``), in words."""


def host(machine: dict[str, Any]) -> dict[str, Any]:
    """What a check keeps of a machine record (harness/provenance.py machine_info)."""
    return {key: machine[key] for key in MACHINE_KEYS if machine.get(key)}


def check_record(run_id: str, budget: str, command: str, figures: list[Any], stored_on: dict[str, Any],
                 now_on: dict[str, Any], cpu: str, now: dict[str, Any]) -> dict[str, Any]:
    """One check: ``figures`` are :class:`harness.reproduce.Figure` s, ``now`` the new run's results.json (whose
    commit, finishing time and source digests the check keeps: the code it trained under, not the code of the
    moment the figures were compared)."""
    code = now.get("git") or {}
    differing = [figure for figure in figures if not figure.equal]
    largest = max(differing, key=lambda figure: figure.relative, default=None)
    return {"run_id": run_id, "checked_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "budget": budget,
            "command": command, "stored_on": host(stored_on), "now_on": host(now_on), "cpu": cpu,
            "figures": len(figures), "equal": len(figures) - len(differing),
            "largest": None if largest is None else {"figure": largest.name, "stored": largest.stored,
                                                     "now": largest.now, "relative": largest.relative},
            "differing": {figure.name: [figure.stored, figure.now] for figure in differing},
            "training_s": now.get("wall_time_s"), "trained_at": now.get("finished_at"),
            "code": {**{key: code.get(key) for key in ("commit", "dirty")}, "files": recorded_files(now)}}


def recorded_already(results_dir: Path, check: dict[str, Any]) -> dict[str, Any] | None:
    """The stored check of the same training of the same run as ``check`` with the same outcome (one run trained
    again, compared twice), or None: the same ``trained_at`` where both record one, else the same training time and
    source digests. A stored run that changed since (trained again itself) gives another outcome: a check of its
    own."""
    outcome = ("figures", "equal", "differing")
    for stored in load(results_dir):
        if stored.get("run_id") != check["run_id"] or any(stored.get(key) != check[key] for key in outcome):
            continue
        if stored.get("trained_at") and check.get("trained_at"):
            if stored["trained_at"] == check["trained_at"]:
                return stored
        elif (stored.get("training_s") == check.get("training_s")
              and (stored.get("code") or {}).get("files") == check["code"]["files"]):
            return stored
    return None


def load(results_dir: Path) -> list[dict[str, Any]]:
    """The stored checks ([] when there are none); a UserError naming the file when it cannot be read."""
    path = results_dir / FILE
    if not path.is_file():
        return []
    try:
        checks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable JSON list of checks ({exc}); fix or remove it") from None
    if not isinstance(checks, list) or not all(isinstance(check, dict) and "run_id" in check for check in checks):
        raise UserError(f"{path}: expected a JSON list of checks, each with a run_id; fix or remove it")
    return checks


def latest(checks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The most recent check of each run id."""
    newest: dict[str, dict[str, Any]] = {}
    for check in sorted(checks, key=lambda entry: str(entry.get("checked_at", ""))):
        newest[str(check["run_id"])] = check
    return newest


def exact(check: dict[str, Any]) -> bool:
    """Whether every figure of the check came back bit for bit (a check of no figures is not)."""
    return int(check.get("figures") or 0) > 0 and check.get("equal") == check.get("figures")


def summary(check: dict[str, Any]) -> str:
    """A check in one phrase, for a run's page and ``harness runs --format csv``: ``bit for bit (27 figures; CPU: same
    kind; 2026-11-30)`` or ``26 of 27 figures equal (...)``."""
    figures, cpu = int(check.get("figures") or 0), CPU.get(str(check.get("cpu")))
    details = "; ".join(part for part in (f"CPU: {cpu}" if cpu else "", str(check.get("checked_at") or "")[:10])
                        if part)
    if exact(check):
        return f"bit for bit ({figures} figures; {details})"
    return f"{check.get('equal')} of {figures} figures equal ({details})"


def summaries(store: Path) -> dict[str, str]:
    """Each checked run's latest check in ``store``'s log (the reference store's), as :func:`summary` words it, by
    run id: what ``harness runs --format csv`` and a run's report page show."""
    return {run_id: summary(check) for run_id, check in latest(load(store)).items()}


def append(results_dir: Path, check: dict[str, Any]) -> Path:
    """Add a check to the stored log (written whole, atomically: a failed write leaves the old log). The store's
    folder is locked from reading the log to writing it, so checks recorded by reproductions that end together
    (two run side by side) are all kept."""
    results_dir.mkdir(parents=True, exist_ok=True)  # as the log's atomic write would make it
    folder = os.open(results_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        checks = [*load(results_dir), check]
        checks.sort(key=lambda entry: (str(entry["run_id"]), str(entry.get("checked_at", ""))))
        path = results_dir / FILE
        atomic_write_text(path, json.dumps(checks, indent=1, allow_nan=True) + "\n")
    finally:
        os.close(folder)  # closing the descriptor releases the lock
    return path
