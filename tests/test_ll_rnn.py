"""The linear-logic RNN core (models/ll_rnn/core.py) computes (2.2)-(2.4) of Hu & Murfet 2016, §2."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from omegaconf import OmegaConf

from harness.config import compose
from harness.errors import UserError
from models.adapters.sequence_readers import StorySequenceModel, TokenSequenceModel
from models.ll_rnn.core import LinearLogicCore, monomials, run_programs


@pytest.fixture
def one_thread():  # noqa: ANN201 - a generator fixture
    """Small tensors, one step at a time: one thread is faster than two on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_core(degree: int = 2, seed: int = 0, hidden: int = 5, n_e: int = 3, programs: int = 4,
              activation: str = "relu") -> LinearLogicCore:
    """A small core in float64 with a random (nonzero) V, so the program term counts."""
    torch.manual_seed(seed)
    cfg = OmegaConf.create({"embedding_size": 6, "hidden_size": hidden, "program_input_size": n_e,
                            "programs": programs, "degree": degree, "recurrent_init": 1.0,
                            "state_activation": activation})
    core = LinearLogicCore(cfg).double()
    with torch.no_grad():
        for v in core.V:
            v.weight.normal_(0, 0.5)
        core.H.weight.add_(0.3 * torch.randn_like(core.H.weight))
    return core


def relu(x: torch.Tensor) -> torch.Tensor:
    """sigma(X)_i = (X_i + |X_i|) / 2, the paper's nonlinearity, written as printed."""
    return (x + x.abs()) / 2


def literal_state(core: LinearLogicCore, xs: torch.Tensor, sigma: Callable = relu) -> torch.Tensor:
    """One example, one step at a time, one program at a time: xs [T, in_dim] -> h_T [H]; ``sigma`` is that of
    (2.4) (the programs' of (2.2) is always the ReLU)."""
    U, H, E = core.U.weight, core.H.weight, core.E.weight
    h = torch.zeros(core.out_dim, dtype=xs.dtype)
    for x in xs:
        total = H @ h + U @ x
        y = torch.cat([E @ x, h])  # (2.3)
        for k in range(2, core.degree + 1):
            product = y
            for _ in range(k - 1):
                product = torch.outer(product, y).reshape(-1)  # F(y y^T), then F(y (x) y (x) y) ...
            P, V = core.program_matrices(k), core.V[k - 2].weight
            q = torch.stack([(relu(P[i] @ h) * product).sum() for i in range(core.programs)])  # (2.2), Example 2.2
            total = total + V @ q
        h = sigma(total)  # (2.4)
    return h


@pytest.mark.parametrize(("degree", "activation"), [(1, "relu"), (2, "relu"), (3, "relu"), (2, "tanh")])
def test_the_batched_core_is_the_literal_per_example_update(degree: int, activation: str):
    core = make_core(degree, activation=activation)
    sigma = relu if activation == "relu" else torch.tanh
    x = torch.randn(3, 7, 6, dtype=torch.float64)
    mask = torch.arange(7).unsqueeze(0) < torch.tensor([[7], [4], [1]])
    out = core(x, mask)
    assert out.shape == (3, core.out_dim)
    assert (out >= 0).all() if activation == "relu" else (out.abs() < 1).all()
    for b, length in enumerate((7, 4, 1)):
        torch.testing.assert_close(out[b], literal_state(core, x[b, :length], sigma), rtol=1e-10, atol=1e-12)
    assert out.abs().sum() > 0 and (activation == "relu" or (out < 0).any())


def test_example_2_2_of_the_paper():
    """x = (a), h = (b); p_1 = (2, -1, 0, 3), p_2 = (1, 0, 0, 0) -> q = (2a^2 - ba + 3b^2, a^2)."""
    a, b = 1.5, -0.5  # exact in binary
    y = torch.tensor([[a, b]])
    assert monomials(y, 2).tolist() == [[a * a, a * b, b * a, b * b]]
    p = torch.tensor([[[2.0, -1.0, 0.0, 3.0], [1.0, 0.0, 0.0, 0.0]]])
    torch.testing.assert_close(run_programs(p, y, 2), torch.tensor([[2 * a * a - b * a + 3 * b * b, a * a]]))


def test_degree_one_is_the_plain_rnn_and_each_degree_adds_a_term_of_its_own():
    core1, core2, core3 = make_core(1), make_core(2), make_core(3)
    assert (len(core1.P), len(core2.P), len(core3.P)) == (0, 1, 2)
    assert core3.P[1].weight.shape == (4 * 8 ** 3, 5)  # m programs of n_Y^3 coefficients, n_Y = 3 + 5
    x, h = torch.randn(2, 6, dtype=torch.float64), torch.rand(2, 5, dtype=torch.float64)
    torch.testing.assert_close(core1.step(x, h), relu(h @ core1.H.weight.T + x @ core1.U.weight.T))  # (2.1)
    for c in (2.0, 3.0):  # p is linear in h, the monomials of degree k in y: q^(k) is homogeneous of degree k + 1
        for k, (q, q_scaled) in enumerate(zip(core3.program_terms(x, h), core3.program_terms(c * x, c * h),
                                              strict=True), start=2):
            torch.testing.assert_close(q_scaled, c ** (k + 1) * q)
    core3.load_state_dict(core2.state_dict(), strict=False)  # same U, H, E, P^(2), V^(2)
    with torch.no_grad():
        core3.V[1].weight.zero_()
    torch.testing.assert_close(core3.step(x, h), core2.step(x, h))  # the cubic term is the only difference
    core3.V[1].weight.data.fill_(0.1)
    assert not torch.allclose(core3.step(x, h), core2.step(x, h))


