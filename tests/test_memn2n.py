"""MemN2N (Sukhbaatar et al. 2015): eqs. 1-3, position and temporal encoding (§4.1), adjacent tying (§2.2),
random noise, linear start and the §4.2 schedule the model applies to its own gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from harness.config import compose
from harness.registry import REGISTRY
from models.adapters.story_entities import position_encoding
from models.memn2n.encoding import encode, position_coefficients
from models.memn2n.memory import recent_memories, time_index
from models.memn2n.model import MemN2N

VOCAB = 14
INFO = {"vocab_size": VOCAB, "num_classes": VOCAB, "max_sent_len": 5, "max_story_len": 7}
PAPER = {"embedding_size": 6, "hops": 3, "memory_size": 50, "init_std": 0.1, "temporal_encoding": True,
         "random_noise": 0.1, "linear_start_epochs": 0, "halve_lr_every": 25, "batch_cost": "sum", "grad_clip": 40.0}


def make(seed: int = 0, **changes: object) -> MemN2N:
    torch.manual_seed(seed)
    return MemN2N(OmegaConf.create({**PAPER, **changes}), INFO).double()


def batch(seed: int = 1) -> dict[str, torch.Tensor]:
    """4 stories of up to 7 statements of 1..5 words (real words first, then padding)."""
    g = torch.Generator().manual_seed(seed)
    story = torch.randint(1, VOCAB, (4, 7, 5), generator=g)
    words = torch.randint(1, 6, (4, 7), generator=g)
    story[torch.arange(5).expand(4, 7, 5) >= words.unsqueeze(-1)] = 0
    story_len = torch.tensor([7, 3, 1, 5])
    story[torch.arange(7).expand(4, 7) >= story_len.unsqueeze(1)] = 0
    query = torch.randint(1, VOCAB, (4, 5), generator=g)
    query[:, 3:] = 0
    return {"story": story, "story_len": story_len, "query": query}


def sentence(tokens: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """sum_j l_j * E[x_j] for one sentence, the J-word position encoding written out (§4.1)."""
    words = [int(w) for w in tokens if w != 0]
    if not words:
        return table.new_zeros(table.shape[1])
    weights = position_encoding(len(words), table.shape[1]).to(table.dtype)  # [J, d]
    return sum(weights[j] * table[w] for j, w in enumerate(words))


def reference_logits(model: MemN2N, x: dict[str, torch.Tensor], linear: bool) -> torch.Tensor:
    """Eqs. 1-3 with K hops, one example at a time; memory slot i = the (i+1)-th most recent statement."""
    out = []
    for story, n, query in zip(x["story"], x["story_len"], x["query"], strict=True):
        statements = [story[t] for t in range(int(n) - 1, -1, -1)][: model.memory_size]  # newest first
        u = sentence(query, model.B)
        for k in range(model.hops):
            m = torch.stack([sentence(s, model.A[k]) + model.T_A[k][i] for i, s in enumerate(statements)])
            c = torch.stack([sentence(s, model.C[k]) + model.T_C[k][i] for i, s in enumerate(statements)])
            scores = m @ u  # u^T m_i
            p = scores if linear else torch.softmax(scores, dim=0)  # eq. 1 (linear start: no softmax)
            u = u + p @ c  # eq. 2, u^{k+1} = u^k + o^k
        out.append(model.W @ u)  # eq. 3 with W^T = C^K, [V]
    return torch.stack(out)


# the paper's equations ----------------------------------------------------------------------------------------
def test_shapes_and_the_forward_pass_is_eqs_1_to_3():
    model = make().eval()
    x = batch()
    logits = model(**x)
    assert logits.shape == (4, VOCAB) and logits.dtype == torch.float64
    torch.testing.assert_close(logits, reference_logits(model, x, linear=False))


def test_position_encoding_is_section_4_1_with_j_the_sentence_length():
    tokens = torch.tensor([[4, 9, 2, 0, 0], [7, 0, 0, 0, 0], [3, 3, 5, 6, 8]])
    a, b = position_coefficients(tokens, torch.float64)
    d = 4
    for row, length in enumerate([3, 1, 5]):
        for j in range(1, 6):
            for k in range(1, d + 1):
                l_kj = (1 - j / length) - (k / d) * (1 - 2 * j / length) if j <= length else 0.0
                assert float(a[row, j - 1] + (k / d) * b[row, j - 1]) == pytest.approx(l_kj)
    table = torch.randn(10, d, dtype=torch.float64)
    table[0] = 0
    encoded = encode(tokens, table.unsqueeze(0))[:, 0]  # [3, d]
    for row in range(3):
        torch.testing.assert_close(encoded[row], sentence(tokens[row], table))


def test_adjacent_weight_tying_is_parameter_identity():
    model = make()
    K = model.hops
    assert model.B is model.A[0]
    assert all(model.A[k + 1] is model.C[k] for k in range(K - 1))
    assert model.W is model.C[K - 1]
    assert all(model.T_A[k + 1] is model.T_C[k] for k in range(K - 1))
    assert len(list(model.parameters())) == 2 * (K + 1)  # K + 1 word tables, K + 1 temporal tables, nothing else
    assert all(not table[0].any() for table in model.words)  # the null symbol's embedding is zero


def test_the_null_row_gets_no_gradient_and_the_classes_must_be_the_vocabulary():
    model = make(batch_cost="mean", grad_clip=0.0, halve_lr_every=0)
    model(**batch()).logsumexp(dim=-1).sum().backward()
    assert all(not table.grad[0].any() for table in model.words)
    with pytest.raises(ValueError, match="num_classes=5, vocab_size=14"):
        MemN2N(OmegaConf.create(PAPER), {**INFO, "num_classes": 5})


# memory: padding, capacity, temporal encoding, random noise ---------------------------------------------------------
def test_padding_does_not_change_the_output():
    model = make().eval()
    x = batch()
    logits = model(**x)
    wider = {**x, "story": F.pad(x["story"], (0, 3, 0, 4)), "query": F.pad(x["query"], (0, 3))}  # more slots, words
    torch.testing.assert_close(model(**wider), logits)
    junk = x["story"].clone()
    junk[1, 3:] = 5  # words in story 1's padded statement slots
    torch.testing.assert_close(model(**{**x, "story": junk}), logits)


def test_memory_keeps_the_most_recent_statements_newest_first():
    story = torch.arange(1, 7).view(1, 6, 1).expand(2, 6, 1).clone()  # statement t is the word t + 1
    tokens, real = recent_memories(story, torch.tensor([6, 2]), size=4)
    assert tokens[..., 0].tolist() == [[6, 5, 4, 3], [2, 1, 0, 0]]
    assert real.tolist() == [[True] * 4, [True, True, False, False]]
    model = make(memory_size=2).eval()
    x = batch()
    older = x["story"].clone()
    older[0, :5] = 9  # story 0 has 7 statements: all but the last 2 are outside the memory
    torch.testing.assert_close(model(**{**x, "story": older}), model(**x))


def test_temporal_encoding_makes_order_count():
    x = batch()
    swapped = x["story"].clone()
    swapped[0, [5, 6]] = swapped[0, [6, 5]]  # exchange story 0's two latest statements
    x_swapped = {**x, "story": swapped}
    with_time = make().eval()
    assert not torch.allclose(with_time(**x_swapped)[0], with_time(**x)[0])
    bag = make(temporal_encoding=False).eval()
    assert len(bag.times) == 0
    torch.testing.assert_close(bag(**x_swapped), bag(**x))  # without it the memory is a set
    real = torch.tensor([[True, True, True, False]])
    assert time_index(real, noise=0.1, rows=50, training=False).tolist() == [[0, 1, 2, 3]]  # T(i) for slot i


def test_random_noise_inserts_gaps_in_the_temporal_indices():
    torch.manual_seed(0)
    counts = torch.tensor([1, 9, 20, 50, 0])
    real = torch.arange(50).unsqueeze(0) < counts.unsqueeze(1)  # [5, 50]
    seen_gap = False
    for _ in range(200):
        index = time_index(real, noise=0.1, rows=50, training=True)
        for b, n in enumerate(counts.tolist()):
            picked = index[b, :n]
            limit = n + -(-n // 10)  # n + ceil(0.1 n) candidate positions
            assert bool((picked[1:] > picked[:-1]).all()) or n == 50  # distinct, in order (the cap merges some)
            assert n == 0 or int(picked.max()) <= min(limit, 50) - 1
            seen_gap |= picked.tolist() != list(range(n))
    assert seen_gap
    assert torch.equal(time_index(real, 0.0, 50, training=True), time_index(real, 0.1, 50, training=False))


# linear start and the schedule ---------------------------------------------------------------------------------
def test_linear_start_removes_the_softmax_until_its_epochs_are_done():
    model = make(linear_start_epochs=1)
    x = batch()
    assert model.schedule.linear
    model.eval()
    torch.testing.assert_close(model(**x), reference_logits(model, x, linear=True))
    model.train()
    with torch.no_grad():
        model(**x)  # first training step after a validation: epoch 1 is done
    assert model.schedule.epochs == 1 and not model.schedule.linear
    model.eval()
    torch.testing.assert_close(model(**x), reference_logits(model, x, linear=False))


def test_a_run_counts_only_its_own_epochs(env: dict[str, str]) -> None:
    """Through the launcher and the runner: 2 epochs, so one evaluation followed by training, one epoch counted
    (in the checkpoint's schedule state). The launcher's check of the model's output, an evaluation before
    training, runs on a copy and is not counted, or linear start would end an epoch early."""
    from pathlib import Path

    from harness.cli import main
    from harness.runners.supervised import load_checkpoint
    from tests.conftest import only_run

    assert main(["bench", "--task", "babi", "--model", "memn2n", "--profile", "smoke", "task.source=generator",
                 "train.max_epochs=2"]) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    saved = load_checkpoint(run / "checkpoints" / "last.ckpt")["state_dict"]["model._extra_state"]
    assert saved == {"epochs": 1, "after_eval": True}


def test_the_gradient_is_the_summed_cost_clipped_then_scaled_by_the_lr_factor():
    x = batch()
    target = torch.tensor([1, 2, 3, 4])

    def grads(model: MemN2N) -> list[torch.Tensor]:
        model.train()
        F.cross_entropy(model(**x), target).backward()  # the runner's cost: the batch mean
        return [p.grad.clone() for p in model.parameters()]

    plain = grads(make(batch_cost="mean", grad_clip=0.0, halve_lr_every=0))
    summed = grads(make(grad_clip=1e9))
    for g_sum, g_mean in zip(summed, plain, strict=True):
        torch.testing.assert_close(g_sum, 4 * g_mean)
    clipped = grads(make(grad_clip=0.5))
    assert float(torch.linalg.vector_norm(torch.stack([g.norm() for g in clipped]))) == pytest.approx(0.5, rel=1e-5)
    later = make(grad_clip=0.5)
    later.schedule.epochs = 60  # 60 // 25 = 2 halvings
    assert later.schedule.lr_factor() == 0.25
    for g_late, g_now in zip(grads(later), clipped, strict=True):
        torch.testing.assert_close(g_late, 0.25 * g_now)


def test_epochs_are_counted_at_validation_and_travel_with_the_state_dict():
    model = make(linear_start_epochs=2)
    x = batch()
    with torch.no_grad():
        for _ in range(2):  # two epochs: training steps, then a validation pass
            model.train()
            model(**x)
            model(**x)
            model.eval()
            model(**x)
    assert model.schedule.epochs == 1 and model.schedule.linear  # the second epoch counts when training resumes
    resumed = make(seed=3, linear_start_epochs=2)
    resumed.load_state_dict(model.state_dict())
    resumed.train()
    with torch.no_grad():
        resumed(**x)
    assert resumed.schedule.epochs == 2 and not resumed.schedule.linear


def test_a_few_seconds_of_training_learn_where_each_person_is():
    """Statements 'person place' (four different people), question 'person': the answer is that person's place.
    Summed cost, clipping, linear start for the first epoch, then the softmax; SGD with a larger lr than §4.2's
    so that it takes seconds."""
    torch.manual_seed(0)
    n = 256
    who = torch.stack([torch.randperm(4) for _ in range(n)]) + 2  # [n, 4] people 2..5
    where = torch.randint(6, 12, (n, 4))  # places 6..11
    pick = torch.randint(0, 4, (n,))
    target = where[torch.arange(n), pick]
    data = {"story": torch.stack([who, where], dim=-1), "story_len": torch.full((n,), 4),
            "query": who[torch.arange(n), pick].unsqueeze(1)}
    model = MemN2N(OmegaConf.create({**PAPER, "embedding_size": 20, "linear_start_epochs": 1}),
                   {"vocab_size": 12, "num_classes": 12, "max_sent_len": 2, "max_story_len": 4})
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: one thread is faster than two on a shared machine
    try:
        for _ in range(7):
            model.train()
            for start in range(0, n, 32):
                loss = F.cross_entropy(model(**{k: v[start:start + 32] for k, v in data.items()}),
                                       target[start:start + 32])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                losses.append(float(loss.detach()))
            model.eval()
            with torch.no_grad():  # the validation pass that ends an epoch (and so linear start)
                accuracy = float((model(**data).argmax(dim=-1) == target).float().mean())
    finally:
        torch.set_num_threads(threads)
    assert sum(losses[-8:]) < 0.2 * sum(losses[:8])
    assert accuracy > 0.9  # chance: 1/6


# the registry -------------------------------------------------------------------------------------------------
def test_memn2n_reads_babi_stories_with_the_papers_settings():
    assert REGISTRY.compatibility(REGISTRY.task("babi"), REGISTRY.model("memn2n")).route == \
        "story -> memn2n (its own reader)"
    cfg = compose("babi", "memn2n", "paper").cfg
    assert (cfg.model.hops, cfg.model.embedding_size, cfg.model.memory_size) == (3, 20, 50)
    assert (cfg.optim.name, cfg.optim.lr, cfg.optim.momentum, cfg.optim.grad_clip) == ("sgd", 0.005, 0.0, 0.0)
    assert cfg.train.batch_size == 32 and cfg.train.max_epochs == 120
