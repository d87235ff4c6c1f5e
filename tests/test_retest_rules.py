"""Rules of ``harness retest`` (harness/runners/retest.py), against its docstrings, with the model, run and data
replaced by tiny stand-ins (no training):

* a split is scored as the run's own test pass scored its splits: the first ``train.limit_eval_batches`` batches
  where the run had a limit; accuracy is the share of those examples whose arg-max logit is the target, loss the
  mean cross-entropy over them (Lightning's ``limit_test_batches``), and ``error`` is 1 - accuracy;
* the record keeps the limit, the examples scored of each split and the checkpoint scored;
* only test settings (``task.test_*`` and the listed keys) may change: what the run trained on stays as it was;
* data whose fingerprint differs from the recorded one in any digit is refused (no partial comparison).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.data import TARGET, TensorDictDataset
from harness.errors import UserError
from harness.runners import retest as retest_module
from harness.runners.retest import check_same_data, evaluate, is_test_setting


class Scores(nn.Module):
    """Logits ``x W^T + b`` for 4 answers from 3 features."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, 3] -> [B, 4]
        return self.linear(x)


def _split(n: int = 5) -> TensorDictDataset:
    torch.manual_seed(0)
    x = torch.randn(n, 3)  # [N, 3]
    target = torch.tensor([0, 1, 2, 3, 1][:n])  # [N]
    return TensorDictDataset({"x": x, TARGET: target})


def _literal(model: Scores, split: TensorDictDataset, count: int) -> tuple[float, float]:
    """Accuracy and mean cross-entropy over the first ``count`` examples, one example and one answer at a time."""
    weight, bias = model.linear.weight.tolist(), model.linear.bias.tolist()  # [4, 3], [4]
    correct, loss = 0, 0.0
    for i in range(count):
        features = split.tensors["x"][i].tolist()
        target = int(split.tensors[TARGET][i])
        logits = [sum(w * f for w, f in zip(row, features, strict=True)) + b
                  for row, b in zip(weight, bias, strict=True)]  # [4]
        correct += int(max(range(4), key=lambda answer: logits[answer]) == target)
        loss += math.log(sum(math.exp(value) for value in logits)) - logits[target]
    return correct / count, loss / count


def test_evaluate_scores_the_first_examples_asked_for_across_batches() -> None:
    torch.manual_seed(1)
    model, split = Scores(), _split()
    for count in (5, 3, 1):
        measured = evaluate(model, split, batch_size=2, count=count)
        acc, loss = _literal(model, split, count)
        assert measured["acc"] == pytest.approx(acc, abs=1e-12), count
        assert measured["loss"] == pytest.approx(loss, rel=1e-6), count


def test_a_retest_scores_a_new_split_as_the_runs_own_test_pass_and_records_how(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run tested on the first batch of 2 (``train.limit_eval_batches=1``) is retested on a 5-example split:
    2 of its 5 examples are scored."""
    torch.manual_seed(2)
    model, split = Scores(), _split()
    written: list[dict[str, Any]] = []
    run = SimpleNamespace(path=Path("runs/babi/lstm/r"), write_results=written.append)
    composed = SimpleNamespace(cfg=OmegaConf.create({"train": {"eval_batch_size": 2, "limit_eval_batches": 1}}))
    prepared = SimpleNamespace(data={"fingerprint": "f", "files": {"babi/extra.txt": "d"}})
    data = SimpleNamespace(extra_test={"files": split}, source="generator")
    results: dict[str, Any] = {"metrics": {"test/acc": 0.5}}
    monkeypatch.setattr(retest_module, "reload_run", lambda *args: (run, results, composed, prepared, data))
    monkeypatch.setattr(retest_module, "load_trained_model", lambda *args: model)
    monkeypatch.setattr(retest_module, "intact_checkpoint", lambda run, names: Path(f"{names[0]}.ckpt"))
    added = retest_module._retest_held("r", ["task.test_on=[files]"], None)
    acc, loss = _literal(model, split, 2)
    assert set(added) == {"test_files/acc", "test_files/loss", "test_files/error"}
    assert added["test_files/acc"] == pytest.approx(acc, abs=1e-12)
    assert added["test_files/loss"] == pytest.approx(loss, rel=1e-6)
    assert added["test_files/error"] == pytest.approx(1.0 - acc, abs=1e-12)
    (stored,) = written
    assert stored["metrics"] == {"test/acc": 0.5, **added}
    (record,) = stored["retests"]
    assert record["splits"] == ["test_files"] and record["checkpoint"] == "best.ckpt"
    assert record["limit_eval_batches"] == 1 and record["examples"] == {"test_files": {"scored": 2, "of": 5}}
    assert record["data"] == {"fingerprint": "f", "files": {"babi/extra.txt": "d"}, "source": "generator"}


def test_only_test_settings_may_change() -> None:
    for key in ("task.test_on", "task.test_sets", "task.real_sets", "task.n_test", "task.generator_test_questions"):
        assert is_test_setting(key), key
    for key in ("task.tasks", "task.source", "task.babi_id", "task.test_", "optim.lr", "train.max_epochs",
                "task.generator_train_questions"):
        assert not is_test_setting(key), key


def test_data_whose_fingerprint_differs_in_any_digit_is_refused() -> None:
    run = SimpleNamespace(path=Path("runs/babi/lstm/babi-lstm-smoke-s0-0123abcd"))
    check_same_data(run, {"fingerprint": "abcdef012345"}, {"fingerprint": "abcdef012345"}, "retested")
    for found in ("abcdef012346", "bbcdef012345", "abcd00000000"):
        with pytest.raises(UserError, match=f"fingerprint {found}, where it measured abcdef012345"):
            check_same_data(run, {"fingerprint": "abcdef012345"}, {"fingerprint": found}, "retested")
