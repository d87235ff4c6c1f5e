"""``make report``: one self-contained static HTML site built from the run store.

    python -m reports.build --runs-dir runs --out reports/out

Pages: ``index.html`` (task x model matrix, papers, every run, provenance), one page per paper YAML in
``reports/papers/`` (published table beside ours, published figures beside ours, curves) and
``runs/<run_id>.html`` per run (a stepwise run's page adds its long-horizon rollout and its pictures, the PNGs
inlined as ``data:`` URIs). Besides the store, a paper's facts may read a benchmark's JSON output under
the files root (the repository root: ``bench/agents.json``, ``bench/boxworld_env.json``); an absent file
reads "not measured". CSS and SVG figures are inline; nothing is fetched. The site is written into a
temporary folder beside the output folder and then swapped in, so a build never leaves a half-written site
and pages from an earlier build that no longer apply disappear. The same store (and benchmark files) gives
byte-identical files. Drawing the run pages' figures is most of a build, so the run pages are rendered in
``--jobs`` forked processes (default: the CPUs available), and each run's figures are kept in
``$HARNESS_CACHE_DIR/report-figures`` (reports.figure_cache), so that the next build draws only the runs that
changed; neither changes a byte of the pages. The 379 shipped runs on 2 cores: 65 s with every figure drawn
(two processes), 22 s when none changed.
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from harness.errors import UserError, listed
from harness.paths import check_can_create_in
from harness.runs import check_named_store, check_store_root, default_runs_dir, store_named_as
from reports import (
    budgets,
    facts,
    figure_cache,
    figures,
    index_tables,
    paper_tables,
    rl_tables,
    run_progress,
    run_tables,
    stops,
    tables,
)
from reports.floors import dead_floor, load_floor
from reports.papers import PaperSpec, load_papers
from reports.store import REFERENCE, UNREADABLE, YOURS, RunRecord, load_stores, variant_label
from reports.tables import fmt_count

PAPERS_DIR = Path(__file__).resolve().parent / "papers"
FILES_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = FILES_ROOT / "results"
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
DEFAULT_OUT = Path("reports") / "out"
MARKER = ".report-site"
NO_FIGURE_CACHE_HELP = ("draw every run page's figures, neither reading nor keeping them in "
                        "$HARNESS_CACHE_DIR/report-figures (default: a run unchanged since the last build is not drawn "
                        "again)")
SITE_TITLE = "Reasoning harness: results"


def environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=select_autoescape(["html"]),
                       undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def _markup_figures(items: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [{**item, "svg": Markup(item["svg"])} for item in items]


def _number(value: Any, unit: str = "", decimals: int = 1) -> str:
    return f"{tables.fmt(value, decimals)}{unit}" if isinstance(value, int | float) else "–"


def _run_info(run: RunRecord) -> dict[str, Any]:
    """The run page's summary table (steps, best checkpoint, timing, provenance)."""
    results = run.results
    git = results.get("git") if isinstance(results.get("git"), dict) else {}
    dirty = git.get("dirty")
    best = results.get("best") if isinstance(results.get("best"), dict) else None
    throughput = results.get("throughput") if isinstance(results.get("throughput"), dict) else {}
    part = stops.last_epoch_part(run) if run.status == "completed" else None
    cut_short = (f" (the time cap cut the last one short: {100 * part:.0f}% of it trained)" if part is not None else
                 f" (the time cap stopped it within its first epoch, after {results['steps']:,} steps)"
                 if stops.capped_in_first_epoch(run) else "")
    shown = run_progress.progress(run)
    return {
        **shown, "epochs": f"{shown['epochs']}{cut_short}",
        "best": f"{best.get('metric')} = {tables.fmt(best.get('value'), 4)} at step {fmt_count(best.get('step'))}, "
                f"epoch {fmt_count(best.get('epoch'))}" if best else "–",
        "stopped_by": stops.stop_rule(run) or "–",
        "same_checkpoint": _same_checkpoint(run), "reproducible": _reproducible(run),
        "reproduce_budget": _reproduce_budget(run), "reproduce_elsewhere": _reproduces_itself(run),
        "wall": run_progress.wall_time(run, _number(results.get("wall_time_s"), " s")),
        "throughput": ", ".join(f"{k} = {tables.fmt(v, 1)}" for k, v in sorted(throughput.items())) or "–",
        "data_source": results.get("data_source") or "–", "device": _device(results),
        "commit": git.get("commit") or "unknown",
        "dirty": "dirty tree" if dirty else "clean tree" if dirty is False else "dirty flag unknown",
        "started": results.get("started_at") or "–", "finished": results.get("finished_at") or "–",
        "error": results.get("error") or None,
        "stack": _stack(run), "reproduces": run.reproduces,
        **_provenance(results),
    }


