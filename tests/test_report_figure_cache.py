"""Figures kept between report builds (reports/figure_cache.py): a second build of an unchanged store draws no
run figure and no paper-page figure and writes the same bytes as a build that draws them all; a run that changed
is drawn again; a damaged or unwritable cache only means drawing again; ``--no-figure-cache`` neither reads nor
keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as harness_main
from reports import figure_cache, figures
from reports.build import build_report
from tests.test_report import files_root, write_rl_run, write_run

OFFICIAL = {"babi_id": 1, "source": "files", "data_set": "en-10k"}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Four runs: two seeds of a supervised run, another model's, an RL run (tests/test_report.py's writers)."""
    runs = tmp_path / "runs"
    for seed in (0, 1):
        write_run(runs, "babi", "tpr_rnn", seed, task_cfg=OFFICIAL, metrics={"test/acc": 0.99 - 0.01 * seed})
    write_run(runs, "babi", "lstm", 0, task_cfg=OFFICIAL, metrics={"test/acc": 0.6})
    write_rl_run(runs, "boxworld", "relational", 0, eval_win=0.6, types=("1-0", "2-1"))
    (tmp_path / "papers").mkdir()  # no paper pages: the run pages are what the cache is about
    return runs


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run pages whose figures were drawn (not read from the cache), in order."""
    pages: list[str] = []
    draw = figures.run_figures

    def counted(run):  # noqa: ANN001, ANN202
        pages.append(run.page)
        return draw(run)

    monkeypatch.setattr(figures, "run_figures", counted)
    return pages


def _site(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(store: Path, out: Path, cache: Path | None) -> dict[str, bytes]:
    build_report(store, out, store.parent / "papers", files_root(store), jobs=1, figure_folder=cache)
    return _site(out)


def test_a_second_build_draws_nothing_and_writes_the_same_bytes(store, tmp_path, drawn):
    cache = tmp_path / "cache"
    uncached = _build(store, tmp_path / "plain", None)
    runs = len(drawn)
    assert runs == 4 and not cache.exists()
    first = _build(store, tmp_path / "first", cache)
    assert len(drawn) == 2 * runs and len(list(cache.glob("*.json.gz"))) == runs
    second = _build(store, tmp_path / "second", cache)
    assert len(drawn) == 2 * runs  # every run's figures read back
    assert first == uncached and second == uncached


def test_a_changed_run_is_drawn_again_and_its_old_figures_are_removed(store, tmp_path, drawn):
    cache = tmp_path / "cache"
    _build(store, tmp_path / "first", cache)
    kept = set(cache.glob("*.json.gz"))
    (changed,) = store.glob("babi/tpr_rnn/*-s1-a")
    results = json.loads((changed / "results.json").read_text())
    results["metrics"]["test/acc"] = 0.5
    (changed / "results.json").write_text(json.dumps(results))
    del drawn[:]
    again = _build(store, tmp_path / "again", cache)
    assert drawn == [f"runs/{changed.name}.html"]
    assert len(kept - set(cache.glob("*.json.gz"))) == 1 and len(list(cache.glob("*.json.gz"))) == len(kept)
    assert again == _build(store, tmp_path / "plain", None)


def test_a_damaged_or_unwritable_cache_only_means_drawing_again(store, tmp_path, drawn):
    cache = tmp_path / "cache"
    plain = _build(store, tmp_path / "plain", None)
    _build(store, tmp_path / "first", cache)
    damaged = sorted(cache.glob("*.json.gz"))
    damaged[0].write_bytes(b"not gzip")
    damaged[1].write_bytes(figure_cache.gzip.compress(b'{"figures": 3}'))
    del drawn[:]
    assert _build(store, tmp_path / "again", cache) == plain and len(drawn) == 2
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert _build(store, tmp_path / "blocked", blocked / "cache") == plain  # no folder can be made there


def test_harness_report_keeps_figures_in_the_cache_folder_unless_told_not_to(store, tmp_path, env, monkeypatch):
    cache = Path(env["HARNESS_CACHE_DIR"]) / figure_cache.FOLDER
    common = ["report", "--runs-dir", str(store), "--results-dir", "", "--jobs", "1"]  # and the shipped papers
    drawn: list[tuple[str, bool]] = []  # each paper-page figure drawn: (its name, whether it had data)
    draw = figures.facet_lines

    def counted(name, data, **options):  # noqa: ANN001, ANN003, ANN202
        drawn.append((name, not data.empty))
        return draw(name, data, **options)

    monkeypatch.setattr(figures, "facet_lines", counted)
    assert harness_main([*common, "--out", str(tmp_path / "no"), "--no-figure-cache"]) == 0
    assert not cache.exists()
    papers = [name for name, data in drawn if data]
    assert "tpr_rnn:babi:val" in papers  # the two tpr_rnn seeds' validation curves on the TPR-RNN page
    del drawn[:]
    assert harness_main([*common, "--out", str(tmp_path / "yes")]) == 0
    assert len(list(cache.glob("*.json.gz"))) == len(list(store.glob("*/*/*/results.json"))) + len(papers)
    del drawn[:]
    assert harness_main([*common, "--out", str(tmp_path / "again")]) == 0
    assert not [name for name, data in drawn if data]  # every paper figure read back; only empty ones "drawn"
    assert _site(tmp_path / "yes") == _site(tmp_path / "no") == _site(tmp_path / "again")


def test_the_code_digest_covers_every_report_module_the_figures_import():
    import ast

    folder = Path(figure_cache.__file__).parent
    needed, todo = set(), ["figures.py"]
    while todo:  # reports.figures and what it imports from reports/, transitively
        name = todo.pop()
        needed.add(name)
        for node in ast.walk(ast.parse((folder / name).read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reports."):
                module = f"{node.module.split('.')[1]}.py"
                if module not in needed:
                    todo.append(module)
    assert needed <= set(figure_cache._DRAWING_CODE), needed - set(figure_cache._DRAWING_CODE)
