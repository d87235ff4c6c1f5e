"""The report generator (reports/) on a small hand-written run store: supervised runs (bAbI, Relations Game,
a curriculum, a failed run) and reinforcement-learning runs (BoxWorld with puzzle types, bridge BoxWorld for
the 2-simplicial paper, CartPole without wins), plus a captured agent benchmark file."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reports import build as build_module
from reports.build import build_report, main

STAGES = ("1_scratch", "2_pretrain", "3_frozen_central", "4_frozen_encoder")
AGENTS_BENCH = {"device": "cpu", "threads": 2, "ms": {"1280": {"relational": 40.0, "simplicial": 100.0}},
                "ratio": {"1280": 2.5}}


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _curves(path: Path, final: dict[str, float], val_accs: list[float], steps_per_epoch: int = 20) -> None:
    rows: list[dict[str, Any]] = []
    for epoch, acc in enumerate(val_accs):
        for step in (steps_per_epoch * epoch + 10, steps_per_epoch * (epoch + 1)):
            rows.append({"step": step, "epoch": epoch, "train/loss": 1.0 / step, "train/acc": acc, "lr": 0.01})
        rows.append({"step": steps_per_epoch * (epoch + 1), "epoch": epoch, "train/epoch_loss": 0.5,
                     "train/examples_per_s": 100.0, "val/loss": 1 - acc, "val/acc": acc})
    rows.append({"step": steps_per_epoch * len(val_accs), "epoch": len(val_accs) - 1, **final})
    _write_csv(path, rows)


def write_run(runs: Path, task: str, model: str, seed: int, *, metrics: dict[str, float] | None = None,
              status: str = "completed", task_cfg: dict[str, Any] | None = None, protocol: dict[str, Any] | None = None,
              error: str | None = None, tag: str = "a", finished: str = "2026-01-01T00:00:00Z") -> Path:
    run_id = f"{task}-{model}-cpu-s{seed}-{tag}"
    path = runs / task / model / run_id
    path.mkdir(parents=True)
    config = {"seed": seed, "profile": "cpu", "task": {"name": task, **(task_cfg or {})}, "model": {"name": model},
              "optim": {"name": "sgd", "lr": 0.01}, "train": {"batch_size": 10, "max_epochs": 4, "max_time_s": None},
              "protocol": protocol or {"name": "single", "target": [], "pretrain": []}}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    results = {
        "schema_version": 1, "run_id": run_id, "task": task, "model": model, "profile": "cpu", "seed": seed,
        "status": status, "metrics": metrics if status == "completed" and metrics else {},
        "best": {"metric": "val/acc", "value": 0.9, "step": 40, "epoch": 1}, "steps": 40, "epochs": 2,
        "wall_time_s": 12.5, "throughput": {"train/examples_per_s": 100.0}, "data_source": "generator",
        "git": {"commit": "abc123def456", "dirty": seed == 1}, "versions": {"python": "3.11.7", "torch": "2.13.0"},
        "device": "cpu, 2 threads", "started_at": "2026-01-01T00:00:00Z", "finished_at": finished, "error": error,
    }
    (path / "results.json").write_text(json.dumps(results, indent=2))
    _curves(path / "metrics.csv", metrics if status == "completed" and metrics else {}, [0.6, 0.9])
    return path


def _rl_rows(final: dict[str, float], types: list[str], wins: bool, iterations: int = 8) -> list[dict[str, Any]]:
    """metrics.csv of an RL run: one row per iteration (step = env steps), then the final evaluation's row."""
    rows: list[dict[str, Any]] = []
    for it in range(1, iterations + 1):
        row: dict[str, Any] = {"step": 1000 * it + 7, "epoch": it}
        if wins:
            row["train/win_rate"] = it / (iterations + 2)
            row.update({f"train/win_rate/{kind}": it / (iterations + 2 + k) for k, kind in enumerate(types)})
        row.update({"train/episode_return": 2.0 * it, "train/episode_len": 50.0 - it, "train/episodes": 10.0 * it,
                    "learner/total_loss": 1.0 / it, "learner/pi_loss": 0.1, "learner/vf_loss": 0.5 / it,
                    "learner/entropy": 1.38 - 0.01 * it, "learner/grad_norm": 2.0, "learner/lr": 0.0005,
                    "perf/env_steps_per_s": 1400.0 + it})
        rows.append(row)
    rows.append({"step": 1000 * iterations + 7, "epoch": iterations, **final})
    return rows


PAPER_BRIDGE = {"num_rows": 7, "num_cols": 9, "min_sol_length": 1, "max_sol_length": 3, "multi_lock": True,
                "has_bridge": True, "bridge_prob": 0.5, "max_decoy_paths": 0, "horizon": None}
"""The 2-simplicial paper's bridge BoxWorld setting (§5), as task.env."""


