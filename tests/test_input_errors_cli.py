"""User mistakes found by an input-error audit: each ends with exit code 2 and one ``error:`` line, and loses
nothing (no traceback, nothing written). Fast: every case fails before a run, a model or a site is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.schema import FLOAT32_MAX, KeyType, check_value
from tests.conftest import ROOT

BABI_TPR = ("--task", "babi", "--model", "tpr_rnn", "--profile", "smoke")
BABI_LSTM = ("--task", "babi", "--model", "lstm", "--profile", "smoke")
NO_PROC = not Path("/proc").is_dir()


def refused(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> str:
    """Run ``harness <args>``: exit code 2 and one ``error:`` line on stderr containing ``fragment``."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    return err[0]


def fake_run(runs: Path, config: str = "task: {name: babi}\nmodel: {name: lstm}\n", metrics: str | None = "a\n1\n",
             run_id: str = "babi-lstm-smoke-s0-fake") -> Path:
    """A completed run directory in the store (results.json, config.yaml and metrics.csv; no checkpoint)."""
    path = runs / "babi" / "lstm" / run_id
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({"run_id": run_id, "task": "babi", "model": "lstm",
                                                   "status": "completed", "metrics": {}}))
    (path / "config.yaml").write_text(config)
    if metrics is not None:
        (path / "metrics.csv").write_text(metrics)
    return path


# 1. malformed YAML in an override -------------------------------------------------------------------------
@pytest.mark.parametrize("override", ["task.test_on=[files", "model.operations=[write", "task.test_on=]"])
def test_a_malformed_override_names_itself(env, capsys, override):
    line = refused(capsys, ["validate", *BABI_TPR, override], "not valid YAML")
    assert f"'{override}'" in line


def test_a_list_split_at_its_space_says_so(env, capsys):
    """``make bench ARGS="task.test_on=[files, generator]"`` hands the list over as two words; the error told the
    user to write the list as [a, b], which is what they had written."""
    line = refused(capsys, ["validate", *BABI_TPR, "task.test_on=[files,", "generator]"], "not valid YAML")
    assert "'task.test_on=[files,'" in line and "a space inside a list splits it into two arguments" in line
    assert "e.g. task.test_on=[a,b]" in line and "write a list as [a, b]" not in line


def test_a_malformed_override_in_a_sweep_file_is_refused_by_a_dry_run(env, tmp_path, capsys):
    sweep = tmp_path / "bad.yaml"
    sweep.write_text("name: bad\ntask: babi\nmodels: [tpr_rnn]\nprofile: smoke\nseeds: [0]\n"
                     "overrides: ['task.test_on=[files']\n")
    line = refused(capsys, ["sweep", "--dry-run", str(sweep)], "'task.test_on=[files': the value is not valid YAML")
    assert "splits it" not in line  # a sweep file's list is not split by a shell


def test_a_malformed_retest_override_is_refused(env, tmp_path, capsys):
    fake_run(tmp_path / "runs")
    refused(capsys, ["retest", "babi-lstm-smoke-s0-fake", "task.test_on=[files"], "'task.test_on=[files'")


# 2. floats beyond float32 ---------------------------------------------------------------------------------
def test_a_float_key_refuses_values_torch_cannot_hold(env, capsys):
    refused(capsys, ["bench", *BABI_LSTM, "optim.lr=1e300", "optim.name=sgd", "optim.grad_clip=0"],
            "beyond the float32 range")
    assert not (Path(env["HARNESS_RUNS_DIR"])).exists()
    refused(capsys, ["validate", *BABI_LSTM, "optim.lr=.inf"], "not a finite number")


@pytest.mark.parametrize("value", [float("nan"), float("-inf"), 1e39, -4e38, 10**40, [0.9, 1e300]])
def test_check_value_refuses_non_finite_and_huge_floats(value):
    kind = KeyType(("list",), items="float") if isinstance(value, list) else KeyType(("float",), nullable=True)
    with pytest.raises(UserError, match="finite|float32"):
        check_value("optim.x", value, kind)


@pytest.mark.parametrize("value", [None, 0, 3e-4, 1e38, -FLOAT32_MAX, FLOAT32_MAX])
def test_check_value_keeps_ordinary_floats_and_null(value):
    check_value("optim.x", value, KeyType(("float",), nullable=True))


