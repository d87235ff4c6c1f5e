"""The report on stepwise (world-state) runs, written by hand as harness/runners/stepwise.py writes them: the run
page's summary, curves with the last-step accuracy per query group, the long-horizon rollout figure
(rollout.csv), the pictures inlined as data URIs, damaged rollout files and pictures as problem lines, and a
byte-identical rebuild with a stepwise run in the store."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from matplotlib import image as mpimg

from reports.build import build_report
from reports.store import read_rollout
from tests.test_report import _write_csv, write_run

GROUPS = ("repeat", "recall")
PICTURE_STEPS = (10, 1, 2)  # written out of order: the page shows them in step order


def _grid(longest: int = 10_000) -> list[int]:
    """Every step up to 100, then ten a decade (as the runner's query grid, coarser)."""
    steps = set(range(1, 101))
    steps.update(int(round(100 * 10 ** (i / 10))) for i in range(21))
    return sorted(s for s in steps if s <= longest)


def _rollout_rows() -> list[dict[str, Any]]:
    """Recall decaying with the step; "repeat" not asked at step 1 (an empty cell)."""
    rows = []
    for step in _grid():
        recall = max(0.1, 1.0 - 0.2 * np.log10(step))
        row: dict[str, Any] = {"step": step, "acc": round((recall + 0.99) / 2 if step > 1 else recall, 4)}
        if step > 1:
            row["repeat/acc"] = 0.99
        row["recall/acc"] = round(recall, 4)
        rows.append(row)
    return rows


def _metrics_rows(cycles: int = 200, log_every: int = 10, eval_every: int = 100) -> list[dict[str, Any]]:
    """Training rows every ``log_every`` cycles, validation rows every ``eval_every``, then the test row."""
    rows: list[dict[str, Any]] = []
    for done in range(log_every, cycles + 1, log_every):
        rows.append({"step": done, "epoch": done // eval_every, "train/loss": 2.0 / done, "train/acc": 0.5,
                     **{f"train/{g}/acc": 0.5 for g in GROUPS}, "train/final/acc": 0.6, "lr": 0.001,
                     "trajectory_length": 5.0})
        if done % eval_every == 0:
            rows.append({"step": done, "epoch": done // eval_every, "val/acc": done / 250, "val/loss": 1.0,
                         **{f"val/{g}/acc": 0.7 for g in GROUPS}, "val/final/acc": 0.8,
                         **{f"val/final/{g}/acc": 0.6 + 0.1 * i for i, g in enumerate(GROUPS)},
                         "train/world_steps_per_s": 5000.0})
    rows.append({"step": cycles, "epoch": cycles // eval_every, "test/acc": 0.8, "test/repeat/acc": 0.99,
                 "test/recall/acc": 0.61, "test/final/acc": 0.75, "test/error": 0.2, "test/loss": 0.5})
    return rows


def write_stepwise_run(runs: Path, task: str = "world_of_numbers", model: str = "updater_extractor", seed: int = 0,
                       *, pictures: tuple[int, ...] = PICTURE_STEPS, tag: str = "w") -> Path:
    """A completed stepwise run: results.json, config.yaml (a stepwise section), metrics.csv, rollout.csv and
    tiny pictures written with matplotlib."""
    run_id = f"{task}-{model}-cpu-s{seed}-{tag}"
    path = runs / task / model / run_id
    path.mkdir(parents=True)
    config = {"seed": seed, "profile": "cpu", "task": {"name": task}, "model": {"name": model},
              "optim": {"name": "adam", "lr": 0.001}, "protocol": {"name": "single", "target": [], "pretrain": []},
              "stepwise": {"batch_size": 16, "steps": 5, "update_freq": 1, "iterations": 200, "bptt": False,
                           "curriculum": {"enabled": False, "start": 1, "threshold": 0.9, "patience": 20},
                           "eval_every": 100, "horizons": [10, 100, 1000, 10000], "horizon_batch": 64,
                           "pictures": 2}}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rollout = _rollout_rows()
    horizons = {f"rollout/step_{row['step']}/{key}": value for row in rollout if row["step"] in (10, 100, 1000, 10000)
                for key, value in row.items() if key != "step"}
    results = {
        "schema_version": 2, "run_id": run_id, "task": task, "model": model, "profile": "cpu", "seed": seed,
        "status": "completed", "metrics": {**_metrics_rows()[-1], **horizons},
        "best": {"metric": "val/acc", "value": 0.8, "step": 200}, "steps": 200, "epochs": 2, "wall_time_s": 42.0,
        "throughput": {"train/world_steps_per_s": 5000.0}, "data_source": "generator",
        "rollout": {"file": "rollout.csv", "longest": 10000, "worlds": 64, "seconds": 12.5,
                    "world_steps_per_s": 51200.0},
        "git": {"commit": "abc123def456", "dirty": False}, "versions": {"torch": "2.13.0"},
        "device": "cpu, 2 threads", "started_at": "2026-01-03T00:00:00Z", "finished_at": "2026-01-03T00:01:00Z",
        "error": None, "parameters": 1234,
    }
    del results["metrics"]["step"], results["metrics"]["epoch"]
    if pictures:
        results["pictures"] = [f"pictures/step_{t}.png" for t in sorted(pictures)]
        (path / "pictures").mkdir()
        for t in pictures:  # a 2 x 6 grey sheet, a different one per step
            mpimg.imsave(path / "pictures" / f"step_{t}.png", np.full((4, 6), 20 * t, dtype=np.uint8), cmap="gray",
                         vmin=0, vmax=255)
    (path / "results.json").write_text(json.dumps(results, indent=2))
    _write_csv(path / "metrics.csv", _metrics_rows())
    _write_csv(path / "rollout.csv", rollout)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
    root = tmp_path_factory.mktemp("stepwise-report")
    runs = root / "runs"
    write_stepwise_run(runs)
    write_run(runs, "babi", "lstm", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5, "test/error": 0.5})
    out = root / "out"
    return runs, out, build_report(runs, out, results_dir=None)


