"""LSTM recall (Experiment 0): the paper's example, answers replayed by a plain loop, the forced recall, recall and
reminder-noise rates, determinism, the ``stream`` contract, the task.yaml profiles, and bad configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.streams import StreamStep, check_stream_info, check_stream_step
from tasks.lstm_recall.generator import DEFAULTS, seq2seq_answers, thorough_answers
from tasks.lstm_recall.task import LstmRecallTask
from tests.task_yaml_checks import check_schema_rejects_as_task_does, profile_configs

TASK_YAML = Path(__file__).resolve().parents[1] / "tasks" / "lstm_recall" / "task.yaml"
RECALL = 9  # K - 1 with the default vocabulary


def make(**task: object) -> LstmRecallTask:
    return LstmRecallTask(OmegaConf.create({"seed": 0, "task": {"name": "lstm_recall", **DEFAULTS, **task}}))


def roll(task: LstmRecallTask, batch: int, steps: int, seed: int = 0, split: str = "train") -> list[StreamStep]:
    gen = torch.Generator().manual_seed(seed)
    worlds = task.reset(batch, gen, split)
    out = []
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, gen, split)
        out.append(step)
    return out


def stacked(steps: list[StreamStep], name: str) -> torch.Tensor:
    return torch.stack([getattr(s, name)[:, 0] for s in steps], dim=1)  # [B, T] (or [B, T, F])


def test_the_papers_example():
    inputs = torch.tensor([[4, 3, 6, RECALL, 3, RECALL]])
    assert seq2seq_answers(inputs, RECALL).tolist() == [[4, 3, 6, 4, 3, 4]]
    asks = torch.tensor([[False, False, True, False, True, True]])
    assert thorough_answers(torch.tensor([[4, 3, 6, 2, 3, 1]]), asks).tolist() == [[4, 3, 4, 2, 4, 4]]


@pytest.mark.parametrize("mode", ["seq2seq", "thorough"])
def test_answers_replayed_by_a_plain_loop(mode):
    task = make(mode=mode)
    steps = roll(task, 64, 25, split="val")  # past length: no forced recall there
    for step in steps:
        check_stream_step("lstm_recall", step, task.info, 64)
    tokens = stacked(steps, "instructions")[..., 0]  # [B, T]
    queries = stacked(steps, "queries")[..., 0]  # [B, T]
    answers, groups = stacked(steps, "answers"), stacked(steps, "query_group")
    for b in range(tokens.shape[0]):
        target = int(tokens[b, 0])
        assert target != RECALL
        for t in range(tokens.shape[1]):
            x = int(tokens[b, t])
            if mode == "seq2seq":
                assert int(queries[b, t]) == 0
                is_recall = x == RECALL
            else:
                assert x != RECALL
                is_recall = int(queries[b, t]) == 1
            assert int(answers[b, t]) == (target if is_recall else x)
            assert int(groups[b, t]) == int(is_recall)
            if t == 0:
                assert not is_recall


@pytest.mark.parametrize("mode", ["seq2seq", "thorough"])
def test_the_last_step_always_recalls(mode):
    task = make(mode=mode, length=6, recall_prob=0.0)
    steps = roll(task, 32, 8)
    groups = stacked(steps, "query_group")  # [B, T]
    assert groups[:, 5].eq(1).all() and groups[:, :5].eq(0).all() and groups[:, 6:].eq(0).all()
    tokens = stacked(steps, "instructions")[..., 0]
    if mode == "seq2seq":
        assert tokens[:, 5].eq(RECALL).all()
    assert stacked(steps, "answers")[:, 5].eq(tokens[:, 0]).all()


@pytest.mark.parametrize("mode", ["seq2seq", "thorough"])
def test_recall_rate_and_first_recall_step(mode):
    task = make(mode=mode, length=8, recall_prob=0.3, first_recall_step=4)
    groups = stacked(roll(task, 4000, 12), "query_group").float()  # [B, T]
    assert groups[:, :3].sum() == 0  # steps 1..3: before first_recall_step
    assert groups[:, 7].eq(1).all()  # the forced one at length
    rates = groups[:, [3, 4, 5, 6, 8, 9, 10, 11]].mean(0)
    assert torch.allclose(rates, torch.full_like(rates, 0.3), atol=0.04)


@pytest.mark.parametrize("mode", ["seq2seq", "thorough"])
def test_reminder_noise_only_in_training_at_its_rate(mode):
    task = make(mode=mode, reminder_noise=0.1, first_recall_step=3, length=30)
    for split in ("train", "val", "test"):
        steps = roll(task, 3000, 6, split=split)
        tokens = stacked(steps, "instructions")[..., 0]
        answers, recall = stacked(steps, "answers"), stacked(steps, "query_group").bool()
        target = tokens[:, :1]
        clean = torch.where(recall, target, tokens)  # [B, T]
        noised = answers != clean
        assert (answers[noised] == target.expand_as(answers)[noised]).all()  # noise only ever says the target
        assert not noised[:, :2].any()  # steps 1, 2: before first_recall_step
        if split != "train":
            assert not noised.any()
        else:
            could = clean[:, 2:] != target  # where the noise is visible
            rate = noised[:, 2:][could].float().mean()
            assert abs(float(rate) - 0.1) < 0.015


def test_inputs_do_not_depend_on_the_split():
    task = make(reminder_noise=0.5)
    train, val = roll(task, 16, 12, split="train"), roll(task, 16, 12, split="val")
    assert all(torch.equal(a.instructions, b.instructions) for a, b in zip(train, val, strict=True))


@pytest.mark.parametrize("mode", ["seq2seq", "thorough"])
def test_determinism_from_the_generator_seed(mode):
    task = make(mode=mode, reminder_noise=0.05)
    a, b, c = roll(task, 8, 12, seed=3), roll(task, 8, 12, seed=3), roll(task, 8, 12, seed=4)
    for name in ("instructions", "queries", "answers", "query_group"):
        assert torch.equal(stacked(a, name), stacked(b, name))
    assert not torch.equal(stacked(a, "instructions"), stacked(c, "instructions"))


def test_contract_info_and_describe_data():
    for mode, query_fields in (("seq2seq", [1]), ("thorough", [2])):
        task = make(mode=mode)
        check_stream_info("lstm_recall", task.info)
        assert task.info["query_fields"] == query_fields and task.info["num_answers"] == 10
        assert task.info["query_groups"] == ["repeat", "recall"]
    data, other = make().describe_data(), make(recall_prob=0.2).describe_data()
    assert data["files"] == {} and "seq2seq" in data["source"] and len(data["fingerprint"]) == 12
    assert data["fingerprint"] == make().describe_data()["fingerprint"] != other["fingerprint"]


def test_task_yaml_profiles_build():
    for cfg in profile_configs(TASK_YAML, "lstm_recall", "stream", "stepwise"):
        task = LstmRecallTask(cfg)
        check_stream_step("lstm_recall", roll(task, 4, 1)[0], task.info, 4)


@pytest.mark.parametrize(("key", "value"), [("mode", "bptt"), ("vocab", 2), ("length", 1), ("recall_prob", 1.5),
                                      ("reminder_noise", -0.1), ("first_recall_step", 1), ("vocab", 2.5)])
def test_the_schema_rejects_what_the_task_rejects(key, value):
    check_schema_rejects_as_task_does(TASK_YAML, key, value, make)


@pytest.mark.parametrize("bad", [{"mode": "bptt"}, {"vocab": 2}, {"length": 1}, {"recall_prob": 1.5},
                                 {"reminder_noise": -0.1}, {"first_recall_step": 1}, {"vocab": 2.5},
                                 {"length": True}, {"mode": None}])
def test_bad_config_is_a_user_error(bad):
    with pytest.raises(UserError, match="task"):
        make(**bad)


def test_the_sequence_length_follows_task_length_unless_given() -> None:
    from harness.config import compose

    assert compose("lstm_recall", "stream_lstm", "cpu", ["task.length=25"]).cfg.stepwise.steps == 25
    assert compose("lstm_recall", "stream_lstm", "smoke").cfg.stepwise.steps == 4
    given = compose("lstm_recall", "stream_lstm", "cpu", ["task.length=25", "stepwise.steps=12"]).cfg
    assert given.stepwise.steps == 12
