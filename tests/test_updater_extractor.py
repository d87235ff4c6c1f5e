"""The Updater-Extractor and the Experiment 0 LSTMs on hand-built stream steps, and the Updater-Extractor as a
sequence core (models/updater_extractor)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from harness.registry import Registry
from harness.streams import StreamStep, detach_state
from models.adapters.sequence_readers import TokenSequenceModel
from models.updater_extractor.core import UpdaterExtractorCore
from models.updater_extractor.embedding import FieldEmbedding
from models.updater_extractor.stream_lstm import StreamLSTM
from models.updater_extractor.updater_extractor import POSITIONS, UpdaterExtractor, used_instructions

INFO: dict[str, Any] = {"instruction_fields": [4, 4, 2], "query_fields": [4, 4], "num_answers": 2,
                        "query_groups": ["repeat", "recall"], "max_instructions": 5, "max_queries": 3}
B, N, Q = 3, INFO["max_instructions"], INFO["max_queries"]  # batch, instructions, queries


def ue_cfg(**changes: Any) -> Any:
    base = {"name": "updater_extractor", "d_model": 16, "heads": 2, "updater_layers": 1, "extractor_layers": 1,
            "ff_size": 32, "tokens": 4, "field_size": 8, "dropout": 0.0, "chunk_size": 3, "positions": "state"}
    return OmegaConf.create({**base, **changes})


def lstm_cfg(extractor: str) -> Any:
    return OmegaConf.create({"name": "stream_lstm", "hidden_size": 16, "extractor": extractor, "mlp_hidden": 16,
                             "embedding_size": 12, "field_size": 8})


def random_step(generator: torch.Generator, instruction_mask: torch.Tensor | None = None) -> StreamStep:
    fields = torch.tensor(INFO["instruction_fields"])
    query_fields = torch.tensor(INFO["query_fields"])
    instructions = (torch.rand(B, N, len(fields), generator=generator) * fields).long()  # [B, I, F]
    queries = (torch.rand(B, Q, len(query_fields), generator=generator) * query_fields).long()  # [B, Q, G]
    if instruction_mask is None:
        instruction_mask = torch.rand(B, N, generator=generator) < 0.6
    return StreamStep(instructions=instructions, instruction_mask=instruction_mask,
                      queries=queries, query_mask=torch.ones(B, Q, dtype=torch.bool),
                      answers=torch.randint(0, 2, (B, Q), generator=generator),
                      query_group=torch.zeros(B, Q, dtype=torch.long))


def replace(step: StreamStep, **changes: torch.Tensor) -> StreamStep:
    return StreamStep(**{**step.__dict__, **changes})


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    """Tiny models run faster on one thread than on cores shared with other processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def gen() -> torch.Generator:
    torch.manual_seed(0)
    return torch.Generator().manual_seed(0)


def test_field_embedding_shape() -> None:
    embed = FieldEmbedding([4, 4, 2], 8, 16)
    assert embed(torch.zeros(2, 5, 3, dtype=torch.long)).shape == (2, 5, 16)
    assert embed(torch.zeros(2, 0, 3, dtype=torch.long)).shape == (2, 0, 16)


