"""Rules of the data contract: a supervised task's splits (harness/data.py), the per-interface batch contract
(harness/interfaces.py) and the stream contract of stepwise tasks (harness/streams.py), each checked against a
hand-written statement of the rule on tiny tensors.

The stream contract follows Moskvichev & Liu (2021), "Updater-Extractor Architecture for Inductive World State
Representations", section 3.1 and Algorithm 1 (STOP_GRADIENT on the world state between steps). The sampler's
order is ``torch.randperm`` drawn from a generator seeded by (seed, epoch), so a resumed run sees the batches of
an uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from harness.data import TARGET, EpochShuffleSampler, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.interfaces import check_task_data
from harness.streams import StreamStep, check_stream_info, check_stream_step, detach_state

# ---------------------------------------------------------------- harness/data.py


def test_the_sampler_order_is_randperm_of_the_documented_seed_and_differs_for_each_seed_epoch_pair() -> None:
    orders: dict[tuple[int, int], list[int]] = {}
    for seed in range(4):
        for epoch in range(4):
            sampler = EpochShuffleSampler(9, seed=seed)
            sampler.set_epoch(epoch)
            got = list(sampler)
            want = torch.randperm(9, generator=torch.Generator().manual_seed(seed * 100_003 + epoch)).tolist()
            assert got == want and sorted(got) == list(range(9)) and len(sampler) == 9
            orders[(seed, epoch)] = got
    assert orders[(1, 2)] != orders[(2, 1)]  # seed + epoch alone would make these two runs share an order


def test_a_split_needs_a_target_and_one_length() -> None:
    x3, x4 = torch.zeros(3, 2), torch.zeros(4, 2)
    with pytest.raises(ValueError, match="needs a 'target'"):
        TensorDictDataset({"tokens": x3})
    with pytest.raises(ValueError, match="disagree"):
        TensorDictDataset({"tokens": x3, TARGET: torch.zeros(4, dtype=torch.long)})
    with pytest.raises(ValueError, match="disagree"):
        TensorDictDataset({"tokens": x3, "length": x4, TARGET: torch.zeros(3, dtype=torch.long)})
    data = TensorDictDataset({"tokens": torch.arange(6).view(3, 2), TARGET: torch.tensor([7, 8, 9])})
    assert len(data) == 3
    batch = data.__getitems__([2, 0])  # rows 2 then 0, in that order
    assert batch["tokens"].tolist() == [[4, 5], [0, 1]] and batch[TARGET].tolist() == [9, 7]


# ---------------------------------------------------------------- harness/interfaces.py

SEQ_INFO: dict[str, Any] = {"max_len": 5, "vocab_size": 10, "num_classes": 3}
STORY_INFO: dict[str, Any] = {"max_story_len": 4, "max_sent_len": 6, "vocab_size": 20, "num_classes": 20}
IMAGE_INFO: dict[str, Any] = {"image_shape": [8, 8, 3], "num_classes": 2}


def _seq(n: int = 3, target: torch.Tensor | None = None, **extra: torch.Tensor) -> TensorDictDataset:
    tensors = {"tokens": torch.ones(n, 5, dtype=torch.long), "length": torch.full((n,), 5, dtype=torch.long),
               TARGET: torch.zeros(n, dtype=torch.long) if target is None else target, **extra}
    return TensorDictDataset(tensors)


def _task(train: TensorDictDataset, info: dict[str, Any], **extra_test: TensorDictDataset) -> TaskData:
    return TaskData(train=train, val=_seq(), test=_seq(), info=info, source="test", extra_test=dict(extra_test))


def test_a_well_formed_sequence_task_passes() -> None:
    check_task_data("t", "sequence", _task(_seq(), SEQ_INFO))


@pytest.mark.parametrize("target", [torch.zeros(3), torch.zeros(3, 1, dtype=torch.long),
                                    torch.zeros(3, dtype=torch.int32)])
def test_a_target_other_than_int64_per_example_is_refused(target: torch.Tensor) -> None:
    with pytest.raises(UserError, match="'target' is"):
        check_task_data("t", "sequence", _task(_seq(target=target), SEQ_INFO))


@pytest.mark.parametrize(("interface", "info", "key"), [("sequence", SEQ_INFO, key) for key in SEQ_INFO]
                         + [("story", STORY_INFO, key) for key in STORY_INFO]
                         + [("image", IMAGE_INFO, key) for key in IMAGE_INFO])
def test_every_info_key_of_the_interface_is_required(interface: str, info: dict[str, Any], key: str) -> None:
    n = 2
    splits = {"sequence": {"tokens": torch.ones(n, 5, dtype=torch.long), "length": torch.ones(n, dtype=torch.long)},
              "story": {"story": torch.ones(n, 4, 6, dtype=torch.long), "story_len": torch.ones(n, dtype=torch.long),
                        "query": torch.ones(n, 6, dtype=torch.long)},
              "image": {"image": torch.zeros(n, 8, 8, 3, dtype=torch.uint8),
                        "task_id": torch.zeros(n, dtype=torch.long)}}[interface]
    split = TensorDictDataset({**splits, TARGET: torch.zeros(n, dtype=torch.long)})
    check_task_data("t", interface, TaskData(split, split, split, dict(info), "test"))
    partial = {k: v for k, v in info.items() if k != key}
    if key == "image_shape":  # the image's own size is read from it: a KeyError would be worse than the error
        with pytest.raises((UserError, KeyError)):
            check_task_data("t", interface, TaskData(split, split, split, partial, "test"))
        return
    with pytest.raises(UserError, match=f"info has no {key}"):
        check_task_data("t", interface, TaskData(split, split, split, partial, "test"))


@pytest.mark.parametrize("story", [torch.ones(2, 4, 7, dtype=torch.long),  # a sentence one word too long
                                   torch.ones(2, 3, 6, dtype=torch.long),  # a statement short
                                   torch.ones(2, 4, 6, 1, dtype=torch.long),  # an extra dimension
                                   torch.ones(2, 4, dtype=torch.long)])  # a dimension missing
def test_a_story_of_another_shape_is_refused(story: torch.Tensor) -> None:
    split = TensorDictDataset({"story": story, "story_len": torch.ones(2, dtype=torch.long),
                               "query": torch.ones(2, 6, dtype=torch.long), TARGET: torch.zeros(2, dtype=torch.long)})
    with pytest.raises(UserError, match="'story' is int64"):
        check_task_data("t", "story", TaskData(split, split, split, STORY_INFO, "test"))


def test_an_empty_split_and_an_empty_extra_test_split_are_refused() -> None:
    with pytest.raises(UserError, match="the train split holds no examples"):
        check_task_data("t", "sequence", _task(_seq(0), SEQ_INFO))
    with pytest.raises(UserError, match="the test_heldout split holds no examples"):
        check_task_data("t", "sequence", _task(_seq(), SEQ_INFO, heldout=_seq(0)))


def test_an_extra_test_split_is_checked_like_the_others() -> None:
    bad = _seq(target=torch.zeros(3))
    with pytest.raises(UserError, match="test_heldout split: 'target'"):
        check_task_data("t", "sequence", _task(_seq(), SEQ_INFO, heldout=bad))


def test_a_tensor_outside_the_contract_is_refused() -> None:
    with pytest.raises(UserError, match="mask are not in the 'sequence' contract"):
        check_task_data("t", "sequence", _task(_seq(mask=torch.ones(3, 5, dtype=torch.bool)), SEQ_INFO))


# ---------------------------------------------------------------- harness/streams.py

STREAM_INFO: dict[str, Any] = {"instruction_fields": [3, 4, 2], "query_fields": [3, 4], "num_answers": 2,
                               "query_groups": ["observed", "unobserved"], "max_instructions": 2, "max_queries": 5}


def _step(batch: int = 2) -> StreamStep:
    torch.manual_seed(0)
    # instructions [B, I=2, F=3], queries [B, Q=5, G=2]; the last query of each world is padding
    instructions = torch.stack([torch.randint(0, b, (batch, 2)) for b in (3, 4, 2)], dim=-1)
    queries = torch.stack([torch.randint(0, b, (batch, 5)) for b in (3, 4)], dim=-1)
    mask = torch.ones(batch, 5, dtype=torch.bool)
    mask[:, -1] = False
    return StreamStep(instructions=instructions, instruction_mask=torch.ones(batch, 2, dtype=torch.bool),
                      queries=queries, query_mask=mask, answers=torch.randint(0, 2, (batch, 5)),
                      query_group=torch.randint(0, 2, (batch, 5)))


def test_a_well_formed_step_passes_and_padding_answers_and_groups_are_not_read() -> None:
    step = _step()
    check_stream_step("t", step, STREAM_INFO, 2)
    step.answers[:, -1] = -100  # an ignore index on a padded query
    step.query_group[:, -1] = 7
    check_stream_step("t", step, STREAM_INFO, 2)


@pytest.mark.parametrize(("name", "index", "bound"), [("instructions", 0, 3), ("instructions", 1, 4),
                                                      ("instructions", 2, 2), ("queries", 0, 3), ("queries", 1, 4)])
def test_a_field_value_equal_to_its_bound_is_refused(name: str, index: int, bound: int) -> None:
    step = _step()
    getattr(step, name)[1, 0, index] = bound  # values of a field run 0..bound-1
    with pytest.raises(UserError, match=f"{name} have field values outside"):
        check_stream_step("t", step, STREAM_INFO, 2)
    getattr(step, name)[1, 0, index] = -1
    with pytest.raises(UserError, match=f"{name} have field values outside"):
        check_stream_step("t", step, STREAM_INFO, 2)


def test_an_answer_or_group_equal_to_its_count_is_refused_on_a_real_query() -> None:
    step = _step()
    step.answers[0, 0] = 2  # num_answers = 2: answers 0..1
    with pytest.raises(UserError, match="answers are outside 0..1"):
        check_stream_step("t", step, STREAM_INFO, 2)
    step = _step()
    step.query_group[0, 0] = 2  # two groups: 0..1
    with pytest.raises(UserError, match="query groups are outside 0..1"):
        check_stream_step("t", step, STREAM_INFO, 2)


def test_instruction_and_query_set_sizes_are_each_their_own() -> None:
    step = _step()
    step.instructions = torch.zeros(2, 5, 3, dtype=torch.long)  # I = max_queries instead of max_instructions
    step.instruction_mask = torch.ones(2, 5, dtype=torch.bool)
    with pytest.raises(UserError, match="step tensor 'instructions'"):
        check_stream_step("t", step, STREAM_INFO, 2)


@pytest.mark.parametrize("key", list(STREAM_INFO))
def test_every_stream_info_key_is_required(key: str) -> None:
    check_stream_info("t", STREAM_INFO)
    with pytest.raises(UserError, match=f"lacks {key}"):
        check_stream_info("t", {k: v for k, v in STREAM_INFO.items() if k != key})


def test_detach_state_cuts_every_tensor_of_a_nested_state() -> None:
    leaf = torch.ones(2, requires_grad=True)
    state = (leaf * 2, [leaf * 3, (leaf * 4,)])
    cut = detach_state(state)
    assert isinstance(cut, tuple) and isinstance(cut[1], list) and isinstance(cut[1][1], tuple)
    for tensor in (cut[0], cut[1][0], cut[1][1][0]):
        assert tensor.grad_fn is None and not tensor.requires_grad
    assert cut[1][1][0].tolist() == [4.0, 4.0]
    with pytest.raises(TypeError):
        detach_state({"w": leaf})
