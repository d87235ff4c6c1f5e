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


def test_factored_and_dense_memories_are_the_same_function():
    dense, factored = make("dense"), make("factored")
    factored.load_state_dict(dense.state_dict())
    x = batch()
    out_dense, out_factored = dense(**x), factored(**x)
    assert out_dense.shape == (4, 12)
    torch.testing.assert_close(out_factored, out_dense, rtol=1e-10, atol=1e-10)
    out_dense.sum().backward()
    out_factored.sum().backward()
    for (name, p_dense), p_factored in zip(dense.named_parameters(), factored.parameters(), strict=True):
        torch.testing.assert_close(p_factored.grad, p_dense.grad, rtol=1e-8, atol=1e-10, msg=name)


@pytest.mark.parametrize("memory", ["dense", "factored"])
def test_padded_statements_do_not_write(memory):
    model = make(memory)
    x = batch()
    garbage = x["story"].clone()
    for i, n in enumerate(x["story_len"]):
        garbage[i, n:] = torch.randint(1, 12, garbage[i, n:].shape)  # words where padding was
    torch.testing.assert_close(model(**x), model(**{**x, "story": garbage}))


def test_every_parameter_learns_including_z():
    model = make("factored")
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