def _device(results: dict[str, Any]) -> str:
    """The device a run records, "1 threads" (as the runner words every thread count) in the singular."""
    return re.sub(r"\b1 threads\b", "1 thread", str(results.get("device") or "–"))


def _stack(run: RunRecord) -> str | None:
    """For a run trained as a member of a stack (``bench --seeds``: ``stack`` in its results.json, the members'
    run ids), who it trained with and that the wall time is the stack's, not its own; None for a run trained
    alone."""
    if not run.stack:
        return None
    others = [member for member in run.stack if member != run.run_id]
    return (f"one of {len(run.stack)} seeds trained together as one stacked model, with {', '.join(others)}; "
            "the wall time is the whole stack's, shared by its members")


def _reproducible(run: RunRecord) -> bool:
    """Whether ``harness reproduce`` takes the run (:func:`harness.reproduce.refusal`)."""
    from harness.reproduce import refusal

    return refusal(run) is None


def _reproduce_budget(run: RunRecord) -> str:
    """What ``harness reproduce`` trains for a run its time cap did not stop (:func:`harness.reproduce.plan`): the
    same config, without its time cap where it sets one (a run that sets none, e.g. at the smoke profile, has none
    to lift)."""
    from harness.reproduce import without_cap

    return "the same config without its time cap" if without_cap(run) else "the same config"


def _reproduces_itself(run: RunRecord) -> bool:
    """Whether ``harness reproduce`` would compose the very run it checks in the store that holds it (a run of your
    store that its cap did not stop and that sets no cap to lift): it refuses that, and trains it into another store
    (``--runs-dir``)."""
    from harness.reproduce import without_cap

    return run.origin == YOURS and budgets.capped_budget(run) is None and not without_cap(run)


MACHINE_FIELDS = ("processor", "cpu_id", "cpu_capability", "cpus", "torch_threads", "gpu", "gpu_tf32")
"""What a run page shows of each attempt's machine (harness/provenance.py machine_info)."""
MACHINE_COUNTS = {"cpus": "CPU", "torch_threads": "torch thread"}
"""The fields that are counts, shown with what they count (``2 CPUs``, ``1 torch thread``)."""


def _machine_text(machine: dict[str, Any]) -> str:
    """An attempt's machine in one line: its named fields in :data:`MACHINE_FIELDS` order, counts with their unit."""
    def shown(key: str, value: Any) -> str:
        unit = MACHINE_COUNTS.get(key)
        return f"{value} {unit}{'' if value == 1 else 's'}" if unit else str(value)

    return ", ".join(shown(key, machine[key]) for key in MACHINE_FIELDS if machine.get(key))


def _same_checkpoint(run: RunRecord) -> str | None:
    """For a run the time cap stopped, the command that trains its budget without the cap, on a machine of any speed
    (:func:`reports.budgets.capped_budget`: a supervised run's epochs, or steps, up to its tested checkpoint, a
    stepwise run's cycles); None for other runs, or where its config no longer composes."""
    settings = budgets.capped_budget(run)
    if settings is None or not (run.path / "config.yaml").is_file():
        return None
    from harness.rerun import reproduce

    try:
        command, _ = reproduce(run.path, settings)
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        return None
    return command


