"""What the report's run pages and index say (reports/build.py and reports/templates/), each rule on a hand-made run:

- a run page's attempts: an attempt left "running" before a later one was killed, the last one keeps its status; the
  commit is cut to 12 characters; the tree reads dirty, clean or nothing (flag unknown); the machine lists the
  recorded fields in their fixed order; no attempt list counts one attempt; the data files are listed by name;
- the summary: the dirty flag in words (unknown when absent), throughput and versions by name, the analysis JSON with
  sorted keys; a stepwise run's trajectory names its optimiser-step rhythm and a curriculum only when enabled;
  a picture's caption names its step with a thousands separator;
- the page escapes what a run wrote (config, error) and shows every row of its summary (seed, protocol, store,
  data file digests, its stack, how to train it again only when ``harness reproduce`` takes it, attempts' status);
  a run page's links climb out of ``runs/``;
- the index: the stores read, with their paths and their own run counts, "1 run" in the singular, the no-runs line
  only without runs, the runs table's columns (steps and wall time apart), links to the run pages;
- the Game of Life floor is read from ``results/`` under the files root, and only a Game of Life page has its row;
  a reproduce check is listed but left out of the matrix; a predictions split row shows examples, wrong answers and
  both accuracies, a wrong answer's story escaped;
- a paper table: published, ours (linked to its run) and ours minus published, coloured green within the tolerance,
  amber within 3x, red beyond, each colour counted in the table's line; a figure list titles its figures only when
  asked and says when there are none;
- the command line: ``--results-dir ''`` (argparse's ``.``) reads no reference store, ``--jobs 0`` is refused,
  the summary line counts index, paper and run pages apart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reports import build
from reports.papers import load_paper
from reports.store import REFERENCE, YOURS, RunRecord, assign_variants
from tests.run_records import run_record


def _run(run_id: str = "babi-lstm-cpu-s0-a", *, results: dict[str, Any] | None = None,
         config: dict[str, Any] | None = None, task: str = "babi", model: str = "lstm", **fields: Any) -> RunRecord:
    base = {"seed": 3, "status": "completed", "steps": 40, "epochs": 2, "wall_time_s": 12.5,
            "finished_at": "2026-01-01T00:00:00Z"}
    cfg = {"seed": 3, "profile": "cpu", "task": {"name": task}, "model": {"name": model},
           "protocol": {"name": "curriculum"}}
    return run_record(run_id, task=task, model=model, path=Path("/nonexistent") / run_id,
                      rel_path=f"{task}/{model}/{run_id}", results={**base, **(results or {})},
                      config=config if config is not None else cfg, page=f"runs/{run_id}.html", **fields)


def _page(run: RunRecord, floor: dict[str, Any] | None = None) -> str:
    return build._run_page(build.environment(), [], run, floor or {})


def _row(html: str, header: str) -> str:
    """The cell beside a run page's summary header."""
    found = re.search(r"<tr><th>" + re.escape(header) + r"</th><td[^>]*>(.*?)</td></tr>", html, flags=re.S)
    assert found, f"no row {header!r}"
    return found.group(1)


# ----- attempts and provenance ----------------------------------------------------------------------------------

def test_attempts_killed_before_a_later_one_read_interrupted_and_the_last_keeps_its_status() -> None:
    attempts = [
        {"status": "running", "started_at": "t0", "finished_at": None, "git": {"commit": "0123456789abcdef0123"},
         "machine": {"gpu": "H100", "processor": "x86_64", "cpus": 2, "torch_threads": 1}},
        {"status": "running", "started_at": "t1", "git": {"commit": "fedcba9876543210", "dirty": True},
         "machine": {"cpu_id": "Xeon"}},
    ]
    rows = build._provenance({"attempts": attempts})["attempts"]
    assert (rows[0]["status"], rows[0]["finished"]) == ("interrupted", "killed (no end stored)")
    assert (rows[1]["status"], rows[1]["finished"]) == ("running", "–")
    assert rows[0]["commit"] == "0123456789ab" and rows[1]["commit"] == "fedcba987654"
    assert rows[0]["machine"] == "x86_64, 2 CPUs, 1 torch thread, H100" and rows[1]["machine"] == "Xeon"
    assert [row["dirty"] for row in rows] == ["", "dirty"]
    clean = build._provenance({"attempts": [{"status": "completed", "git": {"dirty": False}}]})["attempts"][0]
    assert clean["dirty"] == "clean" and clean["commit"] == "unknown"


