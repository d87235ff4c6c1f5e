import json
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.runners.supervised import load_checkpoint
from tasks.relations_game.task import RelationsGameTask
from tests.conftest import SHARED_DATA, run_cli

HAS_REAL = (SHARED_DATA / "relations_game" / "mini_between_stripes.npz").exists()


def cfg(**task):
    base = {"name": "relations_game", "tasks": ["same"], "task_vocabulary": None, "train_set": "pentominoes",
            "test_sets": ["hexominoes", "stripes"], "n_train": 40, "n_val": 10, "n_test": 12, "data_seed": 0,
            "real_sets": True}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


@pytest.fixture(autouse=True)
def _dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"tasks": ["sam"]}, "bad value in 'task.tasks': 'sam'"),
        ({"train_set": "heptominoes"}, "bad value in 'task.train_set'"),
        ({"test_sets": ["dots"]}, "bad value in 'task.test_sets'"),
        ({"tasks": []}, "task.tasks is empty"),
        ({"tasks": ["same", "between"], "n_val": 1}, "bad value for 'task.n_val'"),
        ({"tasks": ["same"], "task_vocabulary": ["between"]}, "task.task_vocabulary lacks same"),
        ({"tasks": ["colour_shape"], "train_set": "stripes"}, "task.train_set 'stripes' cannot draw colour_shape"),
    ],
)
def test_bad_settings_are_user_errors(settings, message):
    with pytest.raises(UserError, match=message.replace("(", "\\(").replace(")", "\\)")):
        RelationsGameTask(cfg(**settings))


def test_splits_shapes_and_held_out_sets():
    data = RelationsGameTask(cfg()).load()
    assert len(data.train) == 40 and len(data.val) == 10 and len(data.test) == 12
    batch = data.train.__getitems__([0, 1, 2])
    assert batch["image"].shape == (3, 36, 36, 3) and batch["image"].dtype == torch.uint8
    assert set(data.extra_test) >= {"hexominoes", "stripes"}
    assert data.info == {"image_shape": (36, 36, 3), "num_classes": 2, "num_tasks": 1, "tasks": ["same"]}
    assert "generator: Relations Game same" in data.source


def test_stripes_test_only_the_tasks_they_can_draw():
    """colour_shape needs two shapes and stripes have one: the paper reports it on hexominoes only."""
    alone = RelationsGameTask(cfg(tasks=["colour_shape"])).load()
    assert "hexominoes" in alone.extra_test and "stripes" not in alone.extra_test
    assert "not tested (the object set has one shape): colour_shape on stripes" in alone.source
    mixed = RelationsGameTask(cfg(tasks=["colour_shape", "same"])).load()
    stripes = mixed.extra_test["stripes"].__getitems__(list(range(12)))
    assert stripes["task_id"].tolist() == [1] * 12  # only 'same' examples
    hexominoes = mixed.extra_test["hexominoes"].__getitems__(list(range(12)))
    assert sorted(set(hexominoes["task_id"].tolist())) == [0, 1]


def test_multi_task_ids_follow_the_vocabulary_and_data_is_cached():
    settings = {"tasks": ["col_aab", "col_aba"], "task_vocabulary": ["col_aba", "col_aab", "between"]}
    data = RelationsGameTask(cfg(**settings)).load()
    ids = data.train.tensors["task_id"]
    assert set(ids.tolist()) == {0, 1} and (ids == 1).sum() == 20  # col_aab is vocabulary entry 1
    assert data.info["num_tasks"] == 3
    again = RelationsGameTask(cfg(**settings)).load()
    assert torch.equal(again.train.tensors["image"], data.train.tensors["image"])


