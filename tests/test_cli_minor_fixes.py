"""Small rough spots of the command line: a retest's hint names only data the run's task really tests on, and a
retest scores a new split as the run's own test pass did; publishing part of a stack, negative seeds, a learning
rate or betas no optimiser can use, LSTM recall's first recall step past the sequence: one line each, exit code 2,
nothing written; one ``fmt_count`` for the report; a help text for every option. Seconds each (smoke profile)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from harness import config as config_lib
from harness.cli import build_parser, main
from harness.publish import RESULTS_DIR, publish

RELATIONS = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.max_epochs=1"]
RECALL = ["validate", "--task", "lstm_recall", "--model", "stream_lstm", "--profile", "smoke"]  # task.length 4


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _stored(task: str, model: str, overrides: list[str]) -> dict:
    """A run's stored config as the launcher writes it (its data source resolved), without training."""
    from harness.runners.build import prepare_task

    composed = config_lib.compose(task, model, "smoke", overrides)
    prepare_task(composed)
    return OmegaConf.to_container(composed.cfg)  # type: ignore[return-value]


# 1. a retest's hint: not an object set the run's task drops -------------------------------------------------------
def test_a_retest_hint_leaves_out_data_the_task_drops_for_the_run(env):
    from harness.runners.retest import other_test_data

    reported = {"train", "val", "test", "test_hexominoes"}
    colour_shape = _stored("relations_game", "mlp1", ["task.tasks=[colour_shape]"])  # stripes: one shape
    assert colour_shape["task"]["test_sets"] == ["hexominoes", "stripes"]
    assert other_test_data(colour_shape, reported) is None
    one_set = _stored("relations_game", "mlp1", ["task.tasks=[colour_shape]", "task.test_sets=[hexominoes]"])
    assert other_test_data(one_set, reported, {"test_sets": ["stripes"]}) is None  # this retest tried it
    same = _stored("relations_game", "mlp1", ["task.test_sets=[hexominoes]"])  # `same` draws on stripes
    assert other_test_data(same, reported) == "task.test_sets=[stripes]"


# 1, 2. a retest scores as the run's own test pass; its refusal names what the task dropped ------------------------
def test_a_retest_scores_a_new_split_as_the_runs_own_test_pass_did(env, tmp_path, capsys):
    from harness.runners.predictions import predict_run
    from harness.runners.retest import retest

    retested, attached = tmp_path / "retested", tmp_path / "attached"
    sized = [*RELATIONS, "task.n_test=200"]  # 200 examples a split, of which the smoke profile tests 2 x 64
    assert main([*sized, "task.test_sets=[hexominoes]", "--runs-dir", str(retested)]) == 0
    assert main([*sized, "task.test_sets=[hexominoes,stripes]", "--runs-dir", str(attached)]) == 0
    (run,) = retested.glob("*/*/*/results.json")
    (reference,) = attached.glob("*/*/*/results.json")
    capsys.readouterr()
    added = retest(run.parent.name, ["task.test_sets=[stripes]"], retested)
    assert "test_stripes 128 of 200 examples" in capsys.readouterr().out
    expected = json.loads(reference.read_text())["metrics"]  # the split attached from the start
    assert added["test_stripes/acc"] == pytest.approx(expected["test_stripes/acc"], abs=1e-6)
    assert added["test_stripes/loss"] == pytest.approx(expected["test_stripes/loss"], rel=1e-5)
    (record,) = json.loads(run.read_text())["retests"]
    assert record["limit_eval_batches"] == 2 and record["examples"] == {"test_stripes": {"scored": 128, "of": 200}}
    summary = predict_run(run.parent.name, retested)  # its predictions: the examples the retest scored
    assert summary["test_stripes"]["examples"] == 128
    assert summary["test_stripes"]["acc"] == pytest.approx(added["test_stripes/acc"], abs=1e-6)
    capsys.readouterr()
    assert main(["retest", run.parent.name, "task.test_sets=[pentominoes]", "--runs-dir", str(retested)]) == 2
    line = _one_error_line(capsys)  # pentominoes: the object set it trained on
    assert "no new test split" in line and "pentominoes is what it trained on (its test/ metrics)" in line
    assert "offers no other test data" in line


# 3. a stack is published whole ------------------------------------------------------------------------------------
def _completed(runs: Path, run_id: str, stack: list[str]) -> None:
    path = runs / "relations_game" / "mlp1" / run_id
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("task:\n  name: relations_game\nmodel:\n  name: mlp1\n")
    (path / "results.json").write_text(json.dumps({"run_id": run_id, "task": "relations_game", "model": "mlp1",
                                                   "status": "completed", "stack": stack}))


def test_publishing_part_of_a_stack_is_refused_naming_the_members_left_out(env, tmp_path, capsys):
    runs, store = tmp_path / "runs", tmp_path / "results"
    stack = ["rg-s0", "rg-s1", "rg-s2"]
    for run_id in stack:
        _completed(runs, run_id, stack)
    assert main(["publish", "rg-s0", "--runs-dir", str(runs), "--to", str(store)]) == 2
    line = _one_error_line(capsys)
    assert "rg-s0 trained in a stack of 3" in line and "members rg-s1, rg-s2 are neither named here" in line
    assert "harness publish rg-s0 rg-s1 rg-s2" in line and not store.exists()  # nothing copied
    assert [p.run_id for p in publish(stack, runs, store)] == stack
    assert [p.run_id for p in publish(["rg-s1"], runs, store)] == ["rg-s1"]  # the others are there already


# 4. negative seeds ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seeds", [["--seeds", "-1,2"], ["--seeds=-1,2"], ["--seeds", "0,-1"]])
def test_negative_seeds_are_refused_in_one_line(env, capsys, seeds):
    assert main([*RELATIONS, *seeds]) == 2
    assert "a seed is an integer >= 0, got -1" in _one_error_line(capsys)
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()


