"""The analyses stored after a supervised run's test (harness/runners/analysis.py), on a tiny hand-made model, against
a literal transcription of Shanahan et al. 2020 ("An Explicitly Relational Neural Network Architecture", ICML),
Supplementary S2.3: for q = 1..k, accuracy with q randomly chosen heads kept (mean and best over the subsets; one
subset when every head is kept), each subset's accuracy a full forward pass with the central module's
``head_mask``; and the attention maps of §4 (Fig. 6a) saved with their images:

* the split analysed is ``analysis.split``, else the first held-out test split, else ``test``; at most
  ``analysis.max_examples`` examples; the model is left in the mode it was in;
* the shortcut (one unmasked pass, the mask applied to R* blocks) is offered only to central modules whose mask
  scales each head's block of the output, with an encoder and an output head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.runners.analysis import check_analysis_split, head_pruning, pruning_is_exact, run_analysis

HEADS, D = 3, 2


class _Central(nn.Module):
    """k = 3 heads; head h's block R^h [n, 2] = x @ W_h, times ``head_mask[h]`` when a mask is set."""

    HEAD_MASK_SCALES_OUTPUT = True

    def __init__(self) -> None:
        super().__init__()
        self.heads = HEADS
        self.w = nn.Parameter(torch.randn(HEADS, 4, D))
        self.head_mask: torch.Tensor | None = None
        self.last_attention: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x [n, 4] -> [n, k * d]
        blocks = []
        for h in range(HEADS):
            block = x @ self.w[h]  # [n, d]
            if self.head_mask is not None:
                block = block * self.head_mask[h]
            blocks.append(block)
        self.last_attention = torch.softmax(x[:, None, :].expand(-1, HEADS, -1), -1)  # [n, k, 4]
        return torch.cat(blocks, -1)


class _Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.out = nn.Linear(HEADS * D, 3)
        self.task = nn.Embedding(2, 3)

    def forward(self, features: torch.Tensor, task_id: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.out(torch.tanh(features))
        return logits if task_id is None else logits + self.task(task_id)


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.central = _Central()
        self.head = _Head()

    def forward(self, image: torch.Tensor, task_id: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.central(self.encoder(image)), task_id)


def _dataset(n: int, seed: int) -> TensorDictDataset:
    generator = torch.Generator().manual_seed(seed)
    return TensorDictDataset({"image": torch.randn(n, 4, generator=generator),
                              "task_id": torch.randint(0, 2, (n,), generator=generator),
                              TARGET: torch.randint(0, 3, (n,), generator=generator)})


def _curve_by_hand(model: _Model, data: dict[str, torch.Tensor], subsets: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    curve = []
    with torch.no_grad():
        for q in range(1, HEADS + 1):
            accs = []
            for _ in range(subsets if q < HEADS else 1):
                mask = torch.zeros(HEADS)
                mask[rng.choice(HEADS, size=q, replace=False)] = 1.0
                model.central.head_mask = mask
                logits = model(data["image"], data["task_id"])
                accs.append(float((logits.argmax(-1) == data[TARGET]).float().mean()))
            curve.append({"heads": q, "mean": sum(accs) / len(accs), "best": max(accs), "subsets": len(accs)})
    model.central.head_mask = None
    return curve


def test_the_pruning_curve_is_masked_forward_passes() -> None:
    torch.manual_seed(0)
    model = _Model().eval()
    dataset = _dataset(40, seed=1)
    out = head_pruning(model, dataset, subsets=4, seed=5, batch_size=16)  # batches of 16, 16, 8
    expected = _curve_by_hand(model, dataset.tensors, subsets=4, seed=5)
    assert out["split_size"] == 40
    assert [p["heads"] for p in out["curve"]] == [1, 2, 3] and [p["subsets"] for p in out["curve"]] == [4, 4, 1]
    for got, want in zip(out["curve"], expected, strict=True):
        assert got == pytest.approx(want, abs=1e-6)


def _cfg(split: str | None, max_examples: int) -> Any:
    return OmegaConf.create({"seed": 5, "train": {"eval_batch_size": 16},
                             "analysis": {"enabled": True, "split": split, "attention_images": 3,
                                          "pruning_subsets": 4, "max_examples": max_examples}})


@pytest.mark.parametrize("training", [True, False])
def test_the_first_held_out_split_is_analysed_on_at_most_max_examples(tmp_path: Path, training: bool) -> None:
    torch.manual_seed(0)
    model = _Model().train(training)
    splits = {"test": _dataset(30, seed=1), "test_held_out": _dataset(50, seed=2), "test_other": _dataset(20, seed=3)}
    summary = run_analysis(model, splits, _cfg(None, 24), tmp_path)
    assert model.training is training and model.central.head_mask is None
    assert summary["split"] == "test_held_out"
    assert summary["files"] == ["analysis/attention.npz", "analysis/head_pruning.json"]
    first = {name: t[:24] for name, t in splits["test_held_out"].tensors.items()}
    expected = _curve_by_hand(model.eval(), first, subsets=4, seed=5)
    assert summary["pruning_acc_at"] == pytest.approx({str(p["heads"]): p["mean"] for p in expected if p["heads"] != 3})
    with np.load(tmp_path / "attention.npz") as stored:
        np.testing.assert_array_equal(stored["image"], first["image"][:3].numpy())
        assert stored["attention_0"].shape == (3, HEADS, 4)
    assert "split_size" in (tmp_path / "head_pruning.json").read_text()
    assert run_analysis(model, splits, _cfg("test", 24), tmp_path)["split"] == "test"
    assert run_analysis(model, {"test": splits["test"]}, _cfg(None, 24), tmp_path)["split"] == "test"


def test_the_shortcut_is_offered_only_where_the_mask_scales_the_output() -> None:
    model = _Model()
    assert pruning_is_exact(model)
    model.central.HEAD_MASK_SCALES_OUTPUT = False  # e.g. a mask inside shared-weight iterations
    assert not pruning_is_exact(model)
    without_head = _Model()
    del without_head.head
    assert not pruning_is_exact(without_head)


def test_the_analysed_split_must_be_one_of_the_run_s_test_splits() -> None:
    data = TaskData(train=_dataset(2, 0), val=_dataset(2, 0), test=_dataset(2, 0), info={}, source="scripted",
                    extra_test={"held_out": _dataset(2, 0)})
    for good in (None, "test", "test_held_out"):
        check_analysis_split(_cfg(good, 10), data)
    with pytest.raises(UserError, match="test, test_held_out"):
        check_analysis_split(_cfg("held_out", 10), data)
