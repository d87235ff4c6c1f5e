"""Analyses stored with a run after its test, for models whose central module exposes them
(Shanahan et al. 2020, §4 and Supplementary S2.3):

* ``analysis/attention.npz``: per-head attention of the central module (``central.last_attention``)
  for a batch of test images, beside the images and labels, so the paper's Fig. 6a heat maps can be
  redrawn;
* ``analysis/head_pruning.json``: accuracy when only q randomly chosen heads are kept
  (``central.head_mask``), q = 1..k, mean and best over random subsets (Fig. S10). Offered only for central
  modules whose mask merely scales each head's block of their output (``HEAD_MASK_SCALES_OUTPUT``: PrediNet
  and MHA), where computing the module once and re-running only the output MLP per subset is exact; the
  relational and 2-simplicial blocks apply their mask inside two shared-weight iterations, LayerNorm and
  max-pooling, so they get no curve rather than a wrong one.

Models opt in by exposing those attributes; the analysis never changes the stored metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.runs import atomic_write, atomic_write_text


def test_split_names(data: TaskData) -> list[str]:
    """The names analyses may choose from: ``test`` and ``test_<name>`` for each extra test split."""
    return ["test", *[f"test_{name}" for name in data.extra_test]]


def check_analysis_split(cfg: Any, data: TaskData) -> None:
    """``analysis.split`` must name one of the run's test splits (checked before the run starts)."""
    split = cfg.analysis.split
    names = test_split_names(data)
    if split is not None and split not in names:
        raise UserError(f"bad value for 'analysis.split': {split!r}; this run's test splits are {', '.join(names)}")


def pruning_is_exact(model: nn.Module) -> bool:
    """Whether the head-pruning shortcut (one pass of encoder and central module) equals masked forward passes."""
    central = getattr(model, "central", None)
    return (bool(getattr(central, "HEAD_MASK_SCALES_OUTPUT", False)) and hasattr(central, "heads")
            and all(hasattr(model, part) for part in ("encoder", "head")))


def _inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: t for name, t in batch.items() if name != TARGET}


@torch.no_grad()
def save_attention(model: nn.Module, dataset: TensorDictDataset, n_images: int, path: Path) -> None:
    batch = dataset.__getitems__(list(range(min(n_images, len(dataset)))))
    model(**_inputs(batch))
    attention = model.central.last_attention  # type: ignore[union-attr]
    arrays = {f"attention_{i}": a.cpu().numpy() for i, a in enumerate(attention)} if isinstance(
        attention, tuple) else {"attention_0": attention.cpu().numpy()}
    arrays.update({name: t.cpu().numpy() for name, t in batch.items()})
    atomic_write(path, lambda handle: np.savez_compressed(handle, **arrays))


@torch.no_grad()
def _central_outputs(model: nn.Module, dataset: TensorDictDataset,
                     batch_size: int) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Every example's central-module output R* [n, out_dim] with all heads kept, its task ids [n] (or None)
    and its targets [n]: the parts of the forward pass that a head mask does not change."""
    outputs, task_ids, targets = [], [], []
    for start in range(0, len(dataset), batch_size):
        batch = dataset.__getitems__(list(range(start, min(start + batch_size, len(dataset)))))
        outputs.append(model.central(model.encoder(batch["image"])))  # type: ignore[operator]
        if batch.get("task_id") is not None:
            task_ids.append(batch["task_id"])
        targets.append(batch[TARGET])
    return torch.cat(outputs), (torch.cat(task_ids) if task_ids else None), torch.cat(targets)


@torch.no_grad()
def head_pruning(model: nn.Module, dataset: TensorDictDataset, subsets: int, seed: int,
                 batch_size: int) -> dict[str, Any]:
    """Accuracy with random subsets of q heads kept, q = 1..k (S2.3: 100 subsets per q).

    A central module's ``head_mask`` scales each head's block of R* = [R^1, ..., R^k] after everything
    else it computes, so a masked R* is the unmasked one times the mask repeated over each block. The
    encoder and central module therefore run once; each subset re-runs only the output MLP.
    """
    central = model.central  # type: ignore[union-attr]
    heads = int(central.heads)
    features, task_ids, targets = _central_outputs(model, dataset, batch_size)  # [n, k * d]
    block = features.shape[1] // heads
    rng = np.random.default_rng(seed)
    curve = []
    for q in range(1, heads + 1):
        accs = []
        for _ in range(subsets if q < heads else 1):
            mask = torch.zeros(heads)
            mask[rng.choice(heads, size=q, replace=False)] = 1.0
            masked = features * mask.repeat_interleave(block).to(features)[None, :]  # [n, k * d]
            logits = model.head(masked, task_ids)  # type: ignore[operator]
            accs.append(float((logits.argmax(-1) == targets).float().mean()))
        curve.append({"heads": q, "mean": float(np.mean(accs)), "best": float(np.max(accs)),
                      "subsets": len(accs)})
    return {"split_size": len(dataset), "curve": curve}


def run_analysis(model: nn.Module, splits: dict[str, TensorDictDataset], cfg: Any, out_dir: Path) -> dict[str, Any]:
    """Write the analyses the model supports into ``out_dir``; returns a short summary for results.json."""
    central = getattr(model, "central", None)
    if not cfg.analysis.enabled or central is None or not hasattr(central, "last_attention"):
        return {}
    name = cfg.analysis.split or next((n for n in splits if n != "test"), "test")
    if name not in splits:  # checked before the run started (check_analysis_split); a curriculum stage's splits
        return {"error": f"analysis.split '{name}' is not one of {', '.join(splits)}"}
    dataset = splits[name]
    if len(dataset) > int(cfg.analysis.max_examples):
        dataset = TensorDictDataset(dataset.__getitems__(list(range(int(cfg.analysis.max_examples)))))
    was_training = model.training
    model.eval()
    summary: dict[str, Any] = {"split": name, "files": []}
    try:
        save_attention(model, dataset, int(cfg.analysis.attention_images), out_dir / "attention.npz")
        summary["files"].append("analysis/attention.npz")
        if pruning_is_exact(model):
            pruning = head_pruning(model, dataset, int(cfg.analysis.pruning_subsets), int(cfg.seed),
                                   int(cfg.train.eval_batch_size))
            atomic_write_text(out_dir / "head_pruning.json", json.dumps(pruning, indent=1) + "\n")
            summary["files"].append("analysis/head_pruning.json")
            summary["pruning_acc_at"] = {str(p["heads"]): p["mean"] for p in pruning["curve"]
                                         if p["heads"] in (1, 2, 4, 8, 16, 32)}
    finally:
        model.train(was_training)
    return summary
