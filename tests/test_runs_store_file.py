"""HARNESS_RUNS_DIR set to a file is refused in one line by the commands that read the store, instead of `harness
runs` listing no runs as if the store were empty (harness/runs.py, check_store_root)."""

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.runs import check_store_root, select_runs


def test_a_store_that_is_a_file_is_refused_naming_how_it_was_given(tmp_path, monkeypatch):
    store = tmp_path / "runs.txt"
    store.write_text("not a folder\n")
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(store))
    with pytest.raises(UserError, match=rf"HARNESS_RUNS_DIR={store} is a file, not a run store folder"):
        select_runs()
    with pytest.raises(UserError, match="is a file, not a run store folder"):
        check_store_root(store, "--runs-dir ")


def test_the_runs_command_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    store = tmp_path / "runs.txt"
    store.write_text("")
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(store))
    assert main(["runs"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a run store folder" in err


def test_a_default_store_not_made_yet_still_lists_no_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(tmp_path / "fresh"))
    assert main(["runs"]) == 0
    assert "no runs found" in capsys.readouterr().out