def write_rl_run(runs: Path, task: str, model: str, seed: int, *, eval_win: float | None, types: tuple[str, ...] = (),
                 throughput: float = 1500.0, episode_return: float = 5.0) -> Path:
    """A completed RL run as harness/runners/rl.py writes it (``eval_win=None``: a task without wins)."""
    run_id = f"{task}-{model}-cpu-s{seed}-r"
    path = runs / task / model / run_id
    path.mkdir(parents=True)
    env = PAPER_BRIDGE if task == "bridge_boxworld" else {"n": 6, "solution_length": 1, "num_distractors": 0}
    config = {"seed": seed, "profile": "cpu", "task": {"name": task, "env": env}, "model": {"name": model},
              "protocol": {"name": "single", "target": [], "pretrain": []},
              "rl": {"algorithm": "impala", "total_env_steps": 8000, "gamma": 0.99}}
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    final = {"eval/episode_return": episode_return, "eval/episodes": 20.0}
    if eval_win is not None:
        final["eval/win_rate"] = eval_win
        final.update({f"eval/win_rate/{kind}": eval_win + 0.1 * (k % 2) for k, kind in enumerate(types)})
    rows = _rl_rows(final, list(types), wins=eval_win is not None)
    results = {
        "schema_version": 1, "run_id": run_id, "task": task, "model": model, "profile": "cpu", "seed": seed,
        "status": "completed", "metrics": {**{k: v for k, v in rows[-2].items() if k.startswith("train/")}, **final},
        "best": None, "steps": 8007, "epochs": 0, "wall_time_s": 30.0, "throughput": {"env_steps_per_s": throughput},
        "data_source": None, "git": {"commit": "abc123def456", "dirty": False}, "versions": {"torch": "2.13.0"},
        "device": "cpu, 2 threads", "started_at": "2026-01-02T00:00:00Z", "finished_at": "2026-01-02T00:01:00Z",
        "error": None, "env_steps": 8007, "iterations": 8, "stop_reason": "env steps", "train_time_s": 25.0,
    }
    (path / "results.json").write_text(json.dumps(results, indent=2))
    _write_csv(path / "metrics.csv", rows)
    return path


def make_rl_runs(runs: Path) -> None:
    """BoxWorld with puzzle types, bridge BoxWorld for both agents of the 2-simplicial paper, and CartPole."""
    write_rl_run(runs, "boxworld", "relational", 0, eval_win=0.6, types=("1-0", "2-1"))
    write_rl_run(runs, "bridge_boxworld", "relational", 0, eval_win=0.5, types=("1-0-0", "1-1-2"), throughput=2000.0)
    write_rl_run(runs, "bridge_boxworld", "simplicial", 0, eval_win=0.8, types=("1-0-0", "1-1-2"), throughput=1000.0)
    write_rl_run(runs, "cartpole", "mlp_agent", 0, eval_win=None, episode_return=250.0)


def make_store(runs: Path) -> None:
    for seed in (0, 1):
        # bAbI task 1, two models
        official = {"babi_id": 1, "source": "files", "data_set": "en-10k"}
        write_run(runs, "babi", "tpr_rnn", seed, task_cfg=official,
                  metrics={"test/acc": 0.999 - 0.002 * seed, "test/error": 0.001 + 0.002 * seed})
        write_run(runs, "babi", "lstm", seed, task_cfg=official,
                  metrics={"test/acc": 0.5, "test/error": 0.5})
        # Relations Game 'same', two models, at the paper's settings
        same = {"tasks": ["same"], "test_sets": ["hexominoes", "stripes"], "train_set": "pentominoes",
                "n_train": 250000}
        write_run(runs, "relations_game", "predinet", seed, task_cfg=same,
                  metrics={"test/acc": 0.99, "test_hexominoes/acc": 0.99, "test_stripes/acc": 0.99 - 0.01 * seed})
        write_run(runs, "relations_game", "mlp2", seed, task_cfg=same,
                  metrics={"test/acc": 0.85, "test_hexominoes/acc": 0.80 + 0.02 * seed, "test_stripes/acc": 0.88})
    pruning = {"curve": [{"heads": q, "mean": 0.5 + q / 80, "best": 0.6 + q / 100} for q in range(1, 33)]}
    path = runs / "relations_game" / "predinet" / "relations_game-predinet-cpu-s0-a"
    (path / "analysis").mkdir()
    (path / "analysis" / "head_pruning.json").write_text(json.dumps(pruning))
    write_run(runs, "relations_game", "predinet", 2, status="failed", task_cfg={"tasks": ["same"]}, tag="f",
              error="RuntimeError: CUDA out of memory <while> allocating & failing")
    curriculum = write_run(runs, "relations_game", "predinet", 0, tag="c", task_cfg={"tasks": ["same"]},
                           metrics={"3_frozen_central/test/acc": 0.97},
                           protocol={"name": "curriculum", "target": ["same"], "pretrain": ["between"]})
    for index, stage in enumerate(STAGES):
        stage_dir = curriculum / "stages" / stage
        stage_dir.mkdir(parents=True)
        (stage_dir / "results.json").write_text(json.dumps({
            "status": "completed", "stage": stage, "tasks": ["between"] if stage == "2_pretrain" else ["same"],
            "metrics": {"test/acc": 0.8 + 0.05 * index}, "steps": 40,
            "best": {"metric": "val/acc", "value": 0.8, "step": 40, "epoch": 1}}))
        _curves(stage_dir / "metrics.csv", {"test/acc": 0.8 + 0.05 * index}, [0.5 + 0.1 * index, 0.9])
    make_rl_runs(runs)


def files_root(runs: Path) -> Path:
    """The benchmark files beside a test store: bench/agents.json as captured output (a table, then the JSON
    line); no bench/boxworld_env.json."""
    root = runs.parent / "files"
    (root / "bench").mkdir(parents=True, exist_ok=True)
    (root / "bench" / "agents.json").write_text(f"relational  B=1280  40.0 ms\n{json.dumps(AGENTS_BENCH)}\n")
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
    root = tmp_path_factory.mktemp("report")
    runs = root / "runs"
    make_store(runs)
    out = root / "out"
    return runs, out, build_report(runs, out, files_root=files_root(runs))


def _row(html: str, *labels: str) -> list[str]:
    """The cells of the paper-table row whose first cells are ``labels``."""
    start = "".join(f"<td>{label}</td>" for label in labels)
    match = re.search(re.escape("<tr>" + start) + r"(.*?)</tr>", html, flags=re.S)
    assert match, f"no row {labels}"
    return re.findall(r"<td([^>]*)>(.*?)</td>", start + match.group(1), flags=re.S)