def test_the_attempt_count_without_records_and_the_data_files_by_name() -> None:
    assert build._provenance({})["attempt_count"] == 1
    assert build._provenance({"attempts": 4})["attempt_count"] == 4
    data = {"fingerprint": "f00", "files": {"b.txt": "22", "a.txt": "11", "c.txt": "33"}}
    shown = build._provenance({"data": data})
    assert shown["data_fingerprint"] == "f00"
    assert shown["data_files"] == [{"name": "a.txt", "digest": "11"}, {"name": "b.txt", "digest": "22"},
                                   {"name": "c.txt", "digest": "33"}]


def test_the_dirty_flag_and_throughput_in_words() -> None:
    unknown = build._run_info(_run(results={"git": {"commit": "abc"}}))
    assert unknown["dirty"] == "dirty flag unknown"
    assert build._run_info(_run(results={"git": {"dirty": False}}))["dirty"] == "clean tree"
    assert build._run_info(_run(results={"git": {"dirty": True}}))["dirty"] == "dirty tree"
    info = build._run_info(_run(results={"throughput": {"z/rate": 2.0, "a/rate": 1.0}}))
    assert info["throughput"] == "a/rate = 1.0, z/rate = 2.0"


# ----- stepwise summary and pictures ---------------------------------------------------------------------------

def _stepwise(stepwise: dict[str, Any], results: dict[str, Any] | None = None) -> dict[str, Any]:
    run = _run("wn", task="world_of_numbers", config={"stepwise": stepwise}, results=results)
    info = build._stepwise_info(run, {})
    assert info is not None
    return info


def test_a_stepwise_trajectory_names_its_optimiser_rhythm_and_an_enabled_curriculum_only() -> None:
    assert _stepwise({"steps": 5, "update_freq": 1})["trajectory"] == \
        "T = 5, stop-gradient between steps, an optimiser step at every step"
    assert _stepwise({"steps": 5, "update_freq": 3})["trajectory"] == \
        "T = 5, stop-gradient between steps, an optimiser step every 3 steps"
    assert _stepwise({"steps": 5, "bptt": True, "curriculum": {"enabled": False, "start": 2}})["trajectory"] == \
        "T = 5, backpropagation through the whole trajectory"
    assert _stepwise({"steps": 5, "bptt": True, "curriculum": {"enabled": True, "start": 2}})["trajectory"] == \
        "T = 5, backpropagation through the whole trajectory; curriculum from T = 2"


def test_a_boolean_is_no_throughput() -> None:
    assert _stepwise({"steps": 5}, {"throughput": {"train/world_steps_per_s": True}})["throughput"] == "–"
    assert _stepwise({"steps": 5}, {"throughput": {"train/world_steps_per_s": 1234.0}})["throughput"] == \
        "1,234 world-steps/s (median over validation windows)"


def test_a_pictures_caption_names_its_step_with_a_thousands_separator(tmp_path: Path) -> None:
    (tmp_path / "pictures").mkdir()
    (tmp_path / "pictures" / "step_12000.png").write_bytes(b"\x89PNG")
    run = _run(config={"stepwise": {}}, pictures=["pictures/step_12000.png", "pictures/step_5.png"])
    run.path = tmp_path
    items = build._picture_items(run)
    assert [item["caption"].split(":")[0] for item in items] == ["step 12,000"]
    assert items[0]["src"] == "data:image/png;base64,iVBORw=="
    assert len(run.problems) == 1 and run.problems[0].startswith("pictures/step_5.png unreadable: ")


# ----- the run page ---------------------------------------------------------------------------------------------