def _stepwise_info(run: RunRecord, floor: dict[str, Any]) -> dict[str, Any] | None:
    """A stepwise run's summary rows: outer cycles and validations, trajectory, best, throughput in world-steps
    per second, the long-horizon rollout's length and time, and for the Game of Life the "all dead" answers' accuracy
    on the same worlds (``floor``: :func:`reports.floors.load_floor`); None for other runs."""
    if not run.is_stepwise:
        return None
    results, spec = run.results, _dict(run.config.get("stepwise"))
    best = _dict(results.get("best"))
    rate = _dict(results.get("throughput")).get("train/world_steps_per_s")
    rollout = _dict(results.get("rollout"))
    length = spec.get("steps")
    trajectory = f"T = {length}" if isinstance(length, int) else "–"
    if spec.get("bptt") is True:
        trajectory += ", backpropagation through the whole trajectory"
    elif isinstance(spec.get("update_freq"), int):
        every = spec["update_freq"]
        trajectory += ", stop-gradient between steps, an optimiser step " + (
            "at every step" if every == 1 else f"every {every} steps")
    curriculum = _dict(spec.get("curriculum"))
    if curriculum.get("enabled") is True:
        trajectory += f"; curriculum from T = {curriculum.get('start')}"
    if rollout:
        seconds, speed = rollout.get("seconds"), rollout.get("world_steps_per_s")
        rolled = (f"{fmt_count(rollout.get('longest'))} steps, {fmt_count(rollout.get('worlds'))} worlds: "
                  f"{_number(seconds, ' s')}" + (f" ({fmt_count(speed)} world-steps/s)"
                                                  if isinstance(speed, int | float) else ""))
    else:
        rolled = "–"
    return {
        "cycles": fmt_count(results.get("steps")), "validations": fmt_count(results.get("epochs")),
        "trajectory": trajectory,
        "best": f"{best.get('metric')} = {tables.fmt(best.get('value'), 4)} at cycle {fmt_count(best.get('step'))}"
        if best else "–",
        "throughput": f"{fmt_count(rate)} world-steps/s (median over validation windows)"
        if isinstance(rate, int | float) and not isinstance(rate, bool) else "–",
        "rollout": rolled,
        "dead_floor": dead_floor(run, floor) if run.task == "game_of_life" else None,
    }


def _picture_items(run: RunRecord) -> list[dict[str, str]]:
    """A stepwise run's pictures as ``data:`` URIs (the site fetches nothing), with their captions; a picture
    that cannot be read becomes a problem line of the run."""
    items = []
    for rel in run.pictures:
        try:
            data = (run.path / rel).read_bytes()
        except OSError as exc:
            run.problems.append(f"{rel} unreadable: {exc}")
            continue
        found = re.fullmatch(r"step_(\d+)\.png", Path(rel).name)
        where = f"step {int(found.group(1)):,}" if found else Path(rel).name
        items.append({"src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"), "name": rel,
                      "caption": f"{where}: the true world (top) and the model's belief (bottom)"})
    return items


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _provenance(results: dict[str, Any]) -> dict[str, Any]:
    """Per-attempt records (schema 2), the code and the data fingerprints, for the run page."""
    code, data = _dict(results.get("code")), _dict(results.get("data"))
    attempts = results.get("attempts")
    rows = []
    listed = attempts if isinstance(attempts, list) else []
    for index, attempt in enumerate(listed):
        attempt = _dict(attempt)
        git, machine = _dict(attempt.get("git")), _dict(attempt.get("machine"))
        status, finished = attempt.get("status") or "–", attempt.get("finished_at") or "–"
        if status == "running" and index < len(listed) - 1:  # resumed by a later attempt: its process was killed
            status, finished = "interrupted", "killed (no end stored)"  # (as the launcher now records such attempts)
        rows.append({"started": attempt.get("started_at") or "–", "finished": finished,
                     "status": status, "commit": str(git.get("commit") or "unknown")[:12],
                     "dirty": "dirty" if git.get("dirty") else "clean" if git.get("dirty") is False else "",
                     "machine": _machine_text(machine),
                     "code": attempt.get("code") or "–"})
    files = _dict(data.get("files"))
    return {"attempts": rows, "attempt_count": attempts if isinstance(attempts, int) else len(rows) or 1,
            "code_fingerprint": code.get("fingerprint") or "not recorded", "code_files": len(_dict(code.get("files"))),
            "data_fingerprint": data.get("fingerprint") or "not recorded",
            "data_files": [{"name": k, "digest": v} for k, v in sorted(files.items())]}


