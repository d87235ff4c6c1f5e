"""Per-example predictions of a supervised run's test splits, stored with the run.

``<run>/predictions/predictions.csv.gz``, one row per test example::

    split,example,target,prediction,correct
    test,0,7,7,1
    test_stripes,41,0,1,0

``split`` is the metric prefix the run reports (``test``, ``test_<name>`` for a held-out set), ``example`` the
example's index in that split (the task builds its splits in a fixed order from the run's data, whose
fingerprint the run records), ``target`` and ``prediction`` class ids. The accuracy of each split recomputed
from the file equals the run's ``<split>/acc``: ``summary.json`` beside it records both, so a failure can be
inspected and a run re-scored (another metric, a subset of examples) without retraining.

When the task can show an example as text (``spec.describe`` in its task.yaml, e.g. bAbI's story, question
and answer), ``wrong.json`` holds a sample of the wrong answers so rendered, with what the model said; the
run page shows it.

The launcher writes these files after a supervised single-protocol run completes (with the best
checkpoint, as the test metrics were measured); ``harness predict RUN`` writes them for a completed run that
has its checkpoints, including the splits ``harness retest`` added to it (rebuilt from each retest's overrides
and predicted as the retest scored them), and exits 1 (naming the splits) when a recomputed accuracy differs from
the reported one. The files describe a run and never change its numbers: a
failure to write them is reported, and the run stays completed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch

from harness.config import Composed
from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.registry import load_entry
from harness.runs import FLOAT32_SLACK, Run, atomic_write, atomic_write_text, default_runs_dir, holding_run

FOLDER = "predictions"
TABLE = "predictions.csv.gz"
SUMMARY = "summary.json"
WRONG = "wrong.json"
WRONG_SAMPLE = 12  # wrong answers rendered per split
COLUMNS = ("split", "example", "target", "prediction", "correct")


def load_trained_model(run: Run, composed: Composed, data: TaskData) -> torch.nn.Module:
    """The run's model with the weights of its best checkpoint (its last when no best was kept), in eval mode.
    A UserError when the run has no intact checkpoint or the data gives other shapes than it was trained on."""
    from harness.runners.supervised import intact_checkpoint, load_checkpoint

    model = load_entry(composed.model.interfaces[composed.task.interface])(composed.cfg.model, data.info)
    checkpoint = intact_checkpoint(run, ("best", "last"))
    if checkpoint is None:
        raise UserError(f"{run.path}: no intact checkpoint in checkpoints/ (a published run keeps none: use a run of "
                        "your store; a run whose checkpoints were lost is retrained with bench --force)")
    state = {k.removeprefix("model."): v for k, v in load_checkpoint(checkpoint)["state_dict"].items()}
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise UserError(f"the data gives the model other shapes than it was trained with "
                        f"({str(exc).splitlines()[0][:120]}); only the test data may change") from None
    return model.eval()


def evaluated_count(dataset: TensorDictDataset, batch_size: int, limit: Any) -> int:
    """How many examples of a split the runner's test pass saw: all, or the first ``limit`` batches (an int)
    or fraction of batches (a float), as Lightning's ``limit_test_batches``."""
    n = len(dataset)
    if limit is None:
        return n
    batches = math.ceil(n / batch_size)
    kept = int(limit) if isinstance(limit, int) else int(batches * float(limit))
    return min(n, max(kept, 0) * batch_size)


