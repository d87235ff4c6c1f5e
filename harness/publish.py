"""``harness publish RUN...``: copy finished runs from the run store into the tracked reference store.

The reference store (``results/`` at the repository root) has the run store's layout,
``results/<task>/<model>/<run_id>/``, and holds the runs behind every number the README and the report's
paper pages show. A published run keeps what a reader needs to trace and redraw its numbers (results.json,
config.yaml, the curves, analysis outputs, per-example predictions, a stepwise run's long-rollout curve and
pictures, and the same for each curriculum stage)
and leaves out what only resuming needs (checkpoints, the W&B mirror, files set aside as damaged). The curves
(``metrics.csv``, half the store's bytes as plain text) are kept gzipped, as ``metrics.csv.gz`` (under a third
of the size; the same bytes for the same file, so publishing a run again changes nothing in git); the report
reads either form. The store has a size budget
(:data:`BUDGET_BYTES`): a publication that would pass it is refused whole.

A run is named by its directory or by its run id (looked up in the run store). Only finished runs are
published: completed ones, and diverged ones (a model that does not train stably on a task is a result the
matrix reports); publishing a run again replaces its earlier copy. The members of a stack (``bench --seeds``)
are published together: a run whose results.json names a stack member that is neither published with it nor
already in the store is refused.

A publication is all or nothing, also when it is killed: the runs are copied into a staging folder beside the
store (``.publish-*``), which is then marked ready, and each run is swapped into place (the copy it replaces
moved aside first, never deleted before the new one is in); a publication killed after the mark is finished by
the next ``harness publish`` to the same store, one killed before it is discarded.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness import PROJECT_ROOT
from harness.config import SMOKE_PROFILE
from harness.errors import UserError
from harness.paths import check_can_create_in
from harness.runs import Run, default_runs_dir, held_folder

RESULTS_DIR = PROJECT_ROOT / "results"
BUDGET_BYTES = 30 * 1024**2
KEPT_FILES = ("results.json", "config.yaml", "rollout.csv")  # rollout.csv: stepwise runs
GZIPPED_FILES = ("metrics.csv",)  # kept as <name>.gz
KEPT_FOLDERS = ("analysis", "predictions", "pictures")
PUBLISHABLE = ("completed", "diverged")
STAGING_PREFIX = ".publish-"
STAGED, REPLACED = "new", "old"  # in a staging folder: the copies to publish, the copies they replaced
DESTINATION, READY = "to", "ready"  # in a staging folder: the store it publishes to; the mark that it is whole


@dataclass(frozen=True)
class Published:
    run_id: str
    path: Path
    size: int
    profile: str | None = None


def store_size(root: Path) -> int:
    """Bytes of every file under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def find_run(name: str, runs_dir: Path) -> Run:
    """A run directory named by its path or by its run id."""
    path = Path(name)
    if (path / "results.json").exists():
        return Run(path)
    matches = sorted(runs_dir.glob(f"*/*/{glob.escape(name)}/results.json"))  # a name, never a pattern
    if not matches:
        raise UserError(f"no run '{name}' in {runs_dir} (give a run id from `harness runs` or a run directory)")
    return Run(matches[0].parent)


def gzip_file(source: Path, target: Path) -> None:
    """``source`` gzipped into ``target``, with no time stamp or name in the header: the same bytes for the same
    file."""
    target.write_bytes(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))


def _copy_kept(source: Path, target: Path) -> None:
    """The files a reader needs, from one run (or stage) directory."""
    target.mkdir(parents=True, exist_ok=True)
    for name in KEPT_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    for name in GZIPPED_FILES:
        if (source / name).is_file():
            gzip_file(source / name, target / f"{name}.gz")
        elif (source / f"{name}.gz").is_file():  # a run of a reference store, published again (or elsewhere)
            shutil.copy2(source / f"{name}.gz", target / f"{name}.gz")
    for folder in KEPT_FOLDERS:
        if (source / folder).is_dir():
            shutil.copytree(source / folder, target / folder, ignore=shutil.ignore_patterns("*.damaged-*", ".*"))


def check_destination(results_dir: Path) -> None:
    """A one-line UserError unless ``results_dir`` is a folder, or can be made one, that this process can write
    into (checked before anything is copied)."""
    if results_dir.exists() and not results_dir.is_dir():
        raise UserError(f"cannot publish to {results_dir}: it is a file, not a folder (give --to a folder)")
    check_can_create_in(results_dir.parent, f"cannot publish to {results_dir}")  # the staging folder goes there
    results_dir.parent.mkdir(parents=True, exist_ok=True)


