"""Rules of harness/optim.py that the kernel comparisons in tests/test_optim.py leave open.

* TF1's RMSProp keeps the learning rate inside the momentum accumulator (TensorFlow 1.15,
  tensorflow/core/kernels/training_ops.cc, ``ApplyRMSProp``: ``mom = momentum * mom + lr * g / sqrt(ms + eps)``;
  ``var -= mom``), so a learning-rate change (warm-up end, decay) does not rescale the momentum already held.
* The TPR-RNN decay fires when the validation cost falls strictly below the threshold (Schlag & Schmidhuber 2018,
  Appendix A; ischlag/TPR-RNN, tpr_rnn_graph.py).
* ``build_optimizer`` hands every setting of the ``optim`` section to the optimiser it builds.
"""

from __future__ import annotations

import math

import pytest
import torch
from omegaconf import OmegaConf

from harness.optim import LearningRatePolicy, TF1Nadam, TF1RMSProp, build_optimizer


def _scalar(value: float = 0.5) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.tensor([value], dtype=torch.float64))


def test_tf1_rmsprop_learning_rate_change_keeps_the_momentum_already_held() -> None:
    """Two steps, lr 0.1 then 0.01, momentum 0.5, decay 0.9, eps 0.1, grads 1 and -2, written out by hand."""
    param = _scalar()
    opt = TF1RMSProp([param], lr=0.1, decay=0.9, momentum=0.5, eps=0.1)
    ms, mom, theta = 1.0, 0.0, 0.5
    for lr, g in ((0.1, 1.0), (0.01, -2.0)):
        for group in opt.param_groups:
            group["lr"] = lr
        param.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
        ms = 0.9 * ms + 0.1 * g * g
        mom = 0.5 * mom + lr * g / math.sqrt(ms + 0.1)
        theta -= mom
    # step 1: ms 1.0, mom 0.1/sqrt(1.1); step 2: ms 1.3, mom 0.05/sqrt(1.1) - 0.02/sqrt(1.4)
    assert theta == pytest.approx(0.5 - 0.1 / math.sqrt(1.1) - (0.05 / math.sqrt(1.1) - 0.02 / math.sqrt(1.4)))
    assert param.item() == pytest.approx(theta, abs=1e-14)


def test_decay_needs_the_validation_loss_strictly_below_the_threshold() -> None:
    cfg = OmegaConf.create({"lr": 1e-3, "warmup_steps": 0, "warmup_factor": 1.0,
                            "decay_below_val_loss": 0.1, "decay_factor": 0.5})
    policy = LearningRatePolicy(cfg)
    assert not policy.observe_val_loss(0.1)
    assert policy.lr_at(10) == 1e-3
    assert policy.observe_val_loss(0.0999)
    assert policy.lr_at(10) == 5e-4


def _optim_cfg(name: str, **overrides: float) -> object:
    cfg = {"name": name, "lr": 0.01, "betas": [0.8, 0.9], "eps": 0.3, "momentum": 0.5, "decay": 0.7,
           "weight_decay": 0.25}
    cfg.update(overrides)
    return OmegaConf.create(cfg)


def test_build_optimizer_passes_every_setting_to_the_tf1_kernels() -> None:
    nadam = build_optimizer([_scalar()], _optim_cfg("tf1_nadam"))
    assert isinstance(nadam, TF1Nadam)
    assert nadam.param_groups[0]["lr"] == 0.01
    assert tuple(nadam.param_groups[0]["betas"]) == (0.8, 0.9)
    assert nadam.param_groups[0]["eps"] == 0.3
    rmsprop = build_optimizer([_scalar()], _optim_cfg("tf1_rmsprop"))
    assert isinstance(rmsprop, TF1RMSProp)
    group = rmsprop.param_groups[0]
    assert (group["lr"], group["decay"], group["momentum"], group["eps"]) == (0.01, 0.7, 0.5, 0.3)


@pytest.mark.parametrize("name, cls, keys", [
    ("adam", torch.optim.Adam, ("lr", "betas", "eps", "weight_decay")),
    ("adamw", torch.optim.AdamW, ("lr", "betas", "eps", "weight_decay")),
    ("sgd", torch.optim.SGD, ("lr", "momentum", "weight_decay")),
])
def test_build_optimizer_passes_every_setting_to_the_torch_optimisers(name: str, cls: type,
                                                                     keys: tuple[str, ...]) -> None:
    optimizer = build_optimizer([_scalar()], _optim_cfg(name))
    assert type(optimizer) is cls
    expected = {"lr": 0.01, "betas": (0.8, 0.9), "eps": 0.3, "momentum": 0.5, "weight_decay": 0.25}
    for key in keys:
        value = optimizer.param_groups[0][key]
        assert (tuple(value) if key == "betas" else value) == expected[key], key
