"""``harness retest RUN [task.key=value ...]``: test a trained supervised run on other data, without retraining.

The run's stored config, with the given ``task.*`` overrides, builds the task again; the test splits it
yields that the run has not reported yet (``test_<name>``) are evaluated with the run's best checkpoint and
added to its results.json (``metrics``), with a ``retests`` record of what was asked, on which data
(fingerprint) and with which code. Examples: a bAbI run trained on generated data, tested on the official
files (``task.test_on=[files]``); a Relations Game run tested on another held-out object set
(``task.test_sets=[stripes,hexominoes]``). The run's identity (its run id) does not change: it was trained as
it was. The retest's data must give the model the shapes it was trained with (the task's ``info``), else the
retest is refused.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from harness.config import recompose
from harness.data import TARGET, TensorDictDataset
from harness.errors import UserError
from harness.provenance import code_files, fingerprint, git_info
from harness.publish import find_run
from harness.registry import REGISTRY, load_entry
from harness.runners.build import prepare_task
from harness.runners.supervised import intact_checkpoint, load_checkpoint
from harness.runs import Run, default_runs_dir, now_iso


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: TensorDictDataset, batch_size: int) -> dict[str, float]:
    """Accuracy and mean cross-entropy over a split (as the supervised runner's test step)."""
    model.eval()
    correct, loss_sum, n = 0, 0.0, len(dataset)
    for start in range(0, n, batch_size):
        batch = dataset.__getitems__(list(range(start, min(start + batch_size, n))))
        logits = model(**{k: v for k, v in batch.items() if k != TARGET})  # [B, C]
        loss_sum += float(F.cross_entropy(logits, batch[TARGET], reduction="sum"))
        correct += int((logits.argmax(-1) == batch[TARGET]).sum())
    return {"acc": correct / max(n, 1), "loss": loss_sum / max(n, 1)}


def retest(name: str, overrides: list[str], runs_dir: Path | None = None) -> dict[str, float]:
    """Evaluate a completed run on the new test splits its task yields under ``overrides``; returns the metrics
    added to its results.json."""
    run: Run = find_run(name, runs_dir or default_runs_dir())
    results = run.completed_results("retested")
    bad = [item for item in overrides if not item.split("=", 1)[0].lstrip("+").startswith("task.")]
    if bad:
        raise UserError(f"retest changes the test data only: {', '.join(bad)} is not a task.* setting")
    stored = OmegaConf.to_container(OmegaConf.load(run.config_path))
    assert isinstance(stored, dict)
    if REGISTRY.task(str(stored["task"]["name"])).kind != "supervised" or \
            (stored.get("protocol") or {}).get("name", "single") != "single":
        raise UserError("retest works on single-protocol supervised runs")
    composed = recompose(stored, overrides)
    prepared = prepare_task(composed)
    data = prepared.task.load()
    model = load_entry(composed.model.interfaces[composed.task.interface])(composed.cfg.model, data.info)
    checkpoint = intact_checkpoint(run, ("best", "last"))
    if checkpoint is None:
        raise UserError(f"{run.path}: no intact checkpoint to test (published runs keep none; retest a local run)")
    state = {k.removeprefix("model."): v for k, v in load_checkpoint(checkpoint)["state_dict"].items()}
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise UserError(f"the retest data gives the model other shapes than it was trained with "
                        f"({str(exc).splitlines()[0][:120]}); only the test data may change") from None
    reported = {key.split("/")[0] for key in results.get("metrics") or {}}
    new = {f"test_{n}": split for n, split in data.extra_test.items() if f"test_{n}" not in reported}
    if not new:
        raise UserError(f"no new test split: the run already reports {', '.join(sorted(reported))}; name other "
                        "data with task.* settings (e.g. task.test_on=[files] for bAbI)")
    added: dict[str, float] = {}
    for prefix, split in new.items():
        measured = evaluate(model, split, int(composed.cfg.train.eval_batch_size))
        added.update({f"{prefix}/acc": measured["acc"], f"{prefix}/loss": measured["loss"],
                      f"{prefix}/error": 1.0 - measured["acc"]})
    if any(not math.isfinite(v) for v in added.values()):
        raise UserError("the retest produced non-finite metrics")
    files = code_files()
    record = {"at": now_iso(), "overrides": list(overrides), "splits": sorted(new), "checkpoint": checkpoint.name,
              "data": {"fingerprint": prepared.data.get("fingerprint"), "files": prepared.data.get("files") or {},
                       "source": data.source},
              "git": git_info(), "code": fingerprint(files)}
    results["metrics"] = {**(results.get("metrics") or {}), **added}
    results["retests"] = [*(results.get("retests") or []), record]
    run.write_results(results)
    return added
