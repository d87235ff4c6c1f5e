"""The command line's contract for user mistakes (harness/cli.py, cli_parser.py, cli_runs.py): each is exit code 2
and one ``error:`` line naming what is wrong, refused before anything is trained or written; and the rest of its
small logic, each rule stated by hand on a tiny input.

* ``--seeds`` takes seeds up to the schema's largest seed, that one included.
* ``report --jobs`` is at least 1; ``reproduce``'s ``--minutes``, ``--list`` and ``--jobs`` go with
  ``--unchecked`` only, and ``--minutes`` is a finite number > 0.
* ``data babi`` refuses to write over files already in ``--out`` unless ``--force`` ("it" for one, "them" for
  more).
* ``runs --imports`` takes Python sources only; ``carry --check`` prints every failing piece of
  recorded evidence and exits 1.
* A flag that takes a value followed by another option says that the value is missing (only a word that starts
  with a dash and a digit is glued to it as its value); a misspelt option that is a config key's name is hinted
  as the override only when it names one key.
* ``sweep --dry-run`` counts models x grid points x samples x seeds.
* A printed table: each column as wide as its widest cell, two spaces between columns, no trailing spaces.
* The listing's held-out numbers: the test accuracies of the task's splits and each curriculum stage's
  ``.../test/acc`` (not deeper per-class figures), then an RL run's evaluation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from harness.cli import _seed_list, _table, main
from harness.cli_runs import _headline
from harness.config import max_seed
from harness.errors import UserError

BABI_LSTM = ("--task", "babi", "--model", "lstm", "--profile", "smoke")


def refused(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> str:
    """``harness <args>``: exit code 2 and one ``error:`` line on stderr containing ``fragment``."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    return err[0]


# ---------------------------------------------------------------- seeds


def test_seeds_take_the_largest_seed_and_refuse_past_it() -> None:
    assert _seed_list(f"0, {max_seed()}") == [0, max_seed()]
    with pytest.raises(UserError, match=rf"a seed is at most {max_seed()}, got {max_seed() + 1}$"):
        _seed_list(str(max_seed() + 1))


# ---------------------------------------------------------------- report and reproduce


def test_report_jobs_must_be_at_least_one(env: dict[str, str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "site"
    refused(capsys, ["report", "--jobs", "0", "--out", str(out)], "report --jobs must be at least 1, got 0")
    assert not out.exists()


def test_reproduce_jobs_go_with_unchecked_only(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["reproduce", "some-run", "--jobs", "2"], "--minutes, --list and --jobs go with --unchecked")


@pytest.mark.parametrize("minutes", ["0", "-1", "inf", "nan"])
def test_reproduce_minutes_are_a_finite_number_above_zero(env: dict[str, str], capsys: pytest.CaptureFixture[str],
                                                          minutes: str) -> None:
    refused(capsys, ["reproduce", "--unchecked", "--list", f"--minutes={minutes}"],
            "give a finite number of minutes > 0")


# ---------------------------------------------------------------- data babi


def test_data_babi_refuses_to_write_over_files_unless_forced(env: dict[str, str], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "en"
    out.mkdir()
    train = out / "qa1_single-supporting-fact_train.txt"
    train.write_text("mine\n")
    small = ["--n-train", "2", "--n-test", "2"]
    line = refused(capsys, ["data", "babi", "--out", str(out), "--ids", "1", *small],
                   "already holds qa1_single-supporting-fact_train.txt; --force replaces it with generated data")
    assert "them" not in line and train.read_text() == "mine\n"
    (out / "qa1_single-supporting-fact_test.txt").write_text("mine too\n")
    refused(capsys, ["data", "babi", "--out", str(out), "--ids", "1", *small],
            "already holds qa1_single-supporting-fact_train.txt, qa1_single-supporting-fact_test.txt; --force "
            "replaces them")
    assert main(["data", "babi", "--out", str(out), "--ids", "1", *small, "--force"]) == 0
    assert train.read_text() != "mine\n"


# ---------------------------------------------------------------- runs and carry


def test_runs_imports_takes_python_sources_only(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["runs", "--imports", str(Path(cli.__file__).parents[1] / "README.md")],
            "is not a Python source file")


def test_carry_check_prints_every_failure_and_exits_one(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import harness.code_changes

    found = ["harness/x.py: the evidence no longer holds", "harness/y.py: the probe's outputs differ"]
    monkeypatch.setattr(harness.code_changes, "check_all", lambda: found)
    assert main(["carry", "--check"]) == 1
    assert capsys.readouterr().out == "".join(f"{line}\n" for line in found)  # every failure, one line each


# ---------------------------------------------------------------- argument parsing


def test_an_option_followed_by_another_option_lacks_its_value(env: dict[str, str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["validate", "--task", "--model", "lstm", "--profile", "smoke"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --task: expected one argument" in err[0], err


def test_an_option_naming_two_config_keys_gets_no_override_hint(env: dict[str, str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    # 'name' is task.name and model.name: no one override to suggest
    with pytest.raises(SystemExit):
        main(["validate", *BABI_LSTM, "--name", "x"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unrecognized arguments: --name " in err[0] and "KEY=VALUE" not in err[0], err


# ---------------------------------------------------------------- the runs listing


def test_the_headline_shows_test_accuracies_and_stage_tests_not_deeper_figures() -> None:
    metrics = {"test/acc": 0.5, "test_heldout/acc": 0.25, "test/task_3/acc": 0.125, "val/acc": 0.875,
               "stage_1/test/acc": 0.75, "test/loss": 1.5, "eval/win_rate": 1.0}
    assert _headline(metrics) == ("stage_1/test/acc=0.7500  test/acc=0.5000  test_heldout/acc=0.2500  "
                                  "eval/win_rate=1.0000")


# ---------------------------------------------------------------- sweep --dry-run


def test_a_dry_run_counts_models_times_grid_points_times_samples_times_seeds(
        env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "counted.yaml"
    path.write_text("name: counted\ntask: babi\nmodels: [lstm, memn2n]\nprofile: smoke\nseeds: [0, 1, 2]\n"
                    "num_samples: 2\nspace:\n  task.babi_id: {type: grid, values: [1, 2]}\n"
                    "  optim.lr: {type: uniform, low: 0.001, high: 0.01}\n")
    assert main(["sweep", str(path), "--dry-run"]) == 0
    # 2 models x 2 grid values x 2 samples x 3 seeds; the sampled key multiplies nothing by itself
    assert "sweep counted: babi x lstm, memn2n, profile smoke, 24 trials;" in capsys.readouterr().out


def test_a_table_aligns_its_columns_two_spaces_apart_without_trailing_spaces() -> None:
    rows = [["run_id", "status", "held-out metrics"], ["a", "completed", ""],
            ["longer-run", "failed", "test/acc=0.5000"]]
    assert _table(rows).splitlines() == ["run_id      status     held-out metrics",
                                         "a           completed",
                                         "longer-run  failed     test/acc=0.5000"]
