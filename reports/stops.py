"""What ended a completed supervised or stepwise run (:func:`run_stop`), read from its config and results by its
runner's stopping rules, and how much of its last epoch a time cap let it train."""

from __future__ import annotations

import math
from dataclasses import dataclass

from reports.store import CURRICULUM, RunRecord, cfg_get


@dataclass(frozen=True)
class Stop:
    """What ended a supervised or stepwise run (:func:`run_stop`): ``kind`` one of :data:`STOP_KINDS`, ``text`` as
    the tables say it ("10-minute cap", "val/acc reached 0.99")."""

    kind: str
    text: str


STOP_KINDS = ("cap", "target", "epoch_limit", "patience", "iteration_limit")


def _cap_stop(cap: object) -> Stop | None:
    """The time cap ``cap`` (seconds) as a Stop: in minutes where it is a whole number of tenths of a minute
    ("4.5-minute cap"), else in seconds ("430-second cap", not "7.16667-minute cap"); None where there is none."""
    if not isinstance(cap, int | float) or isinstance(cap, bool) or not cap:
        return None
    return Stop("cap", f"{cap / 60:g}-minute cap" if float(cap) % 6 == 0 else f"{cap:g}-second cap")


def validation_steps(run: RunRecord) -> list[int]:
    """The optimiser step of each of a supervised run's validations (its curves' rows with the monitored metric),
    in order; empty where its curves or monitor are not at hand."""
    best = run.results.get("best")
    monitor = best.get("metric") if isinstance(best, dict) else None
    curves = run.curves
    if not isinstance(monitor, str) or curves is None or monitor not in curves.columns or "step" not in curves:
        return []
    return [int(step) for step in curves.dropna(subset=[monitor])["step"]]


def last_epoch_part(run: RunRecord) -> float | None:
    """The part of its last epoch that a supervised run trained, when the time cap cut that epoch short (e.g.
    0.13); None when the last epoch was whole, or where the curves cannot tell (a single validation).

    Lightning's time cap (``train.max_time_s``) stops training after a batch and then still validates, so a capped
    run's last validation, and perhaps its best checkpoint, can come part way through an epoch, which
    ``results.json`` counts as a whole one. An epoch's length in steps is the step of the first validation; the
    other stops (a target reached, patience spent, the epoch limit) act only at an epoch's end."""
    steps, epochs = run.results.get("steps"), run.results.get("epochs")
    validations = validation_steps(run)
    if len(validations) < 2 or not isinstance(steps, int) or not isinstance(epochs, int) or validations[0] <= 0:
        return None
    part = steps / validations[0] - (epochs - 1)
    return part if 0 < part < 1 else None


def capped_in_first_epoch(run: RunRecord) -> bool:
    """Whether the time cap stopped a completed supervised run inside its first epoch: it validated there once,
    and ``results.json`` counts that as epoch 1, though how much of the epoch it was no earlier validation tells
    (:func:`last_epoch_part` needs two), so the steps it trained are what says how far it got."""
    stop = run_stop(run)
    return (last_epoch_part(run) is None and run.results.get("epochs") == 1
            and isinstance(run.results.get("steps"), int) and stop is not None and stop.kind == "cap")


def epochs_text(epochs: float) -> str:
    """A number of epochs as trained: whole ones as an integer, an epoch cut short with one decimal, rounded down
    (5.13 as "5.1", 15.08 as "15.0": not whole, never "16")."""
    return str(int(epochs)) if epochs == int(epochs) else f"{math.floor(epochs * 10) / 10:.1f}"


def run_stop(run: RunRecord) -> Stop | None:
    """What ended a completed supervised run, read from its config and results by the runner's stopping rules
    (harness/runners/supervised.py; results.json records no reason): a last epoch cut short, which only the
    ``train.max_time_s`` cap does (:func:`last_epoch_part`); the monitored validation metric reaching
    ``train.stop_at``; ``train.max_epochs``; ``train.early_stop_patience`` epochs without a strictly better one
    (Lightning's EarlyStopping, counted from the best epoch); otherwise, with epochs left, the time cap. A stepwise
    run by its own runner's rules (:func:`_stepwise_stop`). None for an RL run (RL runs record their own
    ``stop_reason``), a curriculum (each stage stops by these rules on its own), a run not completed, or one none
    of these rules explains."""
    results = run.results
    epochs, best = results.get("epochs"), results.get("best")
    if run.is_stepwise and not run.is_rl:
        return _stepwise_stop(run)
    if run.is_rl or run.protocol == CURRICULUM or run.status != "completed" \
            or not isinstance(epochs, int) or not isinstance(best, dict):
        return None
    cap = cfg_get(run.config, "train.max_time_s")
    at_cap = _cap_stop(cap)
    if at_cap and last_epoch_part(run) is not None:
        return at_cap
    monitor, value, best_epoch = best.get("metric"), best.get("value"), best.get("epoch")
    target = cfg_get(run.config, "train.stop_at")
    if isinstance(target, int | float) and isinstance(value, int | float) and (
            value >= target if cfg_get(run.config, "train.monitor_mode") != "min" else value <= target):
        return Stop("target", f"{monitor} reached {float(target)!r}")
    limit = cfg_get(run.config, "train.max_epochs")
    if isinstance(limit, int) and epochs >= limit:
        return Stop("epoch_limit", "its epoch limit")
    patience = cfg_get(run.config, "train.early_stop_patience")
    if isinstance(patience, int) and isinstance(best_epoch, int) and epochs - best_epoch >= patience:
        return Stop("patience", f"{patience} epoch{'s' * (patience != 1)} without a better {monitor}")
    return at_cap


def _stepwise_stop(run: RunRecord) -> Stop | None:
    """What ended a completed stepwise run, by the rules of harness/runners/stepwise.py (results.json records no
    reason), which are checked at each validation: validation accuracy reaching ``stepwise.stop_at`` (the best
    value is the one that reached it), ``stepwise.iterations`` outer cycles, else the ``stepwise.max_time_s`` cap
    (which validates at the cycle it stops at). None for a run not completed or none of these explains."""
    steps, best = run.results.get("steps"), run.results.get("best")
    if run.status != "completed" or not isinstance(steps, int):
        return None
    target, value = cfg_get(run.config, "stepwise.stop_at"), best.get("value") if isinstance(best, dict) else None
    if isinstance(target, int | float) and isinstance(value, int | float) and value >= target:
        return Stop("target", f"val/acc reached {float(target)!r}")
    iterations = cfg_get(run.config, "stepwise.iterations")
    if isinstance(iterations, int) and steps >= iterations:
        return Stop("iteration_limit", "its iteration limit")
    cap = cfg_get(run.config, "stepwise.max_time_s")
    return _cap_stop(cap)


def stop_rule(run: RunRecord) -> str | None:
    """What ended a completed supervised run, as the tables say it (:func:`run_stop`); None where unknown."""
    stop = run_stop(run)
    return stop.text if stop else None
