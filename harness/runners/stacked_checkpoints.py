"""A stack's end-of-epoch checkpoints written as one: every member's, or none.

At an epoch's end each member of a stack (:mod:`harness.runners.stacked`) writes its ``best.ckpt`` (when its
monitor improved) and ``last.ckpt``. Written one member after another, a kill between two members' writes (SIGKILL,
the OOM killer, a crash) or a failed write left them an epoch apart; they then resumed as one stack per epoch, whose
kernels add in another order than the whole stack's, and their figures drifted by rounding from an uninterrupted
stack's. So the writes go in two phases:

1. **stage**: every member's checkpoints are written to ``<name>.staged`` beside their final names (each one
   atomically, :class:`harness.runners.supervised.AtomicCheckpointIO`); each holds the epoch and the paths of the
   members staged with it;
2. **commit**: once all are written, each member's staged files are renamed over its checkpoints, ``last.ckpt``
   first.

Before a stack resumes, :func:`settle_staged` reads what a kill left: when every member named in a staged file
holds that epoch, as a staged ``last.ckpt`` or as its ``last.ckpt`` (the commit had begun), the renames are
finished; otherwise (the kill came while staging) the staged files are deleted and the members resume, together,
from the epoch before. Either way they resume as one stack, to the uninterrupted stack's numbers.

Nothing here changes what a run computes (it is left out of the code record: :data:`harness.provenance.NOT_COMPUTING`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness.runners.supervised import AtomicCheckpointIO, load_checkpoint
from harness.runs import Run

STAGED = ".staged"
KEY = "staged_with"  # in a checkpoint's ``harness.stacked``: the members written with it, relative to its run


def staged(path: Path) -> Path:
    """Where ``path``'s next version waits for the commit."""
    return path.with_name(path.name + STAGED)


class EpochCheckpoints:
    """One epoch's checkpoints of the stack's active members: staged one by one, then committed together."""

    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs
        self.files: list[tuple[Path, Path]] = []  # (staged, final), in the order the commit renames them

    def stage(self, run: Run, checkpoint: dict[str, Any], best: bool) -> None:
        """Write a member's ``last.ckpt`` (and its ``best.ckpt`` when ``best``) to staged files."""
        checkpoint["harness"]["stacked"][KEY] = [os.path.relpath(other.path, run.path) for other in self.runs]
        finals = [run.last_checkpoint, *([run.best_checkpoint] if best else [])]
        for final in finals:
            AtomicCheckpointIO().save_checkpoint(checkpoint, staged(final))
        self.files += [(staged(final), final) for final in finals]

    def commit(self) -> None:
        """Rename every staged file over its checkpoint (each member's ``last.ckpt`` before its ``best.ckpt``)."""
        for waiting, final in self.files:
            os.replace(waiting, final)
        self.files = []


def _epochs_done(path: Path) -> int | None:
    """The epochs a stacked checkpoint completed; None when it is missing, unreadable or not a stack's."""
    try:
        return int(load_checkpoint(path)["harness"]["stacked"]["epochs_done"])
    except Exception:  # missing, truncated or foreign: torch raises several kinds
        return None


def _reached(run: Run) -> int | None:
    """The epoch a member's checkpoints reach with its staged ``last.ckpt`` counted."""
    waiting = staged(run.last_checkpoint)
    return _epochs_done(waiting if waiting.exists() else run.last_checkpoint)


def _whole(run: Run, files: list[Path]) -> tuple[bool, int | None]:
    """Whether the epoch in ``run``'s staged files was staged by every member named in them, and that epoch."""
    try:
        saved = load_checkpoint(files[0])["harness"]["stacked"]
        epoch, others = int(saved["epochs_done"]), list(saved[KEY])
    except Exception:  # unreadable or foreign: not a commit to finish
        return False, None
    return all(_reached(Run((run.path / other).resolve())) == epoch for other in others), epoch


def settle_staged(runs: list[Run]) -> list[str]:
    """Finish or undo the commit a kill interrupted, for the members ``runs`` (module docstring); one line per
    member whose staged files were acted on."""
    decisions = []
    for run in runs:
        files = [staged(path) for path in (run.last_checkpoint, run.best_checkpoint) if staged(path).exists()]
        if files:
            decisions.append((run, files, *_whole(run, files)))
    lines = []
    for run, files, whole, epoch in decisions:
        for waiting in files:
            if whole:
                os.replace(waiting, waiting.with_name(waiting.name.removesuffix(STAGED)))
            else:
                waiting.unlink()
        if whole:
            lines.append(f"{run.path.name}: its checkpoints of epoch {epoch}, which every member had written, are put "
                         "in place")
        else:
            what = "that cannot be read" if epoch is None else f"of epoch {epoch}, which not every member had written,"
            lines.append(f"{run.path.name}: its staged checkpoint {what} is discarded (the stack trains that epoch "
                         "again)")
    return lines
