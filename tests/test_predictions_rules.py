"""A run's per-example predictions (``harness/runners/predictions.py``, its module docstring and those of
``evaluated_count``, ``write_predictions``, ``disagreeing`` and ``_retested``), each checked against the documented
rule written out by hand on a tiny model and data set, without training:

* a test pass limited to ``limit`` batches sees ``min(n, k * batch_size)`` examples, ``k`` being ``limit`` itself
  for an int and ``int(batches * limit)`` for a fraction, as Lightning's ``limit_test_batches``
  (``lightning/pytorch/trainer/connectors/data_connector.py``, ``_parse_num_batches``:
  ``min(length, limit_batches)`` for an int, ``int(length * limit_batches)`` for a float);
* ``predictions.csv.gz`` holds one row per test example, ``split,example,target,prediction,correct``: ``example``
  the example's index in its split (``test``, ``test_<name>``), ``prediction`` the argmax of the model's logits
  for that example; ``summary.json`` the accuracy recomputed from the rows beside the run's reported one;
* a recomputed accuracy disagrees only when it is further than ``FLOAT32_SLACK`` from the reported one;
* each split a retest added is predicted once, with the first retest that added it.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.runners import predictions, retest
from harness.runners.predictions import (
    FOLDER,
    disagreeing,
    evaluated_count,
    read_predictions,
    write_predictions,
)
from harness.runs import FLOAT32_SLACK, Run


def lightning_count(n: int, batch_size: int, limit: Any) -> int:
    """Examples a Lightning test pass sees under ``limit_test_batches`` (its rule, written out)."""
    batches = -(-n // batch_size)
    if limit is None:
        return n
    kept = min(batches, limit) if isinstance(limit, int) else int(batches * limit)
    seen = 0
    for batch in range(kept):
        seen += min(batch_size, n - batch * batch_size)
    return seen


@pytest.mark.parametrize("limit", [None, 0.5, 0.6, 0.99, 1.0, 1, 2, 4, 5])
def test_the_examples_counted_are_those_lightnings_limited_test_pass_sees(limit: Any) -> None:
    dataset = TensorDictDataset({"x": torch.zeros(10, 1), TARGET: torch.zeros(10, dtype=torch.long)})
    assert evaluated_count(dataset, 3, limit) == lightning_count(10, 3, limit)


class Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, 4] -> [B, 3]
        return self.layer(x)


def split(n: int, generator: torch.Generator) -> TensorDictDataset:
    return TensorDictDataset({"x": torch.randn(n, 4, generator=generator),
                              TARGET: torch.randint(0, 3, (n,), generator=generator)})


@pytest.mark.parametrize("limit", [None, 0.5])
def test_each_row_is_its_examples_target_and_the_models_argmax_for_it(tmp_path: Path, limit: Any) -> None:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    data = TaskData(train=split(4, generator), val=split(4, generator), test=split(7, generator), info={},
                    source="test", extra_test={"far": split(5, generator)})
    model = Linear().eval()
    run = Run(tmp_path / "run")
    run.path.mkdir()
    (run.path / "results.json").write_text(json.dumps({"metrics": {"test/acc": 0.25}}))
    cfg = OmegaConf.create({"train": {"eval_batch_size": 2, "limit_eval_batches": limit}})
    composed = SimpleNamespace(cfg=cfg, task=SimpleNamespace(describe=None))
    summary = write_predictions(run, composed, data, model=model)  # type: ignore[arg-type]

    expected = []
    for name, dataset in (("test", data.test), ("test_far", data.extra_test["far"])):
        count = len(dataset) if limit is None else min(len(dataset), int(-(-len(dataset) // 2) * limit) * 2)
        for i in range(count):
            x, target = dataset.tensors["x"][i], int(dataset.tensors[TARGET][i])
            with torch.no_grad():
                logits = model.layer.weight @ x + model.layer.bias  # [3]
            prediction = max(range(3), key=lambda c: float(logits[c]))
            expected.append({"split": name, "example": i, "target": target, "prediction": prediction,
                             "correct": int(target == prediction)})
    assert read_predictions(run.path / FOLDER) == expected
    for name in ("test", "test_far"):
        rows = [row for row in expected if row["split"] == name]
        assert summary[name]["examples"] == len(rows)
        assert summary[name]["wrong"] == sum(1 - row["correct"] for row in rows)
        assert summary[name]["acc"] == pytest.approx(sum(row["correct"] for row in rows) / len(rows))
    assert summary["test"]["reported_acc"] == 0.25 and summary["test_far"]["reported_acc"] is None


def test_an_accuracy_exactly_float32_slack_away_agrees() -> None:
    summary = {"a": {"acc": 0.0, "reported_acc": FLOAT32_SLACK}, "b": {"acc": 0.0, "reported_acc": 2 * FLOAT32_SLACK},
               "c": {"acc": 0.5, "reported_acc": None}}
    assert disagreeing(summary) == ["b"]


def test_a_split_two_retests_added_is_predicted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilt: list[list[str]] = []

    def reload_run(name: str, overrides: list[str], *_: Any, **__: Any) -> tuple[Any, ...]:
        rebuilt.append(overrides)
        return None, None, f"composed {overrides}", None, f"data {overrides}"

    monkeypatch.setattr(retest, "reload_run", reload_run)
    results = {"retests": [{"splits": ["test_a"], "overrides": ["x=1"], "limit_eval_batches": 2},
                           {"splits": ["test_a", "test_b"], "overrides": ["x=2"]},
                           {"splits": ["test_b"], "overrides": ["x=3"]}]}
    assert predictions._retested("run", results, None) == [
        ("composed ['x=1']", "data ['x=1']", ["test_a"], 2), ("composed ['x=2']", "data ['x=2']", ["test_b"], None)]
    assert rebuilt == [["x=1"], ["x=2"]]
