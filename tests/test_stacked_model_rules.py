"""Rules of the stacked classifier and of mixed-data stacks (harness/runners/stacked_model.py and
harness/runners/stacked_data.py), checked member by member on tiny hand-made models and datasets.

The documented rule: K models trained as one computation with ``torch.func.stack_module_state`` and
``torch.func.vmap`` (the "model ensembling" recipe of the PyTorch documentation, torch.func tutorial) are K
independent models. Member k reads only its own parameters and its own batch ``inputs[name][k]``; its loss is
its own mean cross-entropy, so the gradient of the summed loss on its slice of a stacked parameter is the
gradient of its solo loss; its dropout masks are its own; ``select`` keeps exactly the members named, in that
order; its state dict is its slice. In a mixed stack, member k reads example i of its own dataset at
``k * size + i``, in its solo run's order, and is validated on its own validation set with the batch-size-
weighted means of the solo runner (Lightning's ``self.log(..., on_epoch=True, batch_size=n)``)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from harness.data import TARGET, EpochShuffleSampler, TaskData, TensorDictDataset
from harness.runners.stacked_data import MemberSplits, OffsetSampler, evaluate_members, shape_mismatch
from harness.runners.stacked_model import StackedClassifier, member_losses

K, B, D_IN, C = 3, 5, 4, 3


class Tiny(nn.Module):
    """x [B, 4] -> logits [B, 3]: Linear, ReLU, dropout (p 0.5), Linear, plus a persistent buffer added to x."""

    def __init__(self, seed: int, p: float = 0.0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.first = nn.Linear(D_IN, 6)
        self.drop = nn.Dropout(p)
        self.last = nn.Linear(6, C)
        self.register_buffer("shift", torch.randn(D_IN))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.last(self.drop(torch.relu(self.first(x + self.shift))))


def _inputs(seed: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    """Each member's own batch: x [K, B, 4], targets [K, B]."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(K, B, D_IN, generator=generator), torch.randint(0, C, (K, B), generator=generator)


def test_member_k_reads_its_own_parameters_and_its_own_batch() -> None:
    models = [Tiny(seed) for seed in range(K)]
    stack = StackedClassifier(models)
    x, _ = _inputs()
    logits = stack.logits({"x": x})  # [K, B, C]
    assert logits.shape == (K, B, C)
    shared = stack.shared_logits({"x": x[0]})  # [K, B, C], every member on member 0's batch
    for k in range(K):
        torch.testing.assert_close(logits[k], models[k](x[k]))
        torch.testing.assert_close(shared[k], models[k](x[0]))


def test_a_stack_of_one_is_the_plain_module_bit_for_bit() -> None:
    model = Tiny(3)
    x, _ = _inputs()
    stack = StackedClassifier([model])
    assert torch.equal(stack.logits({"x": x[:1]})[0], model(x[0]))
    assert torch.equal(stack.shared_logits({"x": x[1]})[0], model(x[1]))


def test_member_losses_are_each_members_mean_cross_entropy_and_accuracy() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(K, B, C, generator=generator)
    target = torch.randint(0, C, (K, B), generator=generator)
    loss, acc = member_losses(logits, target)
    for k in range(K):
        ce = sum(-torch.log_softmax(logits[k, b], dim=-1)[target[k, b]] for b in range(B)) / B
        right = sum(int(logits[k, b].argmax() == target[k, b]) for b in range(B)) / B
        torch.testing.assert_close(loss[k], ce)
        assert acc[k].item() == pytest.approx(right)
    assert len(set(acc.tolist())) > 1 and len(set(loss.tolist())) == K  # the members' numbers differ


def test_the_summed_loss_gives_each_member_its_solo_gradient() -> None:
    models = [Tiny(seed) for seed in range(K)]
    stack = StackedClassifier(models)
    x, y = _inputs()
    member_losses(stack.logits({"x": x}), y)[0].sum().backward()
    for k, model in enumerate(models):
        nn.functional.cross_entropy(model(x[k]), y[k]).backward()
        for name, param in model.named_parameters():
            torch.testing.assert_close(stack.params[name].grad[k], param.grad, msg=name)


def test_members_draw_their_own_dropout_masks() -> None:
    """Two members with equal parameters on equal batches differ in training mode (their masks are their own) and
    agree in eval mode."""
    stack = StackedClassifier([Tiny(0, p=0.5), Tiny(0, p=0.5)])
    x = torch.randn(1, 16, D_IN).expand(2, -1, -1)  # [2, 16, 4]
    torch.manual_seed(0)
    train = stack.logits({"x": x})
    assert not torch.allclose(train[0], train[1])
    stack.template.eval()
    evaluated = stack.logits({"x": x})
    torch.testing.assert_close(evaluated[0], evaluated[1])