@torch.no_grad()
def predict(model: torch.nn.Module, dataset: TensorDictDataset, batch_size: int,
            count: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets and argmax predictions ([N] each) of the first ``count`` examples (all by default)."""
    n = len(dataset) if count is None else count
    targets, predictions = [], []
    for start in range(0, n, batch_size):
        batch = dataset.__getitems__(list(range(start, min(start + batch_size, n))))
        logits = model(**{k: v for k, v in batch.items() if k != TARGET})  # [B, C]
        targets.append(batch[TARGET].reshape(-1))
        predictions.append(logits.argmax(-1).reshape(-1))
    if not targets:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    return torch.cat(targets), torch.cat(predictions)


def test_splits(data: TaskData) -> dict[str, TensorDictDataset]:
    """The run's test splits under their metric prefixes."""
    return {"test": data.test, **{f"test_{name}": split for name, split in data.extra_test.items()}}


def write_predictions(run: Run, composed: Composed, data: TaskData, model: torch.nn.Module | None = None,
                      retested: list[tuple[Composed, TaskData, list[str], Any]] | None = None) -> dict[str, Any]:
    """Predict every test split with the run's best checkpoint and write ``<run>/predictions/``; returns the
    summary (per split: examples, wrong, accuracy from the file, the run's reported accuracy). ``retested``: the
    splits ``harness retest`` added, each with the config and data its retest built them from and the batch limit
    it scored them under (None: whole); each split is predicted as it was scored (the run's own splits as its test
    pass saw them)."""
    cfg = composed.cfg
    model = model if model is not None else load_trained_model(run, composed, data)
    batch_size = int(cfg.train.eval_batch_size)
    reported = (run.read_results().get("metrics") or {}) if run.results_path.exists() else {}
    rows: list[tuple[str, int, int, int, int]] = []
    summary: dict[str, Any] = {}
    rendered: list[dict[str, Any]] = []
    groups = [(composed, data, test_splits(data), cfg.train.get("limit_eval_batches"))]
    for retest_composed, retest_data, names, retest_limit in retested or []:
        splits = test_splits(retest_data)
        groups.append((retest_composed, retest_data, {name: splits[name] for name in names if name in splits},
                       retest_limit))
    for group_composed, group_data, splits, limit in groups:
        group_rows: list[tuple[str, int, int, int, int]] = []
        wrong_ids: dict[str, list[int]] = {}
        for split, dataset in splits.items():
            count = evaluated_count(dataset, batch_size, limit)
            targets, predictions = predict(model, dataset, batch_size, count)
            correct = (targets == predictions).long()
            group_rows += zip([split] * count, range(count), targets.tolist(), predictions.tolist(),
                              correct.tolist(), strict=True)
            wrong = [i for i in range(count) if not correct[i]]
            wrong_ids[split] = wrong
            acc = float(correct.float().mean()) if count else None
            summary[split] = {"examples": count, "wrong": len(wrong), "acc": acc,
                              "reported_acc": reported.get(f"{split}/acc")}
        rows += group_rows
        rendered += _render_wrong(group_composed, group_data, wrong_ids, group_rows)
    _write_files(run.path / FOLDER, rows, summary, rendered)
    return summary


def _write_files(folder: Path, rows: list[tuple[str, int, int, int, int]], summary: dict[str, Any],
                 rendered: list[dict[str, Any]]) -> None:
    """The folder's files, ``summary.json`` last and removed first: a write stopped part-way (a kill) leaves no
    summary, which reads as predictions missing (the bench command says so, ``harness predict`` writes them), never
    a summary beside a table or wrong answers of another write."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SUMMARY).unlink(missing_ok=True)
    _write_table(folder / TABLE, rows)
    if rendered:
        atomic_write_text(folder / WRONG, json.dumps(rendered, indent=2) + "\n")
    atomic_write_text(folder / SUMMARY, json.dumps(summary, indent=2) + "\n")


def _write_table(path: Path, rows: list[tuple[str, int, int, int, int]]) -> None:
    """The table, gzipped (the same bytes for the same rows), written atomically: a killed write leaves none."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    packed = gzip.compress(text.getvalue().encode("utf-8"), compresslevel=9, mtime=0)
    atomic_write(path, lambda handle: handle.write(packed))


def _render_wrong(composed: Composed, data: TaskData, wrong_ids: dict[str, list[int]],
                  rows: list[tuple[str, int, int, int, int]]) -> list[dict[str, Any]]:
    """A sample of wrong answers as the task describes them (``spec.describe``); [] when it has no describer."""
    if not composed.task.describe:
        return []
    describe = load_entry(composed.task.describe)
    said = {(split, example): (target, prediction) for split, example, target, prediction, _ in rows}
    rendered = []
    for split, wrong in wrong_ids.items():
        chosen = wrong[:WRONG_SAMPLE]
        if not chosen:
            continue
        pairs = [said[(split, i)] for i in chosen]
        for example, text in zip(chosen, describe(composed.cfg, data, split, chosen, pairs), strict=True):
            rendered.append({"split": split, "example": example, **text})
    return rendered


def read_predictions(folder: Path) -> list[dict[str, Any]]:
    """The rows of a stored predictions table (ints where the column is numeric)."""
    with gzip.open(folder / TABLE, "rt", encoding="utf-8") as handle:
        return [{k: (v if k == "split" else int(v)) for k, v in row.items()} for row in csv.DictReader(handle)]


def predict_run(name: str, runs_dir: Path | None = None) -> dict[str, Any]:
    """``harness predict RUN``: write the predictions of a completed run of the store from its checkpoint, with the
    run's folder held (:func:`harness.runs.holding_run`): no training of it starts meanwhile."""
    from harness.publish import find_run

    with holding_run(find_run(name, runs_dir or default_runs_dir()), "predicted"):
        return _predict_held(name, runs_dir)


def _predict_held(name: str, runs_dir: Path | None) -> dict[str, Any]:
    """:func:`predict_run` once the run's folder is held."""
    from omegaconf.errors import OmegaConfBaseException

    from harness.runners.retest import config_lacks, reload_run

    run, results, composed, _, data = reload_run(name, [], runs_dir, "predicted", own_data=True)
    try:
        summary = write_predictions(run, composed, data, retested=_retested(name, results, runs_dir))
    except OmegaConfBaseException as exc:  # a key the model or the evaluation reads is not stored
        raise config_lacks(run, exc, "predicted", "the model or its evaluation") from None
    for split, numbers in summary.items():
        print(f"{split}: {numbers['wrong']} wrong of {numbers['examples']} (acc {numbers['acc']:.4f}; "
              f"the run reported {_shown(numbers['reported_acc'])})")
    print(f"wrote {run.path / FOLDER}")
    if differ := disagreeing(summary):
        print(disagreement_line(run.path.name, differ), file=sys.stderr)
    return summary


def disagreeing(summary: dict[str, Any]) -> list[str]:
    """The splits whose accuracy recomputed from the predictions differs from the one the run reported (by more
    than float32 rounding, :data:`harness.runs.FLOAT32_SLACK`): the checkpoint or the data then no longer explain
    the run's figure."""
    return [split for split, numbers in summary.items()
            if isinstance(numbers.get("acc"), float) and isinstance(numbers.get("reported_acc"), int | float)
            and abs(numbers["acc"] - numbers["reported_acc"]) > FLOAT32_SLACK]


def disagreement_line(run_name: str, splits: list[str]) -> str:
    """One line naming the splits :func:`disagreeing` found."""
    return (f"{run_name}: the predictions of {', '.join(splits)} do not give the accuracy the run reported (see "
            "above): its best checkpoint or its data no longer explain its figure")


def _retested(name: str, results: dict[str, Any],
              runs_dir: Path | None) -> list[tuple[Composed, TaskData, list[str], Any]]:
    """The splits each of the run's retests added (``retests`` in its results.json), with the config and data
    rebuilt from that retest's overrides and the batch limit it scored them under (a record without one: whole,
    as retests scored before they kept the run's limit), as :func:`write_predictions` takes them."""
    from harness.runners.retest import reload_run

    groups, seen = [], set()
    for record in results.get("retests") or []:
        names = [split for split in record.get("splits") or [] if split not in seen]
        if not names:
            continue
        _, _, composed, _, data = reload_run(name, list(record.get("overrides") or []), runs_dir, "predicted",
                                             recorded_data=record.get("data") or {})
        groups.append((composed, data, names, record.get("limit_eval_batches")))
        seen.update(names)
    return groups


def _shown(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else "none"


def write_after_run(run: Run, composed: Composed, data: TaskData) -> None:
    """The launcher's call after a supervised single run completes; a failure is reported, never raised (the
    run's numbers are stored already)."""
    try:
        summary = write_predictions(run, composed, data)
    except Exception as exc:  # noqa: BLE001  the files describe the run; the run itself stands
        print(f"predictions not written ({type(exc).__name__}: {exc}); `harness predict {run.path.name}` retries",
              flush=True)
        return
    wrong = ", ".join(f"{split} {n['wrong']}/{n['examples']}" for split, n in summary.items())
    print(f"predictions: {run.path / FOLDER} (wrong: {wrong})", flush=True)
    if differ := disagreeing(summary):
        print(disagreement_line(run.path.name, differ), flush=True)
