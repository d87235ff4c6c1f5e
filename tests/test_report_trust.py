"""The report a reader can trust: the reference store beside the user's, stale runs marked and never matched,
the task x model matrix from the registry, and a build that survives any odd run."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.provenance import source_digest
from harness.registry import REGISTRY
from reports.build import build_report
from tests.test_report import write_run

ROOT = Path(__file__).resolve().parents[1]
SAME = {"tasks": ["same"], "test_sets": ["hexominoes", "stripes"], "train_set": "pentominoes", "n_train": 250000}


def _with_code(path: Path, files: dict[str, str]) -> None:
    results = json.loads((path / "results.json").read_text())
    results.update(schema_version=2, code={"fingerprint": "x", "files": files},
                   attempts=[{"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:10:00Z",
                              "status": "completed", "git": {"commit": "0123456789abcdef", "dirty": False},
                              "machine": {"processor": "Test CPU", "cpus": 2}, "code": "x"}],
                   data={"fingerprint": "d41d8", "files": {"babi/en-10k/qa1_train.txt": "abcd"}})
    (path / "results.json").write_text(json.dumps(results))


def test_reference_and_user_stores_side_by_side_and_stale_runs_never_match(tmp_path):
    reference, yours = tmp_path / "results", tmp_path / "runs"
    fresh = {"models/relational/predinet.py": source_digest(ROOT / "models/relational/predinet.py")}
    ref = write_run(reference, "relations_game", "predinet", 0, task_cfg=SAME,
                    metrics={"test/acc": 1.0, "test_hexominoes/acc": 1.0, "test_stripes/acc": 1.0})
    _with_code(ref, fresh)
    old = write_run(yours, "relations_game", "predinet", 1, task_cfg=SAME,
                    metrics={"test/acc": 0.5, "test_hexominoes/acc": 0.5, "test_stripes/acc": 0.5})
    _with_code(old, {"models/relational/predinet.py": "0000000000000000"})  # code changed since: stale
    out = tmp_path / "site"
    build_report(yours, out, files_root=tmp_path, results_dir=reference)
    index = (out / "index.html").read_text()
    assert 'class="origin-reference">reference' in index and 'class="origin-yours">yours' in index
    assert '<span class="stale">stale</span>' in index
    assert (out / "runs" / f"reference-{ref.name}.html").exists() and (out / "runs" / f"{old.name}.html").exists()
    paper = (out / "predinet.html").read_text()
    # the stale run (50%) is listed beside the cell, the fresh reference run alone makes the number (100%)
    assert "100.0</a>" in paper and "(n=1" in paper and "stale code: 50.0 (n=1, yours)" in paper
    page = (out / "runs" / f"{old.name}.html").read_text()
    assert "stale</span>, changed since: models/relational/predinet.py" in page
    assert "Test CPU, 2" in page and "0123456789ab" in page and "babi/en-10k/qa1_train.txt" in page


def test_matrix_comes_from_the_registry_with_reasons(tmp_path):
    out = tmp_path / "site"
    build_report(tmp_path / "none", out, files_root=tmp_path)
    index = (out / "index.html").read_text()
    matrix = index[index.index('class="matrix"'):index.index("</table>", index.index('class="matrix"'))]
    for task in REGISTRY.tasks:
        assert f"<th>{task}</th>" in matrix
    reason = REGISTRY.compatibility(REGISTRY.task("cartpole"), REGISTRY.model("tpr_rnn")).reason
    assert f'<td class="incompatible">{reason}</td>' in matrix
    runnable = sum(REGISTRY.compatibility(t, m).ok for t in REGISTRY.tasks.values() for m in REGISTRY.models.values())
    assert matrix.count(">no run yet<") == runnable


def test_one_odd_run_never_stops_the_build(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "babi", "lstm", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": float("nan")})
    dollar = write_run(runs, "relations_game", "predinet", 0, tag="c", task_cfg={"tasks": ["same"]},
                       metrics={"$1_stage$/test/acc": 0.9, "test/acc": 0.8},
                       protocol={"name": "curriculum", "target": ["$x$"], "pretrain": ["between"]})
    for stage in ("$1_scratch", "2_pré-train_ü", "3_$\\undefinedcommand{a}$", "4_a$b$c$"):
        folder = dollar / "stages" / stage
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"status": "completed", "tasks": ["same"], "steps": 20,
                                                         "metrics": {"test/acc": 0.9}}))
        (folder / "metrics.csv").write_text("step,epoch,val/acc,train/loss\n10,0,0.5,1.0\n20,1,0.9,0.5\n")
    truncated = write_run(runs, "babi", "tpr_rnn", 0, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (truncated / "results.json").write_text('{"status": "compl')
    as_list = write_run(runs, "babi", "tpr_rnn", 1, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (as_list / "results.json").write_text("[1, 2]")
    no_config = write_run(runs, "babi", "tpr_rnn", 2, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (no_config / "config.yaml").unlink()
    odd_yaml = write_run(runs, "babi", "tpr_rnn", 3, task_cfg={"babi_id": 1}, metrics={"test/acc": 1.0})
    (odd_yaml / "config.yaml").write_text(yaml.safe_dump(["not", "a", "mapping"]))
    schema2 = write_run(runs, "boxworld", "relational", 0, tag="ü$", metrics={"eval/win_rate": 0.5})
    _with_code(schema2, {"harness/nope.py": "0"})
    bad_curve = write_run(runs, "babi", "lstm", 5, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.4})
    (bad_curve / "metrics.csv").write_bytes(b"\xff\xfe\x00garbage")
    out = tmp_path / "site"
    pages = build_report(runs, out, files_root=tmp_path)
    assert len(pages) >= 3 + 9 and all(page.exists() for page in pages)
    page = (out / "runs" / f"{dollar.name}.html").read_text()
    assert "$1_scratch" in page and "2_pré-train_ü" in page and "4_a$b$c$" in page
    for path in pages:  # every page rendered in full: no stand-in error page
        text = path.read_text()
        assert text.strip().endswith("</html>") and "could not be rendered" not in text, path.name


def test_a_long_list_of_unlike_runs_folds_into_one_line(tmp_path):
    """More than two other configurations beside a cell fold into one <details> line; two or fewer stay open."""
    runs = tmp_path / "runs"
    write_run(runs, "relations_game", "predinet", 0, task_cfg=SAME,
              metrics={"test/acc": 1.0, "test_hexominoes/acc": 1.0, "test_stripes/acc": 1.0})
    for tag, n_train in (("b", 1000), ("c", 2000), ("d", 3000)):
        write_run(runs, "relations_game", "predinet", 0, tag=tag, task_cfg={**SAME, "n_train": n_train},
                  metrics={"test/acc": 0.5, "test_hexominoes/acc": 0.5, "test_stripes/acc": 0.5})
    out = tmp_path / "site"
    build_report(runs, out, files_root=tmp_path)
    paper = (out / "predinet.html").read_text()
    assert '<details class="beside"><summary>beside: 3 other configurations</summary>' in paper
    assert "n_train 1000 ≠ 250000: 50.0 (n=1, yours)<br>" in paper
    assert '<span class="beside">beside: n_train' not in paper


def test_a_diverged_seed_of_the_cells_configuration_is_counted_outside_its_mean(tmp_path):
    """A seed that ended on a non-finite loss has no test metric: the cell's mean is over the completed seeds and
    its note says how many more of the same configuration diverged."""
    runs = tmp_path / "runs"
    write_run(runs, "relations_game", "predinet", 0, task_cfg=SAME,
              metrics={"test/acc": 0.9, "test_hexominoes/acc": 0.9, "test_stripes/acc": 0.9})
    write_run(runs, "relations_game", "predinet", 1, task_cfg=SAME, status="diverged", error="non-finite loss")
    out = tmp_path / "site"
    build_report(runs, out, files_root=tmp_path)
    paper = (out / "predinet.html").read_text()
    assert "(n=1; 1 more diverged)" in paper
