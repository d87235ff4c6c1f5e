"""TPR-RNN's ``model.operations`` (the ablations of Table 3, models/tpr_rnn/operations.py) against a literal
statement loop that applies only the chosen updates of eqs. 10, 12 and 14."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from models.tpr_rnn.model import TPRRNN, DenseTPR, MLPBank
from models.tpr_rnn.operations import OPERATIONS, sequence_core, story_model
from tests.test_tpr_rnn import INFO, batch

ABLATIONS = [("write",), ("write", "move"), ("write", "backlink"), OPERATIONS]


def config(memory: str, operations: tuple[str, ...]):
    return OmegaConf.create({"entity_size": 9, "role_size": 4, "hidden_size": 7, "init_limit": 0.1,
                             "memory": memory, "operations": list(operations)})


def build(memory: str, operations: tuple[str, ...], seed: int = 0) -> TPRRNN:
    torch.manual_seed(seed)
    return story_model(config(memory, operations), INFO).double()


def literal(model: TPRRNN, x: dict[str, torch.Tensor], operations: tuple[str, ...]) -> torch.Tensor:
    """Eqs. 9-14 one statement at a time on a dense F, adding only the chosen operations' tensors; the roles come
    from the model's role MLPs without the ablation."""
    sentences, q = model.encode(x["story"]), model.encode(x["query"])
    e1, e2 = model.update_entities(sentences)
    r1, r2, r3 = MLPBank.forward(model.update_roles, sentences)  # the bank itself, without the ablation's hook
    memory = DenseTPR(sentences.shape[0], model.d_e, model.d_r, sentences)
    for t in range(sentences.shape[1]):
        keep = (t < x["story_len"]).double()[:, None, None, None]  # [B, 1, 1, 1]
        a1, a2, b1, b2, b3 = e1[:, t], e2[:, t], r1[:, t], r2[:, t], r3[:, t]
        w_hat, m_hat, b_hat = memory.read(a1, b1), memory.read(a1, b2), memory.read(a2, b3)
        delta = torch.einsum("be,br,bf->berf", a1, b1, a2 - w_hat)  # eq. 10
        if "move" in operations:
            delta = delta + torch.einsum("be,br,bf->berf", a1, b2, w_hat - m_hat)  # eq. 12
        if "backlink" in operations:
            delta = delta + torch.einsum("be,br,bf->berf", a2, b3, a1 - b_hat)  # eq. 14
        memory.F = memory.F + delta * keep
    return model.infer(memory, q) @ model.Z


@pytest.mark.parametrize("memory", ["dense", "factored", "parallel"])
@pytest.mark.parametrize("operations", ABLATIONS)
def test_an_ablated_model_computes_only_its_operations(memory, operations):
    x = batch()
    ablated = build(memory, operations)
    out = ablated(**x)
    assert torch.allclose(out, literal(ablated, x, operations), rtol=1e-9, atol=1e-10)


def test_the_ablations_differ_and_all_three_is_the_plain_model():
    x = batch()
    outs = {operations: build("parallel", operations)(**x) for operations in ABLATIONS}
    assert len({tuple(out.flatten().tolist()) for out in outs.values()}) == len(ABLATIONS)
    torch.manual_seed(0)
    plain = TPRRNN(config("parallel", OPERATIONS), INFO).double()
    assert torch.equal(plain(**x), outs[OPERATIONS])
    assert not build("parallel", OPERATIONS).update_roles._forward_hooks  # nothing added to the full model


def test_a_removed_operation_gets_no_gradient_and_the_same_initial_weights():
    full, write_only = build("parallel", OPERATIONS), build("parallel", ("write",))
    for (name, a), b in zip(full.state_dict().items(), write_only.state_dict().values(), strict=True):
        assert torch.equal(a, b), name  # a seed gives the same initial weights
    write_only(**batch()).sum().backward()
    w2 = write_only.update_roles.w2.grad  # [3, d_h, d_r]: the MLPs of r1, r2, r3
    assert w2[0].abs().sum() > 0 and torch.count_nonzero(w2[1:]) == 0


def test_the_sequence_core_takes_the_option():
    cfg = config("parallel", ("write", "move"))
    torch.manual_seed(0)
    core = sequence_core(cfg)
    roles = core.update_roles(torch.randn(2, 3, core.in_dim))  # [3, B, T, d_r]
    assert torch.count_nonzero(roles[2]) == 0 and torch.count_nonzero(roles[1]) > 0


@pytest.mark.parametrize(("operations", "message"), [
    (("move", "backlink"), "must include write"), (("write", "jump"), "unknown operation"),
])
def test_bad_operations_are_refused(operations, message):
    with pytest.raises(ValueError, match=message):
        build("parallel", operations)


def test_the_report_orders_the_operations_as_the_model_does():
    """reports/store.py keeps its own copy of the order (the report does not import torch); Table 3's labels and
    the runs from before ``model.operations`` existed rely on it being the model's."""
    from reports.store import ALL_OPERATIONS, canonical_operations

    assert ALL_OPERATIONS == OPERATIONS
    assert canonical_operations(reversed(OPERATIONS)) == OPERATIONS