def test_select_keeps_the_named_members_in_order() -> None:
    models = [Tiny(seed) for seed in range(4)]
    stack = StackedClassifier(models)
    smaller = stack.select([3, 1])
    assert smaller.k == 2
    x = torch.randn(2, B, D_IN)
    logits = smaller.logits({"x": x})
    torch.testing.assert_close(logits[0], models[3](x[0]))
    torch.testing.assert_close(logits[1], models[1](x[1]))
    assert all(p.is_leaf and p.requires_grad for p in smaller.parameters())


def test_member_state_dicts_are_the_members_own_and_load_into_their_slice_only() -> None:
    models = [Tiny(seed) for seed in range(K)]
    stack = StackedClassifier(models)
    for k, model in enumerate(models):
        state = stack.member_state_dict(k)
        assert state.keys() == model.state_dict().keys()
        assert all(torch.equal(state[name], tensor) for name, tensor in model.state_dict().items())
    before = {name: t.detach().clone() for name, t in {**stack.params, **stack.buffers}.items()}
    replacement = Tiny(99).state_dict()
    stack.load_member_state_dict(1, replacement)
    for name, tensor in {**stack.params, **stack.buffers}.items():
        assert torch.equal(tensor[1], replacement[name]), name
        assert torch.equal(tensor[0], before[name][0]) and torch.equal(tensor[2], before[name][2]), name
    x, _ = _inputs()
    torch.testing.assert_close(stack.member_module(2)(x[2]), models[2](x[2]))


# mixed stacks ------------------------------------------------------------------------------------------------


def _dataset(offset: float, n: int = 7) -> TensorDictDataset:
    """x [n, 4] with values offset + 0..(4n-1), target [n] in 0..2; every example distinct across datasets."""
    x = offset + torch.arange(n * D_IN, dtype=torch.float32).reshape(n, D_IN)
    return TensorDictDataset({"x": x, TARGET: torch.arange(n) % C})


def test_member_splits_put_member_ks_example_i_at_k_times_size_plus_i() -> None:
    datasets = [_dataset(1000.0 * k) for k in range(K)]
    splits = MemberSplits(datasets)
    assert len(splits) == 7
    for k in range(K):
        rows = [k * 7 + i for i in (4, 0, 6, 2)]
        batch = splits.__getitems__(rows)
        expected = datasets[k].__getitems__([4, 0, 6, 2])
        assert torch.equal(batch["x"], expected["x"]) and torch.equal(batch[TARGET], expected[TARGET])


def test_an_offset_sampler_is_the_solo_order_shifted_and_is_never_shifted_twice() -> None:
    solo = EpochShuffleSampler(11, seed=5)
    reference = EpochShuffleSampler(11, seed=5)
    offset = OffsetSampler(solo, 22)
    for epoch in (0, 3):
        offset.set_epoch(epoch)
        reference.set_epoch(epoch)
        assert list(offset) == [22 + i for i in reference]
    assert len(offset) == 11
    again = OffsetSampler(offset, 22)  # a member whose sampler was already offset (a second trainer on it)
    assert list(again) == list(offset)


def test_evaluate_members_scores_each_member_on_its_own_set_with_batch_weighted_means() -> None:
    """Seven examples in batches of 3 (3 + 3 + 1): the last batch weighs 1/7, as in the solo runner's log."""
    models = [Tiny(seed, p=0.5) for seed in range(K)]
    stack = StackedClassifier(models)
    datasets = [_dataset(0.01 * k) for k in range(K)]
    with torch.no_grad():
        for k in range(K):  # scale the inputs down so that the logits are of order one
            datasets[k].tensors["x"] = datasets[k].tensors["x"] / 30.0
    loss, acc = evaluate_members(stack, datasets, batch_size=3, limit=None)
    assert stack.template.training  # back in training mode afterwards
    for k, model in enumerate(models):
        model.eval()  # dropout off, as in validation
        total_loss = total_right = 0.0
        for start in (0, 3, 6):
            rows = list(range(start, min(start + 3, 7)))
            batch = datasets[k].__getitems__(rows)
            logits = model(batch["x"])
            total_loss += nn.functional.cross_entropy(logits, batch[TARGET]).item() * len(rows)
            total_right += (logits.argmax(-1) == batch[TARGET]).float().mean().item() * len(rows)
        assert loss[k].item() == pytest.approx(total_loss / 7, rel=1e-5)
        assert acc[k].item() == pytest.approx(total_right / 7, rel=1e-5)
    assert len(set(loss.tolist())) == K
    limited_loss, _ = evaluate_members(stack, datasets, batch_size=3, limit=1)  # the first batch only
    for k, model in enumerate(models):
        batch = datasets[k].__getitems__([0, 1, 2])
        expected = nn.functional.cross_entropy(model(batch["x"]), batch[TARGET]).item()
        assert limited_loss[k].item() == pytest.approx(expected, rel=1e-5)