def _error_page(env: Environment, nav: list[dict[str, str]], root: str, what: str, exc: Exception) -> str:
    """The page that stands in for one that could not be rendered: the build goes on."""
    return env.get_template("base.html").render(
        title=f"{what}: not rendered", root=root, nav_papers=nav,
        error_text=f"{what} could not be rendered ({type(exc).__name__}: {exc})")


def _no_runs_message(stores: list[dict[str, Any]]) -> str:
    """The index's line when no store holds a run: each store read, and whether it exists or is empty."""
    if not stores:
        return "No runs: no store was given."
    return "No runs: " + "; ".join(
        f"{s['label']} {s['path']} " + ("holds no runs yet" if s["exists"] else "does not exist") for s in stores) + "."


def _render_all(runs: list[RunRecord], papers: list[PaperSpec], stores: list[dict[str, Any]],
                files_root: Path = FILES_ROOT, jobs: int = 1, figure_folder: Path | None = None) -> dict[str, str]:
    """Every page of the site: relative path -> HTML text (the run pages in ``jobs`` processes, their figures
    read from ``figure_folder`` where kept there: reports.figure_cache). A page that fails to render (one odd run)
    becomes a short error page; the others are unaffected."""
    env = environment()
    nav = [{"name": paper.name, "page": paper.page} for paper in papers]
    pages: dict[str, str] = {}

    def render(name: str, root: str, what: str, template: str, **context: Any) -> None:
        try:
            pages[name] = env.get_template(template).render(root=root, nav_papers=nav, **context)
        except Exception as exc:  # one bad run or paper must not stop the site
            pages[name] = _error_page(env, nav, root, what, exc)

    present = [store for store in stores if store["exists"]]
    compared = [run for run in runs if not run.reproduces]  # a reproduce check is listed, never compared again
    matrix = index_tables.matrix(compared, papers)
    render("index.html", "", "the index", "index.html",
           title=SITE_TITLE, runs_found=bool(runs),
           no_runs_message=_no_runs_message(stores),
           stores=[{"label": s["label"], "path": s["path"], "n": sum(r.origin == s["origin"] for r in runs)}
                   for s in present] or [{"label": "the run store", "path": stores[0]["path"] if stores else "–",
                                          "n": 0}],
           n_runs=len(runs), status_summary=tables.status_summary(runs),
           matrix=matrix, rankings=index_tables.rankings(compared), groups=index_tables.run_groups(runs),
           papers=[{"page": p.page, "title": p.title, "citation": p.citation} for p in papers],
           provenance=index_tables.provenance(runs))
    kept = _FigureCache(figure_folder)
    for paper in papers:
        render(paper.page, "", f"the {paper.name} page", "paper.html",
               title=paper.title, paper=paper,
               tables=[paper_tables.compare_table(compared, table) for table in paper.tables],
               facts=facts.fact_rows(paper.facts, compared, files_root),
               figures=_markup_figures(figures.paper_figures(compared, paper, kept.facet_lines)))
    pages.update(_run_pages(runs, env, nav, jobs, load_floor(files_root / "results"), kept))
    figure_cache.prune(figure_folder, kept.keys.values())
    return pages


class _FigureCache:
    """Where the figures are kept between builds (None: drawn every time), and each one's key there: a run page's
    (by page), computed once in the main process before any worker forks, and a paper page's (``paper:`` and the
    figure's name)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.keys: dict[str, str] = {}
        self.code = figure_cache.code_digest() if folder is not None else ""

    def add(self, runs: list[RunRecord]) -> None:
        if self.folder is not None:
            self.keys.update((run.page, figure_cache.figure_key(run, self.code)) for run in runs)

    def figures(self, run: RunRecord) -> figure_cache.Figures:
        """``run``'s figures: its training curves and, for a stepwise run, its long-horizon rollout."""
        def draw() -> figure_cache.Figures:
            return {"figures": figures.run_figures(run),
                    "rollout": [f for f in [figures.rollout_figure(run)] if f]}
        key = self.keys.get(run.page)
        return figure_cache.cached_figures(self.folder if key else None, key or "", draw)

    def facet_lines(self, name: str, data: Any, **options: Any) -> str | None:
        """A paper page's figure (:func:`reports.figures.facet_lines`), read back when the same data was drawn by
        the same code before: a paper page's figures are about a third of a build whose run pages are kept."""
        if self.folder is None or data.empty:  # nothing to draw: nothing to keep
            return figures.facet_lines(name, data, **options)
        key = self.keys[f"paper:{name}"] = figure_cache.drawing_key(self.code, name, data, options)
        return figure_cache.cached_svg(self.folder, key, lambda: figures.facet_lines(name, data, **options))