def test_a_run_page_shows_its_summary_rows_and_escapes_what_the_run_wrote() -> None:
    run = _run(results={"error": "boom <b>bold</b> & more", "versions": {"torch": "2.1", "numpy": "1.0"},
                        "data": {"files": {"qa1.txt": "d1g3st"}},
                        "attempts": [{"status": "failed", "started_at": "s0"}]},
               config_text="task: {name: '<script>x</script>'}\n", origin=REFERENCE)
    html = _page(run)
    assert _row(html, "seed") == "3"
    assert _row(html, "protocol") == "curriculum"
    assert "a shipped reference run, results/" in _row(html, "store")
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "boom &lt;b&gt;bold&lt;/b&gt; &amp; more" in html
    assert "<code>qa1.txt</code> d1g3st" in _row(html, "data fingerprint")
    assert '<td class="status-failed">failed</td>' in html
    assert html.index("<td>numpy</td>") < html.index("<td>torch</td>")
    assert '<a href="../index.html">Index</a>' in html
    yours = _page(_run(origin=YOURS))
    assert "your run store" in _row(yours, "store") and "a shipped reference run" not in _row(yours, "store")


def test_a_stack_member_and_a_run_reproduce_takes_say_so_on_their_page() -> None:
    members = ["babi-lstm-cpu-s0-a", "babi-lstm-cpu-s1-b"]
    stacked = _page(_run(results={"stack": members}))
    assert "one of 2 seeds trained together" in _row(stacked, "trained in a stack")
    assert "<tr><th>trained in a stack</th>" not in _page(_run())
    config = {"seed": 0, "task": {"name": "babi"}, "model": {"name": "lstm"}}
    single = _run(config=config, origin=REFERENCE)
    assert _row(_page(single), "train it again").startswith("<code>harness reproduce babi-lstm-cpu-s0-a</code>")
    yours = _run(config=config)  # no cap to lift: its command composes this very run, which reproduce refuses
    assert _row(_page(yours), "train it again").startswith("<code>harness reproduce babi-lstm-cpu-s0-a --runs-dir DIR")
    assert "<tr><th>train it again</th>" not in _page(_run())  # a curriculum run: reproduce refuses it


def test_the_analysis_is_shown_with_sorted_keys() -> None:
    html = _page(_run(results={"analysis": {"zeta": 1, "alpha": 2}}))
    assert html.index("&#34;alpha&#34;") < html.index("&#34;zeta&#34;")


def test_the_game_of_life_floor_is_read_from_results_under_the_files_root(tmp_path: Path) -> None:
    board = {"size": 8, "boundary": "torus", "density": 0.5, "interventions": 0}
    config = {"task": {"name": "game_of_life", **board}, "model": {"name": "m"},
              "stepwise": {"steps": 5, "eval_batch": 4, "horizon_batch": 2, "horizons": [10]}}
    floor = {"held_out": [{"worlds": "test", "boards": 4, "steps": 5, **board, "dead_share": {"5": 0.75}},
                          {"worlds": "rollout", "boards": 2, "steps": 10, **board, "dead_share": {"10": 0.5}}]}
    (tmp_path / "results" / "generators").mkdir(parents=True)
    (tmp_path / "results" / "generators" / "game_of_life.json").write_text(json.dumps(floor))
    run = _run("gol", task="game_of_life", config=config)
    pages = build._render_all([run], [], [{"path": "r", "origin": YOURS, "label": "your run store", "exists": True}],
                              files_root=tmp_path)
    assert "test, step 5: 75.0; rollout 10: 50.0" in pages["runs/gol.html"]


# ----- the index -------------------------------------------------------------------------------------------------

def _stores(*exists: bool) -> list[dict[str, Any]]:
    sources = [("/ref", REFERENCE, "the reference store"), ("/mine", YOURS, "your run store")]
    return [{"path": path, "origin": origin, "label": label, "exists": there}
            for (path, origin, label), there in zip(sources, exists, strict=True)]


