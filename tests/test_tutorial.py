"""docs/tutorial.md stays true to the code: its sweep file is the one it shows and composes to the trial count it
quotes, every ``harness ...`` line of its shell code blocks parses with the command line's own parser and names
known tasks, models, profiles and files (nothing runs), its pandas snippet reads what ``harness runs --format csv``
writes, and every repository path it names exists. Seconds."""

from __future__ import annotations

import re

import yaml

from harness.cli import main
from harness.runners.tune import SWEEP_TAG
from tests.conftest import ROOT
from tests.doc_checks import blocks, command_problems, harness_commands, missing_paths, named_paths
from tests.test_report import write_run

TUTORIAL = ROOT / "docs" / "tutorial.md"
SWEEP = ROOT / "sweeps" / "tutorial_babi2.yaml"
GENERATED = ("reports/out",)  # written by `harness report` (git ignores it), not shipped


def test_every_harness_command_of_the_tutorial_parses():
    text = TUTORIAL.read_text()
    commands = harness_commands(text)
    subcommands = {argv[0] for _, argv in commands}
    assert {"list", "bench", "validate", "sweep", "runs", "report", "retest", "publish", "data"} <= subcommands
    assert any(line.startswith("unshare -n") for line, _ in commands)  # the namespace line is read too
    assert command_problems(text) == []


def test_a_misspelt_command_in_the_tutorial_is_caught():
    text = TUTORIAL.read_text()
    for right, wrong in (("harness sweep ", "harness sweeep "), ("--dry-run", "--dryrun"),
                         ("--model tpr_rnn", "--model tpr-rnn"), ("--profile smoke", "--profile smok"),
                         ("sweeps/tutorial_babi2.yaml", "sweeps/tutorial_babi.yaml"), ("--seeds 0,1", "--seed 0,1"),
                         ("harness runs --format csv", "harness runs --format xlsx"),
                         ("exec harness sweep", "exec harness swep")):
        assert right in text, right
        assert command_problems(text.replace(right, wrong)), f"{wrong!r} passed"


def test_the_tutorials_sweep_is_the_file_it_shows_and_composes_to_the_count_it_quotes(env, capsys):
    text = TUTORIAL.read_text()
    assert [yaml.safe_load(body) for body in blocks(text, "yaml")] == [yaml.safe_load(SWEEP.read_text())]
    assert SWEEP.read_text() in blocks(text, "yaml")[0] + "\n"  # shown in full, not only the same mapping
    assert main(["sweep", str(SWEEP), "--dry-run"]) == 0
    printed = capsys.readouterr().out.strip()
    assert re.search(r", 10 trials;", printed), printed
    assert printed in text, f"the tutorial does not quote the dry run's line:\n{printed}"


def test_the_pandas_snippet_reads_the_runs_export_and_counts_each_seed_once(env, tmp_path, capsys, monkeypatch):
    """Two seeds of one configuration in the tutorial's sweep, and a run of seed 0 outside it with the same
    config digest: the snippet averages the two sweep runs only."""
    runs = tmp_path / "runs"
    for seed, tag, acc, sweep in ((0, "a", 0.2, True), (1, "a", 0.4, True), (0, "b", 0.9, False)):
        run = write_run(runs, "babi", "tpr_rnn", seed, tag=tag, metrics={"test/acc": acc},
                        task_cfg={"babi_id": 2, "source": "files", "data_set": "en-10k"})
        if sweep:
            config = yaml.safe_load((run / "config.yaml").read_text())
            config["tracking"] = {"group": "tutorial_babi2", "tags": [f"{SWEEP_TAG}tutorial_babi2"]}
            (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["runs", "--format", "csv", "--runs-dir", str(runs)]) == 0
    (tmp_path / "runs.csv").write_text(capsys.readouterr().out)
    (snippet,) = blocks(TUTORIAL.read_text(), "python")
    assert len(snippet.strip().splitlines()) == 5
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "docs/tutorial.md", "exec"), {})
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[-1][0] == "tpr_rnn" and rows[-1][2:] == ["0.3", "0.141", "2"], rows


def test_every_repository_path_the_tutorial_names_exists():
    text = TUTORIAL.read_text()
    assert {"sweeps/tutorial_babi2.yaml", "docs/stacked_runs.md", "docs/gpu_runs.md", "docs/contributing.md",
            "reports/solved.yaml"} <= named_paths(text)
    assert missing_paths(text, TUTORIAL, GENERATED) == []
