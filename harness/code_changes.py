"""Code changes the shipped runs are carried over: an edit to a file that reference runs imported, shown by
training some of those runs again to compute nothing differently, so that the runs trained before it do not read
as stale.

Every run records a digest of each computing source file it imported (:mod:`harness.provenance`), and an edit to
one marks the run stale (``harness runs --stale``), also when the edit only rewords an error message or rejects input
that no run gave. ``results/code_changes.json`` lists such edits, oldest first::

    [{"what": "error messages only: ...",
      "files": {"tasks/babi/task.py": ["<digest before>", "<digest after>"]},
      "evidence": ["babi-tpr_rnn-cpu-s1-1c28f535"], "recorded_at": "2026-11-30T07:00:00Z"}]

A change carries a run whose digest of a file was *before* to *after* only while its evidence holds
(:func:`problems`):

* every evidence run is a reference run in ``results/`` and has a check in ``results/reproductions.json``
  (``harness reproduce RUN --record``) that came back bit for bit (every figure equal) and recorded the digests
  it trained under: for each file of the change that the evidence run imported, *after*;
* the evidence run recorded that file at *before* (it was trained before the change), or has an earlier check that
  came back bit for bit under *before* (a file carried over before: the runs recorded it at an older digest, and
  that check shows the code at *before* computes the run's figures too);
* every file of the change was imported by at least one evidence run.

Where no run can be trained again so (an RL run is not deterministic; a shipped stack trained for an hour), a
*probe* stands in for a run: a module whose ``probe()`` returns a fingerprint of what the code computes
(``tasks/boxworld/probe.py``: the envs stepped with fixed seeds and actions; ``harness/runners/stacked_probe.py``:
three small stacks trained). ``harness carry --probe MODULE`` runs it on ``--base``'s code (unpacked
from git) and on the working tree and records ``{"probe": MODULE, "output": [before, after], "files": {path:
[before, after]}}`` (the digests of the files it imported in each); the record holds when the two outputs are equal
and the probe imported the changed files at the change's digests.

A change whose evidence does not hold carries nothing: its runs read as stale, and ``harness carry --check`` and
the test suite name it. Changes chain: a file edited twice is carried over both records. ``harness carry FILE
... --what TEXT --evidence RUN ...`` records a change after its evidence checks were recorded (the digests *before*
from git, ``--base`` HEAD by default; *after* from the working tree).

Nothing here computes a run's numbers (it is left out of the code record: :data:`harness.provenance.NOT_COMPUTING`).
"""

from __future__ import annotations

import glob
import json
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness import PROJECT_ROOT
from harness.errors import UserError

FILE = "code_changes.json"
RESULTS = "results"


@dataclass(frozen=True)
class Change:
    """One recorded change: what it did, each file's (before, after) digests, and the runs that show it."""

    what: str
    files: dict[str, tuple[str, str]]
    evidence: tuple[str | dict[str, Any], ...]  # run ids, and probe records (see :func:`probe_record`)
    recorded_at: str = ""


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not readable JSON ({exc}); fix or remove {what}") from None


def load_changes(results_dir: Path) -> list[Change]:
    """The recorded changes ([] when there are none); a UserError naming the file when it is malformed."""
    path = results_dir / FILE
    if not path.is_file():
        return []
    raw = _read_json(path, "it")
    changes = []
    for number, entry in enumerate(raw if isinstance(raw, list) else [None], start=1):
        files = entry.get("files") if isinstance(entry, dict) else None
        evidence = entry.get("evidence") if isinstance(entry, dict) else None
        if not (isinstance(files, dict) and files and isinstance(evidence, list) and evidence
                and all(isinstance(pair, list) and len(pair) == 2 for pair in files.values())):
            raise UserError(f"{path}: change {number} needs \"what\", \"files\" ({{path: [before, after]}}) and "
                            "\"evidence\" (run ids); fix or remove it")
        changes.append(Change(what=str(entry.get("what", "")),
                              files={str(rel): (str(pair[0]), str(pair[1])) for rel, pair in files.items()},
                              evidence=tuple(item if isinstance(item, dict) else str(item) for item in evidence),
                              recorded_at=str(entry.get("recorded_at", ""))))
    return changes