def test_the_index_counts_each_stores_runs_and_links_every_run_page() -> None:
    runs = [_run("babi-lstm-cpu-s0-a", origin=REFERENCE, results={"steps": 1234, "wall_time_s": 98.5}),
            _run("babi-lstm-cpu-s1-b", origin=REFERENCE), _run("babi-lstm-cpu-s2-c", origin=YOURS)]
    html = build._render_all(runs, [], _stores(True, True))["index.html"]
    assert "Built from the reference store <code>/ref</code> (2 runs) and your run store <code>/mine</code> " \
           "(1 run): 3 runs in all" in html
    assert 'class="error"' not in html
    assert '<a href="runs/babi-lstm-cpu-s0-a.html">babi-lstm-cpu-s0-a</a>' in html
    header = re.search(r"<tr><th>run</th>.*?</tr>", html).group(0)  # type: ignore[union-attr]
    assert re.findall(r"<th[^>]*>([^<]*)</th>", header)[-4:] == ["test/acc (%)", "steps", "wall time (s)",
                                                                  "finished"]
    row = re.search(r"<tr><td><a href=\"runs/babi-lstm-cpu-s0-a.html\">.*?</tr>", html).group(0)  # type: ignore
    assert '<td class="num">1,234</td><td class="num">98</td>' in row
    one = build._render_all(runs[2:], [], _stores(False, True))["index.html"]
    assert ": 1 run in all" in one


def test_the_no_runs_line_names_each_store_and_shows_only_without_runs() -> None:
    assert build._no_runs_message(_stores(False, True)) == \
        "No runs: the reference store /ref does not exist; your run store /mine holds no runs yet."
    assert build._no_runs_message([]) == "No runs: no store was given."
    empty = build._render_all([], [], _stores(False, True))["index.html"]
    assert '<p class="error">No runs: the reference store /ref does not exist' in empty


# ----- the command line -----------------------------------------------------------------------------------------

def test_an_empty_results_dir_reads_no_reference_store() -> None:
    assert build._results_dir(Path("")) == (None, False)
    assert build._results_dir(Path(".")) == (None, False)
    assert build._results_dir(None) == (build.RESULTS_DIR, False)
    assert build._results_dir(Path("elsewhere")) == (Path("elsewhere"), True)


def test_jobs_below_one_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        build.main(["--jobs", "0", "--runs-dir", str(tmp_path / "none"), "--results-dir", "",
                    "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2 and "--jobs must be at least 1, got 0" in capsys.readouterr().err


def test_the_summary_line_counts_the_index_paper_and_run_pages_apart(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    run = runs / "babi" / "lstm" / "babi-lstm-cpu-s0-a"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"run_id": run.name, "task": "babi", "model": "lstm",
                                                  "status": "completed", "seed": 0}))
    papers = tmp_path / "papers"
    papers.mkdir()
    build.report(runs, tmp_path / "out", results_dir=Path(""), jobs=1, papers_dir=papers, files_root=tmp_path,
                 keep_figures=False)
    printed = capsys.readouterr().out
    assert f"wrote 2 pages in {tmp_path / 'out'}: the index, 0 paper pages and 1 run pages" in printed


def test_a_reproduce_check_is_listed_but_never_compared_again() -> None:
    original = _run("babi-lstm-cpu-s0-a", results={"metrics": {"test/acc": 0.5}},
                    config={"seed": 0, "task": {"name": "babi"}, "model": {"name": "lstm"}})
    check = _run("babi-lstm-cpu-s0-b", results={"metrics": {"test/acc": 0.9}, "reproduces": original.run_id},
                 config=original.config)
    html = build._render_all([original, check], [], _stores(False, True))["index.html"]
    matrix = html[html.index('<table class="matrix">'):html.index("</table>")]
    assert "50.0%" in matrix and "90.0" not in matrix
    assert '<a href="runs/babi-lstm-cpu-s0-b.html">' in html  # still listed among the runs


