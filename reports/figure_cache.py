"""Report figures kept between builds: the run pages' and the paper pages'.

Drawing a run page's figures (matplotlib, :func:`reports.figures.run_figures` and
:func:`reports.figures.rollout_figure`) is most of a build: about 0.3 s a run, so a store of 379 runs spends
most of a minute on figures that did not change since the last ``make report``. A run's figures depend on
nothing but what the store read of it (its :class:`reports.store.RunRecord`: results, config, curves, stages,
rollout, status) and on the drawing code and libraries. So each run's figures are kept in one gzipped JSON file
named by a digest of exactly that (:func:`figure_key`), and a later build whose run and code are unchanged reads
them instead of drawing them again: the same bytes, since a figure's SVG is byte-stable (reports.figures).
A paper page's figures read many runs; each is kept by what it draws instead (:func:`drawing_key`: its name, its
data frame and its options), which took a warm build of the 483 shipped runs from about 16 s to about 12 s.

The cache lives in ``$HARNESS_CACHE_DIR/report-figures`` (``harness report``'s ``--no-figure-cache`` draws
everything and leaves the cache alone). A file that cannot be read is drawn again and replaced; files are
written atomically, so a killed build or two builds at once leave only whole files. After a build, the files
this build did not use are removed (:func:`prune`), so the folder holds one build's worth.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from reports.store import RunRecord

FOLDER = "report-figures"  # under $HARNESS_CACHE_DIR
SUFFIX = ".json.gz"
FORMAT = 1  # bumped when what a cache file holds changes shape
_LIBRARIES = ("matplotlib", "seaborn", "pandas", "numpy")
# reports/: the modules a run's figures run (reports.figures and what it imports from reports/, transitively)
_DRAWING_CODE = ("figures.py", "store.py", "papers.py", "settings.py", "figure_cache.py")
Figures = dict[str, list[dict[str, str]]]  # "figures", "rollout" -> items of {"svg": ..., "caption": ...}


def default_folder() -> Path:
    from harness.paths import cache_dir

    return cache_dir() / FOLDER


def code_digest() -> str:
    """A digest of the code that draws a run's figures (reports.figures and the modules it imports from
    ``reports/``) and of the drawing libraries' versions: a change to either draws every figure again."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    folder = Path(__file__).resolve().parent
    for name in _DRAWING_CODE:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    for name in _LIBRARIES:
        try:
            digest.update(f"{name}=={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} absent\0".encode())
    return digest.hexdigest()


def _feed(digest: Any, value: Any) -> None:
    """``value`` into ``digest``, canonically: mappings in key order, frames by their columns, dtypes and a
    hash of every row (pandas.util.hash_pandas_object), anything else by type and repr."""
    if isinstance(value, dict):
        digest.update(b"{")
        for key in sorted(value, key=str):
            digest.update(repr(key).encode() + b":")
            _feed(digest, value[key])
        digest.update(b"}")
    elif isinstance(value, list | tuple):
        digest.update(b"[")
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, pd.DataFrame):
        digest.update(repr((list(map(str, value.columns)), [str(t) for t in value.dtypes], value.shape)).encode())
        digest.update(pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
    else:
        digest.update(f"{type(value).__name__}:{value!r};".encode())


def figure_key(run: RunRecord, code: str) -> str:
    """The digest that names ``run``'s cached figures: everything of the run the figures could read, and
    ``code`` (:func:`code_digest`)."""
    digest = hashlib.sha256(code.encode())
    _feed(digest, [str(run.path), run.rel_path, run.task, run.model, run.run_id, run.results, run.status, run.gone,
                   run.config, run.config_text, run.curves, run.stages, run.pruning, run.problems, run.page,
                   run.variant, run.fingerprint, run.origin, run.stale, run.rollout, run.pictures])
    return digest.hexdigest()[:32]


def drawing_key(code: str, name: str, data: pd.DataFrame, options: dict[str, Any]) -> str:
    """The digest that names one paper-page figure (:func:`reports.figures.facet_lines` of ``name``, ``data`` and
    ``options``) drawn by ``code`` (:func:`code_digest`): a paper page's figures read many runs, so they are kept by
    what they draw, not by run."""
    digest = hashlib.sha256(code.encode())
    _feed(digest, ["facet_lines", name, data, options])
    return digest.hexdigest()[:32]


def cached_svg(folder: Path | None, key: str, draw: Callable[[], str | None]) -> str | None:
    """One figure's SVG (None: nothing to draw), kept under ``key`` in ``folder`` as :func:`cached_figures` keeps a
    run's figures."""
    kept = cached_figures(folder, key, lambda: {"svg": [{"svg": svg} for svg in [draw()] if svg]})
    items = kept.get("svg") or []
    return items[0]["svg"] if items else None


def cached_figures(folder: Path | None, key: str, draw: Callable[[], Figures]) -> Figures:
    """The figures kept under ``key`` in ``folder``, else ``draw()``'s, which are then kept (``folder`` None:
    always drawn, nothing kept). A file that does not read back as figures is drawn again and replaced."""
    if folder is None:
        return draw()
    path = folder / f"{key}{SUFFIX}"
    try:
        kept = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
        if _is_figures(kept):
            return kept
    except (OSError, ValueError, EOFError):  # absent, or damaged: draw again
        pass
    drawn = draw()
    _write(path, drawn)
    return drawn


def _is_figures(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(items, list) and all(isinstance(item, dict) and all(isinstance(v, str) for v in item.values())
                                        for item in items) for items in value.values())


def _write(path: Path, figures: Figures) -> None:
    """``figures`` into ``path`` atomically (a temporary file beside it, then renamed); a folder that cannot be
    written only means the figures are drawn again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(gzip.compress(json.dumps(figures, sort_keys=True).encode("utf-8"), mtime=0))
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def prune(folder: Path | None, used: Iterable[str]) -> None:
    """Remove the cache files of ``folder`` that are not named by ``used`` (this build's keys)."""
    if folder is None or not folder.is_dir():
        return
    keep = {f"{key}{SUFFIX}" for key in used}
    for path in folder.glob(f"*{SUFFIX}"):
        if path.name not in keep:
            path.unlink(missing_ok=True)
