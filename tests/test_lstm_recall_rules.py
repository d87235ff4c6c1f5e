"""LSTM recall (tasks/lstm_recall/README.md): rules the other tests leave open.

* ``recall_prob`` is a probability in [0, 1], both ends included: at 1 every step from ``first_recall_step`` on
  recalls (seq2seq: the input is RECALL and the answer the target).
* Every key of ``task`` must be given: a missing one is a UserError naming it, not a silent default.
* Steps count from 1: step 0 is refused.
* ``step`` checks its split as ``reset`` does.
* ``describe_data`` states the reminder noise it was built with.
"""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from tasks.lstm_recall.generator import DEFAULTS, Settings, draw_step
from tasks.lstm_recall.task import LstmRecallTask

RECALL = 9  # K - 1 with the default vocabulary


def make(**task: object) -> LstmRecallTask:
    return LstmRecallTask(OmegaConf.create({"seed": 0, "task": {"name": "lstm_recall", **DEFAULTS, **task}}))


def test_a_recall_probability_of_one_recalls_at_every_open_step() -> None:
    task = make(recall_prob=1.0, first_recall_step=3, length=10)
    gen = torch.Generator().manual_seed(0)
    worlds = task.reset(8, gen, "val")
    for t in range(1, 13):
        worlds, step = task.step(worlds, t, gen, "val")
        token, answer, group = step.instructions[:, 0, 0], step.answers[:, 0], step.query_group[:, 0]
        if t == 1:
            assert torch.equal(token, worlds.target) and group.eq(0).all()
        elif t == 2:  # before first_recall_step: a regular token, repeated
            assert token.ne(RECALL).all() and torch.equal(answer, token) and group.eq(0).all()
        else:
            assert token.eq(RECALL).all() and torch.equal(answer, worlds.target) and group.eq(1).all()


def test_a_missing_key_is_named() -> None:
    for key in DEFAULTS:
        task_cfg = {k: v for k, v in DEFAULTS.items() if k != key}
        with pytest.raises(UserError, match=rf"'task\.{key}' is missing"):
            Settings.from_config(task_cfg)


def test_steps_count_from_one() -> None:
    target = torch.tensor([3, 4])
    with pytest.raises(ValueError, match="steps count from 1"):
        draw_step(Settings(), target, 0, torch.Generator().manual_seed(0), "train")


def test_a_step_refuses_an_unknown_split() -> None:
    task = make()
    gen = torch.Generator().manual_seed(0)
    worlds = task.reset(2, gen, "train")
    with pytest.raises(ValueError, match="split must be one of"):
        task.step(worlds, 1, gen, "training")


def test_the_data_description_states_the_reminder_noise() -> None:
    source = make(recall_prob=0.3, reminder_noise=0.05).describe_data()["source"]
    assert "recall_prob 0.3" in source and "reminder_noise 0.05 (train only)" in source