# 3. publish -----------------------------------------------------------------------------------------------
def test_publish_refuses_a_destination_it_cannot_write(env, tmp_path, capsys):
    fake_run(tmp_path / "runs")
    afile = tmp_path / "afile"
    afile.write_text("mine")
    refused(capsys, ["publish", "babi-lstm-smoke-s0-fake", "--to", str(afile)], "is a file, not a folder")
    refused(capsys, ["publish", "babi-lstm-smoke-s0-fake", "--to", str(afile / "sub")], "is a file, not a folder")
    assert afile.read_text() == "mine"
    if not NO_PROC:
        refused(capsys, ["publish", "babi-lstm-smoke-s0-fake", "--to", "/proc/nonexistent"], "cannot publish to")


def test_publish_names_a_run_twice_once(env, tmp_path, capsys):
    run, store = fake_run(tmp_path / "runs"), tmp_path / "store"
    assert main(["publish", run.name, run.name, str(run), "--to", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.count("published ") == 1 and f"{store} did not exist: it is a new reference store" in out
    assert [p.name for p in store.glob("*/*/*")] == [run.name]
    assert main(["publish", run.name, "--to", str(store)]) == 0  # the store exists now: no such line
    assert "did not exist" not in capsys.readouterr().out


@pytest.mark.parametrize(("config", "metrics", "fragment"), [
    ("foo: [\n", "a\n1\n", "config.yaml does not parse"),
    ("- a list\n", "a\n1\n", "config.yaml does not parse"),
    ("task: {name: babi}\n", "", "metrics.csv is empty"),
])
def test_publish_refuses_a_damaged_run_before_copying(env, tmp_path, capsys, config, metrics, fragment):
    fake_run(tmp_path / "runs", config=config, metrics=metrics)
    store = tmp_path / "store"
    line = refused(capsys, ["publish", "babi-lstm-smoke-s0-fake", "--to", str(store)], fragment)
    assert "babi-lstm-smoke-s0-fake" in line and not store.exists()


# 4. report ------------------------------------------------------------------------------------------------
@pytest.mark.skipif(NO_PROC, reason="needs /proc")
def test_report_refuses_an_unwritable_out(env, tmp_path, capsys):
    refused(capsys, ["report", "--out", "/proc/foo", "--results-dir", ""], "cannot write the report to /proc/foo")
    from reports.build import main as build_main

    assert build_main(["--out", "/proc/foo", "--results-dir", ""]) == 2
    assert "cannot write the report" in capsys.readouterr().err


def test_report_refuses_an_out_below_a_file(env, tmp_path, capsys):
    (tmp_path / "afile").write_text("mine")
    refused(capsys, ["report", "--out", str(tmp_path / "afile" / "site")], "is a file, not a folder")


def test_report_refuses_a_named_reference_store_that_does_not_exist(env, tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    refused(capsys, ["report", "--results-dir", str(missing), "--out", str(tmp_path / "site")],
            f"--results-dir {missing}: no such folder")
    from reports.build import main as build_main

    assert build_main(["--results-dir", str(missing), "--out", str(tmp_path / "site")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


# 5. predict / retest on a damaged config.yaml ---------------------------------------------------------------
@pytest.mark.parametrize(("config", "fragment"), [("foo: [\n", "is damaged (ParserError"),
                                                  ("seed: 0\n", "is damaged (no task.name or model.name)"),
                                                  ("- a\n", "is damaged (holds a list")])
@pytest.mark.parametrize("command", [["predict"], ["retest", "task.test_on=[generator]"]])
def test_predict_and_retest_name_a_damaged_config(env, tmp_path, capsys, config, fragment, command):
    run = fake_run(tmp_path / "runs", config=config)
    line = refused(capsys, [command[0], run.name, *command[1:]], fragment)
    assert str(run / "config.yaml") in line


# 6. data babi ---------------------------------------------------------------------------------------------
def test_data_babi_refuses_bad_output_folders_and_counts(env, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    refused(capsys, ["data", "babi", "--out", str(afile), "--ids", "1"], "is a file, not a folder")
    if not NO_PROC:
        refused(capsys, ["data", "babi", "--out", "/proc/x", "--ids", "1"], "cannot write into /proc")
    out = tmp_path / "data"
    between = "must be between 1 and 1,000,000"
    refused(capsys, ["data", "babi", "--out", str(out), "--n-train", "0", "--ids", "1"], f"--n-train {between}")
    refused(capsys, ["data", "babi", "--out", str(out), "--n-test", "-1", "--ids", "1"], f"--n-test {between}")
    refused(capsys, ["data", "babi", "--out", str(out), "--n", "100000000", "--ids", "1"],  # a typo: 50 GB of text
            f"--n-train {between} (100 times the en-10k release's 10,000 a task), got 100,000,000")
    assert afile.read_text() == "mine" and not out.exists()


def test_the_generated_question_counts_have_one_bound_for_data_babi_and_for_runs() -> None:
    import yaml

    from tasks.babi.setting_checks import MAX_GENERATED_QUESTIONS

    bounds = yaml.safe_load((ROOT / "tasks" / "babi" / "task.yaml").read_text())["schema"]
    for key in ("task.generator_train_questions", "task.generator_test_questions"):
        assert bounds[key]["max"] == MAX_GENERATED_QUESTIONS


def test_data_babi_writes_a_task_named_twice_once(env, tmp_path, capsys):
    out = tmp_path / "data"
    assert main(["data", "babi", "--out", str(out), "--ids", "1", "1", "--n-train", "3", "--n-test", "3"]) == 0
    assert capsys.readouterr().out.count("task 1:") == 1
    assert len(list(out.iterdir())) == 2


# 7. seeds -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["validate", "bench"])
def test_a_seed_override_that_disagrees_with_seed_is_refused(env, capsys, command):
    refused(capsys, [command, "--seed", "3", *BABI_LSTM, "seed=4"], "'seed=4' disagrees with --seed 3")


def test_a_seed_override_that_agrees_with_seed_is_kept(env, capsys):
    assert main(["validate", "--seed", "3", *BABI_LSTM, "seed=3"]) == 0
    assert "\nseed: 3\n" in capsys.readouterr().out


def test_seeds_refuse_a_seed_override_and_empty_items(env, capsys):
    refused(capsys, ["bench", "--seeds", "0,1", *BABI_LSTM, "seed=4"], "disagrees with --seeds 0,1")
    refused(capsys, ["bench", "--seeds", "0,,1", *BABI_LSTM], "has an empty item")
    refused(capsys, ["bench", "--seeds", "0,1,", *BABI_LSTM], "has an empty item")
    assert not (Path(env["HARNESS_RUNS_DIR"])).exists()


def test_predict_names_a_key_the_stored_config_lacks(env, tmp_path, capsys):
    run = fake_run(tmp_path / "runs")  # task and model names only
    line = refused(capsys, ["predict", run.name], "lacks task.")
    assert str(run / "config.yaml") in line


@pytest.mark.parametrize(("task", "model", "override"), [
    ("babi", "tpr_rnn", "model.operations=[write,write]"),
    ("babi", "tpr_rnn", "model.operations=[]"),
    ("babi", "tpr_rnn", "model.operations=[wrte]"),
    ("relations_game", "predinet", "task.tasks=[same,same]"),
    ("relations_game", "predinet", "task.tasks=[sme]"),
    ("relations_game", "predinet", "task.test_sets=[stripes,stripes]"),
])
def test_a_list_option_with_an_unknown_or_repeated_item_is_refused_by_validate(task, model, override, capsys):
    """The schema's item_choices / unique / min_length: caught when the config is composed, so `validate` refuses
    what `bench` would (a repeated item would otherwise train under a new run id)."""
    assert main(["validate", "--task", task, "--model", model, "--profile", "smoke", override]) == 2
    err = capsys.readouterr().err
    assert f"bad value for '{override.split('=')[0]}'" in err and "Traceback" not in err


# 8. a key given twice on the command line -----------------------------------------------------------------
@pytest.mark.parametrize("command", ["validate", "bench"])
def test_a_key_given_twice_with_two_values_is_refused(env, capsys, command):
    refused(capsys, [command, *BABI_LSTM, "optim.lr=0.1", "+optim.lr=0.2"],
            "'optim.lr' is given twice (optim.lr=0.1 and +optim.lr=0.2); give each key once")


def test_a_key_given_twice_is_refused_beside_seeds_and_by_retest(env, capsys, tmp_path):
    refused(capsys, ["bench", "--seeds", "0,1", *BABI_LSTM, "train.max_epochs=1", "train.max_epochs=2"],
            "'train.max_epochs' is given twice")
    refused(capsys, ["retest", "nope", "task.test_on=[files]", "task.test_on=[generator]"],
            "'task.test_on' is given twice")


def test_a_key_given_twice_with_one_value_is_kept(env, capsys):
    assert main(["validate", *BABI_LSTM, "optim.lr=0.5", "optim.lr=0.5"]) == 0
    assert "lr: 0.5" in capsys.readouterr().out


def test_a_stack_whose_learning_rates_would_differ_is_refused_as_other_unstackable_runs_are(env, capsys, tmp_path):
    refused(capsys, ["bench", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke", "--seeds", "0,1",
                     "--runs-dir", str(tmp_path / "runs"), "task.source=generator"],
            "tpr_rnn cannot train as a stack on babi (optim.decay_below_val_loss would give the members different "
            "learning rates): run the seeds one by one with --seed")
    assert not (tmp_path / "runs").exists()
