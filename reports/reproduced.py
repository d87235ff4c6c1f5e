"""The README's "Reproduced" table: each ``harness reproduce --record`` check stored in ``results/reproductions.json``
(:mod:`harness.reproductions`), the reference run, where it trained and where it was trained again, how many of its
figures came back equal, and the figure furthest apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.reproduce import processor
from harness.reproductions import CPU, FILE, exact, latest, load
from reports.markdown import table


def _largest(check: dict[str, Any]) -> str:
    largest = check.get("largest")
    if not isinstance(largest, dict):
        return "–"
    return (f"`{largest['figure']}`: {_number(largest['stored'])} → {_number(largest['now'])} "
            f"({largest['relative']:.1e} relative)")


def _machine(host: dict[str, Any]) -> str:
    """The processor as a check records it, and the kernel its system reports (``platform.platform()``'s release:
    machines of one virtual-machine image share it, and a name alone may cover several processor generations)."""
    system = str(host.get("system") or "")
    release = system.removeprefix("Linux-").split("-x86_64")[0].split("-aarch64")[0] if system else ""
    return processor(host) + (f"; kernel {release}" if release else "")


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.6g}"


def section(results_dir: Path) -> list[str]:
    """The table, one row per stored check ([] when none is stored)."""
    checks = load(results_dir)
    if not checks:
        return []
    rows = [[f"`{check['run_id']}`", _machine(check.get("stored_on") or {}), _machine(check.get("now_on") or {}),
             CPU.get(str(check.get("cpu")), "–"), str(check.get("budget", "–")),
             f"{check['equal']} of {check['figures']}", _largest(check), str(check.get("checked_at", "–"))[:10]]
            for check in checks]
    bit_for_bit = sum(exact(check) for check in checks)
    runs = len({check["run_id"] for check in checks})
    runs_exact = sum(exact(check) for check in latest(checks).values())
    return ["### Reproduced (`harness reproduce RUN --record`)", "",
            f"Reference runs trained again and every figure they reported compared ({len(checks)} checks of {runs} "
            f"runs; {bit_for_bit} of the checks came back bit for bit, and the latest check of {runs_exact} of the "
            f"{runs} runs). A supervised run the time cap stopped trains the epochs up "
            "to its tested checkpoint without the cap (the steps up to it, where it came part way through an epoch), a "
            "stepwise one its outer cycles; \"CPU\" says whether the two "
            f"machines were of one kind (family, model and vector kernels). Stored in `results/{FILE}`. `harness "
            "reproduce` takes supervised single runs and stepwise runs only: the RL runs (BoxWorld, bridge BoxWorld, "
            "CartPole) and curriculum runs are not trained again. By task, each run counted once, at its latest "
            "check (`harness runs --reference --format csv`, column `reproduced`, gives it per run):", "",
            *table(["task", "reference runs", "trained again", "bit for bit", "differing: CPU of another kind",
                    "differing: CPU of the same name, model unrecorded", "differing: CPU of the same kind"],
                   _by_task(results_dir, checks)), "",
            "By the two machines of each check (every check counted, a run checked twice twice; the kernel, which "
            "tells virtual-machine images apart, is in the table after it):", "",
            *table(["trained on", "trained again on", "CPU", "checks", "runs", "bit for bit", "figures compared"],
                   _by_machine(checks)), "",
            *table(["run", "trained on", "trained again on", "CPU", "budget", "figures equal",
                    "furthest apart", "checked"], rows)]


def _by_task(results_dir: Path, checks: list[dict[str, Any]]) -> list[list[str]]:
    """Per task of the reference store: its runs, how many were trained again, and how their latest checks came
    out (bit for bit, or differing on which kind of CPU)."""
    stored: dict[str, set[str]] = {}
    for path in results_dir.glob("*/*/*/results.json"):
        stored.setdefault(path.parts[-4], set()).add(path.parent.name)
    newest = latest(checks)

    def row(name: str, run_ids: set[str]) -> list[str]:
        checked = [newest[run_id] for run_id in run_ids if run_id in newest]
        differing = [check for check in checked if not exact(check)]
        return [name, str(len(run_ids)), str(len(checked)), str(len(checked) - len(differing)),
                *(str(sum(check.get("cpu") == kind for check in differing)) for kind in ("other", "name", "same"))]

    return [*(row(task, run_ids) for task, run_ids in sorted(stored.items())),
            row("all", set().union(*stored.values()))]


def _by_machine(checks: list[dict[str, Any]]) -> list[list[str]]:
    """One row per pair of machines (as the processors name themselves, with family, model and vector kernels where
    recorded) and kind of CPU match: how many checks, of how many runs, came back bit for bit, and their figures."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for check in checks:
        key = (processor(check.get("stored_on") or {}), processor(check.get("now_on") or {}),
               CPU.get(str(check.get("cpu")), "–"))
        groups.setdefault(key, []).append(check)
    return [[stored, now, cpu, str(len(group)), str(len({check["run_id"] for check in group})),
             str(sum(exact(check) for check in group)), f"{sum(int(check.get('figures', 0)) for check in group):,}"]
            for (stored, now, cpu), group in sorted(groups.items())]


def _evidence(item: str | dict[str, Any]) -> str:
    if isinstance(item, dict):
        return f"probe `{item.get('probe')}` (the same output before and after: `{(item.get('output') or ['?'])[0]}`)"
    return f"`{item}`"


def carried_section(results_dir: Path, runs: list[Any]) -> list[str]:
    """The edits the reference runs are carried over (:mod:`harness.code_changes`), one row each: what it did, its
    files, the runs it carries and the checks that show it ([] when none is recorded)."""
    from harness.code_changes import FILE as CHANGES
    from harness.code_changes import load_changes, problems
    from harness.provenance import recorded_files

    changes = load_changes(results_dir)
    if not changes:
        return []
    checks = load(results_dir)
    rows = []
    for change in changes:
        carried = sum(any(recorded_files(run.results).get(rel) == before for rel, (before, _) in change.files.items())
                      for run in runs)
        shown = problems(change, results_dir, checks)
        rows.append([change.what, ", ".join(f"`{rel}`" for rel in sorted(change.files)), str(carried),
                     ", ".join(_evidence(item) for item in change.evidence),
                     "yes" if not shown else "no: " + "; ".join(shown)])
    return ["### Code changes the reference runs are carried over (`harness carry`)", "",
            "Edits to files that reference runs imported, each shown to compute nothing differently: its evidence "
            "runs, trained before the edit, were trained again after it and every figure came back bit for bit "
            "(the Reproduced table), or, where no run can be trained again so (RL runs; stacks that trained for an "
            "hour), a probe that fingerprints what the code computes gave the same output on the code before and "
            "after the edit. "
            "A run such an edit carries is not stale; its page names the edit. Stored in "
            f"`results/{CHANGES}`.", "",
            *table(["edit", "files", "runs it carries", "evidence: reproduced bit for bit after the edit, or probed",
                    "evidence holds"], rows)]