def test_only_a_game_of_life_page_has_the_all_dead_row() -> None:
    config = {"task": {"name": "world_of_numbers"}, "model": {"name": "m"}, "stepwise": {"steps": 5}}
    html = _page(_run("wn", task="world_of_numbers", config=config))
    assert _row(html, "training trajectory") == "T = 5"
    assert '"all dead"' not in html


def test_a_figure_list_titles_its_figures_only_when_asked_and_says_when_there_are_none() -> None:
    macro = build.environment().from_string(
        '{% from "figures.html" import figure_list %}{{ figure_list(figures, "nothing here", titled=titled) }}')
    figures = build._markup_figures([{"title": "Curve A", "svg": "<svg id='a'></svg>", "caption": "first"}])
    titled = macro.render(figures=figures, titled=True)
    assert "<h3>Curve A</h3>" in titled and "<svg id='a'></svg>" in titled
    assert "<figcaption>first</figcaption>" in titled
    assert "Curve A" not in macro.render(figures=figures, titled=False)
    assert '<p class="empty">nothing here</p>' in macro.render(figures=[], titled=True)


def test_a_predictions_split_row_has_examples_wrong_and_both_accuracies(tmp_path: Path) -> None:
    folder = tmp_path / "predictions"
    folder.mkdir()
    summary = {"test": {"examples": 1200, "wrong": 30, "acc": 0.975, "reported_acc": 0.975}}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "wrong.json").write_text(json.dumps([{"split": "test", "example": 7, "story": "Mary went <home>.",
                                                    "question": "Where?", "answer": "home", "said": "garden"}]))
    run = _run()
    run.path = tmp_path
    html = _page(run)
    assert "<tr><td>test</td><td class=\"num\">1,200</td><td class=\"num\">30</td><td class=\"num\">97.5</td>" \
           "<td class=\"num\">97.5</td><td>yes</td></tr>" in html
    assert "<td>test #7</td><td><pre class=\"small\">Mary went &lt;home&gt;.</pre></td><td>Where?</td>" \
           "<td>home</td><td>garden</td>" in html


def test_a_paper_table_shows_published_ours_and_the_difference_and_counts_each_colour(tmp_path: Path) -> None:
    """Published error 1.0 with a tolerance of 1 point: ours 1.05 is green, 3.0 and 3.5 amber (within 3x), 10.0
    red; a row without a run is counted apart. The difference is ours minus published."""
    table = {"id": "t1", "title": "Errors", "task": "babi", "metric": "test/error", "config_key": "task.babi_id",
             "tolerance": 1.0, "rows": [{"babi_id": babi_id, "tpr_rnn": [1.0, None]} for babi_id in range(1, 6)]}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump({"title": "Tiny", "citation": "A 2020", "tables": [table]}))
    paper = load_paper(tmp_path / "tiny.yaml")
    runs = [_run(f"r{babi_id}", task="babi", model="tpr_rnn",
                 results={"seed": 0, "profile": "cpu", "metrics": {"test/error": error}},
                 config={"seed": 0, "profile": "cpu", "task": {"name": "babi", "babi_id": babi_id},
                         "model": {"name": "tpr_rnn"}})
            for babi_id, error in ((1, 0.0105), (2, 0.03), (3, 0.035), (4, 0.10))]
    assign_variants(runs)
    html = build._render_all(runs, [paper], _stores(False, True))[paper.page]
    assert "Cells: 1 green, 2 amber, 1 red, 0 with runs that are not like for like, 1 without runs." in html
    rows = {found.group(1): re.findall(r"<td([^>]*)>(.*?)</td>", found.group(2), flags=re.S)
            for found in re.finditer(r"<tr><td>(\d)</td><td><code>test/error</code></td>(.*?)</tr>", html, re.S)}
    assert [rows[key][2] for key in "12345"] == [(' class="num match-green"', "+0.1"),
                                                 (' class="num match-amber"', "+2.0"),
                                                 (' class="num match-amber"', "+2.5"),
                                                 (' class="num match-red"', "+9.0"), (' class="num no-run"', "")]
    assert rows["4"][1][1].startswith('<a href="runs/r4.html">10.0</a>')