def test_pages_exist(site: tuple[Path, Path, list[Path]]) -> None:
    runs, out, written = site
    assert written[0] == out / "index.html"
    for name in ("index.html", "predinet.html", "simplicial.html", "tpr_rnn.html"):
        assert (out / name).is_file()
    run_ids = sorted(p.parent.name for p in runs.glob("*/*/*/results.json"))
    assert sorted(p.stem for p in (out / "runs").glob("*.html")) == run_ids
    assert set(written) == {p for p in out.rglob("*.html")}


def test_index_matrix(site: tuple[Path, Path, list[Path]]) -> None:
    html = (site[1] / "index.html").read_text()
    matrix = html[html.index('<table class="matrix">'):html.index("</table>")]
    for name in ("babi", "relations_game", "tpr_rnn", "lstm", "predinet", "mlp2", "mlp1", "relation_net"):
        assert f"<th>{name}</th>" in matrix
    assert "no run yet" in matrix  # e.g. babi x predinet, relations_game x mlp1
    assert "99.8%" in matrix  # tpr_rnn on bAbI task 1: mean of 99.9 and 99.7
    assert 'href="#runs-babi-tpr_rnn"' in matrix and 'id="runs-babi-tpr_rnn"' in html
    assert "1 failed" in matrix
    assert 'href="predinet.html"' in html and 'href="tpr_rnn.html"' in html
    assert "abc123def456" in html and "2.13.0" in html  # provenance footer


def test_predinet_table(site: tuple[Path, Path, list[Path]]) -> None:
    html = (site[1] / "predinet.html").read_text()
    cells = _row(html, "same", "stripes")  # relation, object set, metric, then (published, ours, diff) x model
    models = ["mlp1", "mlp2", "relation_net", "mha", "predinet"]
    published, ours, diff = cells[3 + 3 * models.index("predinet"): 6 + 3 * models.index("predinet")]
    assert published[1].startswith("100.0")
    assert "98.5" in ours[1] and "n=2" in ours[1]  # mean of 99 and 98
    assert "match-green" in ours[0] and diff[1] == "-1.5"
    _, mlp2_ours, mlp2_diff = cells[3 + 3 * models.index("mlp2"): 6 + 3 * models.index("mlp2")]
    assert "88.0" in mlp2_ours[1] and "match-amber" in mlp2_ours[0] and mlp2_diff[1] == "-5.2"
    hexo = _row(html, "same", "hexominoes")
    assert "match-red" in hexo[3 + 3 * models.index("mlp2") + 1][0]  # 81.0 against 96.2
    assert "no run yet" in hexo[3 + 3 * models.index("mlp1") + 1][1]
    between = _row(html, "between", "stripes")
    assert all("no run yet" in cell[1] for cell in between[4::3])
    assert "head pruning" in html and "curriculum stages" in html


def test_tpr_rnn_table(site: tuple[Path, Path, list[Path]]) -> None:
    html = (site[1] / "tpr_rnn.html").read_text()
    cells = _row(html, "1", "single-supporting-fact")
    texts = [text for _, text in cells]
    assert any(text.startswith("0.02") for text in texts)  # published (paper Table 2)
    ours = [cell for cell in cells if "n=2" in cell[1]]
    assert ours and "0.20" in ours[0][1] and "match-green" in ours[0][0]  # mean of 0.1 % and 0.3 %
    assert "no run yet" in "".join(text for _, text in _row(html, "2", "two-supporting-facts"))


def test_failed_and_curriculum_run_pages(site: tuple[Path, Path, list[Path]]) -> None:
    failed = (site[1] / "runs" / "relations_game-predinet-cpu-s2-f.html").read_text()
    assert "failed" in failed
    assert "RuntimeError: CUDA out of memory &lt;while&gt; allocating &amp; failing" in failed
    assert "<pre>seed: 2" in failed  # the config, escaped in a <pre>
    ok = (site[1] / "runs" / "babi-tpr_rnn-cpu-s1-a.html").read_text()
    assert "test/error" in ok and "abc123def456" in ok and "dirty tree" in ok and "<svg" in ok
    curriculum = (site[1] / "runs" / "relations_game-predinet-cpu-s0-c.html").read_text()
    assert all(stage in curriculum for stage in STAGES) and "Curriculum stages" in curriculum


def test_self_contained(site: tuple[Path, Path, list[Path]]) -> None:
    for path in site[2]:
        html = path.read_text()
        assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html), path
        assert "<link" not in html and "<script" not in html
        assert html.count("<img") == html.count('<img src="data:image/png;base64,')  # pictures are inline
        assert "<?xml" not in html
    paper = (site[1] / "predinet.html").read_text()
    assert paper.count("<svg") >= 3 and paper.count("<svg") == paper.count("</svg>")