@pytest.mark.parametrize("positions", POSITIONS)
def test_shapes_of_every_method(positions: str, gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
    state = model.initial_state(B)
    assert state.shape == (B, 4, 16)
    step = random_step(gen)
    state = model.update(state, step)
    assert state.shape == (B, 4, 16)
    assert model.extract(state, step).shape == (B, Q, 2)


def test_empty_instruction_set_gives_finite_outputs(gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(), INFO)
    step = random_step(gen, instruction_mask=torch.zeros(B, N, dtype=torch.bool))
    state = model.update(model.initial_state(B), step)
    assert torch.isfinite(state).all() and torch.isfinite(model.extract(state, step)).all()


@pytest.mark.parametrize("positions", POSITIONS)
def test_masked_instructions_do_not_change_the_state(positions: str, gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[:, 2:] = False
    step = random_step(gen, instruction_mask=mask)
    changed = step.instructions.clone()
    changed[:, 2:] = (changed[:, 2:] + 1) % torch.tensor(INFO["instruction_fields"])  # other values, masked
    state = model.initial_state(B)
    torch.testing.assert_close(model.update(state, replace(step, instructions=changed)), model.update(state, step))


@pytest.mark.parametrize("real", [0, 1, 3, N])
@pytest.mark.parametrize("positions", POSITIONS)
def test_unused_padding_slots_are_dropped_without_changing_the_state(positions: str, real: int,
                                                                     gen: torch.Generator) -> None:
    """update() drops the trailing slots no world uses; the Updater over the whole padded set agrees."""
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, :real] = True  # one world tells `real` instructions, the others fewer
    mask[1, : real // 2] = True
    step = random_step(gen, instruction_mask=mask)
    told, kept = used_instructions(step.instructions, step.instruction_mask)
    assert told.shape == (B, real, 3) and kept.shape == (B, real)
    state = model.update(model.initial_state(B), step)  # warm state, then the step under test
    world, world_positions = model.world.read(state)
    padded = model.updater(world, model.embed_instructions(step.instructions), mask, world_positions)
    torch.testing.assert_close(model.update(state, step), padded)


@pytest.mark.parametrize("positions", POSITIONS)
def test_queries_are_independent(positions: str, gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
    step = random_step(gen)
    state = model.update(model.initial_state(B), step)
    logits = model.extract(state, step)
    other = step.queries.clone()
    other[:, 1:] = (other[:, 1:] + 1) % torch.tensor(INFO["query_fields"])  # every query but the first changes
    mask = torch.zeros(B, Q, dtype=torch.bool)
    mask[:, 0] = True
    changed = model.extract(state, replace(step, queries=other, query_mask=mask))
    torch.testing.assert_close(changed[:, 0], logits[:, 0])
    assert not torch.allclose(changed[:, 1:], logits[:, 1:])


@pytest.mark.parametrize("positions", POSITIONS)
def test_state_stays_finite_over_1000_updates(positions: str, gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO).eval()
    state = model.initial_state(B)
    with torch.no_grad():
        for _ in range(1000):
            state = model.update(state, random_step(gen))
        assert torch.isfinite(state).all() and torch.isfinite(model.extract(state, random_step(gen))).all()


@pytest.mark.parametrize("positions", POSITIONS)
def test_gradient_reaches_the_updater_and_the_field_embeddings(positions: str, gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
    step = random_step(gen, instruction_mask=torch.ones(B, N, dtype=torch.bool))
    model.extract(model.update(model.initial_state(B), step), step).sum().backward()
    for name in ("updater.layers.0.cross_attn.in_proj_weight", "updater.layers.0.self_attn.in_proj_weight",
                 "embed_instructions.tables.0.weight", "embed_instructions.project.weight",
                 "embed_queries.tables.1.weight", "world.initial", "world.positions"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None and grad.abs().sum() > 0, name


def test_stop_gradient_cuts_the_previous_step(gen: torch.Generator) -> None:
    model = UpdaterExtractor(ue_cfg(), INFO)
    first, second = random_step(gen), random_step(gen)
    previous = torch.randn(B, 4, 16, requires_grad=True)  # w_{t-2}, a leaf we can watch
    state = model.update(previous, first)  # w_{t-1}
    model.extract(model.update(detach_state(state), second), second).sum().backward()
    assert previous.grad is None  # nothing reached w_{t-1}'s graph
    model.extract(model.update(state, second), second).sum().backward()
    assert previous.grad is not None  # without the stop-gradient it would have


@pytest.mark.parametrize("extractor", ["linear", "query_mlp"])
def test_stream_lstm(extractor: str, gen: torch.Generator) -> None:
    model = StreamLSTM(lstm_cfg(extractor), INFO)
    h, c = model.initial_state(B)
    assert h.shape == c.shape == (B, 16)
    step = random_step(gen)
    state = model.update((h, c), step)
    empty = model.update((h, c), random_step(gen, instruction_mask=torch.zeros(B, N, dtype=torch.bool)))
    assert all(torch.isfinite(part).all() for part in (*state, *empty))
    logits = model.extract(state, step)
    assert logits.shape == (B, Q, 2)
    other = model.extract(state, replace(step, queries=(step.queries + 1) % torch.tensor(INFO["query_fields"])))
    if extractor == "linear":
        torch.testing.assert_close(other, logits)  # the query is ignored
        torch.testing.assert_close(logits[:, 1:], logits[:, :1].expand(-1, Q - 1, -1))
    else:
        assert not torch.allclose(other, logits)
    model.extract(state, step).sum().backward()
    assert model.embed_instructions.tables[0].weight.grad is not None


def test_stream_lstm_rejects_unknown_extractor() -> None:
    with pytest.raises(ValueError, match="model.extractor"):
        StreamLSTM(lstm_cfg("attention"), INFO)


@pytest.mark.parametrize("positions", POSITIONS)
def test_core_reads_ragged_sequences_in_chunks(positions: str) -> None:
    torch.manual_seed(0)
    core = UpdaterExtractorCore(ue_cfg(positions=positions))
    assert core.in_dim == core.out_dim == 16
    lengths = torch.tensor([10, 4, 1])
    x = torch.randn(3, 10, 16)  # [B, T, D]
    mask = torch.arange(10).unsqueeze(0) < lengths.unsqueeze(1)  # [B, T]
    out = core(x, mask)
    assert out.shape == (3, 16) and torch.isfinite(out).all()
    longer = torch.cat([x, torch.randn(3, 7, 16)], dim=1)  # seven more padding steps with other values
    torch.testing.assert_close(core(longer, torch.cat([mask, torch.zeros(3, 7, dtype=torch.bool)], dim=1)), out)
    noisy = torch.where(mask.unsqueeze(-1), x, torch.randn_like(x))  # padding values changed in place
    torch.testing.assert_close(core(noisy, mask), out)
    for row, length in enumerate(lengths.tolist()):  # each row as if it were alone, without padding
        alone = core(x[row : row + 1, :length], torch.ones(1, length, dtype=torch.bool))
        torch.testing.assert_close(alone[0], out[row])


def test_core_under_the_sequence_adapter() -> None:
    torch.manual_seed(0)
    model = TokenSequenceModel(ue_cfg(), {"vocab_size": 7, "num_classes": 5})
    tokens = torch.randint(1, 7, (2, 8))
    logits = model(tokens, torch.tensor([8, 5]))
    assert logits.shape == (2, 5)
    logits.sum().backward()
    assert model.core.updater.layers[0].cross_attn.in_proj_weight.grad is not None


def test_d_model_must_be_a_multiple_of_heads() -> None:
    with pytest.raises(ValueError, match="multiple of model.heads"):
        UpdaterExtractor(ue_cfg(d_model=15, heads=2), INFO)
    with pytest.raises(ValueError, match="multiple of model.heads"):
        UpdaterExtractorCore(ue_cfg(d_model=10, heads=4))


def test_both_specs_load() -> None:
    registry = Registry()
    ue = registry.model("updater_extractor")
    assert ue.shape == "recurrent" and set(ue.kinds) == {"stepwise", "supervised"}
    assert ue.interfaces["stream"] == "models.updater_extractor.updater_extractor:UpdaterExtractor"
    assert ue.core == "models.updater_extractor.core:UpdaterExtractorCore"
    assert ue.config["optim"] == {"name": "adam", "lr": 1.0e-3}
    lstm = registry.model("stream_lstm")
    assert lstm.kinds == ("stepwise",) and not lstm.core
    assert lstm.interfaces == {"stream": "models.updater_extractor.stream_lstm:StreamLSTM"}
    assert lstm.config["optim"] == {"name": "adamw", "lr": 1.0e-4}
    assert lstm.config["model"]["hidden_size"] == 64


def test_attention_positions_stay_out_of_the_state(gen: torch.Generator) -> None:
    """model.positions=attention: P moves where each token attends, never what the state holds: with every
    attention made uniform (zero query/key projections), P has no effect at all; with 'state' it does."""
    step = random_step(gen)
    for positions, moves in (("attention", False), ("state", True)):
        model = UpdaterExtractor(ue_cfg(positions=positions), INFO)
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, torch.nn.MultiheadAttention):
                    module.in_proj_weight[: 2 * module.embed_dim] = 0  # queries and keys: uniform attention
            state = model.update(model.initial_state(B), step)
            logits = model.extract(state, step)
            model.world.positions.add_(torch.randn_like(model.world.positions))
            moved = model.extract(model.update(model.initial_state(B), step), step)
        assert torch.allclose(moved, logits) is not moves, positions


def test_unknown_positions_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="model.positions must be one of state, attention"):
        UpdaterExtractor(ue_cfg(positions="rotary"), INFO)
