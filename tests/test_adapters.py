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
from models.adapters.sequence_entities import SequenceEntityModel, chunking
from models.adapters.sequence_readers import ImageSequenceModel, SequenceAgent, StorySequenceModel
from models.adapters.state_entities import StateEntityAgent
from models.adapters.story_entities import StoryEntityModel, position_encoding
from models.lstm.model import flatten_story
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
    assert all(registry.compatibility(task, toy).ok for task in registry.tasks.values() if task.kind != "stepwise")
    # world-state streams are trained step by step: a model joins them with a stream reader of its own
    assert registry.compatibility(registry.task("game_of_life"), toy).reason == \
        "toy_core trains supervised/rl; game_of_life is stepwise"
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
    """More padding words per statement change nothing, and neither does a batch: each story read alone (no
    padding steps after its words) gives what it gives beside longer stories, whose length pads it (the core
    must mask those steps out)."""
    for name in SEQUENCE_MODELS:
        torch.manual_seed(0)
        model = StorySequenceModel(model_cfg("babi", name), STORY_INFO).eval()
        story, story_len, query = story_batch()
        wider = torch.cat([story, torch.zeros(3, 5, 2, dtype=torch.long)], dim=2)  # more padding per statement
        query_wider = torch.cat([query, torch.zeros(3, 2, dtype=torch.long)], dim=1)
        together = model(story, story_len, query)
        torch.testing.assert_close(model(wider, story_len, query_wider), together)
        lengths = flatten_story(story, query)[1]
        assert len(set(lengths.tolist())) > 1  # the batch pads its shorter stories
        alone = torch.cat([model(story[i:i + 1], story_len[i:i + 1], query[i:i + 1]) for i in range(3)])
        torch.testing.assert_close(alone, together)


@pytest.mark.parametrize("name", CENTRAL_MODELS)
def test_every_central_module_acts_on_a_flat_state(name: str):
    agent = StateEntityAgent(model_cfg("cartpole", name), None, (4,), 2)
    policy, value = agent(torch.randn(3, 4))
    assert policy.shape == (3, 2) and value.shape == (3,)
    with pytest.raises(ValueError, match="flat observations"):
        StateEntityAgent(model_cfg("cartpole", name), None, (4, 4, 3), 2)
    assert set(CENTRAL_MODULES) >= {model_cfg("cartpole", name).central}


def sequence_cfg(name: str, max_entities: int):  # noqa: ANN201 - an OmegaConf node
    """A central model's config with the sequence adapter's keys (no task declares `sequence` yet)."""
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(model_cfg("babi", name), resolve=True)
    return OmegaConf.create({**plain, "token_size": 16, "max_entities": max_entities})


def test_long_sequences_are_read_in_chunks_of_equal_size():
    assert chunking(10, 32) == (1, 10)  # short: one entity per token
    assert chunking(2000, 32) == (63, 32)  # ListOps' longest: 32 chunks of 63 tokens
    assert chunking(1024, 32) == (32, 32)  # Pathfinder's pixels
    assert chunking(100, 32) == (4, 25)


@pytest.mark.parametrize("name", CENTRAL_MODELS)
def test_every_central_module_reads_a_sequence_and_ignores_padding(name: str):
    torch.manual_seed(0)
    info = {"vocab_size": 12, "num_classes": 3, "max_len": 30}
    model = SequenceEntityModel(sequence_cfg(name, 8), info).eval()  # chunks of 4 tokens, 8 entities
    assert (model.chunk, model.entities) == (4, 8)
    tokens = torch.randint(1, 12, (3, 30))
    length = torch.tensor([30, 13, 1])
    logits = model(tokens, length)
    assert logits.shape == (3, 3) and torch.isfinite(logits).all()
    changed = tokens.clone()
    changed[1, 13:] = 5  # tokens past an example's length are padding
    changed[2, 1:] = 7
    torch.testing.assert_close(model(changed, length), logits)
    torch.testing.assert_close(model(tokens[:, :20], length.clamp(max=20))[1:], logits[1:])  # a shorter batch
    entities = model.entities_of(tokens, length)
    assert entities.shape == (3, 8, 16) and not entities[1, 4:].any() and entities[1, 3].any()
    tokens[0, 5] = tokens[0, 5] % 11 + 1  # a real token counts
    assert not torch.equal(model(tokens, length)[0], logits[0])
    model(tokens, length).sum().backward()
    assert model.embed.weight.grad is not None and model.position.grad is not None
    with pytest.raises(ValueError, match="longer than the 30"):
        model(torch.ones(1, 31, dtype=torch.long), torch.tensor([31]))


def test_a_central_module_learns_from_chunked_sequences():
    """mlp1 over chunk entities learns whether token 3 occurs anywhere in a 40-token sequence read as 10
    entities of 4 tokens (chance: 0.5)."""
    torch.manual_seed(0)
    model = SequenceEntityModel(sequence_cfg("mlp1", 10), {"vocab_size": 10, "num_classes": 2, "max_len": 40})
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)

    def batch(size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tokens = torch.randint(4, 10, (size, 40))
        target = torch.randint(0, 2, (size,))
        tokens[torch.arange(size), torch.randint(0, 40, (size,))] = torch.where(target == 1, 3, 4)
        return tokens, torch.full((size,), 40), target

    for _ in range(200):
        tokens, length, target = batch(64)
        loss = torch.nn.functional.cross_entropy(model(tokens, length), target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    tokens, length, target = batch(1000)
    with torch.no_grad():
        accuracy = (model(tokens, length).argmax(-1) == target).float().mean().item()
    assert accuracy > 0.9, accuracy


# through the command line -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("task", "model"), [("babi", "predinet"), ("babi", "transformer"),
                                             ("relations_game", "lstm"), ("relations_game", "transformer")])
@pytest.mark.slow
def test_new_cells_train_and_test_at_the_smoke_profile(task: str, model: str, env: dict[str, str]):
    assert main(["bench", "--task", task, "--model", model, "--profile", "smoke"]) == 0
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    assert results["status"] == "completed" and 0.0 <= results["metrics"]["test/acc"] <= 1.0