def _run_page(env: Environment, nav: list[dict[str, str]], run: RunRecord, floor: dict[str, Any],
              kept: _FigureCache | None = None) -> str:
    """One run's page (an error page when it cannot be rendered)."""
    versions = run.results.get("versions") if isinstance(run.results.get("versions"), dict) else {}
    analysis = run.results.get("analysis")
    try:
        drawn = (kept or _FigureCache(None)).figures(run)
        context = dict(
            title=f"{run.run_id} ({run.status})", run=run,
            variant=variant_label(run) if run.results else "–", info=_run_info(run), rl=rl_tables.rl_summary(run),
            stepwise=_stepwise_info(run, floor), metrics=run_tables.metric_rows(run.metrics),
            stages=run_tables.stage_rows(run), predictions=run_tables.predictions_view(run),
            figures=_markup_figures(drawn["figures"]),
            rollout=_markup_figures(drawn["rollout"]),
            pictures=_picture_items(run) if run.is_stepwise else [],
            analysis=json.dumps(analysis, indent=1, sort_keys=True, default=str) if analysis else None,
            versions=[{"package": k, "version": str(v)} for k, v in sorted(versions.items())])
        return env.get_template("run.html").render(root="../", nav_papers=nav, **context)
    except Exception as exc:  # one bad run must not stop the site
        return _error_page(env, nav, "../", f"run {run.run_id}", exc)


# What a forked worker renders: set just before the pool forks, so the runs reach the workers without pickling.
_FORKED: dict[str, Any] = {}


def _forked_run_page(index: int) -> str:
    """A worker's page, written to a file of the build's scratch folder; its path goes back. Only short messages
    cross the pool's pipe, each one write, so a worker stopped mid-send (Ctrl-C) cannot leave half a message the
    pool's manager thread would wait on for ever."""
    path = Path(_FORKED["scratch"]) / f"{index}.html"
    path.write_text(_run_page(_FORKED["env"], _FORKED["nav"], _FORKED["runs"][index], _FORKED["floor"],
                              _FORKED["kept"]), encoding="utf-8")
    return str(path)


def default_jobs() -> int:
    """The processes that render run pages: the CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _run_pages(runs: list[RunRecord], env: Environment, nav: list[dict[str, str]], jobs: int,
               floor: dict[str, Any], kept: _FigureCache | None = None) -> dict[str, str]:
    """Every run's page, page path -> HTML. Drawing a run's figures is most of a build (about 0.15 s a run), and
    the pages are independent: with ``jobs`` > 1 they are rendered in that many forked processes (where the
    platform forks), each page exactly as one process renders it. ``kept``: where the figures are kept between
    builds (reports.figure_cache), so that a run drawn before is read back instead."""
    kept = kept or _FigureCache(None)
    kept.add(runs)
    workers = min(jobs, len(runs))
    forks = workers > 1 and "fork" in multiprocessing.get_all_start_methods()
    if runs:
        print(f"report: rendering {fmt_count(len(runs))} run pages in "
              f"{f'{workers} processes' if forks else 'one process'}", flush=True)
    if forks:
        scratch = tempfile.TemporaryDirectory(prefix="report-pages-")
        _FORKED.update(env=env, nav=nav, runs=runs, floor=floor, kept=kept, scratch=scratch.name)
        pool = None
        try:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
            written = _counted(pool.map(_forked_run_page, range(len(runs)), chunksize=4), len(runs))
            return {run.page: Path(path).read_text(encoding="utf-8")
                    for run, path in zip(runs, written, strict=True)}
        except (OSError, NotImplementedError, BrokenProcessPool) as exc:  # no pool here, or a worker was killed
            print(f"report: rendering the run pages in one process instead ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
        except BaseException:  # Ctrl-C (SIGTERM's too) reaching this process alone, not its workers: they are
            _stop_workers()    # stopped, or the pool's shutdown and the interpreter's exit would wait on them
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            _FORKED.clear()
            scratch.cleanup()
    rendered = _counted((_run_page(env, nav, run, floor, kept) for run in runs), len(runs))
    return {run.page: html for run, html in zip(runs, rendered, strict=True)}


def _stop_workers() -> None:
    """End this process's pool workers at once (a signal sent to the process alone leaves them waiting for work)."""
    for child in multiprocessing.active_children():
        child.terminate()
    for child in multiprocessing.active_children():
        child.join(timeout=5)


