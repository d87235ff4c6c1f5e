"""The Makefile hands each of its variables to the command line as one argument: a value with a stray space (SEEDS="0
1", PROFILE="smoke cpu") is refused by its own name, in one line with exit code 2, never taken apart into an override
or an extra argument; `make validate`, which checks one run, refuses SEEDS rather than leaving it unread."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE_OWN_LINE = re.compile(r"make(\[\d+\])?: ")  # make's own "Error 2" line; make[1] under `make test`


def make(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *arguments], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("target", ["bench", "validate"])
@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("SEED=0 1", "error: argument --seed: invalid int value: '0 1'"),
        ("PROFILE=smoke cpu", "error: unknown profile 'smoke cpu'"),
        ("MODEL=lstm tpr_rnn", "error: unknown model 'lstm tpr_rnn'"),
        ("TASK=babi listops", "error: unknown task 'babi listops'"),
    ],
)
def test_a_variable_with_a_space_is_refused_by_its_name(env, target, variable, message):
    done = make(target, "PROFILE=smoke", variable, env=env)
    errors = [line for line in done.stderr.splitlines() if not MAKE_OWN_LINE.match(line)]
    assert done.returncode == 2 and errors == [errors[0]] and errors[0].startswith(message), done.stderr
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()


@pytest.mark.slow
def test_seeds_with_a_space_are_refused_as_seeds(env):
    done = make("bench", "PROFILE=smoke", "SEEDS=0 1", env=env)
    assert done.returncode == 2, done.stderr
    assert "error: --seeds takes comma-separated integers, e.g. 0,1,2; got '0 1'" in done.stderr
    printed = make("-n", "sweep", "SWEEP=sweeps/tutorial_babi2.yaml", "SEEDS=0 1", env=env).stdout
    assert "--seeds '0 1'" in printed.replace("\\\n", " ")


def test_make_validate_refuses_seeds(env):
    done = make("validate", "PROFILE=smoke", "SEEDS=0,1", env=env)
    assert done.returncode == 2 and done.stderr.startswith("make validate: SEEDS=0,1 is a stack of runs"), done.stderr
    assert "# run_id:" not in done.stdout


def test_make_sweep_hands_on_a_profile_only_when_one_is_given(env):
    def printed(*variables: str) -> str:
        return make("-n", "sweep", "SWEEP=sweeps/tutorial_babi2.yaml", *variables, env=env).stdout.replace("\\\n", " ")

    assert "--profile 'cpu'" in printed("PROFILE=cpu")
    assert "--profile" not in printed("PROFILE=")  # empty: the sweep file's profile, as without PROFILE
    assert "--profile" not in printed()


def test_make_sync_refuses_an_empty_runs_dir_as_the_harness_does(env):
    """``HARNESS_RUNS_DIR=`` (set, empty) is a mistake to the harness (harness/paths.py environment_folder), so
    `make sync` does not read it as ./runs either."""
    done = make("sync", env={**env, "HARNESS_RUNS_DIR": ""})
    errors = [line for line in done.stderr.splitlines() if not MAKE_OWN_LINE.match(line)]
    assert done.returncode == 2 and errors == ["error: HARNESS_RUNS_DIR is set but empty; unset it for the default "
                                               "./runs, or name a folder"], done.stderr
