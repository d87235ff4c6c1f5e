"""Rules of the models' building blocks that the equation tests leave open, on tiny inputs:

* the paper's initialisation reads a bias from the parameter's name ending in ``bias`` (``in_proj_bias`` too);
* the relational input conv refuses an image smaller than its kernel along either axis;
* a central module without an integer ``out_dim`` is refused by name; MHA refuses a width that its heads do not
  divide and a non-positive ``qk_init_std``;
* the relational Transformer: ``model.depth`` 0 is refused (0 is a value, not "unset"), a head mask of the wrong
  shape is refused, the entity mask of eq. (18)-(19) lets standard entities see standard ones only and virtual
  ones see all, and the Keras initialisation leaves every bias at zero;
* the Updater-Extractor's field embedding refuses a field with no values and entries with more fields than it
  has tables; a model with 0 heads or a core with chunk size 0 is refused; ``used_instructions`` keeps the slots up
  to the last one any world uses, inclusive;
* the BoxWorld entity encoder refuses an entity width with no room beside the 2 coordinates and an observation too
  narrow (or too short) for its convolutions; the agent shell gives its central module the PrediNet paper's
  initialisation (an MLP central module's biases are 0.1, not the shell's Keras zeros).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from models.agents.encoder import GridEntityEncoder
from models.agents.shell import AgentShell
from models.relational import central
from models.relational.encoder import ConvEntityEncoder
from models.relational.init import paper_init_
from models.relational.mha import MultiHeadAttention
from models.relational.transformer import RelationalTransformer, entity_mask, keras_init_
from models.updater_extractor.core import UpdaterExtractorCore
from models.updater_extractor.embedding import FieldEmbedding
from models.updater_extractor.updater_extractor import UpdaterExtractor, used_instructions
from tests.test_updater_extractor import INFO, ue_cfg

# models/relational ----------------------------------------------------------------------------------------------

def test_paper_init_takes_every_parameter_named_like_a_bias_as_a_bias() -> None:
    attention = paper_init_(nn.MultiheadAttention(4, 2))  # in_proj_weight, in_proj_bias, out_proj.weight / .bias
    assert torch.equal(attention.in_proj_bias, torch.full((12,), 0.1))
    assert torch.equal(attention.out_proj.bias, torch.full((4,), 0.1))
    assert attention.in_proj_weight.abs().max() <= 0.2 and attention.in_proj_weight.std() > 0.05


@pytest.mark.parametrize("image_hw", [(12, 11), (11, 12)])
def test_the_input_conv_refuses_an_image_smaller_than_its_kernel_on_either_axis(image_hw: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="smaller than the 12x12 conv kernel"):
        ConvEntityEncoder(in_channels=1, channels=2, image_hw=image_hw)
    assert ConvEntityEncoder(in_channels=1, channels=2, image_hw=(12, 12)).n_entities == 1


class NoWidth(nn.Module):
    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.out_dim = 4.0  # not an int


def test_a_central_module_without_an_integer_out_dim_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(central.CENTRAL_MODULES, "no_width", NoWidth)
    with pytest.raises(TypeError, match="'no_width' .*NoWidth.* no integer attribute out_dim"):
        central.build_central("no_width", 2, 3, OmegaConf.create({}))


@pytest.mark.parametrize(("changes", "message"), [({"central_output": 6}, "multiple of model.heads"),
                                                  ({"qk_init_std": 0.0}, "qk_init_std must be positive")])
def test_mha_refuses_an_output_its_heads_do_not_divide_and_a_non_positive_qk_std(changes: dict[str, Any],
                                                                                 message: str) -> None:
    cfg = OmegaConf.create({"heads": 4, "key_size": 2, "central_output": 8, **changes})
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(3, 5, cfg)


def test_the_relational_transformer_refuses_depth_zero_and_a_misshapen_head_mask() -> None:
    small = {"model_dim": 4, "heads": 2, "head_size": 2, "ff_hidden": 4}
    with pytest.raises(ValueError, match="depth must be at least 1, got 0"):
        RelationalTransformer(3, 4, {**small, "depth": 0})
    module = RelationalTransformer(3, 4, {**small, "depth": 1})
    module.head_mask = torch.ones(3)
    with pytest.raises(ValueError, match=r"head_mask must have shape \[2\]"):
        module(torch.rand(2, 3, 4))


def test_standard_entities_see_standard_ones_only_and_virtual_ones_see_all() -> None:
    inf = float("-inf")
    expected = torch.tensor([[0.0, 0.0, inf],
                             [0.0, 0.0, inf],
                             [0.0, 0.0, 0.0]])  # rows: who attends (2 standard, then 1 virtual)
    assert torch.equal(entity_mask(2, 1), expected)
    assert entity_mask(2, 0) is None


def test_the_keras_initialisation_leaves_every_bias_at_zero() -> None:
    module = keras_init_(nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Conv2d(1, 2, 2)))
    assert all(torch.count_nonzero(p) == 0 for name, p in module.named_parameters() if name.endswith("bias"))
    assert torch.equal(module[1].weight, torch.ones(4))


# models/updater_extractor -----------------------------------------------------------------------------------------

def test_the_field_embedding_refuses_empty_fields_and_too_many_fields() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        FieldEmbedding([3, 0], 2, 4)
    embed = FieldEmbedding([3, 2], 2, 4)
    with pytest.raises(ValueError, match="expected 2 fields per entry, got 3"):
        embed(torch.zeros(1, 1, 3, dtype=torch.long))


def test_zero_heads_and_a_zero_chunk_size_are_refused() -> None:
    with pytest.raises(ValueError, match=r"multiple of model.heads \(0\)"):
        UpdaterExtractor(ue_cfg(heads=0), INFO)
    with pytest.raises(ValueError, match="chunk_size must be at least 1, got 0"):
        UpdaterExtractorCore(ue_cfg(chunk_size=0))


def test_used_instructions_keep_every_slot_up_to_the_last_used_one() -> None:
    """World 0 uses slots 0 and 2 of 4, world 1 none: slots 0..2 stay (3 of them), slot 3 goes."""
    instructions = torch.arange(8).view(2, 4, 1)
    mask = torch.tensor([[True, False, True, False], [False, False, False, False]])
    told, kept = used_instructions(instructions, mask)
    assert told.tolist() == [[[0], [1], [2]], [[4], [5], [6]]]
    assert kept.tolist() == [[True, False, True], [False, False, False]]
    told, kept = used_instructions(instructions, torch.zeros(2, 4, dtype=torch.bool))
    assert told.shape == (2, 0, 1) and kept.shape == (2, 0)


# models/agents ---------------------------------------------------------------------------------------------------

def test_the_grid_encoder_refuses_no_room_for_features_and_too_small_observations() -> None:
    with pytest.raises(ValueError, match="room for the 2 coordinates, got 2"):
        GridEntityEncoder((4, 4, 3), [2], 2, entity_dim=2)
    assert GridEntityEncoder((4, 4, 3), [2], 2, entity_dim=3).entity_dim == 3
    for shape in [(3, 2, 3), (2, 3, 3)]:  # two 2x2 convolutions need 3 rows and 3 columns
        with pytest.raises(ValueError, match="too small for 2 2x2 convolutions"):
            GridEntityEncoder(shape, [2, 2], 2, entity_dim=4)
    assert GridEntityEncoder((3, 3, 3), [2, 2], 2, entity_dim=4).n_entities == 1


def test_the_agent_shell_gives_an_mlp_central_module_the_papers_init_and_its_own_layers_keras() -> None:
    agent_cfg = {"conv_channels": [2], "conv_kernel": 2, "entity_dim": 4, "torso": [4]}
    agent = AgentShell(OmegaConf.create({"central": "mlp1", "central_output": 3}), agent_cfg, (3, 3, 3), 2)
    assert torch.equal(agent.central.fc.bias, torch.full((3,), 0.1))  # PrediNet paper: every bias 0.1
    assert agent.central.fc.weight.abs().max() <= 0.2
    assert torch.count_nonzero(agent.policy.bias) == 0 and torch.count_nonzero(agent.torso[0].bias) == 0
