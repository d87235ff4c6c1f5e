import math

import torch
from omegaconf import OmegaConf

from harness.optim import LearningRatePolicy, TF1Nadam, TF1RMSProp


def tf1_nadam_reference(grads, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, theta=0.5):
    """The TF1 Adam kernel with use_nesterov=True, written out for one scalar."""
    m = v = 0.0
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        theta -= lr_t * (b1 * m + (1 - b1) * g) / (math.sqrt(v) + eps)
    return theta


def test_tf1_nadam_matches_the_tf1_kernel():
    grads = [0.3, -1.2, 0.05, 2.0, -0.7]
    param = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
    opt = TF1Nadam([param], lr=1e-2)
    for g in grads:
        param.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
    assert abs(param.item() - tf1_nadam_reference(grads, lr=1e-2)) < 1e-12


def test_tf1_nadam_is_not_torch_nadam():
    grads = [0.3, -1.2, 0.05]
    param = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
    opt = torch.optim.NAdam([param], lr=1e-2)
    for g in grads:
        param.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
    assert abs(param.item() - tf1_nadam_reference(grads, lr=1e-2)) > 1e-6


def test_policy_warmup_is_inclusive_and_decay_happens_once():
    cfg = OmegaConf.create({"lr": 1e-3, "warmup_steps": 50, "warmup_factor": 0.1,
                            "decay_below_val_loss": 0.1, "decay_factor": 0.5})
    policy = LearningRatePolicy(cfg)
    assert policy.lr_at(0) == policy.lr_at(50) == 1e-4
    assert policy.lr_at(51) == 1e-3
    assert not policy.observe_val_loss(0.2)
    assert policy.observe_val_loss(0.05)
    assert not policy.observe_val_loss(0.01)  # once
    assert policy.lr_at(100) == 5e-4
    restored = LearningRatePolicy(cfg)
    restored.load_state_dict(policy.state_dict())
    assert restored.lr_at(100) == 5e-4


def tf1_rmsprop_reference(grads, lr, decay, momentum, eps, theta=0.5):
    """tf.train.RMSPropOptimizer's kernel for one scalar: ms starts at 1, epsilon inside the root."""
    ms, mom = 1.0, 0.0
    for g in grads:
        ms = decay * ms + (1 - decay) * g * g
        mom = momentum * mom + lr * g / math.sqrt(ms + eps)
        theta -= mom
    return theta


def test_tf1_rmsprop_matches_the_tf1_kernel():
    grads = [0.3, -1.2, 0.05, 2.0, -0.7]
    for momentum in (0.0, 0.5):
        param = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
        opt = TF1RMSProp([param], lr=2e-4, decay=0.99, momentum=momentum, eps=0.1)
        for g in grads:
            param.grad = torch.tensor([g], dtype=torch.float64)
            opt.step()
        expected = tf1_rmsprop_reference(grads, lr=2e-4, decay=0.99, momentum=momentum, eps=0.1)
        assert abs(param.item() - expected) < 1e-12


def test_tf1_rmsprop_is_not_torch_rmsprop():
    """torch starts the mean square at 0 and adds epsilon outside the root: a different first step."""
    ours = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
    theirs = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
    opt_ours = TF1RMSProp([ours], lr=2e-4, decay=0.99, eps=0.1)
    opt_theirs = torch.optim.RMSprop([theirs], lr=2e-4, alpha=0.99, eps=0.1)
    for param, opt in ((ours, opt_ours), (theirs, opt_theirs)):
        param.grad = torch.tensor([0.01], dtype=torch.float64)
        opt.step()
    assert abs((0.5 - ours.item()) - 2e-4 * 0.01 / math.sqrt(0.99 + 0.01 * 0.0001 + 0.1)) < 1e-15
    assert abs(ours.item() - theirs.item()) > 1e-7