def _task(train: TensorDictDataset, val: TensorDictDataset) -> TaskData:
    return TaskData(train=train, val=val, test=val, info={}, source="test")


def test_mixed_members_need_equal_train_and_val_sizes_shapes_and_types() -> None:
    same = [_task(_dataset(0.0), _dataset(0.0, 4)), _task(_dataset(1.0), _dataset(1.0, 4))]
    assert shape_mismatch(same) is None
    other_val_size = [same[0], _task(_dataset(1.0), _dataset(1.0, 5))]
    assert "val sets hold different numbers" in (shape_mismatch(other_val_size) or "")
    other_train_size = [same[0], _task(_dataset(1.0, 8), _dataset(1.0, 4))]
    assert "train sets hold different numbers" in (shape_mismatch(other_train_size) or "")
    doubles = _dataset(1.0, 4)
    doubles.tensors["x"] = doubles.tensors["x"].double()
    other_val_type = [same[0], _task(_dataset(1.0), doubles)]
    assert "val examples differ" in (shape_mismatch(other_val_type) or "")
    wide = TensorDictDataset({"x": torch.zeros(7, D_IN + 1), TARGET: torch.zeros(7, dtype=torch.long)})
    assert "train examples differ" in (shape_mismatch([same[0], _task(wide, _dataset(1.0, 4))]) or "")


def test_a_mixed_trainer_gives_each_member_its_own_training_order_and_validation_set() -> None:
    """Three members on three datasets of one size: the trainer's stacked batch holds, for member k, the examples
    of ``datas[k]`` in member k's solo order; ``_validate`` scores member k on ``datas[k].val``, also after
    member 1 has left the stack."""
    from harness.config import compose
    from harness.runners.stacked import Member, _stack_batch
    from harness.runners.stacked_data import MixedStackedTrainer

    cfg = compose("relations_game", "predinet", "smoke", ["seed=0", "train.threads=1", "train.eval_batch_size=3",
                                                           "train.limit_eval_batches=null"]).cfg
    datas = [_task(_dataset(100.0 * k), _dataset(-50.0 * k, 5)) for k in range(K)]
    for data in datas:
        data.val.tensors["x"] = data.val.tensors["x"] / 40.0  # logits of order one
    members = [Member(cfg, None, None, EpochShuffleSampler(7, seed=seed)) for seed in (4, 5, 6)]  # type: ignore[arg-type]
    models = [Tiny(seed) for seed in range(K)]
    trainer = MixedStackedTrainer(cfg, datas, members, models)
    for epoch in (0, 1):
        rows = []
        for member in members:
            member.sampler.set_epoch(epoch)
            rows.append(list(member.sampler)[:4])
        batch = _stack_batch(trainer.data.train, rows)  # {name: [K, 4, ...]}
        for k, seed in enumerate((4, 5, 6)):
            solo = EpochShuffleSampler(7, seed=seed)
            solo.set_epoch(epoch)
            assert torch.equal(batch["x"][k], datas[k].train.__getitems__(list(solo)[:4])["x"]), (epoch, k)

    def own_val_loss(k: int) -> float:
        val = datas[k].val
        with torch.no_grad():
            return sum(nn.functional.cross_entropy(models[k](val.__getitems__(rows)["x"]),
                                                   val.__getitems__(rows)[TARGET]).item() * len(rows)
                       for rows in ([0, 1, 2], [3, 4])) / 5

    loss, _ = trainer._validate()
    expected = [own_val_loss(k) for k in range(K)]
    assert len({round(v, 4) for v in expected}) == K  # the validation sets give different losses
    assert loss.tolist() == pytest.approx(expected, rel=1e-5)
    trainer.active = [members[0], members[2]]
    trainer.stack = trainer.stack.select([0, 2])
    loss, _ = trainer._validate()
    assert loss.tolist() == pytest.approx([expected[0], expected[2]], rel=1e-5)
