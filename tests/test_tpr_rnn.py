import pytest
import torch
from omegaconf import OmegaConf

from models.tpr_rnn.model import TPRRNN

INFO = {"vocab_size": 12, "num_classes": 12, "max_sent_len": 5, "max_story_len": 6}


def make(memory: str, seed: int = 0) -> TPRRNN:
    torch.manual_seed(seed)
    cfg = OmegaConf.create({"entity_size": 9, "role_size": 4, "hidden_size": 7, "init_limit": 0.1,
                            "memory": memory})
    return TPRRNN(cfg, INFO).double()


def batch(seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    story = torch.randint(1, 12, (4, 6, 5), generator=g)
    story_len = torch.tensor([6, 3, 1, 4])
    for i, n in enumerate(story_len):
        story[i, n:] = 0
    return {"story": story, "story_len": story_len, "query": torch.randint(1, 12, (4, 5), generator=g)}


@pytest.mark.parametrize("memory", ["factored", "parallel"])
def test_memories_compute_the_dense_reference_function(memory):
    """The factored loop and the one triangular solve give the reference's dense F: outputs and gradients."""
    dense, other = make("dense"), make(memory)
    other.load_state_dict(dense.state_dict())
    x = batch()
    out_dense, out_other = dense(**x), other(**x)
    assert out_dense.shape == (4, 12)
    torch.testing.assert_close(out_other, out_dense, rtol=1e-10, atol=1e-10)
    out_dense.sum().backward()
    out_other.sum().backward()
    for (name, p_dense), p_other in zip(dense.named_parameters(), other.parameters(), strict=True):
        torch.testing.assert_close(p_other.grad, p_dense.grad, rtol=1e-8, atol=1e-10, msg=name)


def test_parallel_memory_matches_on_a_long_story_in_float32():
    """A 130-statement story (bAbI task 3's length) in the training dtype: the solve stays within float
    rounding of the statement-by-statement loop."""
    torch.manual_seed(0)
    cfg = OmegaConf.create({"entity_size": 90, "role_size": 20, "hidden_size": 40, "init_limit": 0.1,
                            "memory": "factored"})
    info = {**INFO, "max_story_len": 130}
    factored = TPRRNN(cfg, info)
    parallel = TPRRNN(OmegaConf.merge(cfg, {"memory": "parallel"}), info)
    parallel.load_state_dict(factored.state_dict())
    g = torch.Generator().manual_seed(3)
    x = {"story": torch.randint(1, 12, (2, 130, 5), generator=g), "story_len": torch.tensor([130, 77]),
         "query": torch.randint(1, 12, (2, 5), generator=g)}
    torch.testing.assert_close(parallel(**x), factored(**x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("memory", ["dense", "factored", "parallel"])
def test_padded_statements_do_not_write(memory):
    model = make(memory)
    x = batch()
    garbage = x["story"].clone()
    for i, n in enumerate(x["story_len"]):
        garbage[i, n:] = torch.randint(1, 12, garbage[i, n:].shape)  # words where padding was
    torch.testing.assert_close(model(**x), model(**{**x, "story": garbage}))


@pytest.mark.parametrize("memory", ["factored", "parallel"])
def test_every_parameter_learns_including_z(memory):
    model = make(memory)
    model(**batch()).logsumexp(-1).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    norms = [m for m in model.norms]
    assert all(n.gain.shape == () and n.bias.shape == () for n in norms)  # scalar LN gain and bias


def test_memory_binds_and_unbinds_a_fact():
    """Writing e1 (x) r1 (x) e2 and unbinding with (e1, r1) returns e2 (orthonormal keys)."""
    from models.tpr_rnn.model import DenseTPR, FactoredTPR

    e = torch.eye(3).unsqueeze(0)  # [1, 3, 3]
    r = torch.eye(2)[:1].unsqueeze(0)  # [1, 1, 2]
    for memory_cls in (DenseTPR, FactoredTPR):
        memory = memory_cls(1, 3, 2, e)
        memory.write(e[:, :1], r, e[:, 2:3])
        torch.testing.assert_close(memory.read(e[:, 0], r[:, 0]), e[:, 2])
        torch.testing.assert_close(memory.read(e[:, 1], r[:, 0]), torch.zeros(1, 3))


@pytest.mark.parametrize("block", [1, 2, 5, 32])
def test_blocked_solve_equals_the_statement_loop(block):
    """Any block size, stories of different lengths (one empty, one with a gap in its mask), in any order:
    the same F as the loop over statements, read with random keys, and the same gradients."""
    from models.tpr_rnn.model import solve_writes

    model = make("factored")
    g = torch.Generator().manual_seed(5)
    steps = 7
    inputs = [torch.randn(4, steps, d, generator=g, dtype=torch.float64, requires_grad=True)
              for d in (9, 9, 4, 4, 4)]
    keep = torch.tensor([[1, 1, 1, 0, 0, 0, 0], [1] * 7, [0] * 7, [1, 0, 1, 1, 0, 0, 0]], dtype=torch.float64)
    a, r = torch.randn(4, 9, generator=g, dtype=torch.float64), torch.randn(4, 4, generator=g, dtype=torch.float64)
    looped = model._step_through(*inputs, keep).read(a, r)
    grads = torch.autograd.grad(looped.sum(), inputs)
    solved = solve_writes(*inputs, keep, block=block).read(a, r)
    torch.testing.assert_close(solved, looped, rtol=1e-10, atol=1e-10)
    for got, want in zip(torch.autograd.grad(solved.sum(), inputs), grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
