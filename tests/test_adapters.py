"""Every model meets every task through the adapters of its shape (models/adapters.yaml), and every task's data
meets its interface's batch contract (harness/interfaces.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.cli import main
from harness.config import compose
from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.interfaces import check_task_data
from harness.registry import REGISTRY, ModelSpec, Registry
from models.adapters.sequence_readers import ImageSequenceModel, SequenceAgent, StorySequenceModel
from models.adapters.state_entities import StateEntityAgent
from models.adapters.story_entities import StoryEntityModel, position_encoding
from models.relational.central import CENTRAL_MODULES
from tests.conftest import only_run

STORY_INFO = {"vocab_size": 20, "num_classes": 20, "max_story_len": 5, "max_sent_len": 4}
IMAGE_INFO = {"image_shape": [36, 36, 3], "num_classes": 2, "num_tasks": 3}
CENTRAL_MODELS = [name for name, spec in REGISTRY.models.items() if spec.shape == "central"]
SEQUENCE_MODELS = [name for name, spec in REGISTRY.models.items() if spec.core]


def story_batch(batch: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    story = torch.randint(1, 20, (batch, 5, 4), generator=generator)  # [B, T, W]
    story_len = torch.tensor([2, 5, 3])[:batch]
    story[0, 2:] = 0  # padding statements
    story[2, 3:] = 0
    return story, story_len, torch.randint(1, 20, (batch, 4), generator=generator)


def model_cfg(task: str, model: str):  # noqa: ANN201 - an OmegaConf node
    return compose(task, model, "smoke").cfg.model


# the matrix ---------------------------------------------------------------------------------------------------
def test_matrix_has_a_route_or_a_reason_for_every_cell():
    matrix = REGISTRY.matrix()
    assert len(matrix) == len(REGISTRY.tasks) * len(REGISTRY.models)
    runnable = {cell for cell, compat in matrix.items() if compat.ok}
    assert len(runnable) >= 45, sorted(set(matrix) - runnable)
    assert all(compat.route for compat in matrix.values() if compat.ok)
    assert all(compat.reason and not compat.route for compat in matrix.values() if not compat.ok)
    assert "sentence entities" in matrix[("babi", "predinet")].route
    assert matrix[("babi", "tpr_rnn")].route == "story -> tpr_rnn (its own reader)"
    assert "patch sequence -> transformer" in matrix[("relations_game", "transformer")].route
    assert matrix[("relations_game", "tpr_rnn")].route.startswith("image -> raster-order patch sequence -> tpr_rnn")
    assert matrix[("boxworld", "tpr_rnn")].reason == "tpr_rnn trains supervised; boxworld is rl"


def test_a_new_model_joins_every_task_its_shape_reaches_from_its_own_spec_alone():
    registry = Registry()
    registry.add_model(ModelSpec(name="toy_core", title="", shape="recurrent", interfaces={},
                                 kinds=("supervised", "rl"), core="models.transformer.core:TransformerCore"))
    toy = registry.model("toy_core")
    assert set(toy.interfaces) == {"story", "sequence", "image", "env", "state_env"}
    assert all(registry.compatibility(task, toy).ok for task in registry.tasks.values())
    registry.add_model(ModelSpec(name="coreless", title="", shape="recurrent", interfaces={"story": "x:Y"}))
    coreless = registry.model("coreless")
    assert set(coreless.interfaces) == {"story"}  # its own reader only: no core, no sequence adapters
    reason = registry.compatibility(registry.task("relations_game"), coreless).reason
    assert reason.endswith("(the recurrent adapter for image needs a sequence core, which coreless lacks)")


def test_adapter_keys_are_only_in_the_runs_that_read_through_that_adapter():
    assert compose("babi", "predinet", "smoke").cfg.model.word_size == 32
    assert "word_size" not in compose("relations_game", "predinet", "smoke").cfg.model
    assert compose("relations_game", "lstm", "smoke").cfg.model.patch_size == 6
    assert "patch_size" not in compose("babi", "lstm", "smoke").cfg.model
    with pytest.raises(UserError, match="'model.word_size' \\(command line\\): 0 is not an int >= 1"):
        compose("babi", "predinet", "smoke", ["model.word_size=0"])


# the batch contract ------------------------------------------------------------------------------------------
def babi_like(story_dtype: torch.dtype = torch.long, words: int = 4) -> TaskData:
    split = TensorDictDataset({"story": torch.zeros(6, 5, words, dtype=story_dtype),
                               "story_len": torch.ones(6, dtype=torch.long),
                               "query": torch.zeros(6, 4, dtype=torch.long),
                               "target": torch.zeros(6, dtype=torch.long)})
    return TaskData(train=split, val=split, test=split, info=STORY_INFO, source="test")


def test_data_that_meets_its_contract_passes_and_a_mismatch_names_task_tensor_and_shape():
    check_task_data("babi", "story", babi_like())
    with pytest.raises(UserError, match=r"task babi, train split: 'story' is float32 \[5, 4\] per example; the "
                                        r"'story' contract needs int64 \[5, 4\]"):
        check_task_data("babi", "story", babi_like(torch.float32))
    with pytest.raises(UserError, match=r"'story' is int64 \[5, 7\] per example; .* needs int64 \[5, 4\] "
                                        r"\(int64 \[max_story_len, max_sent_len\]\)"):
        check_task_data("babi", "story", babi_like(words=7))
    with pytest.raises(UserError, match=r"tensor\(s\) query, story, story_len are not in the 'image' contract"):
        check_task_data("relations_game", "image", babi_like())
    images = TensorDictDataset({"image": torch.zeros(2, 36, 36, 3, dtype=torch.uint8),
                                "target": torch.zeros(2, dtype=torch.long)})
    with pytest.raises(UserError, match="no 'task_id' tensor; the 'image' contract needs task_id int64 \\[\\]"):
        check_task_data("relations_game", "image", TaskData(images, images, images, IMAGE_INFO, "test"))


# the adapters ------------------------------------------------------------------------------------------------
def test_position_encoding_is_memn2n_s():
    table = position_encoding(4, 6)  # l_kj = (1 - j/J) - (k/d)(1 - 2j/J), 1-based
    j, k = 2, 5
    assert table[j - 1, k - 1].item() == pytest.approx((1 - j / 4) - (k / 6) * (1 - 2 * j / 4))


@pytest.mark.parametrize("name", CENTRAL_MODELS)
def test_every_central_module_reads_a_story_and_ignores_padding_statements(name: str):
    torch.manual_seed(0)
    model = StoryEntityModel(model_cfg("babi", name), STORY_INFO).eval()
    story, story_len, query = story_batch()
    logits = model(story, story_len, query)
    assert logits.shape == (3, 20) and torch.isfinite(logits).all()
    changed = story.clone()
    changed[0, 3] = 7  # words in a padding slot of story 0
    assert torch.equal(model(changed, story_len, query), logits)
    logits.sum().backward()
    assert model.embed.weight.grad is not None and model.slot.grad is not None


@pytest.mark.parametrize("name", SEQUENCE_MODELS)
def test_every_sequence_core_reads_stories_images_grids_and_states(name: str):
    torch.manual_seed(0)
    story_model = StorySequenceModel(model_cfg("babi", name), STORY_INFO)  # tpr_rnn reads stories its own way
    assert story_model(*story_batch()).shape == (3, 20)
    image_model = ImageSequenceModel(model_cfg("relations_game", name), IMAGE_INFO)
    images = torch.randint(0, 256, (2, 36, 36, 3), dtype=torch.uint8)
    assert image_model.patches(images).shape == (2, 36, 108)
    logits = image_model(images, torch.tensor([0, 2]))
    assert logits.shape == (2, 2)
    logits.sum().backward()
    assert image_model.task_token is not None and image_model.task_token.weight.grad is not None
    for shape in ((8, 8, 3), (4,)):
        agent = SequenceAgent(model_cfg("babi", name), None, shape, 5)  # tpr_rnn trains supervised only
        policy, value = agent(torch.rand(2, *shape))
        assert policy.shape == (2, 5) and value.shape == (2,)


def test_padding_never_changes_what_a_transformer_or_lstm_reads():
    for name in SEQUENCE_MODELS:
        torch.manual_seed(0)
        model = StorySequenceModel(model_cfg("babi", name), STORY_INFO).eval()
        story, story_len, query = story_batch()
        wider = torch.cat([story, torch.zeros(3, 5, 2, dtype=torch.long)], dim=2)  # more padding per statement
        query_wider = torch.cat([query, torch.zeros(3, 2, dtype=torch.long)], dim=1)
        torch.testing.assert_close(model(wider, story_len, query_wider), model(story, story_len, query))


@pytest.mark.parametrize("name", CENTRAL_MODELS)
def test_every_central_module_acts_on_a_flat_state(name: str):
    agent = StateEntityAgent(model_cfg("cartpole", name), None, (4,), 2)
    policy, value = agent(torch.randn(3, 4))
    assert policy.shape == (3, 2) and value.shape == (3,)
    with pytest.raises(ValueError, match="flat observations"):
        StateEntityAgent(model_cfg("cartpole", name), None, (4, 4, 3), 2)
    assert set(CENTRAL_MODULES) >= {model_cfg("cartpole", name).central}


# through the command line -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("task", "model"), [("babi", "predinet"), ("babi", "transformer"),
                                             ("relations_game", "lstm"), ("relations_game", "transformer")])
def test_new_cells_train_and_test_at_the_smoke_profile(task: str, model: str, env: dict[str, str]):
    assert main(["bench", "--task", task, "--model", model, "--profile", "smoke"]) == 0
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    assert results["status"] == "completed" and 0.0 <= results["metrics"]["test/acc"] <= 1.0
