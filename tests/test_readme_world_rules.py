"""The README's cells and world-state tables (reports/readme_cells.py, reports/readme_world.py, reports/floors.py,
reports/markdown.py, reports/babi_generator.py), each rule written out on hand-made runs held in memory:

- a cell is the mean over seeds, with the sample standard deviation once there are two; wall times are mean
  minutes with one decimal; a machine note counts distinct stacks ("1 stack of 3", "2 stacks of 2/3") and names each
  GPU once, notes joined by "; "; ``mean_of`` reads a key within a section, thousands separated;
- the Game of Life "all dead" floor reads the entry of the run's own board (interventions included), test worlds
  at the evaluation length (``stepwise.eval_steps`` before ``stepwise.steps``) and rollout worlds measured up to its
  longest horizon, each step shown once; a missing, unreadable or non-object floor file reads as no floor;
- a rollout's horizons come from the overall ``rollout/step_<h>/acc`` keys only, and a training length that is also
  a horizon is shown once; a World of Numbers setting names
  the pixels told at step 1 and after; the Updater-Extractor's size lists updater then extractor layers; a rollout
  time is whole seconds on "1 thread" or "2 threads"; the world table lists completed runs only, their training with
  its throughput;
- a Markdown table escapes '|' in cells, has one separator per column, and with ``empty=None`` is the header alone;
- the bAbI generator section is absent without its record and names the record's data set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from reports import readme_world as world
from reports.babi_generator import babi_generator_section
from reports.floors import dead_floor, load_floor
from reports.markdown import table
from reports.readme_cells import machine_note, mean_of, mean_sd, minutes
from reports.store import RunRecord
from tests.run_records import run_record


def _run(run_id: str = "r", results: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
         task: str = "babi", model: str = "lstm", status: str = "completed") -> RunRecord:
    return run_record(run_id, task=task, model=model, results=results or {}, status=status, config=config or {})


# ----- cells ------------------------------------------------------------------------------------------------------

def test_a_cell_is_the_mean_with_the_sample_standard_deviation_from_two_seeds() -> None:
    assert mean_sd([0.1, 0.3]) == "20.0 ± 14.1"  # sample sd: sqrt(((0.1-0.2)^2 + (0.3-0.2)^2) / 1) = 0.1414
    assert mean_sd([0.5]) == "50.0" and mean_sd([]) == "–"
    assert mean_sd([1.0, 2.0, 3.0], 1.0, 2) == "2.00 ± 1.00"


def test_wall_time_is_mean_minutes_with_one_decimal() -> None:
    assert minutes([_run("a", {"wall_time_s": 60}), _run("b", {"wall_time_s": 120})]) == "1.5 min"
    assert minutes([_run("a", {})]) == "–"


def test_a_machine_note_counts_each_stack_once_and_names_each_gpu_once() -> None:
    one = [_run(name, {"stack": ["a", "b", "c"]}) for name in "abc"]
    assert machine_note(one) == " (stacked: 1 stack of 3)"
    two = [_run(name, {"stack": stack}) for name, stack in (("a", ["a", "b"]), ("b", ["a", "b"]),
                                                              ("c", ["c", "d", "e"]))]
    assert machine_note(two) == " (stacked: 2 stacks of 2/3)"
    gpus = [_run("a", {"device": "cuda: Z100", "stack": ["a", "b"]}), _run("b", {"device": "cuda: A100"}),
            _run("c", {"device": "cuda: Z100"})]
    assert machine_note(gpus) == " (stacked: 1 stack of 2; GPU: A100, Z100)"
    assert machine_note([_run("a", {"device": "cpu, 2 threads"})]) == ""


def test_mean_of_reads_within_a_section_thousands_separated() -> None:
    runs = [_run("a", {"throughput": {"rate": 1000.0}, "rate": 1.0}), _run("b", {"throughput": {"rate": 1500.0}})]
    assert mean_of(runs, "rate", within="throughput") == "1,250"
    assert mean_of(runs, "steps") == "–"


# ----- the Game of Life floor ------------------------------------------------------------------------------------

BOARD = {"size": 8, "boundary": "torus", "density": 0.5, "interventions": 0}


def _life(**stepwise: Any) -> RunRecord:
    spec = {"steps": 4, "eval_steps": None, "eval_batch": 4, "horizon_batch": 2, "horizons": [10, 20], **stepwise}
    return _run("g", config={"task": {"name": "game_of_life", **BOARD}, "stepwise": spec}, task="game_of_life")


def _entry(worlds: str, boards: int, steps: int, share: dict[str, float], **board: Any) -> dict[str, Any]:
    return {"worlds": worlds, "boards": boards, "steps": steps, **{**BOARD, **board}, "dead_share": share}


ROLLOUT = {str(step): step / 100 for step in range(1, 21)}


def test_the_floor_reads_the_runs_own_worlds_up_to_its_longest_horizon_each_step_once() -> None:
    floor = {"held_out": [_entry("test", 4, 4, {"4": 0.5}), _entry("rollout", 2, 20, ROLLOUT)]}
    assert dead_floor(_life(), floor) == \
        "test, step 4: 50.0; rollout 1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0, 10: 10.0, 20: 20.0"
    short = {"held_out": [_entry("test", 4, 4, {"4": 0.5}), _entry("rollout", 2, 10, ROLLOUT)]}
    assert dead_floor(_life(), short).startswith("not measured for these worlds: ")


def test_the_floor_of_another_boards_interventions_is_not_this_runs() -> None:
    floor = {"held_out": [_entry("test", 4, 4, {"4": 0.5}, interventions=2), _entry("rollout", 2, 20, ROLLOUT)]}
    assert dead_floor(_life(), floor).startswith("not measured for these worlds: ")


def test_the_floors_test_step_is_the_evaluation_length_where_one_is_set() -> None:
    floor = {"held_out": [_entry("test", 4, 8, {"4": 0.5, "8": 0.75}), _entry("rollout", 2, 20, ROLLOUT)]}
    assert dead_floor(_life(eval_steps=8), floor).startswith("test, step 8: 75.0; rollout 1: 1.0")


def test_an_unreadable_or_odd_floor_file_is_no_floor(tmp_path: Path) -> None:
    (tmp_path / "generators").mkdir()
    path = tmp_path / "generators" / "game_of_life.json"
    assert load_floor(tmp_path) == {}
    path.write_text("{not json")
    assert load_floor(tmp_path) == {}
    path.write_text(json.dumps([1, 2]))
    assert load_floor(tmp_path) == {}
    path.write_text(json.dumps({"held_out": []}))
    assert load_floor(tmp_path) == {"held_out": []}


# ----- the world-state tables ------------------------------------------------------------------------------------

def test_rollout_horizons_come_from_the_overall_keys_only() -> None:
    run = _run("w", {"metrics": {"rollout/step_10/acc": 0.5, "rollout/step_10/recall/acc": 0.25,
                                 "rollout/step_30/recall/acc": 0.75}})
    assert world._rollout(run) == "10: 50.0"
    assert world._rollout(run, "recall") == "10: 25.0"


def test_a_training_length_that_is_also_a_horizon_is_shown_once_among_the_horizons() -> None:
    run = _run("w", {"metrics": {"rollout/step_10/acc": 0.5, "rollout/step_100/acc": 0.4}},
               {"stepwise": {"steps": 10, "horizons": [10, 100]}}, task="game_of_life")
    run.rollout = pd.DataFrame({"step": [1, 2, 10], "acc": [0.9, 0.8, 0.5]})
    assert world._world_rollout(run) == "1: 90.0, 2: 80.0, 10: 50.0, 100: 40.0"
    run.config["stepwise"]["steps"] = 2
    assert world._world_rollout(run) == "1: 90.0, 2: 80.0, 10: 50.0, 100: 40.0"


def test_a_world_of_numbers_setting_and_an_updater_extractors_size() -> None:
    config = {"task": {"n": 10, "source": "mnist", "first_instructions": 7, "instructions": 3, "queries": 5},
              "model": {"d_model": 64, "tokens": 8, "updater_layers": 2, "extractor_layers": 1, "ff_size": 128}}
    run = _run("n", config=config, task="world_of_numbers", model="updater_extractor")
    assert world._world_setting(run) == "10 digits (mnist), 0..7 pixels told at step 1, 0..3 after, 5 asked"
    assert world._model_size(run) == "updater_extractor (width 64, 8 tokens, 2 + 1 layers, feed-forward 128)"


def test_a_rollout_time_is_whole_seconds_on_its_threads() -> None:
    rollout = {"seconds": 12.6, "longest": 10000, "worlds": 16}

    def took(threads: int | None) -> str:
        return world._rollout_time(_run("t", {"rollout": rollout}, {"stepwise": {"threads": threads}}))

    assert took(1) == "10,000 steps x 16 worlds in 13 s (1 thread)"
    assert took(2) == "10,000 steps x 16 worlds in 13 s (2 threads)"
    assert took(None) == "10,000 steps x 16 worlds in 13 s"


def test_the_world_table_lists_completed_runs_with_their_training_throughput() -> None:
    config = {"task": {"n": 10, "source": "mnist", "first_instructions": 7, "instructions": 3, "queries": 5},
              "stepwise": {"steps": 5, "batch_size": 4, "bptt": True, "horizons": []}}
    done = _run("done-run", {"metrics": {"test/acc": 0.5}, "steps": 10,
                             "throughput": {"train/world_steps_per_s": 1234.4}}, config, task="world_of_numbers")
    failed = _run("failed-run", {"steps": 10}, config, task="world_of_numbers", status="failed")
    assert world._world_training(done) == "10 cycles of 4 worlds x 5 steps, full BPTT, 1,234 world-steps/s"
    text = "\n".join(world.world_state_section([done, failed], [], Path("/nonexistent")))
    assert "`done-run`" in text and "`failed-run`" not in text


# ----- Markdown and the bAbI generator section ---------------------------------------------------------------------

def test_a_markdown_table_escapes_pipes_and_has_one_separator_per_column() -> None:
    assert table(["a", "b"], [["x|y", "z"]]) == ["| a | b |", "|---|---|", "| x\\|y | z |"]
    assert table(["a", "b"], []) == ["_No reference run yet._"]
    assert table(["a", "b"], [], empty=None) == ["| a | b |", "|---|---|"]


def test_the_babi_generator_section_is_absent_without_its_record_and_names_its_data_set(tmp_path: Path) -> None:
    assert babi_generator_section(tmp_path) == []
    (tmp_path / "generators").mkdir()
    record = {"data_set": "en-demo", "command": "python -m tasks.babi.compare --demo", "tasks": {}}
    (tmp_path / "generators" / "babi.json").write_text(json.dumps(record))
    lines = babi_generator_section(tmp_path)
    assert lines[0] == "### bAbI: our generator beside the official files"
    assert "the official en-demo files" in lines[2] and "(`python -m tasks.babi.compare --demo`;" in lines[2]


def test_a_curriculums_reached_length_is_its_last_recorded_one() -> None:
    run = _run("c", {"steps": 3}, {"stepwise": {"steps": 5, "batch_size": 2, "bptt": False,
                                                "curriculum": {"enabled": True, "start": 2, "threshold": 0.9}}})
    run.curves = pd.DataFrame({"trajectory_length": [2.0, None]})
    assert world._world_training(run, gradient=False) == \
        "3 cycles of 2 worlds x 2 to 5 steps (curriculum at 90% training accuracy; reached 2)"