def distinct_runs(names: list[str], runs_dir: Path) -> list[Run]:
    """The named runs, each once: a run named twice (by id and by directory, or the same id again) is published
    once, in the order first named."""
    runs: dict[Path, Run] = {}
    for name in names:
        run = find_run(name, runs_dir)
        runs.setdefault(run.path.resolve(), run)
    return list(runs.values())


def check_publishable(run: Run) -> dict:
    """The results of a finished run whose files a reader can use; a one-line UserError naming the run and the
    file otherwise (a config.yaml that does not parse, an empty metrics.csv), checked for every stage too."""
    results = run.completed_results("published", PUBLISHABLE)
    if not run.config_path.is_file():  # a reference run is rerun, retested and reported from its config
        raise UserError(f"{run.path.name}: {run.config_path} is missing; cannot be published")
    stages = run.path / "stages"
    folders = [run.path, *(sorted(p for p in stages.iterdir() if p.is_dir()) if stages.is_dir() else [])]
    for folder in folders:
        problem = _file_problem(folder)
        if problem:
            raise UserError(f"{run.path.name}: {problem}; cannot be published")
    return results


def _file_problem(folder: Path) -> str | None:
    """Why a run (or stage) folder's config.yaml or metrics.csv is unusable, or None."""
    config = folder / "config.yaml"
    if config.is_file():
        try:
            parsed = yaml.safe_load(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            return f"{config} does not parse ({type(exc).__name__}: {getattr(exc, 'problem', None) or exc})"
        if not isinstance(parsed, dict):
            return f"{config} does not parse as a mapping (it holds {type(parsed).__name__})"
    for name in GZIPPED_FILES:
        path = folder / name
        if path.is_file() and not path.read_bytes().strip():
            return f"{path} is empty"
    return None


def check_whole_stacks(checked: list[tuple[Run, dict]], results_dir: Path) -> None:
    """A member of a stack (``bench --seeds`` or a sweep's stack; ``stack`` in its results.json: the members' run
    ids) is published with its whole stack: each other member is named too or already in ``results_dir``, so that
    the reference store never names a run it lacks (a stale member's rerun command is the stack's, read from its
    members). A one-line UserError naming the missing members and the command that publishes the stack whole."""
    named = {str(results.get("run_id")) for _, results in checked}
    for _, results in checked:
        stack = results.get("stack")
        if not isinstance(stack, list) or len(stack) < 2:
            continue
        missing = [str(member) for member in stack if str(member) not in named
                   and not any(results_dir.glob(f"*/*/{glob.escape(str(member))}/results.json"))]
        if missing:
            members = f"member{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            raise UserError(f"{results.get('run_id')} trained in a stack of {len(stack)}; its {members} "
                            f"{'is' if len(missing) == 1 else 'are'} neither named here nor in {results_dir}: "
                            f"publish the stack whole (harness publish {' '.join(map(str, stack))})")


def check_not_in_place(checked: list[tuple[Run, dict]], results_dir: Path) -> None:
    """A one-line UserError when a run would be published onto itself (``--to`` the store it is in) while it holds
    what publishing leaves out (checkpoints, plain curves, its W&B mirror): its copy would replace it and they would
    be lost. A run already in published form (of a reference store) may be published again in place."""
    for run, results in checked:
        target = results_dir / str(results["task"]) / str(results["model"]) / str(results["run_id"])
        dropped = [name for name in ("checkpoints", *GZIPPED_FILES, "wandb") if (run.path / name).exists()]
        if dropped and target.resolve() == run.path.resolve():
            raise UserError(f"{results['run_id']}: --to {results_dir} is the store the run is in; publishing it there "
                            f"would replace it with its copy and lose its {', '.join(dropped)}: publish to another "
                            "folder (default: results/)")