def _reference_run(results_dir: Path, run_id: str) -> dict[str, Any] | None:
    found = sorted(results_dir.glob(f"*/*/{glob.escape(run_id)}/results.json"))  # an id, never a pattern
    return _read_json(found[0], "the run") if found else None


def _exact(check: dict[str, Any]) -> bool:
    return int(check.get("figures") or 0) > 0 and check.get("equal") == check.get("figures")


def problems(change: Change, results_dir: Path, checks: list[dict[str, Any]] | None = None) -> list[str]:
    """Why ``change``'s evidence does not hold (module docstring); [] when it does."""
    from harness.provenance import NOT_COMPUTING, recorded_files
    from harness.reproductions import load

    checks = load(results_dir) if checks is None else checks
    found: list[str] = []
    covered: set[str] = set()
    for run_id in change.evidence:
        if isinstance(run_id, dict):
            found += _probe_problems(change, run_id, covered)
            continue
        run = _reference_run(results_dir, run_id)
        if run is None:
            found.append(f"evidence {run_id} is not a reference run in {results_dir}")
            continue
        recorded = recorded_files(run)
        imported = {rel: pair for rel, pair in change.files.items() if rel in recorded}
        if not imported:
            found.append(f"evidence {run_id} imported none of {', '.join(sorted(change.files))}")
            continue
        wrong = [rel for rel, (before, _) in imported.items()
                 if recorded[rel] != before and not _reproduced_under(checks, run_id, rel, before)]
        if wrong:
            found.append(f"evidence {run_id} was not trained on the code before the change ({', '.join(wrong)})")
            continue
        shown = [check for check in checks if check.get("run_id") == run_id and _exact(check)
                 and all(((check.get("code") or {}).get("files") or {}).get(rel) == after
                         for rel, (_, after) in imported.items())]
        if not shown:
            found.append(f"evidence {run_id} has no check in reproductions.json trained on the changed code that "
                         "came back bit for bit (harness reproduce RUN --record)")
            continue
        covered.update(imported)
    found += [f"{rel} is a file runs do not record (it computes nothing), so there is nothing to carry"
              for rel in sorted(change.files) if rel in NOT_COMPUTING]
    found += [f"no evidence run that holds imported {rel}" for rel in sorted(set(change.files) - covered)
              if rel not in NOT_COMPUTING]
    return found


def _reproduced_under(checks: list[dict[str, Any]], run_id: str, rel: str, digest: str) -> bool:
    """Whether a check of ``run_id`` in reproductions.json came back bit for bit with ``rel`` at ``digest``: the run's
    figures are then what that code computes, as if it had been trained on it (a file carried over once, the runs
    that imported it recorded it at its digest before that change)."""
    return any(check.get("run_id") == run_id and _exact(check)
               and ((check.get("code") or {}).get("files") or {}).get(rel) == digest for check in checks)


def _probe_problems(change: Change, probe: dict[str, Any], covered: set[str]) -> list[str]:
    """Why a probe record does not show ``change`` (its outputs differ, or it did not run the changed code); adds
    the files it shows to ``covered``."""
    name = str(probe.get("probe"))
    output = probe.get("output")
    files = probe.get("files") if isinstance(probe.get("files"), dict) else {}
    if not (isinstance(output, list) and len(output) == 2 and output[0] == output[1]):
        return [f"probe {name}: its output before and after the edit differ ({output})"]
    imported = {rel: pair for rel, pair in change.files.items() if rel in files}
    if not imported:
        return [f"probe {name} imported none of {', '.join(sorted(change.files))}"]
    wrong = [rel for rel, pair in imported.items() if list(files[rel]) != list(pair)]
    if wrong:
        return [f"probe {name} did not run the code before and after the change ({', '.join(wrong)})"]
    covered.update(imported)
    return []