def test_a_fresh_core_starts_as_the_plain_rnn_and_rejects_bad_settings():
    torch.manual_seed(0)
    cfg = OmegaConf.create({"embedding_size": 6, "hidden_size": 5, "program_input_size": 3, "programs": 4,
                            "degree": 2, "recurrent_init": 0.9, "state_activation": "relu"})
    core = LinearLogicCore(cfg)
    assert torch.equal(core.H.weight, 0.9 * torch.eye(5)) and not core.V[0].weight.any()
    with pytest.raises(ValueError, match="model.degree must be 1"):
        LinearLogicCore(OmegaConf.merge(cfg, {"degree": 0}))
    with pytest.raises(UserError, match="model.degree"):
        compose("babi", "ll_rnn", "smoke", ["model.degree=0"])
    with pytest.raises(ValueError, match="model.state_activation must be one of"):
        LinearLogicCore(OmegaConf.merge(cfg, {"state_activation": "sigmoid"}))
    with pytest.raises(UserError, match="model.state_activation"):
        compose("babi", "ll_rnn", "smoke", ["model.state_activation=sigmoid"])


def test_padding_steps_change_nothing():
    core = make_core(2)
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    out = core(x, mask)
    noisy = x.clone()
    noisy[1, 2:] = 100.0
    torch.testing.assert_close(core(noisy, mask), out)
    torch.testing.assert_close(core(x[:, :2], mask[:, :2])[1], out[1])  # a shorter batch


def test_stories_read_the_same_with_more_padding():
    torch.manual_seed(0)
    model = StorySequenceModel(compose("babi", "ll_rnn", "smoke").cfg.model,
                               {"vocab_size": 20, "num_classes": 20}).eval()
    story = torch.randint(1, 20, (3, 4, 3))
    story[0, 2:] = 0
    story[1, :, 2] = 0
    query = torch.randint(1, 20, (3, 3))
    logits = model(story, torch.tensor([2, 4, 4]), query)
    assert logits.shape == (3, 20)
    wider = torch.cat([story, torch.zeros(3, 2, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(wider, torch.tensor([2, 4, 4]), query), logits)


def test_gradients_are_finite_over_a_long_sequence(one_thread):  # noqa: ARG001 - fixture
    torch.manual_seed(0)
    core = LinearLogicCore(compose("babi", "ll_rnn", "smoke", ["model.state_activation=relu"]).cfg.model)
    with torch.no_grad():
        core.V[0].weight.normal_(0, 0.01)  # as after a few Adam steps
    x = torch.randn(2, 80, core.in_dim)  # the adapters' embeddings are N(0, 1); bAbI task 1 stories are ~70 words
    core(x, torch.ones(2, 80, dtype=torch.bool)).square().mean().backward()
    for name, param in core.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all() and param.grad.abs().sum() > 0, name


def test_it_learns_to_recall_the_first_token_of_a_sequence(one_thread):  # noqa: ARG001 - fixture
    torch.manual_seed(0)
    cfg = OmegaConf.create({"name": "ll_rnn", "embedding_size": 12, "hidden_size": 12, "program_input_size": 4,
                            "programs": 4, "degree": 2, "recurrent_init": 0.9, "state_activation": "relu"})
    model = TokenSequenceModel(cfg, {"vocab_size": 6, "num_classes": 6})
    optim = torch.optim.Adam(model.parameters(), lr=1e-2)

    def accuracy() -> float:
        tokens = torch.randint(1, 6, (256, 5))
        return (model(tokens, torch.full((256,), 5)).argmax(-1) == tokens[:, 0]).float().mean().item()

    before = accuracy()
    for _ in range(100):
        tokens = torch.randint(1, 6, (32, 5))  # the answer is the first of 5 tokens: it must be carried 4 steps
        loss = torch.nn.functional.cross_entropy(model(tokens, torch.full((32,), 5)), tokens[:, 0])
        optim.zero_grad()
        loss.backward()
        optim.step()
    assert before < 0.4 and accuracy() > 0.9  # chance: 0.2


def first_adam_step_losses(overrides: list[str], steps: int = 400) -> tuple[float, float]:
    """The loss of a cpu-profile ``ll_rnn`` reader on random 400-word inputs (bAbI task 2's longest stories are
    427 words), before and after one Adam step at the profile's learning rate."""
    torch.manual_seed(0)
    composed = compose("babi", "ll_rnn", "cpu", overrides).cfg
    model = TokenSequenceModel(composed.model, {"vocab_size": 40, "num_classes": 40})
    optim = torch.optim.Adam(model.parameters(), lr=float(composed.optim.lr))
    tokens, target, length = torch.randint(1, 40, (4, steps)), torch.randint(0, 40, (4,)), torch.full((4,), steps)
    loss = torch.nn.functional.cross_entropy(model(tokens, length), target)
    optim.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), float(composed.optim.grad_clip))
    optim.step()
    with torch.no_grad():
        after = torch.nn.functional.cross_entropy(model(tokens, length), target)
    return loss.item(), after.item()


def test_a_task_2_length_story_gives_a_finite_loss_and_first_adam_step(one_thread):  # noqa: ARG001 - fixture
    relu = ["model.state_activation=relu"]  # the paper's sigma (the bAbI pair file picks tanh)
    before, after = first_adam_step_losses(relu)
    assert math.isfinite(before) and math.isfinite(after) and before < 10
    before_identity, after_identity = first_adam_step_losses([*relu, "model.recurrent_init=1.0"])  # the IRNN start
    assert not (math.isfinite(after_identity) and before_identity < 10)