def publish(names: list[str], runs_dir: Path | None = None, results_dir: Path = RESULTS_DIR,
            budget: int = BUDGET_BYTES) -> list[Published]:
    """Copy the named runs into ``results_dir``; all or nothing, also when killed (see the module docstring). A run
    named twice is published once; a run whose config.yaml does not parse or whose metrics.csv is empty, a member
    of a stack named without the rest of its stack (:func:`check_whole_stacks`), a run published onto itself
    (:func:`check_not_in_place`), or a ``results_dir`` that cannot be written, is refused before anything is
    copied."""
    runs_dir = runs_dir or default_runs_dir()
    finish_interrupted(results_dir)
    runs = distinct_runs(names, runs_dir)
    checked = [(run, check_publishable(run)) for run in runs]
    check_whole_stacks(checked, results_dir)
    check_not_in_place(checked, results_dir)
    check_destination(results_dir)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=results_dir.parent))
    try:
        with held_folder(staging):
            (staging / DESTINATION).write_text(str(results_dir.resolve()) + "\n", encoding="utf-8")
            staged = _stage(checked, staging / STAGED)
            replaced = sum(store_size(results_dir / target.relative_to(staging / STAGED)) for _, target in staged)
            total = store_size(results_dir) - replaced + store_size(staging / STAGED)
            if total > budget:
                raise UserError(f"publishing would make {results_dir} {total / 2**20:.1f} MiB, over its budget of "
                                f"{budget / 2**20:.0f} MiB; publish fewer runs or drop analysis files")
            (staging / READY).touch()
            published = []
            for results, target in staged:
                final = _swap_in(staging, target, results_dir)
                published.append(Published(str(results["run_id"]), final, store_size(final), results.get("profile")))
            return published
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _stage(checked: list[tuple[Run, dict]], folder: Path) -> list[tuple[dict, Path]]:
    """Copy what is kept of each run (and of its curriculum stages) to ``folder/<task>/<model>/<run_id>``."""
    staged = []
    for run, results in checked:
        target = folder / str(results["task"]) / str(results["model"]) / str(results["run_id"])
        _copy_kept(run.path, target)
        stages = run.path / "stages"
        if stages.is_dir():
            for stage in sorted(p for p in stages.iterdir() if p.is_dir()):
                _copy_kept(stage, target / "stages" / stage.name)
        staged.append((results, target))
    return staged


def _swap_in(staging: Path, target: Path, results_dir: Path) -> Path:
    """Put one staged run in place in ``results_dir``: the copy it replaces is first moved aside into the staging
    folder (renames both: the store lacks the run only between them), so a kill never leaves the store without
    it for longer. Returns the run's path in the store."""
    relative = target.relative_to(staging / STAGED)
    final = results_dir / relative
    if final.exists():
        aside = staging / REPLACED / relative
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(final, aside)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(target, final)
    return final


def finish_interrupted(results_dir: Path) -> list[Path]:
    """Finish the publications into ``results_dir`` that were killed part-way (their staging folders beside it, no
    longer held by a live process): one marked ready has its remaining runs swapped into place; one killed while
    copying is discarded (nothing of it had reached the store). One line each; returns the runs put in place."""
    placed: list[Path] = []
    if not results_dir.parent.is_dir():
        return placed
    for staging in sorted(results_dir.parent.glob(f"{STAGING_PREFIX}*")):
        if not staging.is_dir() or _destination(staging) != results_dir.resolve():
            continue
        with held_folder(staging) as free:
            if not free:
                continue  # a publication in progress
            finished = _finish_one(staging, results_dir) if (staging / READY).exists() else None
        shutil.rmtree(staging, ignore_errors=True)
        if finished is not None:
            placed += finished
            print(f"finished a publication to {results_dir} that was stopped part-way ({len(finished)} more run(s) "
                  "put in place)", flush=True)
    return placed


def _destination(staging: Path) -> Path | None:
    """The store a staging folder publishes to, or None (unreadable, or a folder of an older harness)."""
    try:
        return Path((staging / DESTINATION).read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return None


def _finish_one(staging: Path, results_dir: Path) -> list[Path]:
    """Swap the runs a ready staging folder still holds into place."""
    return [_swap_in(staging, target, results_dir)
            for target in sorted((staging / STAGED).glob("*/*/*")) if target.is_dir()]


def describe(published: list[Published], results_dir: Path = RESULTS_DIR) -> str:
    """What was published, the store's size against its budget, and a note for each smoke-profile run (a reference
    store is read as benchmark numbers; the report sets such a run beside no published one)."""
    lines = [f"published {p.run_id} ({p.size / 1024:.0f} KiB) -> {p.path}" for p in published]
    lines.append(f"{results_dir}: {store_size(results_dir) / 2**20:.2f} MiB of {BUDGET_BYTES / 2**20:.0f} MiB")
    lines += [f"note: {p.run_id} is a {SMOKE_PROFILE}-profile run (a few batches), a check that the pair runs: the "
              "report shows it beside no published number" for p in published if p.profile == SMOKE_PROFILE]
    return "\n".join(lines)


def load_index(results_dir: Path = RESULTS_DIR) -> list[dict]:
    """Every published run's results.json (for tests and tools)."""
    return [json.loads(p.read_text()) for p in sorted(results_dir.glob("*/*/*/results.json"))]