def test_a_missing_real_mini_set_is_named_in_the_data_line(tmp_path, monkeypatch):
    """Without the released files the run still trains and tests on generated data, and its data line says which
    mini sets it could not test on; a task no mini set covers names none."""
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "no-data"))
    data = RelationsGameTask(cfg(tasks=["between"], n_train=20, n_val=4, n_test=4)).load()
    assert not any(name.startswith("real_") for name in data.extra_test)
    assert ("not tested on the real mini sets missing from $HARNESS_DATA_DIR/relations_game: mini_between_hexos.npz, "
            "mini_between_stripes.npz (task.real_sets=false leaves them out)") in data.source
    assert "missing" not in RelationsGameTask(cfg(n_train=20, n_val=4, n_test=4)).load().source
    assert "missing" not in RelationsGameTask(cfg(tasks=["between"], n_train=20, n_val=4, n_test=4,
                                                  real_sets=False)).load().source


@pytest.mark.skipif(not HAS_REAL, reason="real Relations Game mini sets not found (HARNESS_DATA_DIR)")
def test_real_mini_sets_join_as_extra_test_splits():
    data = RelationsGameTask(cfg(tasks=["between"])).load()
    assert {"real_between_stripes", "real_between_hexominoes"} <= set(data.extra_test)
    assert len(data.extra_test["real_between_stripes"]) == 5000
    columns = RelationsGameTask(cfg(tasks=["col_abb", "col_aba"])).load()
    real = columns.extra_test["real_col_patterns_stripes"]
    assert set(real.tensors["task_id"].tolist()) == {0, 1}  # only the file's ABB and ABA examples
    assert 3000 < len(real) < 3700


@pytest.mark.slow
def test_smoke_bench_stores_the_analysis(env):
    done = run_cli(["bench", "--task", "relations_game", "--model", "predinet", "--profile", "smoke",
                    "task.tasks=[between]"], env)
    assert done.returncode == 0, done.stderr
    (results_path,) = Path(env["HARNESS_RUNS_DIR"]).glob("relations_game/predinet/*/results.json")
    results = json.loads(results_path.read_text())
    assert {"test_hexominoes/acc", "test_stripes/acc"} <= set(results["metrics"])
    with np.load(results_path.parent / "analysis" / "attention.npz") as stored:
        assert stored["attention_0"].shape[1:] == (32, 25) and stored["image"].shape[1:] == (36, 36, 3)
    pruning = json.loads((results_path.parent / "analysis" / "head_pruning.json").read_text())
    assert [point["heads"] for point in pruning["curve"]] == list(range(1, 33))


@pytest.mark.slow
def test_curriculum_protocol_runs_four_stages_and_freezes_what_it_should(env):
    done = run_cli(["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke",
                    "protocol.name=curriculum", "protocol.target=[col_aba,col_aab]", "protocol.pretrain=[between]"],
                   env)
    assert done.returncode == 0, done.stderr
    (results_path,) = Path(env["HARNESS_RUNS_DIR"]).glob("relations_game/mlp1/*/results.json")
    results = json.loads(results_path.read_text())
    stages = results_path.parent / "stages"
    names = ["1_scratch", "2_pretrain", "3_frozen_central", "4_frozen_encoder"]
    assert sorted(p.name for p in stages.iterdir()) == names
    assert all((stages / n / "metrics.csv").exists() for n in names)
    assert "3_frozen_central/test_stripes/acc" in results["metrics"]

    def weights(stage, name="last.ckpt"):
        state = load_checkpoint(stages / stage / "checkpoints" / name)["state_dict"]
        return {k: v for k, v in state.items()}

    # the later stages start from the pretraining's best weights; a frozen part keeps them to its last epoch
    pre, frozen_central, frozen_encoder = weights("2_pretrain", "best.ckpt"), weights("3_frozen_central"), weights(
        "4_frozen_encoder")
    for key in pre:
        if key.startswith(("model.encoder.", "model.central.")):
            assert torch.equal(frozen_central[key], pre[key]), key
        if key.startswith("model.encoder."):
            assert torch.equal(frozen_encoder[key], pre[key]), key
    assert not torch.equal(frozen_encoder["model.central.fc.weight"], pre["model.central.fc.weight"])


@pytest.mark.slow
def test_curriculum_needs_a_multi_task_task(env):
    done = run_cli(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "protocol.name=curriculum"],
                   env)
    assert done.returncode == 2 and "needs a multi-task task" in done.stderr