@lru_cache(maxsize=8)
def _valid(results_dir: Path, stamp: tuple[int, int]) -> tuple[Change, ...]:
    from harness.reproductions import load

    checks = load(results_dir)
    return tuple(change for change in load_changes(results_dir) if not problems(change, results_dir, checks))


def _stamp(results_dir: Path) -> tuple[int, int]:
    """The two files' modification times: the cache of valid changes is kept while neither changes."""
    def mtime(name: str) -> int:
        try:
            return (results_dir / name).stat().st_mtime_ns
        except OSError:
            return 0
    return mtime(FILE), mtime("reproductions.json")


def valid_changes(root: Path = PROJECT_ROOT) -> tuple[Change, ...]:
    """The recorded changes under ``root``'s results/ whose evidence holds (none when there is no record)."""
    results_dir = root / RESULTS
    if not (results_dir / FILE).is_file():
        return ()
    return _valid(results_dir, _stamp(results_dir))


def carried(rel: str, digest: str, root: Path = PROJECT_ROOT) -> tuple[str, list[Change]]:
    """The digest ``rel`` at ``digest`` is carried to by the valid changes, in order, and the changes that carry it
    (``(digest, [])`` when none does)."""
    through: list[Change] = []
    for change in valid_changes(root):
        pair = change.files.get(rel)
        if pair is not None and pair[0] == digest:
            digest = pair[1]
            through.append(change)
    return digest, through


def git_digest(rel: str, base: str, root: Path) -> str:
    """The source digest of ``rel`` as it is in git revision ``base``; a UserError when git has no such file."""
    from harness.provenance import text_digest

    shown = subprocess.run(["git", "show", f"{base}:{rel}"], cwd=root, capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        raise UserError(f"{rel}: not in git revision {base} ({shown.stderr.strip().splitlines()[-1:] or ''})")
    return text_digest(shown.stdout)


def record_change(files: list[str], what: str, evidence: list[str], base: str = "HEAD",
                  root: Path = PROJECT_ROOT, probes: list[str] | None = None) -> Path:
    """Add a change to ``root``'s results/code_changes.json: each file's digest in ``base`` and in the working
    tree, checked against the evidence first (a UserError with every problem, nothing written, when it fails).
    ``evidence`` names reproduced reference runs; ``probes`` modules whose ``probe()`` is run on both versions."""
    from harness.provenance import source_digest
    from harness.runs import atomic_write_text

    if not what.strip():
        raise UserError("--what: say what the change does (it is shown beside every run it carries)")
    pairs: dict[str, tuple[str, str]] = {}
    for name in files:
        path = (root / name).resolve()
        try:
            rel = path.relative_to(root.resolve()).as_posix()
        except ValueError:
            raise UserError(f"{name}: not a file of the project at {root}") from None
        if not path.is_file() or path.suffix != ".py":
            raise UserError(f"{name}: not a Python file of the project")
        before, after = git_digest(rel, base, root), source_digest(path)
        if before == after:
            raise UserError(f"{rel}: computes the same in {base} and in the working tree (only comments, docstrings "
                            "or layout changed): nothing to carry")
        pairs[rel] = (before, after)
    from harness.code_probes import probe_record

    records = [probe_record(module, base, root) for module in probes or []]
    change = Change(what=what.strip(), files=pairs, evidence=(*evidence, *records))
    results_dir = root / RESULTS
    found = problems(change, results_dir)
    if found:
        raise UserError("the evidence does not hold: " + "; ".join(found))
    path = results_dir / FILE
    entries = _read_json(path, "it") if path.is_file() else []
    entries.append({"what": change.what, "files": {rel: list(pair) for rel, pair in pairs.items()},
                    "evidence": list(change.evidence),
                    "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")})
    atomic_write_text(path, json.dumps(entries, indent=1) + "\n")
    return path


def check_all(root: Path = PROJECT_ROOT) -> list[str]:
    """Every problem of every recorded change, each prefixed with the change's number and what it did."""
    results_dir = root / RESULTS
    return [f"change {number} ({change.what}): {problem}"
            for number, change in enumerate(load_changes(results_dir), start=1)
            for problem in problems(change, results_dir)]
