"""A model with state of its own beside its parameters and buffers (MemN2N's schedule: its epoch count and the
hooks that sum and clip its gradients) cannot train as a stack, not even a stack of one, whose stacked parameters
would leave that state behind: the member would train otherwise than its solo run under the same run id."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import compose
from harness.runners.stacked_launch import UnstackableModelError, launch_stack, unstacked_state


def _memn2n(seed: int):  # noqa: ANN202 - harness.config.Composed
    return compose("babi", "memn2n", "smoke", [f"seed={seed}", "train.threads=1", "task.source=generator",
                                               "task.generator_train_questions=60", "task.generator_test_questions=20"])


def test_a_stack_of_one_memn2n_is_refused_before_any_run_is_stored(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WANDB_MODE", "disabled")
    with pytest.raises(UnstackableModelError, match=r"memn2n cannot train as a stack on babi \(it keeps state of "
                                                    r"its own \(_extra_state\)"):
        launch_stack([_memn2n(6)], runs_dir=tmp_path / "runs")
    assert not list((tmp_path / "runs").glob("*/*/*"))


def test_a_model_of_parameters_and_buffers_only_has_nothing_a_stack_would_lose() -> None:
    from torch import nn

    assert unstacked_state([nn.Linear(2, 3)]) is None
    hooked = nn.Linear(2, 3)
    hooked.weight.register_post_accumulate_grad_hook(lambda parameter: None)
    assert "weight" in (unstacked_state([hooked]) or "")
