"""The budget that trains a run its time cap stopped again without the cap, on a machine of any speed
(:func:`capped_budget`): a supervised run's epochs or steps up to its tested checkpoint, a stepwise run's cycles."""

from __future__ import annotations

from typing import Any

from reports.stops import last_epoch_part, run_stop, validation_steps
from reports.store import RunRecord


def _capped_alone_on_a_cpu(run: RunRecord) -> bool:
    """Whether a completed supervised run was stopped by the time cap and trained on the CPU, alone and in one
    attempt: a GPU is not bitwise deterministic, a stack's members train as one, and a fresh run does not draw a
    resumed one's random numbers."""
    stop = run_stop(run)
    return not run.is_stepwise and stop is not None and stop.kind == "cap" and not run.gpu \
        and not run.stack and len(run.results.get("attempts") or []) <= 1


def checkpoint_budget(run: RunRecord) -> int | None:
    """For a completed supervised run that the time cap stopped, the epochs up to its tested (best) checkpoint,
    where that checkpoint closed a whole epoch; None for any other run. Trained for exactly these epochs without
    the cap (``train.max_epochs=K train.max_time_s=null``), the same config and seed train the same budget on a
    machine of any speed, and on the same kind of CPU reach that checkpoint again, bit for bit: each epoch's order
    is drawn from the seed, a CPU run is deterministic (harness/runners/supervised.py), and the cap changes nothing
    before it stops training (on another kind of CPU the arithmetic rounds differently, and the difference grows
    with training: the README's Results section gives runs repeated both ways). None, too, for a run trained on a
    GPU (not bitwise deterministic), in a stack (its members train as one), or resumed (a fresh run does not draw
    the resumed one's random numbers)."""
    best, epochs = run.results.get("best"), run.results.get("epochs")
    if not _capped_alone_on_a_cpu(run) or not isinstance(best, dict) or not isinstance(epochs, int):
        return None
    best_epoch = best.get("epoch")
    if not isinstance(best_epoch, int) or best_epoch < 1:
        return None
    if best_epoch < epochs or (len(validation_steps(run)) >= 2 and last_epoch_part(run) is None):
        return best_epoch
    return None


def budget_settings(epochs: int) -> dict[str, Any]:
    """The config settings that train a capped run's :func:`checkpoint_budget`: that many epochs, without the cap."""
    return {"train.max_epochs": epochs, "train.max_time_s": None}


def step_budget(run: RunRecord) -> int | None:
    """For a completed supervised run that the time cap stopped where :func:`checkpoint_budget` has no epochs (its
    tested checkpoint is the validation the cap made part way through its last epoch, or its curves hold that one
    validation only), the optimiser steps it trained; None for any other run, and like checkpoint_budget for a run
    trained on a GPU, in a stack or resumed. The cap stops training after a batch and validates there;
    ``train.max_steps`` (:func:`step_settings`) stops after that step and validates there too, so the same config
    trained for these steps without the cap reaches that validation and checkpoint again, part way through the
    epoch or at its end."""
    steps = run.results.get("steps")
    if not _capped_alone_on_a_cpu(run) or not isinstance(steps, int) or steps < 1 or checkpoint_budget(run) is not None:
        return None
    validations = validation_steps(run)
    return steps if validations and validations[-1] == steps else None


def step_settings(steps: int) -> dict[str, Any]:
    """The config settings that train a capped run's :func:`step_budget`: that many steps, without the cap."""
    return {"train.max_steps": steps, "train.max_time_s": None}


def cycle_budget(run: RunRecord) -> int | None:
    """For a completed stepwise run that its time cap stopped, the outer cycles it trained; None for any other run.
    Trained for exactly these cycles without the cap (:func:`cycle_settings`), the same config and seed train the
    run again on a machine of any speed: each cycle's worlds are drawn from the seed and the cycle's number
    (``cycle_generator`` in harness/runners/stepwise.py), the cap changes nothing before it stops training, and the
    last cycle is validated either way (the cap validates where it stops, the iteration limit at its end). None,
    too, for a run trained on a GPU (not bitwise deterministic) or resumed."""
    stop, steps = run_stop(run), run.results.get("steps")
    if not run.is_stepwise or stop is None or stop.kind != "cap" or not isinstance(steps, int) or steps < 1 \
            or run.gpu or len(run.results.get("attempts") or []) > 1:
        return None
    return steps


def cycle_settings(cycles: int) -> dict[str, Any]:
    """The config settings that train a capped stepwise run's :func:`cycle_budget`: that many cycles, no cap."""
    return {"stepwise.iterations": cycles, "stepwise.max_time_s": None}


def capped_budget(run: RunRecord) -> dict[str, Any] | None:
    """The settings that train a capped run's budget without the cap (:func:`checkpoint_budget`, else
    :func:`step_budget`, for a supervised run, :func:`cycle_budget` for a stepwise one); None where it has none."""
    if run.is_stepwise:
        cycles = cycle_budget(run)
        return None if cycles is None else cycle_settings(cycles)
    epochs = checkpoint_budget(run)
    if epochs is not None:
        return budget_settings(epochs)
    steps = step_budget(run)
    return None if steps is None else step_settings(steps)
