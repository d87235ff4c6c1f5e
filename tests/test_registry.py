import subprocess
import sys

import pytest

from harness.errors import UserError
from harness.registry import REGISTRY, ModelSpec, Registry, TaskSpec
from tests.conftest import ROOT

IMAGE_TASK = TaskSpec(name="toy_images", title="", interface="image", kind="supervised", entry="x:Y")
RL_TASK = TaskSpec(name="toy_env", title="", interface="env", kind="rl", entry="x:Y")
STREAM_TASK = TaskSpec(name="toy_stream", title="", interface="stream", kind="supervised", entry="x:Y")


def test_discovers_tasks_and_models_from_yaml():
    registry = Registry()
    assert "babi" in registry.tasks
    assert {"tpr_rnn", "lstm"} <= set(registry.models)
    assert registry.tasks["babi"].interface == "story"
    assert registry.models["tpr_rnn"].interfaces["story"] == "models.tpr_rnn.operations:story_model"


def test_compatibility_is_computed_from_declarations():
    registry = Registry()
    tpr = registry.model("tpr_rnn")
    assert registry.compatibility(registry.task("babi"), tpr).ok
    assert registry.compatibility(IMAGE_TASK, tpr).ok  # through the recurrent adapter and its core
    cell = registry.compatibility(STREAM_TASK, tpr)
    assert not cell.ok and "reads image/sequence/story;" in cell.reason and "gives stream" in cell.reason
    assert cell.reason.endswith("(no recurrent adapter reads stream)")
    cell = registry.compatibility(RL_TASK, tpr)
    assert not cell.ok and "rl" in cell.reason


def test_unknown_names_suggest_the_closest():
    with pytest.raises(UserError, match="did you mean 'tpr_rnn'"):
        Registry().model("tpr_rn")
    with pytest.raises(UserError, match="known tasks: babi"):
        Registry().task("nope")


def test_incompatible_pair_names_the_reason_and_the_models_that_fit():
    registry = Registry()
    registry.add_task(STREAM_TASK)
    registry.add_model(ModelSpec(name="toy_stream_reader", title="", shape="recurrent", interfaces={"stream": "x:Y"}))
    with pytest.raises(UserError) as info:
        registry.check_pair("toy_stream", "tpr_rnn")
    assert "tpr_rnn reads image/sequence/story; toy_stream gives stream" in str(info.value)
    assert "models that fit toy_stream: toy_stream_reader" in str(info.value)


def test_list_imports_no_heavy_library():
    """What keeps `harness list` quick, checked without a clock (a timed test fails on a loaded machine): it imports
    none of the heavy libraries."""
    code = ("import sys; from harness.cli import main; main(['list']); "
            "heavy = [m for m in ('torch', 'lightning', 'ray', 'wandb') if m in sys.modules]; "
            "assert not heavy, heavy")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "babi" in done.stdout and "Task x model" in done.stdout


def test_list_prints_reasons_for_empty_cells(capsys):
    from harness.cli import cmd_list

    REGISTRY.add_task(STREAM_TASK)
    try:
        cmd_list(None)
    finally:
        REGISTRY._extra_tasks.pop("toy_stream")
    out = capsys.readouterr().out
    assert "toy_stream" in out and "tpr_rnn reads image/sequence/story; toy_stream gives stream" in out


def test_spec_files_are_named_relative_to_the_project_in_every_message(tmp_path):
    """Every registry and config message names a spec file as `models/gru/gru.yaml` (some gave the absolute path)."""
    from harness import PROJECT_ROOT
    from harness.registry import project_path

    assert project_path(PROJECT_ROOT / "models" / "gru" / "gru.yaml") == "models/gru/gru.yaml"
    assert project_path(tmp_path / "gru.yaml") == str(tmp_path / "gru.yaml")  # outside the project: as given
    assert project_path(None) == "registered spec"
