"""The relational and 2-simplicial Transformer central modules (models/relational/transformer.py and
simplicial.py): eq. (15) against a direct triple loop, the entity mask of eq. (18)-(19), weight sharing
across depth, gradients, the Keras init and their use inside the Relations Game image model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from models.relational.central import build_central
from models.relational.image_model import ImageRelationalModel
from models.relational.simplicial import SimplicialTransformer, TwoSimplicialAttention
from models.relational.transformer import EntitySelfAttention, RelationalTransformer

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["relational", "simplicial"]
INFO = {"image_shape": (36, 36, 3), "num_classes": 2, "num_tasks": 1}


def model_cfg(name: str, **overrides):
    data = yaml.safe_load((ROOT / "models" / "relational" / f"{name}.yaml").read_text())
    return OmegaConf.merge(OmegaConf.create(data["config"]["model"]), OmegaConf.create(overrides))


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def triple_loop_eq15(att: TwoSimplicialAttention, x: torch.Tensor) -> torch.Tensor:
    """Eq. (9), (10) (the norm, not the expanded square of (11)), (15) and (19), one scalar at a time."""
    n, m, d = att.n_standard, att.n_virtual, att.dim
    w, b = att.proj.weight, att.tensor_b[0]
    out = torch.zeros(x.shape[0], n + m, d, dtype=x.dtype)
    for e in range(x.shape[0]):
        p, l1, l2, u = (x[e] @ w[i * d:(i + 1) * d].T for i in range(4))  # eq. (9), each [N+M, d]
        for i in range(n):
            pairs = [(j, k) for j in range(n, n + m) for k in range(n, n + m)]
            logits = torch.stack([torch.linalg.vector_norm((p[i] @ l1[j]) * l2[k] - (p[i] @ l2[k]) * l1[j]
                                                           + (l1[j] @ l2[k]) * p[i]) for j, k in pairs])  # eq. (10)
            weights = torch.exp(logits) / torch.exp(logits).sum()
            for weight, (j, k) in zip(weights, pairs, strict=True):
                for q in range(d):
                    value = sum(b[q, r, s] * u[j, r] * u[k, s] for r in range(d) for s in range(d))
                    out[e, i, q] += weight * value  # eq. (15)
        out[e, n:] = u[n:]  # eq. (19): virtual entities keep their own u
    return out


def test_two_simplicial_attention_matches_a_triple_loop_of_eq15():
    torch.manual_seed(0)
    att = TwoSimplicialAttention(d_model=5, dim=4, heads=1, n_standard=3, n_virtual=2).double()
    with torch.no_grad():
        att.tensor_b.mul_(5.0)  # make B's contribution large enough to matter
    x = torch.randn(2, 5, 5, dtype=torch.float64)
    out, weights = att(x)
    torch.testing.assert_close(out, triple_loop_eq15(att, x.detach()).to(out), rtol=1e-10, atol=1e-10)
    assert weights.shape == (2, 3, 1, 2, 2)
    torch.testing.assert_close(weights.sum(dim=(-1, -2)), torch.ones(2, 3, 1, dtype=torch.float64))


def test_two_simplicial_gradients_are_finite_even_at_a_zero_triple_product():
    torch.manual_seed(0)
    att = TwoSimplicialAttention(d_model=6, dim=4, heads=2, n_standard=3, n_virtual=2)
    x = torch.randn(3, 5, 6, requires_grad=True)
    out, _ = att(x)
    out.square().sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(att.tensor_b.grad).all()
    zero = torch.zeros(1, 5, 6, requires_grad=True)  # every triple product 0: the clamp keeps sqrt' finite
    out, _ = att(zero)
    out.sum().backward()
    assert torch.isfinite(zero.grad).all()


def test_heads_split_the_simplicial_dimension():
    att = TwoSimplicialAttention(d_model=8, dim=6, heads=3, n_standard=4, n_virtual=2)
    assert att.tensor_b.shape == (3, 2, 2, 2) and att.proj.weight.shape == (24, 8)
    out, weights = att(torch.randn(2, 6, 8))
    assert out.shape == (2, 6, 6) and weights.shape == (2, 4, 3, 2, 2)
    with pytest.raises(ValueError, match="multiple"):
        TwoSimplicialAttention(d_model=8, dim=7, heads=3, n_standard=4, n_virtual=2)


def test_standard_entities_do_not_attend_to_virtual_ones_and_virtual_ones_attend_to_all():
    torch.manual_seed(0)
    n, m = 5, 2
    att = EntitySelfAttention(d_model=8, heads=2, head_size=4, n_standard=n, n_virtual=m)
    x = torch.randn(3, n + m, 8)
    out, weights = att(x)
    assert (weights[:, :, :n, n:] == 0).all() and (weights[:, :, n:, :] > 0).all()
    moved_virtual = x.clone()
    moved_virtual[:, n:] += torch.randn(3, m, 8)
    out_v, _ = att(moved_virtual)
    torch.testing.assert_close(out_v[:, :n], out[:, :n], rtol=0, atol=1e-6)  # standard outputs unchanged
    assert not torch.allclose(out_v[:, n:], out[:, n:])
    moved_standard = x.clone()
    moved_standard[:, 0] += 1.0
    out_s, _ = att(moved_standard)
    assert not torch.allclose(out_s[:, n:], out[:, n:])  # virtual entities read the standard ones


def test_simplicial_module_standard_entities_read_virtual_ones_only_through_the_2_simplex():
    torch.manual_seed(0)
    central = build_central("simplicial", 6, 64, model_cfg("simplicial", depth=1))
    x = torch.randn(2, 6, 64)
    base = central(x)
    att1, att2 = central.last_attention
    assert att1.shape == (2, 2, 8, 8) and (att1[:, :, :6, 6:] == 0).all()
    assert att2.shape == (2, 6, 1, 2, 2)
    with torch.no_grad():
        central.virtual.weight.add_(1.0)
    assert not torch.allclose(central(x), base)  # the virtual entities reach the output via eq. (18)


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_shared_across_depth(name):
    counts = {depth: n_params(build_central(name, 40, 64, model_cfg(name, depth=depth))) for depth in (1, 2, 3)}
    norms_per_iteration = 2 * 64 * 2 + (2 * 48 if name == "simplicial" else 0)  # gain + bias of each LayerNorm
    assert counts[2] - counts[1] == counts[3] - counts[2] == norms_per_iteration
    relational = 64 * 192 + (64 * 64 + 64) + (64 * 64 + 64)  # W_qkv; g_theta
    expected = relational + norms_per_iteration
    if name == "simplicial":  # W_pllu, B, the two virtual entities, and g_theta's wider input
        expected += 64 * 192 + 48**3 + 2 * 64 + 48 * 64
    assert counts[1] == expected


@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter_and_output_is_max_pooled(name):
    torch.manual_seed(0)
    central = build_central(name, 40, 64, model_cfg(name))
    assert central.out_dim == 64 and central.input_proj is None
    out = central(torch.randn(3, 40, 64))
    assert out.shape == (3, 64) and torch.isfinite(out).all()
    out.sum().backward()
    missing = [n for n, p in central.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing


@pytest.mark.parametrize("name", NAMES)
def test_inside_the_relations_game_image_model(name):
    torch.manual_seed(0)
    model = ImageRelationalModel(model_cfg(name), INFO)
    central = model.central
    assert isinstance(central, RelationalTransformer) and central.input_proj.in_features == 34  # 34-d entities
    # the paper init left the Keras init in place: LayerNorm gain 1 / bias 0, zero biases, Glorot weights
    assert all((ln.weight == 1).all() and (ln.bias == 0).all() for ln in central.input_norms)
    assert (central.ff.hidden.bias == 0).all() and central.attention.qkv.weight.abs().max() <= (6 / 256) ** 0.5
    images = torch.randint(0, 256, (4, 36, 36, 3), dtype=torch.uint8)
    logits = model(images, torch.zeros(4, dtype=torch.long))
    assert logits.shape == (4, 2) and torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    assert len(central.last_attention) == (4 if name == "simplicial" else 2)


@pytest.mark.parametrize("name", NAMES)
def test_head_mask_prunes_1_simplicial_heads(name):
    torch.manual_seed(0)
    central = build_central(name, 10, 64, model_cfg(name))
    x = torch.randn(2, 10, 64)
    full = central(x)
    central.set_head_mask(torch.ones(2))
    torch.testing.assert_close(central(x), full)
    central.head_mask = torch.tensor([1.0, 0.0])
    assert not torch.allclose(central(x), full)
    with pytest.raises(ValueError, match="head_mask"):
        central.set_head_mask(torch.ones(3))


def test_simplicial_config_fields_and_defaults():
    central = SimplicialTransformer(40, 64, OmegaConf.create({}))  # every field defaults to the paper's value
    assert (central.model_dim, central.heads, central.head_size, central.depth) == (64, 2, 32, 2)
    assert central.n_virtual == 2 and central.simplicial.dim == 48 and central.simplicial.heads == 1
    assert central.ff.hidden.in_features == 64 + 48 and central.ff.hidden.out_features == 64
    assert abs(central.virtual.weight).max() <= 0.05
