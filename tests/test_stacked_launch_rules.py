"""How a stack's members are checked, named, resumed and given a trainer (``harness/runners/stacked_launch.py``,
its module docstring and those of ``_member_key``, ``check_stackable``, ``unstackable_reason``, ``member_names``,
``_resume_point`` and ``_trainer``; ``docs/stacked_runs.md``), each checked against the documented rule written
out by hand, on composed configs without training:

* members may differ only in ``seed``, the task's data keys (``task.*`` but not ``task.name``), what the launcher
  pins of the data (``data.*``) and the optimiser (``optim.*``); never in the model, the training loop or the task;
* no two members may be the same run (the same seed with the same data and optimiser);
* ``train.max_steps`` is not implemented for stacks: such a config is refused;
* each member is named by its seed and by the data and optimiser keys the members differ in;
* a stack prints the ``data:`` line a solo run prints: once where its members read the same data, else one per
  member, named;
* a member resumes from scratch (0, no checkpoint), alone with the solo runner's checkpoint (``"solo"``), from the
  epochs its stacked checkpoint completed, or is only tested (``"done"``: ``max_epochs`` reached or fit stopped);
* members whose optimiser settings differ get an optimiser each (``OptimStackedTrainer``), members of one
  dataset the plain ``StackedTrainer``, members of several datasets the ``MixedStackedTrainer``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.config import Composed, compose
from harness.errors import UserError
from harness.runners import stacked_data, stacked_launch, stacked_optim, supervised
from harness.runners.stacked_launch import (
    _member_key,
    _resume_point,
    check_stackable,
    data_lines,
    member_names,
    unstackable_reason,
)

TASK, MODEL = "relations_game", "predinet"


def composed(seed: int, *overrides: str) -> Composed:
    return compose(TASK, MODEL, "smoke", [f"seed={seed}", "train.threads=1", *overrides])


@pytest.mark.parametrize(("key", "member"), [
    ("task.tasks", True), ("task.name", False), ("data.fingerprint", True), ("optim.lr", True),
    ("model.hidden", False), ("train.max_epochs", False), ("seed", False), ("tracking.group", False)])
def test_members_may_differ_in_the_tasks_data_keys_the_pinned_data_and_the_optimiser_only(key: str,
                                                                                          member: bool) -> None:
    assert _member_key(key) is member


def test_a_stack_of_two_models_or_the_same_run_twice_is_refused() -> None:
    check_stackable([composed(0), composed(1), composed(2, "optim.lr=0.01")])
    with pytest.raises(UserError, match="differs from"):
        check_stackable([composed(0), composed(1, "train.max_epochs=3")])
    first = composed(0)
    other_model = [key for key in first.cfg.model if isinstance(first.cfg.model[key], int)
                   and not isinstance(first.cfg.model[key], bool)]
    assert other_model, "the model has an integer setting to change"
    key = other_model[0]
    with pytest.raises(UserError, match=f"in model.{key}"):
        check_stackable([first, composed(1, f"model.{key}={int(first.cfg.model[key]) + 1}")])
    with pytest.raises(UserError, match="repeats a seed"):
        check_stackable([composed(0), composed(0)])


def test_a_stack_with_a_step_limit_is_refused() -> None:
    assert unstackable_reason(composed(0)) is None
    reason = unstackable_reason(composed(0, "train.max_steps=5"))
    assert reason is not None and "train.max_steps" in reason


def test_each_member_is_named_by_its_seed_and_the_keys_the_members_differ_in() -> None:
    stack = [composed(0, "optim.lr=0.5"), composed(1, "optim.lr=0.003")]
    assert member_names(stack) == ["seed 0 optim.lr=0.5", "seed 1 optim.lr=0.003"]
    assert member_names([composed(0), composed(3)]) == ["seed 0", "seed 3"]


def test_a_stack_says_its_data_once_or_per_member_where_the_members_read_different_data() -> None:
    files = "files: $HARNESS_DATA_DIR/babi/en-10k task 2"
    assert data_lines(["seed 0", "seed 1"], [files, files]) == [f"data: {files}"]
    names = ["seed 0 task.tasks=[same]", "seed 0 task.tasks=[between]"]
    assert data_lines(names, ["generated: same", "generated: between"]) == [
        "[seed 0 task.tasks=[same]] data: generated: same", "[seed 0 task.tasks=[between]] data: generated: between"]


@pytest.mark.parametrize(("saved", "expected"), [
    (None, 0),
    ({"harness": {}}, "solo"),
    ({"harness": {"stacked": {"epochs_done": 2}}}, 2),
    ({"harness": {"stacked": {"epochs_done": 4}}}, "done"),
    ({"harness": {"stacked": {"epochs_done": 5}}}, "done"),
    ({"harness": {"stacked": {"epochs_done": 1}, "fit_stopped": True}}, "done"),
])
def test_a_member_resumes_where_its_checkpoint_says(monkeypatch: pytest.MonkeyPatch, saved: dict[str, Any] | None,
                                                    expected: str | int) -> None:
    monkeypatch.setattr(supervised, "intact_checkpoint", lambda run: None if saved is None else "ckpt")
    monkeypatch.setattr(supervised, "load_checkpoint", lambda path: saved)
    assert _resume_point(SimpleNamespace(), max_epochs=4) == expected  # type: ignore[arg-type]


def test_the_trainer_follows_what_the_members_share(monkeypatch: pytest.MonkeyPatch) -> None:
    def trainer(name: str) -> Any:
        return lambda *args: name

    monkeypatch.setattr(stacked_optim, "OptimStackedTrainer", trainer("optim"))
    monkeypatch.setattr(stacked_data, "MixedStackedTrainer", trainer("mixed"))
    monkeypatch.setattr(stacked_launch, "StackedTrainer", trainer("plain"))

    def member(lr: float) -> Any:
        return SimpleNamespace(cfg=SimpleNamespace(optim={"name": "adam", "lr": lr}))

    one, two = object(), object()
    assert stacked_launch._trainer(None, [one, one], [member(0.1), member(0.1)], []) == "plain"
    assert stacked_launch._trainer(None, [one, two], [member(0.1), member(0.1)], []) == "mixed"
    assert stacked_launch._trainer(None, [one, one], [member(0.1), member(0.01)], []) == "optim"
    assert stacked_launch._trainer(None, [one, two], [member(0.1), member(0.01)], []) == "optim"
