"""The LSTM recall streams of Experiment 0 (Moskvichev & Liu 2021, §7.1 and Appendix B, "Experiment 0"): the
settings, the pure rule that maps inputs to answers, and the random draws of one step.

A vocabulary of K tokens, the last of which (id K-1) is RECALL. The first input is the *target* (never RECALL).

* ``seq2seq`` (the failure case, and the reminder-noise success case): the input x_t is a uniform regular token
  (0..K-2), flipped to RECALL with probability ``recall_prob``; the step t == length is always RECALL. The answer
  is x_t, or the target where x_t is RECALL: "4, 3, 6, RECALL, 3, RECALL" -> "4, 3, 6, 4, 3, 4" (§7.1).
* ``thorough`` (the modified-LSTM success case): inputs are never RECALL; a separate query asks "recall" with
  probability ``recall_prob`` (and always at t == length), else "repeat". Answer: the target or x_t.

Reminder noise (§7.1, "second success case"): in training only, each answer is replaced by the target with
probability ``reminder_noise``. ``first_recall_step`` is the paper's "recall gaps" / "simulating TBPTT"
variant: before that step there are no RECALL inputs, recall queries or reminder noise (the forced recall at
t == length excepted). Steps past ``length`` (long rollouts) go on the same way, with no forced recall.

Choices the paper leaves open: one draw order per step (a regular token, a uniform for recall, a uniform for
noise, always all three, whatever t and split), so a validation stream and a training stream from the same
seed have the same inputs and differ only by the noise; the noise applies in both modes (it is a no-op on
answers that are already the target).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from harness.errors import UserError

GENERATOR_VERSION = 1
MODES = ("seq2seq", "thorough")
DEFAULTS: dict[str, Any] = {"mode": "seq2seq", "vocab": 10, "length": 10, "recall_prob": 0.3,
                            "reminder_noise": 0.0, "first_recall_step": 2}


@dataclass(frozen=True)
class Settings:
    """What the streams are a function of (with the generator's seed)."""

    mode: str = "seq2seq"
    vocab: int = 10  # K, RECALL included
    length: int = 10  # T: the step that is always a recall
    recall_prob: float = 0.3
    reminder_noise: float = 0.0
    first_recall_step: int = 2

    @property
    def recall_id(self) -> int:
        return self.vocab - 1

    @classmethod
    def from_config(cls, task_cfg: Any) -> Settings:
        """The settings under ``cfg.task`` (a mapping), checked: a UserError names the first bad key."""
        values = {}
        for key, default in DEFAULTS.items():
            value = task_cfg.get(key) if key in task_cfg else None
            if value is None:
                raise UserError(f"lstm_recall: 'task.{key}' is missing (default {default!r})")
            values[key] = value
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """A UserError (one line) for a value outside its range."""
        if self.mode not in MODES:
            raise UserError(f"bad value for 'task.mode': {self.mode!r}; one of {', '.join(MODES)}")
        for key, low in (("vocab", 3), ("length", 2), ("first_recall_step", 2)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"bad value for 'task.{key}': {value!r}; an int >= {low}")
        for key in ("recall_prob", "reminder_noise"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise UserError(f"bad value for 'task.{key}': {value!r}; a probability in [0, 1]")

    def describe(self) -> dict[str, str]:
        return {"generator": f"lstm_recall v{GENERATOR_VERSION}", **{k: str(v) for k, v in asdict(self).items()}}


def seq2seq_answers(inputs: torch.Tensor, recall_id: int, target: torch.Tensor | None = None) -> torch.Tensor:
    """The answers of the seq2seq task: each input, or the target where the input is RECALL.

    inputs [B, T] int64 (T >= 1); target [B] (default: the first input). Returns [B, T] int64."""
    target = inputs[:, 0] if target is None else target  # [B]
    return torch.where(inputs == recall_id, target[:, None], inputs)


def thorough_answers(inputs: torch.Tensor, asks_recall: torch.Tensor,
                     target: torch.Tensor | None = None) -> torch.Tensor:
    """The answers of the thorough task: the target where the query asks recall, else the input.

    inputs [B, T] int64, asks_recall [B, T] bool, target [B] (default: the first input). Returns [B, T]."""
    target = inputs[:, 0] if target is None else target  # [B]
    return torch.where(asks_recall, target[:, None], inputs)


@dataclass
class Draw:
    """One step of a batch of worlds."""

    token: torch.Tensor  # int64 [B]: the input x_t (seq2seq: RECALL where recall)
    recall: torch.Tensor  # bool [B]: seq2seq: x_t is RECALL; thorough: the query asks recall
    answer: torch.Tensor  # int64 [B]: after reminder noise
    noised: torch.Tensor  # bool [B]: reminder noise replaced the answer by the target (train only)


def draw_step(settings: Settings, target: torch.Tensor, t: int, generator: torch.Generator, split: str) -> Draw:
    """Step t (from 1) of the worlds whose targets are ``target`` [B], its randomness from ``generator``."""
    if t < 1:
        raise ValueError(f"steps count from 1, got t={t}")
    batch, device = target.shape[0], target.device
    regular = torch.randint(0, settings.vocab - 1, (batch,), generator=generator, device=device)  # [B]
    recall_u = torch.rand(batch, generator=generator, device=device)  # [B]
    noise_u = torch.rand(batch, generator=generator, device=device)  # [B]
    open_ = t >= settings.first_recall_step  # recall gaps: nothing recalls before first_recall_step
    if t == 1:
        token, recall = target, torch.zeros(batch, dtype=torch.bool, device=device)
    else:
        token = regular
        recall = (recall_u < settings.recall_prob) & open_
        if t == settings.length:
            recall = torch.ones_like(recall)
    if settings.mode == "seq2seq":
        token = torch.where(recall, torch.full_like(token, settings.recall_id), token)
        answer = seq2seq_answers(token[:, None], settings.recall_id, target)[:, 0]
    else:
        answer = thorough_answers(token[:, None], recall[:, None], target)[:, 0]
    noised = (noise_u < settings.reminder_noise) & (open_ and split == "train")
    return Draw(token=token, recall=recall, answer=torch.where(noised, target, answer), noised=noised)