def _page(site: tuple[Path, Path, list[Path]]) -> str:
    return (site[1] / "runs" / "world_of_numbers-updater_extractor-cpu-s0-w.html").read_text()


def test_run_page_summary_and_curves(site: tuple[Path, Path, list[Path]]) -> None:
    page = _page(site)
    assert "<tr><th>outer cycles / validations</th><td>200 / 2</td></tr>" in page
    assert "T = 5, stop-gradient between steps" in page
    assert "val/acc = 0.8000 at cycle 200" in page
    assert "5,000 world-steps/s (median over validation windows)" in page
    assert "10,000 steps, 64 worlds: 12.5 s (51,200 world-steps/s)" in page
    assert "steps / epochs" not in page and "env steps / iterations" not in page and "RL algorithm" not in page
    assert "Problems reading this run" not in page
    curves = page[page.index("<h2>Curves</h2>"):page.index('<h2 id="rollout">')]
    assert curves.count("<svg") == 1
    for text in ("training loss", "val accuracy (%)", "outer cycle", "all steps", "last step: repeat",
                 "last step: recall"):
        assert text in curves, text
    assert "rollout/step_10000/recall/acc" in page  # the metrics table


def test_rollout_figure(site: tuple[Path, Path, list[Path]]) -> None:
    page = _page(site)
    section = page[page.index('<h2 id="rollout">'):page.index('<h2 id="pictures">')]
    assert section.count("<svg") == 1 and section.count("</svg>") == 1
    for text in ("all queries", "repeat", "recall", "training length T = 5", "step of the rollout (log scale)",
                 "accuracy (%)"):
        assert text in section, text
    caption = re.search(r"<figcaption>(.*?)</figcaption>", section, flags=re.S)
    assert caption
    for text in ("64 held-out test worlds", "rolled 10,000 steps", "stepwise.steps = 5", "12.5 s",
                 "51,200 world-steps/s"):
        assert text in caption.group(1), text


def test_pictures_inline_in_step_order(site: tuple[Path, Path, list[Path]]) -> None:
    runs, _, _ = site
    page = _page(site)
    section = page[page.index('<h2 id="pictures">'):page.index("<h2>Versions</h2>")]
    sources = re.findall(r'<img src="([^"]+)"', section)
    assert len(sources) == 3 and all(src.startswith("data:image/png;base64,") for src in sources)
    folder = next(runs.glob("world_of_numbers/*/*/pictures"))
    for src, t in zip(sources, (1, 2, 10), strict=True):
        assert base64.b64decode(src.split(",", 1)[1]) == (folder / f"step_{t}.png").read_bytes()
    captions = re.findall(r"<figcaption>(step \d+)[^<]*</figcaption>", section)
    assert captions == ["step 1", "step 2", "step 10"]
    assert "step 1: the true world (top) and the model&#39;s belief (bottom)" in section


