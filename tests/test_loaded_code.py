"""A run records the code it loaded: a project file edited on disk while the run trains keeps, in the run's code
record, the digest of what the process imported (harness.provenance.snapshot_code), and the run says the file
changed. Smoke profile, seconds."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from harness import provenance
from harness.cli import main
from harness.runners import launch as launch_module
from tests.conftest import only_run
from tests.test_lifecycle_fixes import RELATIONS


def test_a_file_edited_after_it_was_loaded_keeps_the_loaded_digest(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    source = folder / "loaded_code_probe.py"
    source.write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "loaded_code_probe", raising=False)
    module = importlib.import_module("loaded_code_probe")
    try:
        loaded = provenance.code_files(tmp_path)
        assert list(loaded) == ["tasks/loaded_code_probe.py"]
        assert provenance.edited_since_loaded(loaded, tmp_path) == []

        source.write_text("def f(x):\n    return x + 2\n")  # edited while the process runs the old code
        assert provenance.code_files(tmp_path) == loaded
        assert provenance.edited_since_loaded(loaded, tmp_path) == ["tasks/loaded_code_probe.py"]

        importlib.reload(module)  # the process now runs the edit: its digest follows
        reloaded = provenance.code_files(tmp_path)
        assert reloaded["tasks/loaded_code_probe.py"] == provenance.source_digest(source) != \
            loaded["tasks/loaded_code_probe.py"]
        assert provenance.edited_since_loaded(reloaded, tmp_path) == []
    finally:
        sys.modules.pop("loaded_code_probe", None)


def test_a_run_records_the_code_it_trained_with_when_files_change_while_it_trains(
        env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real_train = launch_module._train
    edited = "0" * 16

    def train_then_edit_every_file(*args: object, **kwargs: object) -> object:
        summary = real_train(*args, **kwargs)
        monkeypatch.setattr(provenance, "source_digest", lambda path: edited)  # every file on disk now differs
        return summary

    monkeypatch.setattr(launch_module, "_train", train_then_edit_every_file)
    assert main(RELATIONS) == 0
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    files = results["code"]["files"]
    assert "harness/runners/supervised.py" in files and "models/relational/mlp.py" in files
    assert edited not in files.values(), [rel for rel, digest in files.items() if digest == edited]
    assert "changed on disk while the run trained: it records the code it loaded" in capsys.readouterr().err