# 5. a learning rate (or betas) no optimiser can use ---------------------------------------------------------------
@pytest.mark.parametrize(("override", "said"), [
    ("optim.lr=1e38", "bad value for 'optim.lr' (command line): 1e+38 is not a float in [0, 100]"),
    ("optim.betas=[1.0,0.999]", "bad value for 'optim.betas': [1.0, 0.999]; adam needs each beta below 1"),
])
def test_a_learning_rate_or_betas_no_optimiser_can_use_is_one_line_before_a_run_exists(env, capsys, override, said):
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator",
                 override]) == 2
    assert said in _one_error_line(capsys)
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()


def test_every_shipped_runs_learning_rate_is_in_range():
    from harness.schema import check_value, key_type, parse_entry

    schema = yaml.safe_load((config_lib.SCHEMA_FILE).read_text())
    checked = 0
    for path in RESULTS_DIR.glob("*/*/*/config.yaml"):
        cfg = OmegaConf.load(path)
        for key in ("optim.lr", "rl.optim.lr"):
            value = OmegaConf.select(cfg, key)
            if value is not None:
                kind = key_type(key, value, parse_entry(key, schema[key], "harness/schema.yaml"))
                assert kind is not None
                check_value(key, value, kind, f" ({path.parent.name})")
                checked += 1
    assert checked > 100


# 6. LSTM recall's first recall step past the sequence -------------------------------------------------------------
def test_a_first_recall_step_past_the_sequence_is_refused(env, capsys):
    assert main([*RECALL, "task.first_recall_step=5"]) == 2
    line = _one_error_line(capsys)
    assert "task.first_recall_step (5) is past the last step the run trains and tests on (stepwise.steps and " \
        "eval_steps: 4): only the forced recall at step 4 would be asked" in line
    assert "give at most 4" in line
    assert main([*RECALL, "task.first_recall_step=4"]) == 0  # the last step: reminder noise there
    assert main([*RECALL, "task.first_recall_step=6", "stepwise.steps=8"]) == 0  # trained on 8 steps
    # a sequence longer than the trajectories: not even the forced recall is reached
    assert main([*RECALL, "task.length=6", "stepwise.steps=3", "task.first_recall_step=5"]) == 2
    assert "(stepwise.steps and eval_steps: 3): no recall would be asked at all (the forced one, at step 6, is " \
        "past them too)" in _one_error_line(capsys)


def test_an_update_freq_that_changes_nothing_but_the_run_id_is_refused(env, capsys):
    """Full BPTT steps the optimiser once a trajectory whatever ``stepwise.update_freq`` says, and a frequency past
    the trajectory's length steps it at the end as update_freq = steps does: either would only give another run id."""
    assert main([*RECALL, "stepwise.bptt=true", "stepwise.update_freq=3"]) == 2
    assert "stepwise.update_freq (3) is read without stepwise.bptt only" in _one_error_line(capsys)
    assert main([*RECALL, "stepwise.update_freq=9"]) == 2
    assert "stepwise.update_freq (9) is longer than stepwise.steps (4)" in _one_error_line(capsys)
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()


# 7. one count formatter for the report ----------------------------------------------------------------------------
def test_the_report_formats_counts_in_one_place():
    from reports import build, tables

    assert not hasattr(build, "_count") and not hasattr(tables, "_count")
    assert build.fmt_count is tables.fmt_count
    assert tables.fmt_count(12345) == "12,345" and tables.fmt_count(math.nan) == "–"
    assert tables.fmt_count(True) == "–" and tables.fmt_count(None) == "–"


# 8. help texts ----------------------------------------------------------------------------------------------------
def test_every_option_and_argument_of_every_command_says_what_it_is():
    parser = build_parser()
    missing = [f"{p.prog} {action.option_strings[0] if action.option_strings else action.dest}"
               for p in parser._parsers() for action in p._actions  # type: ignore[attr-defined]
               if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction) and not action.help]
    assert missing == []


# an option that names a config key: the override it was meant as ------------------------------------------------
@pytest.mark.parametrize(("words", "hint"), [
    (["--babi_id", "2"], "; config settings are overrides after the options, KEY=VALUE: task.babi_id=2 "),
    (["--babi-id=3"], "KEY=VALUE: task.babi_id=3 "),
    (["--lr", "task.babi_id=2"], "KEY=VALUE: optim.lr=... "),
    (["--nothing_like_a_key", "1"], None),
])
def test_an_option_naming_a_config_key_points_at_its_override(words, hint, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke", *words])
    line = _one_error_line(capsys)
    assert stopped.value.code == 2 and line.startswith(f"error: unrecognized arguments: {words[0]}")
    assert (hint in line) if hint else "config settings" not in line


def test_ctrl_c_says_what_each_command_leaves(env, tmp_path, monkeypatch, capsys):
    """`data babi` stopped after its first task: its files are whole, and the same command alone is refused (they
    exist), so the line names --force; a command with nothing to resume says only that it was interrupted."""
    import tasks.babi.generator as generator

    written = []

    def write_then_ctrl_c(out, babi_id, **kwargs):
        if written:
            raise KeyboardInterrupt
        written.append(babi_id)
        return {"train": out / "train.txt", "test": out / "test.txt"}

    monkeypatch.setattr(generator, "write_dataset", write_then_ctrl_c)
    assert main(["data", "babi", "--out", str(tmp_path / "babi"), "--ids", "1", "2"]) == 130
    assert capsys.readouterr().err.strip() == ("interrupted; the files written so far are whole; the same command "
                                               "with --force writes them all again")
    monkeypatch.setattr("harness.cli.cmd_list", lambda args: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"