def test_self_contained(site: tuple[Path, Path, list[Path]]) -> None:
    for path in site[2]:
        html = path.read_text()
        assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html), path
        assert "<link" not in html and "<script" not in html and "<?xml" not in html
        assert all(src.startswith("data:image/png;base64,") for src in re.findall(r'<img src="([^"]*)"', html))
        assert html.count("<svg") == html.count("</svg>")


def test_index_and_supervised_page_still_render(site: tuple[Path, Path, list[Path]]) -> None:
    index = (site[1] / "index.html").read_text()
    assert "<th>world_of_numbers</th>" in index and "<th>updater_extractor</th>" in index
    assert 'href="runs/world_of_numbers-updater_extractor-cpu-s0-w.html"' in index
    assert "not rendered" not in index
    supervised = (site[1] / "runs" / "babi-lstm-cpu-s0-a.html").read_text()
    assert "steps / epochs" in supervised and 'id="rollout"' not in supervised and "<img" not in supervised


def test_byte_identical_rebuild(site: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    runs, out, written = site
    again = build_report(runs, tmp_path / "again", results_dir=None)
    assert [p.relative_to(tmp_path / "again") for p in again] == [p.relative_to(out) for p in written]
    for first, second in zip(written, again, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name


DAMAGED = {
    "ragged": "step,acc,recall/acc\n1,0.5,0.5\n2,0.5,0.5,0.9,0.1\n",
    "extra": "step,acc\n1,0.5,0.3\n2,0.5,0.2\n",  # pandas alone would take the steps for an index
    "short": "step,acc,recall/acc\n1,0.5,0.5\n2\n",
    "cut": "step,acc\n1,0.5\n2,0.1",
    "words": "step,acc\n1,0.5\n2,half\n",
    "binary": b"\xff\xfe\x00\x81garbage",
    "nostep": "when,acc\n1,0.5\n",
    "empty": "",
    "header": "step,acc\n",
    "range": "step,acc\n1,1.5\n",
    "steps": "step,acc\n0.5,0.5\n",
}


def test_damaged_rollout_and_pictures_are_problems(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for index, (tag, content) in enumerate(DAMAGED.items()):
        path = write_stepwise_run(runs, seed=index, tag=tag, pictures=())
        (path / "rollout.csv").write_bytes(content if isinstance(content, bytes) else content.encode())
        (path / "metrics.csv").unlink()  # no curves to draw: a faster build
    missing = write_stepwise_run(runs, seed=20, tag="missing", pictures=(1, 5))
    (missing / "rollout.csv").unlink()
    (missing / "pictures" / "step_5.png").unlink()
    (missing / "pictures" / "step_1.png").write_bytes(b"not a png")
    out = tmp_path / "out"
    build_report(runs, out, results_dir=None)
    for index, tag in enumerate(DAMAGED):
        page = (out / "runs" / f"world_of_numbers-updater_extractor-cpu-s{index}-{tag}.html").read_text()
        problems = page[page.index("Problems reading this run"):page.index("<h2>Metrics</h2>")]
        assert "rollout.csv unreadable: rollout.csv" in problems, tag
        assert "No long-horizon rollout" in page and "<h2>Curves</h2>" in page and "<svg" not in page, tag
        assert "status-completed" in page, tag  # the run itself is fine
    page = (out / "runs" / "world_of_numbers-updater_extractor-cpu-s20-missing.html").read_text()
    assert "results.json names a long-horizon rollout but rollout.csv is missing" in page
    assert "pictures/step_1.png is not a PNG image" in page
    assert "results.json lists picture(s) that are absent: pictures/step_5.png" in page
    assert "<img" not in page and 'id="pictures"' not in page
    assert "not rendered" not in (out / "index.html").read_text()


def test_read_rollout_keeps_empty_cells(tmp_path: Path) -> None:
    path = tmp_path / "rollout.csv"
    path.write_text("step,acc,repeat/acc,recall/acc\n2,0.5,,0.5\n1,0.75,1,0.5\n")
    frame = read_rollout(path)
    assert frame is not None and list(frame.columns) == ["step", "acc", "repeat/acc", "recall/acc"]
    assert frame["step"].tolist() == [1, 2] and frame["repeat/acc"].isna().tolist() == [False, True]
    assert read_rollout(tmp_path / "absent.csv") is None
