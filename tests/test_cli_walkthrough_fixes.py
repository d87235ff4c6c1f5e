"""Rough spots found by walking through the command line as a user: a misspelt name in ``runs``, the rerun
command of a stale run, ``--force`` in the messages, the header of a run resumed after a damaged results.json,
Ctrl-C after a run completed, the did-you-mean of config keys, the help pointer of a subcommand's argparse
errors, counts in ``sweep --dry-run`` and the hint of a retest that adds nothing. Seconds each (smoke profile)."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness import config as config_lib
from harness.cli import build_parser, main
from harness.errors import did_you_mean
from harness.runners import launch as launch_module
from harness.runners import predictions as predictions_module
from tests.conftest import ROOT, only_run, requires_real_babi

RELATIONS = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.max_epochs=1"]
BABI_LSTM = ["--task", "babi", "--model", "lstm", "--profile", "smoke"]


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


# 1. runs --task / --model with a name nobody knows ----------------------------------------------------------
def test_runs_refuses_a_misspelt_task_or_model_but_lists_names_without_runs(env, capsys):
    assert main(["runs", "--task", "babl"]) == 2
    line = _one_error_line(capsys)
    assert "unknown task 'babl'" in line and "did you mean 'babi'?" in line
    assert main(["runs", "--model", "lstmm"]) == 2
    assert "did you mean 'lstm'?" in _one_error_line(capsys)
    assert main(["runs", "--task", "babi", "--model", "lstm"]) == 0  # real names without runs
    assert capsys.readouterr().out.strip() == "no runs found"
    old = Path(env["HARNESS_RUNS_DIR"]) / "retired" / "lstm" / "retired-lstm-x"  # a task since removed
    old.mkdir(parents=True)
    (old / "results.json").write_text(json.dumps({"run_id": "retired-lstm-x", "task": "retired", "model": "lstm",
                                                  "status": "completed"}))
    assert main(["runs", "--task", "retired"]) == 0
    assert "retired-lstm-x" in capsys.readouterr().out


# 2, 3. a stale run of the user's store: bench says so; the printed command reruns it ------------------------------
def test_a_stale_run_is_named_stale_by_bench_and_its_rerun_command_retrains_it(env, capsys):
    assert main(RELATIONS) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    results = _results(run)
    changed = sorted(results["code"]["files"])[-1]
    results["code"]["files"][changed] = "0" * 16  # as if that file had changed since the run
    (run / "results.json").write_text(json.dumps(results))
    capsys.readouterr()

    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"already completed, but stale: the code that computed it has changed since ({changed}); "
                          "--force retrains it (make: FORCE=1):")
    assert "FORCE=1 retrains" not in out

    assert main(["runs", "--stale"]) == 0
    command = next(line.strip() for line in capsys.readouterr().out.splitlines()
                   if line.strip().startswith("harness bench"))
    assert "--force" in shlex.split(command.partition(" -- ")[0])
    assert main(shlex.split(command)[1:]) == 0  # the command as printed
    out = capsys.readouterr().out
    assert "already completed" not in out and f"run {run.name} (new;" in out
    assert main(["runs", "--stale"]) == 0
    assert "none of the 1 runs is stale" in capsys.readouterr().out


def test_the_rerun_command_of_a_store_named_with_runs_dir_names_it(env, tmp_path, capsys):
    store = tmp_path / "elsewhere"
    assert main([*RELATIONS, "--runs-dir", str(store)]) == 0
    run = only_run(store)
    results = _results(run)
    results["code"]["files"][sorted(results["code"]["files"])[0]] = "0" * 16
    (run / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["runs", "--stale", "--runs-dir", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"--force --runs-dir {shlex.quote(str(store))}" in out


# 3, 4. a damaged results.json: the run resumes from its checkpoint, and says so ------------------------------------
def test_a_run_resumed_after_its_results_json_was_set_aside_says_resuming(env, capsys):
    assert main(RELATIONS) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    (run / "results.json").write_text('{"cut short')
    capsys.readouterr()
    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert "; resuming from the run's checkpoints; --force starts afresh (make: FORCE=1)" in out
    assert f"run {run.name} (resuming;" in out and "resuming from" in out.split(f"run {run.name}")[1]
    assert "FORCE=1 starts" not in out and "Resuming" not in out

    (run / "results.json").write_text('{"cut short')  # and without a checkpoint: a new start, said so
    for path in (run / "checkpoints").glob("*.ckpt"):
        path.unlink()
    capsys.readouterr()
    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert "; training from the start; --force starts afresh" in out and f"run {run.name} (new;" in out


# 5. Ctrl-C after the run was stored as completed ---------------------------------------------------------------
@pytest.mark.parametrize("how", ["Ctrl-C", "SIGTERM"])
def test_ctrl_c_while_the_predictions_are_written_says_the_run_completed(env, monkeypatch, capsys, how):
    def interrupted(*args, **kwargs):
        if how == "SIGTERM":  # taken as Ctrl-C (it ended this process with a bare exit code -15)
            signal.raise_signal(signal.SIGTERM)
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:  # (monkeypatch.undo would undo env's settings too)
        patched.setattr(predictions_module, "write_after_run", interrupted)
        assert main(RELATIONS) == 130
    err = capsys.readouterr().err.strip().splitlines()
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    assert err == [f"interrupted after run {run.name} completed: it is stored as completed (the same command "
                   "reports it); its predictions were not written: the same command writes them (or `harness "
                   f"predict {run.name}`)"]
    assert _results(run)["status"] == "completed"
    assert main(RELATIONS) == 0
    assert "already completed" in capsys.readouterr().out


def test_ctrl_c_while_a_completed_run_is_stored_says_it_completed(env, monkeypatch, capsys, foreground_ctrl_c):
    real_code_files = launch_module.code_files

    def ctrl_c_during_finish():
        signal.raise_signal(signal.SIGINT)  # held back until the status is stored
        return real_code_files()

    monkeypatch.setattr(launch_module, "code_files", ctrl_c_during_finish)
    assert main(RELATIONS) == 130
    err = capsys.readouterr().err
    assert "completed: it is stored as completed" in err and "resumes" not in err
    assert _results(only_run(Path(env["HARNESS_RUNS_DIR"])))["status"] == "completed"


@pytest.mark.parametrize("ignored", [False, True])
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_ctrl_c_while_the_interpreter_exits_after_the_command_ends_with_a_line(env, ignored, number):
    """A Ctrl-C or SIGTERM after the command returned ends the process with a line and code 130; one the process
    was started to ignore (a background job's Ctrl-C, as under CI's `make test &`) stays ignored. The child's
    disposition is set explicitly: it would otherwise inherit this test process's, which depends on how the suite
    was started."""
    script = (f"import os, signal, time\nfrom harness import cli\ncli._end_quietly_on_signal(0)\n"
              f"os.kill(os.getpid(), {int(number)})\ntime.sleep(30 if not signal.getsignal({int(number)}) == "
              "signal.SIG_IGN else 0)\n")
    disposition = signal.SIG_IGN if ignored else signal.SIG_DFL  # SIG_DFL: Python installs its KeyboardInterrupt
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=lambda: signal.signal(number, disposition))
    if ignored:
        assert (done.returncode, done.stderr) == (0, "")
        return
    assert done.returncode == 130
    assert done.stderr == "interrupted while exiting: the command had finished (exit code 0); what it stored stands\n"


# 6. did-you-mean of config keys --------------------------------------------------------------------------------
@pytest.mark.parametrize(("typo", "meant"), [
    ("optim.learning_rate", "optim.lr"),  # a synonym
    ("optim.wd", "optim.weight_decay"),  # initials
    ("train.bs", "train.batch_size"),
    ("train.lr", "optim.lr"),  # the word, in another section
    ("train.learning_rate", "optim.lr"),
    ("optim.lrr", "optim.lr"),  # spelling, as before
    ("train.max_epoch", "train.max_epochs"),
    ("model.hiden_size", "model.hidden_size"),
    ("optm.lr", "optim.lr"),
    ("task.babi", "task.babi_id"),
])
def test_a_misspelt_config_key_suggests_the_key_meant(env, capsys, typo, meant):
    assert main(["validate", *BABI_LSTM, f"{typo}=1"]) == 2
    assert _one_error_line(capsys) == f"error: unknown config key '{typo}' (did you mean '{meant}'?)"


def test_suggestions_that_fit_several_keys_or_none_fall_back_to_spelling():
    known = ["rl.ppo.clip_param", "rl.grad_clip", "rl.optim.lr", "rl.loss_reduction", "model.hidden_size",
             "model.head_size"]
    assert config_lib.suggest_key("rl.ppo.clip", known) == " (did you mean 'rl.ppo.clip_param'?)"
    assert config_lib.suggest_key("rl.lr", known) == " (did you mean 'rl.optim.lr'?)"  # not rl.loss_reduction
    assert config_lib.suggest_key("model.hs", known) == did_you_mean("model.hs", known)  # both fit: spelling
    assert config_lib.suggest_key("zzz.qqq", known) == ""


# 7. argparse errors of a subcommand point at its help ------------------------------------------------------------
@pytest.mark.parametrize(("args", "fragments"), [
    (["validate", *BABI_LSTM, "--seeds", "0,1"],
     ["unrecognized arguments: --seeds", "--seeds is not an option of validate (bench, sweep have it)",
      "(see `harness validate --help`)"]),
    (["data", "babi", "--out", "x", "--bogus"], ["--bogus (see `harness data babi --help`)"]),
    (["runs", "--task"], ["(see `harness runs --help`)"]),
    (["benc"], ["invalid choice: 'benc' (did you mean 'bench'?); commands: list, bench,", "(see `harness --help`)"]),
    (["data", "babl"], ["invalid choice: 'babl' (did you mean 'babi'?); commands: babi, fetch",
                        "(see `harness data --help`)"]),
])
def test_argparse_errors_name_the_subcommand_whose_help_to_read(env, capsys, args, fragments):
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    line = _one_error_line(capsys)
    assert all(fragment in line for fragment in fragments), line


def test_the_top_level_help_names_every_subcommand():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    named = parser.description.split(":", 1)[1].split(".", 1)[0]  # "harness list | bench | ... | data"
    assert [c.strip() for c in named.replace("harness", "", 1).split("|")] == list(commands)


# 8. counts in sweep --dry-run ------------------------------------------------------------------------------------
def test_sweep_dry_run_counts_in_the_singular_and_the_plural(env, tmp_path, capsys):
    assert main(["sweep", "--dry-run", str(ROOT / "sweeps" / "matrix_smoke.yaml"), "--cells", "babi/lstm"]) == 0
    assert "1 cell of 1 task x 1 model, profile smoke, 1 trial;" in capsys.readouterr().out
    stacked = tmp_path / "stacked.yaml"
    stacked.write_text("name: one\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0]\n"
                       "stack_seeds: true\n")
    assert main(["sweep", "--dry-run", str(stacked)]) == 0
    assert "1 trial of 1 seed each, stacked where the cell can stack, else one after another (1 run);" in (
        capsys.readouterr().out)
    assert main(["sweep", "--dry-run", str(ROOT / "sweeps" / "babi_smoke.yaml")]) == 0
    assert "4 trials;" in capsys.readouterr().out


# 9. a retest that adds nothing names data that would add something ---------------------------------------------
def _stored(task: str, model: str, overrides: list[str]) -> dict:
    from harness.runners.build import prepare_task

    composed = config_lib.compose(task, model, "smoke", overrides)
    prepare_task(composed)  # resolves task.source as a run's stored config has it
    return OmegaConf.to_container(composed.cfg)  # type: ignore[return-value]


def test_the_other_test_data_of_a_run_is_what_it_neither_trained_on_nor_reports(env):
    from harness.runners.retest import other_test_data

    generated = _stored("babi", "lstm", ["task.source=generator"])
    assert other_test_data(generated, {"train", "val", "test", "test_files"}) is None
    games = _stored("relations_game", "mlp1", [])
    assert other_test_data(games, {"train", "val", "test", "test_hexominoes", "test_stripes"}) is None
    one_set = _stored("relations_game", "mlp1", ["task.test_sets=[hexominoes]"])
    assert other_test_data(one_set, {"train", "val", "test", "test_hexominoes"}) == "task.test_sets=[stripes]"


@requires_real_babi
def test_a_retest_of_data_the_run_trained_on_names_data_it_has_not_seen(env, capsys):
    from harness.runners.retest import other_test_data

    runs = Path(env["HARNESS_RUNS_DIR"])
    stored = _stored("babi", "lstm", ["task.source=files"])
    assert other_test_data(_stored("babi", "lstm", ["task.source=generator"]), {"test"}) == "task.test_on=[files]"
    run_id = config_lib.run_id(OmegaConf.create(stored))
    path = runs / "babi" / "lstm" / run_id
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(stored)))
    (path / "results.json").write_text(json.dumps({"run_id": run_id, "task": "babi", "model": "lstm",
                                                   "status": "completed", "metrics": {"test/acc": 0.5,
                                                                                      "val/acc": 0.5}}))
    assert main(["retest", run_id, "task.test_on=[files]"]) == 2
    assert _one_error_line(capsys) == ("error: no new test split: the run already reports test, val; files is what "
                                       "it trained on (its test/ metrics); name other data with task.* settings, "
                                       "e.g. task.test_on=[generator]")


# a curriculum's task lists ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("override", "line"), [
    ("protocol.pretrain=[nope]", "error: bad value for 'protocol.pretrain': 'nope' is not one of same, between"),
    ("protocol.target=[col_aba,col_aba]", "error: bad value for 'protocol.target': 'col_aba' is listed twice"),
])
@pytest.mark.parametrize("command", ["validate", "bench"])
def test_a_curriculum_naming_a_task_that_does_not_exist_is_refused_before_its_first_stage(
        env, capsys, override, line, command):
    key = override.split("=")[0]  # given once: the override replaces the curriculum's own setting of that key
    base = [item for item in ("protocol.target=[col_aba]", "protocol.pretrain=[between]") if not item.startswith(key)]
    args = [command, "--task", "relations_game", "--model", "predinet", "--profile", "smoke",
            "protocol.name=curriculum", *base, override]
    assert main(args) == 2
    assert _one_error_line(capsys).startswith(line)
    assert not Path(env["HARNESS_RUNS_DIR"]).exists() or not any(Path(env["HARNESS_RUNS_DIR"]).rglob("results.json"))


@pytest.mark.parametrize(("override", "line"), [
    ("stepwise.horizons=[0]",
     "'stepwise.horizons' (command line): [0] is not a list of integers (each at most once), each >= 1"),
    ("stepwise.horizons=[5,abc]", "[5, 'abc'] is not a list of integers (each at most once), each >= 1"),
    ("stepwise.horizons=[10,10]", "'stepwise.horizons' (command line): 10 is listed twice"),  # another run id
])
def test_a_list_of_the_wrong_items_is_described_as_the_list_it_should_be(env, capsys, override, line):
    assert main(["validate", "--task", "game_of_life", "--model", "updater_extractor", "--profile", "smoke",
                 override]) == 2
    assert line in _one_error_line(capsys)


def test_test_on_naming_the_training_source_is_noted_and_unknown_sources_refused(env, capsys):
    babi = ["validate", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke", "task.source=generator"]
    assert main([*babi, "task.test_on=[generator]"]) == 0
    captured = capsys.readouterr()
    assert ("note: task.test_on names generator, the data this run trains on; its test split is the run's own test/ "
            "metrics, so it is left out of the run's config (and its run id)") in captured.err
    assert main(babi) == 0
    assert capsys.readouterr().out.splitlines()[0] == captured.out.splitlines()[0]  # the same run id
    assert main([*babi, "task.test_on=[generatr]"]) == 2
    assert _one_error_line(capsys).endswith("'generatr' is not one of files, generator")
    listops = ["validate", "--task", "listops", "--model", "transformer", "--profile", "smoke"]
    assert main([*listops, "task.test_on=[original,original]"]) == 2
    assert _one_error_line(capsys).endswith("'original' is listed twice")