def _counted(pages: Iterator[str], total: int) -> Iterator[str]:
    """``pages`` as they come, with a progress bar on a terminal (nothing in a log: the line before says what is
    being rendered)."""
    if not sys.stderr.isatty():
        yield from pages
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="page", desc="run pages", dynamic_ncols=True, leave=False) as bar:
        for page in pages:
            bar.update()
            yield page


def _check_out(out_dir: Path) -> None:
    """FileExistsError unless ``out_dir`` is absent, empty or a folder an earlier build wrote (checked before the
    pages are built, so a wrong ``--out`` is refused at once, and again when the site replaces it)."""
    if out_dir.exists() and (not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MARKER).exists())):
        raise FileExistsError(f"{out_dir} exists and is not a report folder (no {MARKER}); "
                              "choose another --out or remove it")


def check_writable(out_dir: Path) -> None:
    """A one-line UserError unless the site can be written at ``out_dir``: the nearest folder that exists on
    its way must be a folder this process can create folders in (probed with an empty folder, removed again)."""
    out_dir = Path(out_dir)
    check_can_create_in(out_dir.parent, f"cannot write the report to {out_dir} (choose another --out)")


def _replace_site(staging: Path, out_dir: Path) -> None:
    if out_dir.exists():
        _check_out(out_dir)
        old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, old / out_dir.name)
        os.replace(staging, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out_dir)