@pytest.mark.parametrize("jobs", [1, 3])
def test_byte_identical_rebuild(site: tuple[Path, Path, list[Path]], tmp_path: Path, jobs: int) -> None:
    """The same store gives the same files, whether one process renders the run pages or several (the fixture's
    build used the default, the CPUs this process may use)."""
    runs, out, written = site
    again = build_report(runs, tmp_path / "again", files_root=files_root(runs), jobs=jobs)
    assert [p.relative_to(tmp_path / "again") for p in again] == [p.relative_to(out) for p in written]
    for first, second in zip(written, again, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name


def _killed_worker(index: int) -> str:
    os._exit(1)  # as a worker killed while it renders (out of memory, say)


def test_a_killed_page_worker_leaves_the_pages_to_one_process(site: tuple[Path, Path, list[Path]], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    runs, out, written = site
    monkeypatch.setattr(build_module, "_forked_run_page", _killed_worker)
    again = build_report(runs, tmp_path / "again", files_root=files_root(runs), jobs=2)
    assert "rendering the run pages in one process instead (BrokenProcessPool" in capsys.readouterr().err
    for first, second in zip(written, again, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name


def test_a_ctrl_c_while_pages_render_stops_the_workers(site: tuple[Path, Path, list[Path]], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C reaching the report's process alone (``kill -INT``) while workers render: the workers go with it
    and nothing is left for the pool's shutdown or the interpreter's exit to wait on (the command hung there)."""
    import multiprocessing

    runs, _, _ = site

    def first_page_then_ctrl_c(pages, total):
        next(iter(pages))
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "_counted", first_page_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        build_report(runs, tmp_path / "again", files_root=files_root(runs), jobs=2)
    assert not multiprocessing.active_children()
    assert not (tmp_path / "again").exists()


def test_unreadable_runs_and_stale_pages(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_run(runs, "babi", "tpr_rnn", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0, "test/error": 0.0})
    broken = write_run(runs, "babi", "tpr_rnn", 1, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (broken / "results.json").write_text("{not json")
    bad_csv = write_run(runs, "babi", "lstm", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5})
    (bad_csv / "metrics.csv").write_bytes(b"\xff\xfe\x00garbage")
    listed = write_run(runs, "babi", "lstm", 1, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.5})
    (listed / "results.json").write_text("[1, 2]")
    out = tmp_path / "out"
    build_report(runs, out)
    index = (out / "index.html").read_text()
    assert index.count('class="status-unreadable"') == 3
    page = (out / "runs" / "babi-tpr_rnn-cpu-s1-a.html").read_text()
    assert "unreadable" in page and "results.json unreadable" in page
    # a run removed from the store loses its page at the next build
    for path in sorted(bad_csv.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    bad_csv.rmdir()
    build_report(runs, out)
    assert not (out / "runs" / "babi-lstm-cpu-s0-a.html").exists()
    assert (out / "runs" / "babi-tpr_rnn-cpu-s0-a.html").exists()


def test_missing_store_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    # a run store the user named must exist (a typo must not give a report without their runs) ...
    assert main(["--runs-dir", str(tmp_path / "nope"), "--results-dir", "", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"report: --runs-dir {tmp_path / 'nope'}: no such folder"
    assert not out.exists()
    # ... while the default one may be missing (a fresh clone has none yet): the index says there are no runs
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(tmp_path / "nope"))
    assert main(["--results-dir", "", "--out", str(out), "--files-root", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "does not exist and no reference store was read" in captured.err
    assert captured.out.splitlines()[-1] == f"index: {out / 'index.html'}"
    assert f"wrote {len(list(out.rglob('*.html')))} pages in {out}: the index, " in captured.out
    index = (out / "index.html").read_text()
    assert "No runs" in index and "no run yet" in index
    assert "no run yet" in (out / "predinet.html").read_text()
    simplicial = (out / "simplicial.html").read_text()
    assert "bench/agents.json (absent)" in simplicial and simplicial.count(">not measured<") == 6
    # never replaces a folder it did not write
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["--out", str(other)]) == 2
    assert (other / "keep.txt").read_text() == "mine"
    with pytest.raises(SystemExit) as refused:  # a process count below one is the user's mistake
        main(["--out", str(out), "--jobs", "0"])
    assert refused.value.code == 2 and "--jobs must be at least 1, got 0" in capsys.readouterr().err
    from harness.cli import main as harness_main  # `harness report` passes --jobs on, and refuses the same mistake

    assert harness_main(["report", "--results-dir", "", "--out", str(out), "--jobs", "1"]) == 0
    assert harness_main(["report", "--runs-dir", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: --runs-dir {tmp_path / 'nope'}: no such folder"
    assert harness_main(["report", "--out", str(out), "--jobs", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: report --jobs must be at least 1, got 0"


def test_rl_run_pages(site: tuple[Path, Path, list[Path]]) -> None:
    boxworld = (site[1] / "runs" / "boxworld-relational-cpu-s0-r.html").read_text()
    assert "env steps / iterations</th><td>8,007 / 8" in boxworld
    assert "1,500 env steps/s (median over iterations)" in boxworld
    evaluation = boxworld[boxworld.index('id="evaluation"'):boxworld.index("<h2>Metrics</h2>")]
    assert '<th>win rate (%)</th><td class="num">60.0</td><td class="num">80.0</td>' in evaluation  # 8 / 10
    assert '<th>episode return</th><td class="num">5.00</td>' in evaluation
    assert '<tr><td>1-0</td><td class="num">60.0</td>' in evaluation  # per puzzle type
    assert '<tr><td>2-1</td><td class="num">70.0</td>' in evaluation
    assert "L-d: solution length, distractor branches" in evaluation
    curves = boxworld[boxworld.index("<h2>Curves</h2>"):]
    assert curves.count("<svg") == 2
    for text in ("win rate (%)", "episode return", "environment steps", "all puzzles", "1-0", "2-1",
                 "final evaluation", "entropy", "env steps/s"):
        assert text in curves, text
    assert "steps / epochs" not in boxworld and "best</th>" not in boxworld
    cartpole = (site[1] / "runs" / "cartpole-mlp_agent-cpu-s0-r.html").read_text()
    assert '<th>episode return</th><td class="num">250.00</td>' in cartpole
    assert "win rate (%)" not in cartpole and "puzzle type" not in cartpole
    assert cartpole.count("<svg") == 2
    supervised = (site[1] / "runs" / "babi-tpr_rnn-cpu-s1-a.html").read_text()
    assert "steps / epochs" in supervised and "Final evaluation" not in supervised


def test_index_rl_cells(site: tuple[Path, Path, list[Path]]) -> None:
    html = (site[1] / "index.html").read_text()
    matrix = html[html.index('<table class="matrix">'):html.index("</table>")]
    for name in ("boxworld", "bridge_boxworld", "cartpole", "relational", "simplicial", "mlp_agent"):
        assert f"<th>{name}</th>" in matrix
    assert '<strong>60.0%</strong> <span class="small">eval win rate</span>' in matrix
    assert '<strong>80.0%</strong> <span class="small">eval win rate</span>' in matrix  # bridge, simplicial
    assert '<strong>250.0</strong> <span class="small">eval return</span>' in matrix
    assert "impala [cpu]" in matrix
    runs = html[html.index('id="runs-boxworld-relational"'):]
    runs = runs[:runs.index("</table>")]
    assert '<th class="num">eval win rate (%)</th><th class="num">env steps</th>' in runs
    assert '<td class="num">60.0</td><td class="num">8,007</td>' in runs
    assert '<th class="num">test/acc (%)</th><th class="num">steps</th>' in html  # supervised groups unchanged


def test_simplicial_paper_page(site: tuple[Path, Path, list[Path]]) -> None:
    html = (site[1] / "simplicial.html").read_text()
    bridge = _row(html, "bridge_boxworld")  # task, setting, result, metric, then (published, ours, diff) x model
    assert bridge[3][1] == "<code>eval/win_rate</code>"
    assert bridge[4][1] == "85.0" and "50.0" in bridge[5][1] and "n=1" in bridge[5][1] and bridge[6][1] == "-35.0"
    assert "match-red" in bridge[5][0]
    assert bridge[7][1] == "85.0" and "80.0" in bridge[8][1] and bridge[9][1] == "-5.0"
    assert "match-green" in bridge[8][0]  # within the 5-point tolerance
    boxworld = _row(html, "boxworld")
    assert boxworld[4][1] == "93.0" and "over 93%" in boxworld[2][1]
    # our 6x6 one-box board is not the paper's 9x9 one: shown beside, labelled, never coloured
    assert "no-match" in boxworld[5][0] and "no like-for-like run" in boxworld[5][1] and boxworld[6][1] == ""
    assert "n 6 ≠ 9; solution_length 1 ≠ [1, 5]; num_distractors 0 ≠ [0, 4]: 60.0 (n=1, yours)" in boxworld[5][1]
    assert boxworld[7][1] == "–" and "no run yet" in boxworld[8][1]  # no simplicial agent on BoxWorld
    assert "Settings of the published numbers" in html
    facts = html[html.index('id="facts"'):html.index("<h2>Curves</h2>")]

    def fact(fact_id: str) -> list[str]:
        match = re.search(rf'<tr id="fact-{fact_id}">(.*?)</tr>', facts, flags=re.S)
        assert match, fact_id
        return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", match.group(1), re.S)]

    assert fact("fps_relational")[1:4:2] == ["1.9 × 10⁴ env steps/s", "2,000 env steps/s"]
    assert fact("fps_simplicial")[3] == "1,000 env steps/s" and fact("fps_ratio")[1:4:2] == ["1.36 (1.9 / 1.4)", "2.00"]
    assert fact("grad_relational")[1:4:2] == ["35.0 ms", "40.0 ms"] and fact("grad_simplicial")[3] == "100.0 ms"
    assert fact("grad_ratio")[1:4:2] == ["2.3 (80 / 35)", "2.50"]
    assert "bench/agents.json: ms.1280.relational (device cpu, threads 2)" in fact("grad_relational")[4]
    assert fact("env_single")[1:4:2] == ["about 18,000 steps/s", "not measured"]
    assert fact("env_vector")[1:4:2] == ["–", "not measured"]
    assert fact("steps_simplicial")[1:4:2] == ["5.5 × 10⁹ (or convergence)", "8,007"]
    assert "<h3>bridge_boxworld: training win rate against environment steps</h3>" in html
    assert "<h3>boxworld: training win rate against environment steps</h3>" in html


def test_paper_schema_errors(tmp_path: Path) -> None:
    from reports.papers import load_paper

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"tables": [{"id": "t", "metric": "eval/win_rate", "rows": [{"a": [1.0, None]}]}]}))
    with pytest.raises(ValueError, match="lacks 'task'"):
        load_paper(path)
    ratio = {"id": "r", "label": "ratio", "published": 2.0, "ours": {"divide": ["x", "y"]}}
    path.write_text(yaml.safe_dump({"facts": [ratio]}))
    with pytest.raises(ValueError, match="divides by"):
        load_paper(path)
    path.write_text(yaml.safe_dump({"facts": [{"id": "f", "label": "f", "ours": {"runs": {"task": "t"}}}]}))
    with pytest.raises(ValueError, match="needs task and model"):
        load_paper(path)


def test_rankings_compare_models_only_within_one_setting(tmp_path: Path):
    """Models are ranked per task and setting (task variant and data, protocol, algorithm, profile): bAbI
    task 1 is never ranked against task 2, nor official files against generated data."""
    from reports.index_tables import rankings
    from reports.store import assign_variants, load_store

    runs = tmp_path / "runs"
    task1 = {"babi_id": 1, "data_set": "en-10k", "source": "files"}
    for model, acc, tag in (("lstm", 0.52, "a"), ("tpr_rnn", 0.999, "b"), ("mha", 1.0, "c")):
        write_run(runs, "babi", model, 0, metrics={"test/acc": acc}, task_cfg=task1, tag=tag)
    write_run(runs, "babi", "relational", 0, metrics={"test/acc": 0.90}, tag="d",
              task_cfg={**task1, "babi_id": 2})
    write_run(runs, "babi", "lstm", 0, metrics={"test/acc": 0.99}, tag="e", task_cfg={**task1, "source": "generator"})
    write_run(runs, "babi", "mlp1", 0, status="failed", error="boom", task_cfg=task1, tag="f")
    records = load_store(runs)
    assign_variants(records)
    ranked = {row["setting"]: [(e["rank"], e["model"], e["text"]) for e in row["entries"]] for row in rankings(records)}
    assert ranked == {"task 1 [cpu] (en-10k, files)": [(1, "mha", "100.0"), (2, "tpr_rnn", "99.9"),
                                                       (3, "lstm", "52.0")],
                      "task 1 [cpu] (generator)": [(1, "lstm", "99.0")],
                      "task 2 [cpu] (en-10k, files)": [(1, "relational", "90.0")]}


def test_variants_name_where_a_configuration_departs_from_the_usual_one_counting_each_configuration_once(
        tmp_path: Path):
    """Three configurations of one model on one task: hidden size 64 and lr 1e-3 are each held by two of them, so
    those are the usual values, and each configuration names only where it departs from them. The one with three
    seeds counts once: counted by run, its hidden size 32 would pass for the usual one."""
    from reports.store import assign_variants, load_store, telling_keys

    runs = tmp_path / "runs"
    settings = {"a": (32, 0.001), "b": (64, 0.001), "c": (64, 0.003)}
    for tag, (hidden_size, lr) in settings.items():
        for seed in (0, 1, 2) if tag == "a" else (0,):
            path = write_run(runs, "babi", "ll_rnn", seed, tag=tag, metrics={"test/acc": 0.5},
                             task_cfg={"babi_id": 1, "source": "files", "data_set": "en-10k"})
            config = yaml.safe_load((path / "config.yaml").read_text())
            config.setdefault("optim", {})["lr"] = lr
            config.setdefault("model", {})["hidden_size"] = hidden_size
            (path / "config.yaml").write_text(yaml.safe_dump(config))
    records = load_store(runs)
    assign_variants(records)
    names = sorted({record.variant for record in records})
    assert names == ["task 1 [cpu]", "task 1 [cpu] {model.hidden_size=32}", "task 1 [cpu] {optim.lr=0.003}"], names
    # an entry most configurations leave unset is usual unset: only the one that sets it is named by it
    assert telling_keys([{"model.operations": '["write"]'}, {}, {}]) == [["model.operations"], [], []]
    # a key added later (harness.config.NEUTRAL_ADDED_KEYS) is usual at its neutral value, however many set it
    assert telling_keys([{"task.trim_batches": "true"}, {}]) == [["task.trim_batches"], []]
    assert telling_keys([{"task.trim_batches": "true"}, {"task.trim_batches": "true"}, {}]) == \
        [["task.trim_batches"], ["task.trim_batches"], []]
    # the data fingerprint names a config only where nothing else tells it apart: MNIST and digits runs by their
    # source; two digits runs of other data files by the fingerprint alone
    mnist, digits = ({"task.source": f'"{source}"', "data.fingerprint": f'"{fp}"'} for source, fp in
                     (("mnist", "f1"), ("digits", "f2")))
    assert telling_keys([mnist, digits]) == [["task.source"], ["task.source"]]
    assert telling_keys([mnist, digits, {**digits, "data.fingerprint": '"f3"'}]) == \
        [["task.source"], ["data.fingerprint"], ["data.fingerprint"]]


def test_a_run_stating_a_key_added_later_at_its_neutral_value_is_one_configuration_with_one_from_before(
        tmp_path: Path):
    """``train.max_steps: null`` (harness.config.NEUTRAL_ADDED_KEYS) beside a run whose config predates the key: one
    configuration, named by no setting (the key's neutral value is its usual one, what every run before it did);
    a step limit is another configuration, named by it."""
    from reports.store import assign_variants, load_store

    runs = tmp_path / "runs"
    for tag, max_steps in (("a", "absent"), ("b", None), ("c", 500)):
        path = write_run(runs, "babi", "lstm", 0, tag=tag, metrics={"test/acc": 0.5},
                         task_cfg={"babi_id": 1, "source": "files", "data_set": "en-10k"})
        if max_steps != "absent":
            config = yaml.safe_load((path / "config.yaml").read_text())
            config.setdefault("train", {})["max_steps"] = max_steps
            (path / "config.yaml").write_text(yaml.safe_dump(config))
    records = sorted(load_store(runs), key=lambda record: record.run_id)
    assign_variants(records)
    assert records[0].fingerprint == records[1].fingerprint != records[2].fingerprint
    assert records[0].variant == records[1].variant == "task 1 [cpu]"
    assert records[2].variant == "task 1 [cpu] {train.max_steps=500}"


def test_relations_game_cells_report_the_held_out_object_sets(tmp_path: Path):
    """A task with held-out test sets (task.test_sets) is reported on them, not on the training object set."""
    from reports.index_tables import headline, matrix
    from reports.store import HELD_OUT, load_store
    from reports.tables import HELD_OUT_ACC

    runs = tmp_path / "runs"
    held_out = {"tasks": ["between"], "test_sets": ["hexominoes", "stripes"]}
    write_run(runs, "relations_game", "lstm", 0, task_cfg=held_out,
              metrics={"test/acc": 0.99, "test_hexominoes/acc": 0.90, "test_stripes/acc": 0.80})
    (record,) = load_store(runs)
    assert record.metric(HELD_OUT) == pytest.approx(0.85) and headline([record]) is HELD_OUT_ACC
    (row,) = [row for row in matrix([record], [])["rows"] if row["task"] == "relations_game"]
    (cell,) = [cell for cell in row["cells"] if cell["model"] == "lstm"]
    assert cell["best"]["text"] == "85.0" and cell["best"]["label"] == "held-out"


def test_verdict_table_colours_by_the_side_of_the_threshold(tmp_path: Path):
    """TPR-RNN's Table 3 gives only which tasks each ablation fails (error > 5%): a cell is green when ours falls
    on the paper's side of 5%, red when not, and the full model's run of the task is listed beside it."""
    from reports.paper_tables import compare_table
    from reports.papers import load_paper
    from reports.store import assign_variants, load_store

    runs = tmp_path / "runs"
    files = {"babi_id": 3, "data_set": "en-10k", "source": "files"}
    for babi_id, operations, error, tag in ((3, ["write"], 0.10, "a"), (1, ["write"], 0.08, "b"),
                                            (1, None, 0.001, "c"), (2, ["write", "move"], 1.0 - 0.95, "d")):
        path = write_run(runs, "babi", "tpr_rnn", 0, metrics={"test/error": error}, tag=tag,
                         task_cfg={**files, "babi_id": babi_id})
        if operations:
            config = yaml.safe_load((path / "config.yaml").read_text())
            config["model"]["operations"] = operations
            (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    records = load_store(runs)
    assign_variants(records)
    paper = load_paper(Path(build_module.__file__).parent / "papers" / "tpr_rnn.yaml")
    table = compare_table(records, next(t for t in paper.tables if t.id == "table3"))
    cells = {(row["labels"][0], row["labels"][2]): row["cells"][0] for row in table["rows"]}
    assert table["verdict_above"] == "5" and len(cells) == 60
    failed_as_in_paper = cells[(3, "write")]
    assert (failed_as_in_paper["published"], failed_as_in_paper["ours"]) == ("> 5", "10.00")
    assert (failed_as_in_paper["css"], failed_as_in_paper["diff"]) == ("match-green", "same side")
    failed_unlike_paper = cells[(1, "write")]
    assert (failed_unlike_paper["published"], failed_unlike_paper["ours"]) == ("≤ 5", "8.00")
    assert (failed_unlike_paper["css"], failed_unlike_paper["diff"]) == ("match-red", "other side")
    assert any(text.startswith("operations") and ": 0.10" in text for text in failed_unlike_paper["beside"])
    assert cells[(1, "write + move")]["css"] == "no-match"  # runs of task 1, none with these operations
    on_the_line = cells[(2, "write + move")]  # 950 of 1,000 right, stored as 1 - 0.95 = 0.0500000000000000444
    assert (on_the_line["ours"], on_the_line["css"], on_the_line["diff"]) == ("5.00", "match-green", "same side")
    assert table["summary"]["match-green"] == 2 and table["summary"]["match-red"] == 1


def test_verdict_table_cells_must_be_verdicts(tmp_path: Path):
    from reports.papers import load_paper

    path = tmp_path / "bad.yaml"
    table = {"id": "t3", "task": "babi", "metric": "test/error", "config_key": "task.babi_id", "verdict_above": 5,
             "rows": [{"babi_id": 1, "tpr_rnn": [0.5, None]}]}
    path.write_text(yaml.safe_dump({"tables": [table]}))
    with pytest.raises(ValueError, match=r"cells must be \[above\] or \[not_above\]"):
        load_paper(path)


def test_curves_are_read_plain_or_gzipped_as_the_reference_store_keeps_them(tmp_path: Path):
    """The run store writes metrics.csv, `harness publish` keeps it as metrics.csv.gz: both read as the same
    frame, the plain file first where a folder holds both; a gzip cut short makes the run unreadable, not the
    report."""
    import gzip

    from reports.store import UNREADABLE, load_store

    runs = tmp_path / "runs"
    write_run(runs, "babi", "tpr_rnn", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    packed = write_run(runs, "babi", "tpr_rnn", 1, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    text = (packed / "metrics.csv").read_bytes()
    (packed / "metrics.csv.gz").write_bytes(gzip.compress(text, mtime=0))
    (packed / "metrics.csv").unlink()
    cut = write_run(runs, "babi", "tpr_rnn", 2, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (cut / "metrics.csv.gz").write_bytes(gzip.compress((cut / "metrics.csv").read_bytes(), mtime=0)[:-20])
    (cut / "metrics.csv").unlink()
    both = write_run(runs, "babi", "tpr_rnn", 3, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (both / "metrics.csv.gz").write_bytes(b"not read")
    first, second, third, fourth = load_store(runs)
    assert second.curves is not None and second.curves.equals(first.curves) and fourth.curves.equals(first.curves)
    assert "val/acc" in second.curves.columns and second.status == "completed"
    assert third.status == UNREADABLE and third.curves is None
    assert any("metrics.csv.gz unreadable" in problem for problem in third.problems), third.problems


def test_a_killed_run_shows_as_such_with_the_progress_of_its_curves(tmp_path: Path) -> None:
    """A run whose results.json still says ``running`` but whose process on this host has ended (SIGKILL) is shown
    as killed, as ``harness runs`` shows it, and its steps come from its curves, not the 0 it recorded at its
    start."""
    import socket
    import subprocess
    import sys

    runs = tmp_path / "runs"
    killed = write_run(runs, "babi", "lstm", 0, status="running")
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    results = json.loads((killed / "results.json").read_text())
    results.update(steps=0, epochs=0, owner={"host": socket.gethostname(), "pid": int(ended.stdout)})
    (killed / "results.json").write_text(json.dumps(results))
    write_run(runs, "babi", "lstm", 1, status="running")  # run elsewhere (no owner here): cannot be checked
    out = tmp_path / "site"
    build_report(runs, out, results_dir=None)
    index = (out / "index.html").read_text()
    assert index.count("running (its process is gone: killed?)") == 1
    page = (out / "runs" / "babi-lstm-cpu-s0-a.html").read_text()
    assert "running (its process is gone: killed?)" in page
    assert "<td>40 (its curves so far) / 1 (its curves so far)</td>" in page


def test_a_supervised_run_page_says_what_stopped_it(tmp_path: Path) -> None:
    """The run page's "stopped by" row: the rule that ended the run (reports.stops.stop_rule), "–" where none is
    known (a failed run)."""
    from reports.build import _run_info
    from reports.store import load_store

    path = write_run(tmp_path, "babi", "lstm", 0, metrics={"test/acc": 0.9})
    config = yaml.safe_load((path / "config.yaml").read_text())
    config["train"].update({"max_epochs": 4, "early_stop_patience": 1})  # best at epoch 1 of 2: patience spent
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    write_run(tmp_path, "babi", "lstm", 1, status="failed", error="boom")
    info = {run.seed: _run_info(run) for run in load_store(tmp_path)}
    assert info[0]["stopped_by"] == "1 epoch without a better val/acc" and info[1]["stopped_by"] == "–"
    curriculum = next(run for run in load_store(tmp_path) if run.seed == 0)
    curriculum.config["protocol"] = {"name": "curriculum", "target": ["same"], "pretrain": ["between"]}
    assert _run_info(curriculum)["stopped_by"] == "–"  # its stages stop on their own
    capped = next(run for run in load_store(tmp_path) if run.seed == 0)  # validated at steps 20 and 40
    capped.config["train"].update({"max_time_s": 120, "early_stop_patience": None})
    capped.results["steps"] = 30  # the cap came half-way through epoch 2, whose validation followed
    assert _run_info(capped)["stopped_by"] == "2-minute cap"
    assert _run_info(capped)["epochs"] == "2 (the time cap cut the last one short: 50% of it trained)"
    command = _run_info(capped)["same_checkpoint"]  # its best checkpoint closed epoch 1: one epoch, no cap
    assert command.startswith("harness bench --task babi --model lstm --profile cpu --seed 0 -- ") and \
        command.split(" ")[-2:] == ["train.max_epochs=1", "train.max_time_s=null"], command
    assert _run_info(curriculum)["same_checkpoint"] is None and info[0]["same_checkpoint"] is None  # not capped
    assert _run_info(capped)["reproducible"] and info[0]["reproducible"]  # `harness reproduce` takes them
    assert not _run_info(curriculum)["reproducible"] and not info[1]["reproducible"]  # a curriculum; failed


def test_a_run_page_lifts_a_time_cap_in_its_reproduce_row_only_where_the_run_sets_one(tmp_path: Path) -> None:
    """The run page's "train it again" row says what `harness reproduce` trains for a run its cap did not stop: the
    same config without its time cap where it sets one, the same config where it sets none (a smoke run); the
    latter, a run of your store, into another store, as reproduce refuses to compose the very run it checks."""
    runs = tmp_path / "runs"
    uncapped = write_run(runs, "babi", "lstm", 0, metrics={"test/acc": 0.9})  # max_time_s: null
    capped = write_run(runs, "babi", "lstm", 2, metrics={"test/acc": 0.9})
    config = yaml.safe_load((capped / "config.yaml").read_text())
    config["train"].update({"max_time_s": 600, "max_epochs": 2})  # its 2 epochs ended it, not the cap
    (capped / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "site"
    build_report(runs, out, results_dir=None)

    def row(run: Path) -> str:
        page = (out / "runs" / f"{run.name}.html").read_text()
        return re.sub(r"<[^>]+>", "", re.search(r"<th>train it again</th>.*?</tr>", page).group(0))

    assert f"harness reproduce {uncapped.name} --runs-dir DIR (the same config, trained in another run store DIR" \
        in row(uncapped)
    assert f"harness reproduce {capped.name} (the same config without its time cap, then" in row(capped)


def test_a_time_cap_that_is_not_a_tenth_of_a_minute_is_said_in_seconds(tmp_path: Path) -> None:
    """A cap of 430 s (the all-tasks TPR-RNN run's) reads "430-second cap", not "7.16667-minute cap"; caps in whole
    tenths of a minute keep their minutes ("4.5-minute cap")."""
    from reports.build import _run_info
    from reports.store import load_store

    write_run(tmp_path, "babi", "lstm", 0, metrics={"test/acc": 0.9})
    capped = next(iter(load_store(tmp_path)))  # validated at steps 20 and 40
    capped.config["train"].update({"early_stop_patience": None})
    capped.results["steps"] = 30  # the cap came half-way through epoch 2, whose validation followed
    for seconds, said in ((430, "430-second cap"), (270, "4.5-minute cap"), (600, "10-minute cap")):
        capped.config["train"]["max_time_s"] = seconds
        assert _run_info(capped)["stopped_by"] == said


def test_a_status_summary_counts_a_killed_run_apart_from_running_ones(tmp_path: Path) -> None:
    """The index's '... runs in all (...)' and a matrix cell's note: a run whose process is gone is not running."""
    from reports.store import RunRecord
    from reports.tables import status_summary
    from tests.run_records import run_record

    def record(status: str, gone: bool = False) -> RunRecord:
        return run_record(path=tmp_path, rel_path="", status=status, gone=gone)

    runs = [record("running", gone=True), record("running"), record("completed")]
    assert status_summary(runs) == "1 completed, 1 killed mid-run, 1 running"
