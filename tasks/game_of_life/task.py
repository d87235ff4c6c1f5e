"""Game of Life with interventions (Experiment 2 of Moskvichev & Liu 2021, §7.2 and Appendix B) as a ``stream``
task (harness/streams.py); the rule and the draws are in :mod:`tasks.game_of_life.generator`.

* Step 1: the world is its initial board, and every cell is told (Appendix B: "we provide all pixels at the
  first time step"): S*S instructions (x, y, alive), in the order x * S + y.
* Step t > 1: the board advances one generation, then its interventions flip their cells; each is told as an
  instruction (x, y, new value). Without interventions nothing is told after step 1 (the mask is all False).
* Queries, every step: every cell (x, y), in the order x * S + y; the answer is 1 when it is alive at step t.
  Group "intervened" for a cell flipped by an intervention at this step, "cell" for every other (step 1's
  telling is not an intervention).

``info``: instruction_fields [S, S, 2], query_fields [S, S], num_answers 2, groups ["cell", "intervened"],
max_instructions S*S (at least ``interventions``, which cannot exceed S*S), max_queries S*S.

For the stepwise runner's pictures it also offers ``full_step(worlds)`` (every cell asked, nothing told) and
``render(values)`` (per-cell answers or beliefs as grey images [n, S, S]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from harness.provenance import fingerprint
from harness.streams import SPLITS, StreamStep
from tasks.game_of_life.generator import (
    GENERATOR_VERSION,
    Settings,
    apply_interventions,
    draw_interventions,
    life_step,
    random_boards,
)

GROUPS = ["cell", "intervened"]


@dataclass
class LifeWorlds:
    """A batch of Game of Life worlds at the last step handed out (the initial boards after ``reset``)."""

    board: torch.Tensor  # bool [B, S, S], cell (x, y) at [:, x, y]


class GameOfLifeTask:
    """Conway's Game of Life on S x S boards, all cells told at step 1, interventions told as they happen."""

    def __init__(self, cfg: Any) -> None:
        self.settings = Settings.from_config(cfg.task)
        size = self.settings.size
        cells = size * size
        self.info: dict[str, Any] = {
            "instruction_fields": [size, size, 2],
            "query_fields": [size, size],
            "num_answers": 2,
            "query_groups": list(GROUPS),
            "max_instructions": max(cells, self.settings.interventions),
            "max_queries": cells,
        }
        flat = torch.arange(cells)
        self._coords = torch.stack([flat // size, flat % size], dim=1)  # [S*S, 2]: (x, y) of cell x * S + y

    def coords(self, device: torch.device) -> torch.Tensor:
        """(x, y) of every cell in the order x * S + y: int64 [S*S, 2] on ``device``."""
        if self._coords.device != device:
            self._coords = self._coords.to(device)
        return self._coords

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> LifeWorlds:
        """``batch_size`` random initial boards (each cell alive with probability ``task.density``)."""
        _check_split(split)
        return LifeWorlds(board=random_boards(self.settings, batch_size, generator))

    def step(self, worlds: LifeWorlds, t: int, generator: torch.Generator,
             split: str) -> tuple[LifeWorlds, StreamStep]:
        """Step t (from 1): step 1 tells the whole board; later steps advance a generation, then intervene."""
        _check_split(split)
        if t < 1:
            raise ValueError(f"steps count from 1, got t={t}")
        board = worlds.board  # [B, S, S]
        batch, device = board.shape[0], board.device
        coords = self.coords(device)  # [S*S, 2]
        cells = coords.shape[0]
        width = int(self.info["max_instructions"])
        if t == 1:
            values = board.reshape(batch, cells, 1).long()  # [B, S*S, 1]
            instructions = torch.cat([coords.expand(batch, cells, 2), values], dim=2)  # [B, S*S, 3]
            mask = torch.ones(batch, cells, dtype=torch.bool, device=device)  # [B, S*S]
            flipped = torch.zeros_like(board)  # [B, S, S]
        else:
            board = life_step(board, self.settings.boundary)
            drawn = draw_interventions(self.settings, batch, generator)  # cells [B, N]
            board, flipped = apply_interventions(board, drawn)
            n = drawn.cells.shape[1]
            instructions = torch.zeros(batch, width, 3, dtype=torch.long, device=device)  # [B, I, 3]
            mask = torch.zeros(batch, width, dtype=torch.bool, device=device)  # [B, I]
            if n:
                new_value = board.reshape(batch, cells).gather(1, drawn.cells).long()  # [B, N]
                told = torch.cat([coords[drawn.cells], new_value[..., None]], dim=2)  # [B, N, 3]
                instructions[:, :n] = told * drawn.mask[..., None]  # padding rows stay (0, 0, 0)
                mask[:, :n] = drawn.mask
        step = StreamStep(instructions=instructions, instruction_mask=mask,
                          queries=coords.expand(batch, cells, 2).clone(),  # [B, Q, 2]
                          query_mask=torch.ones(batch, cells, dtype=torch.bool, device=device),  # [B, Q]
                          answers=board.reshape(batch, cells).long(),  # [B, Q]
                          query_group=flipped.reshape(batch, cells).long())  # [B, Q]
        return LifeWorlds(board=board), step

    def full_step(self, worlds: LifeWorlds) -> StreamStep:
        """Every cell asked about the worlds as they are, nothing told (the stepwise runner's pictures)."""
        board = worlds.board  # [B, S, S]
        batch, device = board.shape[0], board.device
        coords = self.coords(device)  # [S*S, 2]
        cells, width = coords.shape[0], int(self.info["max_instructions"])
        return StreamStep(instructions=torch.zeros(batch, width, 3, dtype=torch.long, device=device),
                          instruction_mask=torch.zeros(batch, width, dtype=torch.bool, device=device),
                          queries=coords.expand(batch, cells, 2).clone(),  # [B, Q, 2]
                          query_mask=torch.ones(batch, cells, dtype=torch.bool, device=device),
                          answers=board.reshape(batch, cells).long(),  # [B, Q]
                          query_group=torch.zeros(batch, cells, dtype=torch.long, device=device))

    def render(self, values: torch.Tensor) -> torch.Tensor:
        """Answers or beliefs in [0, 1] per cell, [n, S*S] in query order, as grey images uint8 [n, S, S] (row x,
        column y; alive is white)."""
        size = self.settings.size
        grey = (values.detach().float().cpu().clamp(0, 1) * 255).round().to(torch.uint8)  # [n, S*S]
        return grey.reshape(-1, size, size)

    def describe_data(self) -> dict[str, Any]:
        s = self.settings
        source = (f"generator: Game of Life B3/S23 with interventions (Experiment 2) v{GENERATOR_VERSION}, "
                  f"{s.size}x{s.size} {s.boundary} board, density {s.density}, 0..{s.interventions} flips per step")
        return {"source": source, "fingerprint": fingerprint(s.describe()), "files": {}}


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