def build_report(runs_dir: Path, out_dir: Path, papers_dir: Path = PAPERS_DIR,
                 files_root: Path = FILES_ROOT, results_dir: Path | None = None, jobs: int | None = None,
                 figure_folder: Path | None = None) -> list[Path]:
    """Build the site from the user's run store ``runs_dir`` and, when given, the reference store
    ``results_dir`` into ``out_dir``; returns the pages written (index first).

    Missing stores give a site whose index says there are no runs. ``out_dir`` is replaced as a whole; it
    must be absent, empty or a folder an earlier build wrote. ``files_root`` is the folder the papers' facts
    name their benchmark files under. ``jobs``: processes that render the run pages (default: the CPUs this
    process may use); the pages are the same for any number. ``figure_folder``: where the run pages' figures are
    kept between builds (reports.figure_cache; None: drawn every time, nothing kept); the pages are the same."""
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    _check_out(out_dir)
    check_writable(out_dir)
    sources = ([(Path(results_dir), REFERENCE, "the reference store")] if results_dir is not None else []) + \
        [(runs_dir, YOURS, "your run store")]
    runs = load_stores([(path, origin) for path, origin, _ in sources])
    stores = [{"path": str(path), "origin": origin, "label": label, "exists": path.is_dir()}
              for path, origin, label in sources]
    papers = load_papers(Path(papers_dir))
    pages = _render_all(runs, papers, stores, files_root=Path(files_root), jobs=jobs or default_jobs(),
                        figure_folder=figure_folder)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    try:
        site = staging / "site"
        for name, text in pages.items():
            path = site / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        (site / MARKER).write_text("written by reports.build; replaced as a whole by the next build\n")
        for folder in (site, *(p for p in site.rglob("*") if p.is_dir())):
            folder.chmod(0o755)
        _replace_site(site, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    unreadable = [run.run_id for run in runs if run.status == UNREADABLE]
    if unreadable:  # the index marks them; the terminal should say so too
        shown = listed(unreadable, 3)
        print(f"report: {len(unreadable)} run{'s' if len(unreadable) > 1 else ''} could not be read and "
              f"{'are' if len(unreadable) > 1 else 'is'} marked unreadable: {shown}", file=sys.stderr)
    order = ["index.html", *(p.page for p in papers), *(r.page for r in runs)]
    return [out_dir / name for name in order]


def _results_dir(given: Path | None) -> tuple[Path | None, bool]:
    """The reference store to read and whether the user named it: the shipped one by default, none for
    ``--results-dir ''`` (which argparse gives as ``.``)."""
    if given is None:
        return RESULTS_DIR, False
    if str(given) in ("", "."):
        return None, False
    return given, True


def _note_missing_stores(runs_dir: Path, results_dir: Path | None) -> None:
    """A note on stderr when a store is missing: none at all (the index says there are no runs), or the run
    store (the report shows the reference runs only)."""
    if not runs_dir.is_dir() and results_dir is None:  # --results-dir '': no reference store was asked for
        print(f"report: {runs_dir} does not exist and no reference store was read; the index says there are no runs",
              file=sys.stderr)
    elif not runs_dir.is_dir() and not results_dir.is_dir():
        print(f"report: neither {runs_dir} nor the reference store exists; the index says there are no runs",
              file=sys.stderr)
    elif not runs_dir.is_dir():
        print(f"report: {runs_dir} does not exist; the report shows the reference runs only", file=sys.stderr)


def report(runs_dir: Path | None, out_dir: Path, results_dir: Path | None = None, jobs: int | None = None,
           papers_dir: Path = PAPERS_DIR, files_root: Path = FILES_ROOT, keep_figures: bool = True) -> int:
    """Build the site as ``harness report`` and ``python -m reports.build`` do and print the pages written; 0, or
    a one-line UserError for a user's mistake (a named store missing, an ``--out`` that cannot be written or
    is not a report folder).

    ``runs_dir``: a run store the user named, which must exist, or None for the default one
    (``$HARNESS_RUNS_DIR`` or ``runs``), whose absence is only noted (a fresh clone has none yet).
    ``results_dir``: as ``--results-dir`` gives it (None: the shipped store; ``''``: none; else it must exist).
    ``keep_figures``: read and keep the run pages' figures in ``$HARNESS_CACHE_DIR/report-figures``
    (reports.figure_cache), so that a run unchanged since the last build is not drawn again."""
    named_runs = runs_dir is not None
    runs_dir = Path(runs_dir) if named_runs else default_runs_dir()
    results_dir, named_results = _results_dir(results_dir)
    check_named_store(runs_dir if named_runs else None, "--runs-dir")
    check_named_store(results_dir if named_results else None, "--results-dir")
    check_store_root(runs_dir, store_named_as(named_runs))
    check_store_root(results_dir if named_results else None, "--results-dir ")
    check_named_store(Path(papers_dir), "--papers-dir")  # a typo here would drop every paper page silently
    check_named_store(Path(files_root), "--files-root")
    try:
        written = build_report(runs_dir, Path(out_dir), papers_dir, files_root, results_dir, jobs,
                               figure_cache.default_folder() if keep_figures else None)
    except (FileExistsError, ValueError) as exc:
        raise UserError(str(exc)) from None
    _note_missing_stores(runs_dir, results_dir)
    run_pages = sum(path.parent == Path(out_dir) / "runs" for path in written)
    print(f"wrote {len(written)} pages in {out_dir}: the index, {len(written) - 1 - run_pages} paper pages and "
          f"{run_pages} run pages")
    print(f"index: {written[0]}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.build", description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, default=None,
                        help="the run store (default: $HARNESS_RUNS_DIR or runs); a folder named here must exist")
    parser.add_argument("--results-dir", type=Path, default=None,
                        help="the reference store (default: results/ in the repository); --results-dir '' for none; "
                             "a folder named here must exist")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--papers-dir", type=Path, default=PAPERS_DIR, help="the published tables (YAML)")
    parser.add_argument("--files-root", type=Path, default=FILES_ROOT,
                        help="the folder the papers' facts read benchmark files from, e.g. bench/agents.json "
                             "(default: the repository root)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="processes that render the run pages (default: the CPUs this process may use)")
    parser.add_argument("--no-figure-cache", action="store_true", help=NO_FIGURE_CACHE_HELP)
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        return report(args.runs_dir, args.out, args.results_dir, args.jobs, args.papers_dir, args.files_root,
                      keep_figures=not args.no_figure_cache)
    except UserError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
