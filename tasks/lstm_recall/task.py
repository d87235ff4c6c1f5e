"""LSTM recall (Experiment 0 of Moskvichev & Liu 2021, §7.1 and Appendix B) as a ``stream`` task
(harness/streams.py): one instruction and one query per step; the rule and the draws are in
:mod:`tasks.lstm_recall.generator`.

At step t a world tells one instruction, its input token x_t (fields [K]), and asks one query:

* ``seq2seq``: a single dummy query field (fields [1], value 0): "what is the answer now?"; group "recall"
  where x_t is RECALL, else "repeat".
* ``thorough``: the query says what it asks (fields [2]: 0 = repeat, 1 = recall); its group is that kind.

``info``: instruction_fields [K], query_fields [1] or [2], num_answers K (the target is never RECALL, so the
RECALL class is never an answer), groups ["repeat", "recall"], max_instructions 1, max_queries 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from harness.provenance import fingerprint
from harness.streams import SPLITS, StreamStep
from tasks.lstm_recall.generator import GENERATOR_VERSION, Settings, draw_step

GROUPS = ["repeat", "recall"]


@dataclass
class RecallWorlds:
    """A batch of recall worlds: all a world keeps is its target token."""

    target: torch.Tensor  # int64 [B], 0..K-2


class LstmRecallTask:
    """Experiment 0's recall streams, ``seq2seq`` or ``thorough`` (``task.mode``)."""

    def __init__(self, cfg: Any) -> None:
        self.settings = Settings.from_config(cfg.task)
        s = self.settings
        self.info: dict[str, Any] = {
            "instruction_fields": [s.vocab],
            "query_fields": [1] if s.mode == "seq2seq" else [2],
            "num_answers": s.vocab,
            "query_groups": list(GROUPS),
            "max_instructions": 1,
            "max_queries": 1,
        }

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> RecallWorlds:
        """``batch_size`` worlds, each with a uniform regular target token."""
        _check_split(split)
        target = torch.randint(0, self.settings.vocab - 1, (batch_size,), generator=generator,
                               device=generator.device)  # [B]
        return RecallWorlds(target=target)

    def step(self, worlds: RecallWorlds, t: int, generator: torch.Generator,
             split: str) -> tuple[RecallWorlds, StreamStep]:
        """Step t (from 1): the input x_t as the instruction, one query and its answer."""
        _check_split(split)
        draw = draw_step(self.settings, worlds.target, t, generator, split)
        batch, device = worlds.target.shape[0], worlds.target.device
        if self.settings.mode == "seq2seq":
            queries = torch.zeros(batch, 1, 1, dtype=torch.long, device=device)  # [B, 1, 1]
        else:
            queries = draw.recall.long()[:, None, None]  # [B, 1, 1]
        ones = torch.ones(batch, 1, dtype=torch.bool, device=device)  # [B, 1]
        step = StreamStep(instructions=draw.token[:, None, None],  # [B, 1, 1]
                          instruction_mask=ones, queries=queries, query_mask=ones.clone(),
                          answers=draw.answer[:, None],  # [B, 1]
                          query_group=draw.recall.long()[:, None])  # [B, 1]
        return worlds, step

    def describe_data(self) -> dict[str, Any]:
        s = self.settings
        source = (f"generator: LSTM recall (Experiment 0) v{GENERATOR_VERSION}, mode {s.mode}, K={s.vocab}, "
                  f"length {s.length}, recall_prob {s.recall_prob}, reminder_noise {s.reminder_noise} (train only), "
                  f"first_recall_step {s.first_recall_step}")
        return {"source": source, "fingerprint": fingerprint(s.describe()), "files": {}}


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
