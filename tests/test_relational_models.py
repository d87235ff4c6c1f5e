"""PrediNet and its baselines (models/relational): shapes, the reference's arithmetic, parameter counts
from the architecture description, the paper init, and the central-module registry."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf
from torch import nn

from models.relational.central import CENTRAL_MODULES, build_central
from models.relational.encoder import ConvEntityEncoder
from models.relational.image_model import ImageRelationalModel

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["predinet", "mlp1", "mlp2", "relation_net", "mha"]
N, D = 25, 34  # 5x5 entities of 32 conv channels + (x, y)
INFO = {"image_shape": (36, 36, 3), "num_classes": 2, "num_tasks": 1}


def model_cfg(name: str, **overrides):
    """The model section of models/relational/<name>.yaml (the shipped defaults)."""
    data = yaml.safe_load((ROOT / "models" / "relational" / f"{name}.yaml").read_text())
    return OmegaConf.merge(OmegaConf.create(data["config"]["model"]), OmegaConf.create(overrides))


def images(batch: int = 4, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, 36, 36, 3), generator=g, dtype=torch.uint8)


def entities(batch: int = 4, n: int = N, d: int = D, seed: int = 0) -> torch.Tensor:
    return torch.rand(batch, n, d, generator=torch.Generator().manual_seed(seed))


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("name", NAMES)
def test_central_and_full_model_shapes(name):
    torch.manual_seed(0)
    central = build_central(name, N, D, model_cfg(name))
    assert central.out_dim == 640
    assert central(entities()).shape == (4, 640)
    model = ImageRelationalModel(model_cfg(name), INFO)
    logits = model(images(), torch.zeros(4, dtype=torch.long))
    assert logits.shape == (4, 2) and torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_yaml_spec_reads_images_through_the_central_adapter():
    from harness.registry import REGISTRY

    for name in NAMES:
        data = yaml.safe_load((ROOT / "models" / "relational" / f"{name}.yaml").read_text())
        assert data["spec"]["name"] == name and data["config"]["model"]["name"] == name
        assert "interfaces" not in data["spec"] and data["spec"]["shape"] == "central"  # declared once, for all
        interfaces = REGISTRY.model(name).interfaces
        assert interfaces["image"] == "models.relational.image_model:ImageRelationalModel"
        assert interfaces["env"] == "models.agents.shell:AgentShell"
        assert data["spec"]["kinds"] == ["supervised", "rl"]
        assert data["config"]["model"]["central"] in CENTRAL_MODULES


def test_encoder_entities_and_coordinates():
    encoder = ConvEntityEncoder(3, 32, 12, 6, image_hw=(36, 36))
    assert (encoder.n_entities, encoder.d_entity) == (25, 34)
    ents = encoder(images())
    assert ents.shape == (4, 25, 34)
    coords = ents[..., -2:]
    allowed = torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8])
    assert torch.isclose(coords[..., None], allowed).any(-1).all()
    for n in range(25):  # row-major entities; (x, y) = (column / 5, row / 5)
        torch.testing.assert_close(coords[0, n], torch.tensor([(n % 5) / 5, (n // 5) / 5]))
    assert (ents[..., :32] >= 0).all()  # ReLU


def test_encoder_scales_by_256_and_reads_channels_last():
    encoder = ConvEntityEncoder(3, 4, 12, 6, image_hw=(36, 36))
    image = images(2)
    x = image.float().permute(0, 3, 1, 2) / 256.0
    expected = torch.relu(nn.functional.conv2d(x, encoder.conv.weight, encoder.conv.bias, stride=6))  # [B, 4, 5, 5]
    torch.testing.assert_close(encoder(image)[..., :4], expected.flatten(2).transpose(1, 2))
    torch.testing.assert_close(encoder(image.float()), encoder(image))  # float input on the same 0..255 scale


def test_predinet_attention_rows_sum_to_one():
    central = build_central("predinet", N, D, model_cfg("predinet"))
    central(entities())
    att1, att2 = central.last_attention
    for att in (att1, att2):
        assert att.shape == (4, 32, 25) and not att.requires_grad
        torch.testing.assert_close(att.sum(-1), torch.ones(4, 32))


def test_predinet_matches_a_hand_computation_without_scaling():
    """Tiny PrediNet (N=3, D=4, k=2 heads, j=2 relations, g=3) against the equations written out by loops."""
    torch.manual_seed(0)
    cfg = OmegaConf.create({"heads": 2, "relations": 2, "key_size": 3})
    net = build_central("predinet", 3, 4, cfg).double()
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 1.5)  # large logits: a 1/sqrt(3) scaling would change the softmax a lot
    L = torch.randn(1, 3, 4, dtype=torch.double) * 2
    out = net(L)[0].detach()
    flat = L[0].reshape(-1)
    W_K, W_Q1, W_Q2, W_S = (m.weight.detach() for m in (net.w_k, net.w_q1, net.w_q2, net.w_s))  # [out, in]
    for h in range(2):
        heads_out = []
        selected = []
        for W_Q in (W_Q1, W_Q2):
            q = [sum(flat[i] * W_Q[h * 3 + a, i] for i in range(12)) for a in range(3)]
            logits = [sum(q[a] * sum(L[0, n, d] * W_K[a, d] for d in range(4)) for a in range(3)) for n in range(3)]
            z = [math.exp(float(v)) for v in logits]
            att = [v / sum(z) for v in z]  # softmax over entities, no 1/sqrt(g)
            heads_out.append(att)
            selected.append([sum(att[n] * float(L[0, n, d]) for n in range(3)) for d in range(4)])
        torch.testing.assert_close(net.last_attention[0][0, h], torch.tensor(heads_out[0], dtype=torch.double))
        torch.testing.assert_close(net.last_attention[1][0, h], torch.tensor(heads_out[1], dtype=torch.double))
        e1, e2 = selected
        diff = [sum(float(W_S[r, d]) * (e1[d] - e2[d]) for d in range(4)) for r in range(2)]
        expected = torch.tensor(diff + e1[-2:] + e2[-2:], dtype=torch.double)  # (D^h, P_1^h, P_2^h)
        torch.testing.assert_close(out[h * 6:(h + 1) * 6], expected)


def test_mha_matches_a_hand_computation_without_scaling():
    torch.manual_seed(0)
    cfg = OmegaConf.create({"heads": 2, "key_size": 3, "central_output": 4})  # value size 2
    net = build_central("mha", 3, 4, cfg).double()
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 1.5)
    L = torch.randn(1, 3, 4, dtype=torch.double)
    out = net(L)[0]
    expected = []
    for h in range(2):
        q = L[0] @ net.w_q.weight[h * 3:(h + 1) * 3].T  # [N, 3]
        k = L[0] @ net.w_k.weight[h * 3:(h + 1) * 3].T
        v = L[0] @ net.w_v.weight[h * 2:(h + 1) * 2].T  # [N, 2]
        att = torch.softmax(q @ k.T, dim=-1)  # unscaled
        torch.testing.assert_close(net.last_attention[0, h], att)
        expected.append(net.combine[h, 0] @ (att @ v))  # per-head weighted sum over entities
    torch.testing.assert_close(out, torch.cat(expected).detach())


def test_mha_default_init_is_the_references_and_qk_init_std_touches_only_w_q_and_w_k():
    from models.relational.init import truncated_normal_

    torch.manual_seed(0)
    model = ImageRelationalModel(model_cfg("mha"), INFO)
    central = model.central
    assert central.qk_init_std == 0.1
    for p in (central.w_q.weight, central.w_k.weight, central.w_v.weight, central.combine):
        assert p.abs().max() <= 0.2 and abs(p.std().item() - 0.088) < 0.01
    # the hook draws what the generic paper_init_ draws: stddev 0.1 for each parameter, in named_parameters order
    names = [name for name, _ in central.named_parameters()]
    assert names == ["combine", "w_q.weight", "w_k.weight", "w_v.weight"]
    torch.manual_seed(1)
    central.reset_parameters_paper()
    torch.manual_seed(1)
    for p in central.parameters():
        torch.testing.assert_close(p.detach(), truncated_normal_(torch.empty_like(p)), rtol=0, atol=0)
    # the opt-in wider W_Q / W_K (not the reference's init), kept by reinit_central
    torch.manual_seed(0)
    wide = ImageRelationalModel(model_cfg("mha", qk_init_std=0.3), INFO)
    for _ in range(2):
        for p in (wide.central.w_q.weight, wide.central.w_k.weight):
            assert p.abs().max() <= 0.6 and abs(p.std().item() - 0.264) < 0.02
        for p in (wide.central.w_v.weight, wide.central.combine):
            assert p.abs().max() <= 0.2
        wide.reinit_central()
    with pytest.raises(ValueError):
        build_central("mha", N, D, model_cfg("mha", qk_init_std=0.0))


@pytest.mark.parametrize("name", ["predinet", "mha"])
def test_head_mask_zeroes_exactly_the_masked_heads(name):
    central = build_central(name, N, D, model_cfg(name))
    x = entities()
    full = central(x).view(4, 32, 20)
    mask = torch.ones(32, dtype=torch.bool)
    masked_heads = [0, 5, 31]
    mask[masked_heads] = False
    central.head_mask = mask
    pruned = central(x).view(4, 32, 20)
    kept = [h for h in range(32) if h not in masked_heads]
    assert (pruned[:, masked_heads] == 0).all()
    torch.testing.assert_close(pruned[:, kept], full[:, kept])
    central.head_mask = None
    torch.testing.assert_close(central(x).view(4, 32, 20), full)
    with pytest.raises(ValueError):
        central.set_head_mask(torch.ones(31))


def test_relation_net_is_permutation_invariant_and_mlp1_is_not():
    x = entities()
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(3))
    rn = build_central("relation_net", N, D, model_cfg("relation_net"))
    torch.testing.assert_close(rn(x[:, perm]), rn(x), rtol=1e-5, atol=1e-6)
    mlp1 = build_central("mlp1", N, D, model_cfg("mlp1"))
    assert not torch.allclose(mlp1(x[:, perm]), mlp1(x), atol=1e-4)


def test_relation_net_equals_the_explicit_pair_mlp():
    rn = build_central("relation_net", 4, 3, OmegaConf.create({"central_hidden": 5, "central_output": 6})).double()
    x = torch.randn(2, 4, 3, dtype=torch.double)
    pairs = torch.cat([x[:, :, None].expand(2, 4, 4, 3), x[:, None, :].expand(2, 4, 4, 3)], -1)  # [e_i, e_j]
    expected = torch.relu(rn.pair_output(torch.relu(rn.pair_hidden(pairs)))).mean(dim=(1, 2))
    torch.testing.assert_close(rn(x), expected)


def test_parameter_counts_match_the_architecture():
    k, j, g, H = 32, 16, 16, 640  # heads, relations, key size, central output
    expected = {
        "predinet": D * g + 2 * (N * D) * (k * g) + D * j,  # W_K + W_Q1 + W_Q2 + W_S, no biases
        "mlp1": (N * D) * H + H,
        "mlp2": (N * D) * 1024 + 1024 + 1024 * H + H,
        "relation_net": (2 * D) * 256 + 256 * H,  # no biases
        "mha": 2 * D * (k * g) + D * (k * (H // k)) + k * N,  # W_Q, W_K, W_V (no biases) + combine [k, 1, N]
    }
    assert expected == {"predinet": 871_488, "mlp1": 544_640, "mlp2": 1_527_424, "relation_net": 181_248,
                        "mha": 57_376}
    for name, count in expected.items():
        assert n_params(build_central(name, N, D, model_cfg(name))) == count, name
    model = ImageRelationalModel(model_cfg("predinet"), {**INFO, "num_tasks": 3})
    assert n_params(model.encoder) == 12 * 12 * 3 * 32 + 32
    assert n_params(model.head) == (H + 3) * 8 + 8 + 8 * 2 + 2


def test_paper_init_truncated_normal_weights_and_constant_biases():
    torch.manual_seed(0)
    model = ImageRelationalModel(model_cfg("mlp2"), INFO)
    weights = torch.cat([p.detach().flatten() for n, p in model.named_parameters() if not n.endswith("bias")])
    biases = torch.cat([p.detach().flatten() for n, p in model.named_parameters() if n.endswith("bias")])
    # TF's truncated_normal(stddev=0.1): N(0, 0.1^2) re-drawn beyond 2 stddev -> |w| <= 0.2 and
    # std = 0.1 * sqrt(1 - 4 phi(2) / (2 Phi(2) - 1)) = 0.0880 (not 0.1: the truncation narrows it).
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    truncated_std = 0.1 * math.sqrt(1 - 4 * phi2 / math.erf(2 / math.sqrt(2)))
    assert abs(weights.std().item() - truncated_std) < 1e-3 and abs(weights.mean().item()) < 1e-3
    assert weights.abs().max() <= 0.2
    assert (biases == 0.1).all()
    mha = ImageRelationalModel(model_cfg("mha"), INFO)
    assert mha.central.combine.abs().max() <= 0.2 and mha.central.combine.std() > 0.05


def test_task_one_hot_only_in_multi_task_runs():
    torch.manual_seed(0)
    x = images()
    single = ImageRelationalModel(model_cfg("predinet"), INFO)
    assert single.head.hidden.in_features == 640
    torch.testing.assert_close(single(x, torch.zeros(4, dtype=torch.long)), single(x))
    multi = ImageRelationalModel(model_cfg("predinet"), {**INFO, "num_tasks": 3})
    assert multi.head.hidden.in_features == 643
    out0, out2 = multi(x, torch.zeros(4, dtype=torch.long)), multi(x, torch.full((4,), 2))
    assert not torch.allclose(out0, out2)
    slots = ImageRelationalModel(model_cfg("predinet", task_slots=5), INFO)  # the notebook's fixed width
    assert slots.head.hidden.in_features == 645


def test_reinit_head_and_central_touch_only_their_part():
    torch.manual_seed(0)
    model = ImageRelationalModel(model_cfg("predinet"), {**INFO, "num_tasks": 3})
    for part, reinit in (("head.", model.reinit_head), ("central.", model.reinit_central)):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)  # "trained": every parameter away from its init (biases off 0.1, |w| off <= 0.2)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        reinit()
        for name, p in model.named_parameters():
            if name.startswith(part):
                assert not torch.equal(p, before[name]), name
                assert (p == 0.1).all() if name.endswith("bias") else p.abs().max() <= 0.2, name
            else:
                assert torch.equal(p, before[name]), name
    model.reinit_head(num_tasks=5)  # a stage with another task count rebuilds the head
    assert model.head.hidden.in_features == 645


class TinyCentral(nn.Module):
    """A stand-in for a future central module (e.g. the 2-simplicial Transformer block)."""

    def __init__(self, n_entities: int, d_entity: int, cfg) -> None:
        super().__init__()
        self.out_dim = int(cfg.central_output)
        self.proj = nn.Linear(d_entity, self.out_dim)

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        return self.proj(entities).mean(dim=1)


def test_a_new_central_module_joins_by_one_registry_entry(monkeypatch):
    monkeypatch.setitem(CENTRAL_MODULES, "tiny", TinyCentral)
    cfg = OmegaConf.create({"central": "tiny", "conv_channels": 8, "conv_kernel": 12, "conv_stride": 6,
                            "central_output": 7, "output_hidden": 8})
    model = ImageRelationalModel(cfg, {**INFO, "num_tasks": 2})
    assert isinstance(model.central, TinyCentral) and model.head.hidden.in_features == 7 + 2
    assert (model.central.proj.bias == 0.1).all()  # the paper init reaches it too
    assert model(images(), torch.tensor([0, 1, 0, 1])).shape == (4, 2)
    with pytest.raises(ValueError, match="model.central"):
        build_central("tiny_typo", N, D, cfg)


PRUNABLE = sorted(name for name, cls in CENTRAL_MODULES.items() if getattr(cls, "HEAD_MASK_SCALES_OUTPUT", False))


def test_head_pruning_is_offered_exactly_where_its_shortcut_is_exact():
    """PrediNet and MHA scale each head's output block; the relational and 2-simplicial blocks apply the mask
    inside iterated attention, LayerNorm and pooling, where re-running only the output MLP would be wrong."""
    from harness.runners.analysis import pruning_is_exact

    assert PRUNABLE == ["mha", "predinet"]
    for name in ("relational", "simplicial"):
        torch.manual_seed(0)
        model = ImageRelationalModel(model_cfg(name), {**INFO, "num_tasks": 1}).eval()
        assert not pruning_is_exact(model)
        with torch.no_grad():  # the shortcut (mask applied to the unmasked output) differs from a masked pass
            x = images(8, seed=3)
            features = model.central(model.encoder(x))
            mask = torch.tensor([1.0, 0.0])
            block = features.shape[1] // model.central.heads
            shortcut = model.head(features * mask.repeat_interleave(block)[None, :], None) \
                if features.shape[1] % model.central.heads == 0 else None
            model.central.head_mask = mask
            masked = model(x)
            model.central.head_mask = None
        assert shortcut is None or not torch.allclose(shortcut, masked, atol=1e-5)


@pytest.mark.parametrize("name", PRUNABLE)
@pytest.mark.slow
def test_head_pruning_from_cached_central_outputs_matches_masked_forward_passes(name):
    """The pruning curve reuses one unmasked pass of encoder and central module; each subset's accuracy
    must equal a full forward pass with ``central.head_mask`` set to that subset."""
    import numpy as np

    from harness.data import TensorDictDataset
    from harness.runners.analysis import head_pruning

    torch.manual_seed(0)
    model = ImageRelationalModel(model_cfg(name), {**INFO, "num_tasks": 3}).eval()
    n = 60
    data = {"image": images(n, seed=1), "task_id": torch.arange(n) % 3, "target": torch.randint(0, 2, (n,))}
    with torch.no_grad():  # labels from the model itself, so that accuracy depends on the heads kept
        data["target"] = model(data["image"], data["task_id"]).argmax(-1)
    dataset = TensorDictDataset(data)
    curve = head_pruning(model, dataset, subsets=3, seed=7, batch_size=25)["curve"]
    rng = np.random.default_rng(7)
    heads = model.central.heads
    with torch.no_grad():
        for point in curve:
            accs = []
            for _ in range(3 if point["heads"] < heads else 1):
                mask = torch.zeros(heads)
                mask[rng.choice(heads, size=point["heads"], replace=False)] = 1.0
                model.central.head_mask = mask
                logits = model(data["image"], data["task_id"])
                accs.append(float((logits.argmax(-1) == data["target"]).float().mean()))
            assert point["mean"] == pytest.approx(float(np.mean(accs)), abs=1e-6)
            assert point["best"] == pytest.approx(max(accs), abs=1e-6)
    model.central.head_mask = None
    assert curve[-1]["mean"] == 1.0  # every head kept: the unmasked model, which made the labels
