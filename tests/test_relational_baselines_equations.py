"""The PrediNet paper's baselines and shared parts against literal, loop-by-loop transcriptions of the
architecture (Shanahan et al., ICML 2020, "An Explicitly Relational Neural Network Architecture", §4, Fig. 3 and
Table S2; the notebook PrediNet/PrediNet.ipynb of google-deepmind/deepmind-research: ``input_module`` with
``_locs``, ``ConvNetMLP1L``, ``ConvNetMLP2L``, ``SelfAttentionNet`` / ``CombineValues`` and the output MLP):

    encoder   F[r, c, o] = ReLU(b_o + sum_{i, j, ch} w[o, ch, i, j] x[r*s + i, c*s + j, ch]),  x = image / 256
              L_n = [F[r, c, :], c / w, r / h],  n = r * w + c                     (row-major, (x, y) last)
    MLP1      R*_o = ReLU(b_o + sum_{n, d} W[o, n*D + d] L[n, d])                   (snt.Flatten: entity-major)
    MLP2      the same twice, hidden then output, a ReLU after each
    MHA       A^h[n, m] = softmax_m(sum_a Q^h[n, a] K^h[m, a])                      (no 1/sqrt(d_k) scaling)
              R^h = sum_n c^h_n sum_m A^h[n, m] V^h[m],  R* = [R^1, ..., R^heads]
    head      logits = W_2 ReLU(W_1 [R*, onehot(task)] + b_1) + b_2                 (R* first, then the task)
    model     logits = head(central(encoder(image)), task)

Each expected value is computed with Python loops from the module's own parameters, sharing none of the
implementation's reshapes, einsums or concatenations. Also: ``reinit_encoder`` re-draws the input conv alone
(the curriculum's re-initialisation of one part), and a rebuilt head lives on the model's dtype."""

from __future__ import annotations

import math

import torch
from omegaconf import OmegaConf

from models.relational.central import build_central
from models.relational.encoder import ConvEntityEncoder
from models.relational.head import ClassifierHead
from models.relational.image_model import ImageRelationalModel
from models.relational.mha import MultiHeadAttention
from models.relational.mlp import MLP1, MLP2


def _randomise(module: torch.nn.Module, std: float = 1.0) -> None:
    """Large, sign-mixed parameters (biases included), so that a ReLU or a misplaced bias changes the output."""
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, std)


def _relu(v: float) -> float:
    return v if v > 0 else 0.0


def _dense(weight: torch.Tensor, bias: torch.Tensor | None, x: list[float], relu: bool) -> list[float]:
    """One fully connected layer on a Python list: out_o = [ReLU](b_o + sum_i W[o, i] x_i); weight [out, in]."""
    out = []
    for o in range(weight.shape[0]):
        total = float(bias[o]) if bias is not None else 0.0
        for i in range(weight.shape[1]):
            total += float(weight[o, i]) * x[i]
        out.append(_relu(total) if relu else total)
    return out


def _flatten_entity_major(entities: torch.Tensor) -> list[float]:
    """L [N, D] -> [L_0, L_1, ...]: feature d of entity n at position n * D + d (snt.Flatten of [N, D])."""
    return [float(entities[n, d]) for n in range(entities.shape[0]) for d in range(entities.shape[1])]


def test_mlp1_is_one_relu_layer_on_the_entity_major_flattening() -> None:
    torch.manual_seed(0)
    net = MLP1(3, 4, OmegaConf.create({"central_output": 5})).double()
    _randomise(net)
    L = torch.randn(2, 3, 4, dtype=torch.double)  # [B, N, D]
    out = net(L).detach()  # [B, 5]
    for b in range(2):
        expected = _dense(net.fc.weight.detach(), net.fc.bias.detach(), _flatten_entity_major(L[b]), relu=True)
        torch.testing.assert_close(out[b], torch.tensor(expected, dtype=torch.double))
    assert (out == 0).any() and (out > 0).any()  # the ReLU clips some outputs: the check above sees it


def test_mlp2_is_two_relu_layers_on_the_entity_major_flattening() -> None:
    torch.manual_seed(1)
    net = MLP2(3, 4, OmegaConf.create({"central_output": 5, "central_hidden": 6})).double()
    _randomise(net)
    L = torch.randn(3, 3, 4, dtype=torch.double)  # [B, N, D]
    out = net(L).detach()  # [B, 5]
    for b in range(3):
        hidden = _dense(net.fc1.weight.detach(), net.fc1.bias.detach(), _flatten_entity_major(L[b]), relu=True)
        assert min(hidden) == 0.0 and max(hidden) > 0  # the inner ReLU is exercised
        expected = _dense(net.fc2.weight.detach(), net.fc2.bias.detach(), hidden, relu=True)
        torch.testing.assert_close(out[b], torch.tensor(expected, dtype=torch.double))
    assert (out == 0).any() and (out > 0).any()


def test_mha_is_unscaled_softmax_attention_over_keys_combined_per_head_by_loops() -> None:
    """Two heads (key size 3, value size 2) over N = 4 entities, every sum a loop; heads concatenated in order."""
    torch.manual_seed(2)
    heads, g, v_size, n_ent, d = 2, 3, 2, 4, 5
    net = MultiHeadAttention(n_ent, d, OmegaConf.create({"heads": heads, "key_size": g,
                                                          "central_output": heads * v_size})).double()
    _randomise(net, 0.8)
    L = torch.randn(1, n_ent, d, dtype=torch.double)
    out = net(L)[0].detach()  # [heads * v_size]
    W_Q, W_K, W_V = (m.weight.detach() for m in (net.w_q, net.w_k, net.w_v))  # [heads * size, D]
    c = net.combine.detach()  # [heads, 1, N]
    expected: list[float] = []

    def proj(W: torch.Tensor, h: int, size: int, n: int) -> list[float]:
        """Head h's rows of W [heads * size, D] applied to entity n (no bias) -> [size]."""
        return [sum(float(W[h * size + a, i]) * float(L[0, n, i]) for i in range(d)) for a in range(size)]

    for h in range(heads):
        q = [proj(W_Q, h, g, n) for n in range(n_ent)]
        k = [proj(W_K, h, g, n) for n in range(n_ent)]
        v = [proj(W_V, h, v_size, n) for n in range(n_ent)]
        r_h = [0.0] * v_size
        for n in range(n_ent):  # query entity n
            logits = [sum(q[n][a] * k[m][a] for a in range(g)) for m in range(n_ent)]  # no 1/sqrt(g)
            z = [math.exp(x) for x in logits]
            att = [x / sum(z) for x in z]  # softmax over the keys m
            torch.testing.assert_close(net.last_attention[0, h, n], torch.tensor(att, dtype=torch.double))
            for j in range(v_size):
                o_nj = sum(att[m] * v[m][j] for m in range(n_ent))
                r_h[j] += float(c[h, 0, n]) * o_nj
        expected.extend(r_h)
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.double))


def test_output_mlp_appends_the_task_one_hot_after_the_central_output() -> None:
    torch.manual_seed(3)
    head = ClassifierHead(4, 3, num_tasks=3, hidden=8).double()
    _randomise(head)
    assert head.hidden.in_features == 4 + 3 and head.hidden.out_features == 8
    x = torch.randn(3, 4, dtype=torch.double)
    task = torch.tensor([0, 2, 1])
    out = head(x, task).detach()  # [B, 3]
    W1, b1, W2, b2 = (t.detach() for t in (head.hidden.weight, head.hidden.bias, head.output.weight,
                                           head.output.bias))
    for b in range(3):
        features = [float(v) for v in x[b]] + [1.0 if t == int(task[b]) else 0.0 for t in range(3)]  # [R*, onehot]
        hidden = _dense(W1, b1, features, relu=True)
        assert min(hidden) == 0.0  # the ReLU is exercised
        torch.testing.assert_close(out[b], torch.tensor(_dense(W2, b2, hidden, relu=False), dtype=torch.double))
    single = ClassifierHead(4, 2, num_tasks=1)
    assert single.hidden.in_features == 4 and single.hidden.out_features == 8  # Table S2: hidden 8, no one-hot


def _conv_entities_by_loops(encoder: ConvEntityEncoder, image: torch.Tensor, kernel: int, stride: int) -> torch.Tensor:
    """image [H, W, C] (0..255) -> [h*w, channels + 2]: the VALID conv, its ReLU and the (x, y) = (c/w, r/h) tail."""
    weight, bias = encoder.conv.weight.detach(), encoder.conv.bias.detach()  # [O, C, k, k], [O]
    height, width, chans = image.shape
    h, w = (height - kernel) // stride + 1, (width - kernel) // stride + 1
    rows = []
    for r in range(h):
        for c in range(w):  # entity n = r * w + c
            feats = []
            for o in range(weight.shape[0]):
                total = float(bias[o])
                for i in range(kernel):
                    for j in range(kernel):
                        for ch in range(chans):
                            total += float(weight[o, ch, i, j]) * float(image[r * stride + i, c * stride + j, ch]) / 256
                feats.append(_relu(total))
            rows.append(feats + [c / w, r / h])
    return torch.tensor(rows, dtype=torch.double)


def test_encoder_is_a_valid_strided_relu_conv_with_row_major_entities_and_xy_coordinates() -> None:
    """A non-square image (7 x 9, kernel 3, stride 2 -> a 3 x 4 map): the entities are row-major, x = column / 4
    and y = row / 3, each axis divided by its own size."""
    torch.manual_seed(4)
    encoder = ConvEntityEncoder(in_channels=2, channels=3, kernel=3, stride=2, image_hw=(7, 9)).double()
    with torch.no_grad():
        encoder.conv.weight.normal_(0.0, 0.05)
        encoder.conv.bias.normal_(0.0, 0.5)
    assert encoder.grid_hw == (3, 4) and (encoder.n_entities, encoder.d_entity) == (12, 5)
    image = torch.randint(0, 256, (2, 7, 9, 2), generator=torch.Generator().manual_seed(4), dtype=torch.uint8)
    out = encoder(image)  # [B, 12, 5]
    for b in range(2):
        expected = _conv_entities_by_loops(encoder, image[b], kernel=3, stride=2)
        torch.testing.assert_close(out[b], expected)
    assert (out[..., :3] == 0).any() and (out[..., :3] > 0).any()  # the ReLU is exercised


def test_image_model_is_head_of_central_of_encoder_by_loops() -> None:
    """The whole model (MLP1 central, 3 tasks) on a 7 x 7 image: literal encoder, MLP1 and output MLP chained."""
    torch.manual_seed(5)
    cfg = OmegaConf.create({"central": "mlp1", "conv_channels": 2, "conv_kernel": 3, "conv_stride": 2,
                            "central_output": 4, "output_hidden": 8})
    model = ImageRelationalModel(cfg, {"image_shape": (7, 7, 1), "num_classes": 2, "num_tasks": 3}).double()
    _randomise(model.central, 0.5)
    _randomise(model.head)
    image = torch.randint(0, 256, (2, 7, 7, 1), generator=torch.Generator().manual_seed(5), dtype=torch.uint8)
    task = torch.tensor([2, 0])
    out = model(image, task).detach()
    for b in range(2):
        entities = _conv_entities_by_loops(model.encoder, image[b], kernel=3, stride=2)  # [9, 4]
        central = _dense(model.central.fc.weight.detach(), model.central.fc.bias.detach(),
                         _flatten_entity_major(entities), relu=True)
        features = central + [1.0 if t == int(task[b]) else 0.0 for t in range(3)]
        hidden = _dense(model.head.hidden.weight.detach(), model.head.hidden.bias.detach(), features, relu=True)
        logits = _dense(model.head.output.weight.detach(), model.head.output.bias.detach(), hidden, relu=False)
        torch.testing.assert_close(out[b], torch.tensor(logits, dtype=torch.double))


def test_reinit_encoder_redraws_the_input_conv_and_nothing_else() -> None:
    torch.manual_seed(6)
    cfg = OmegaConf.create({"central": "mlp2", "conv_channels": 4, "conv_kernel": 12, "conv_stride": 6,
                            "central_output": 6, "central_hidden": 5, "output_hidden": 8})
    model = ImageRelationalModel(cfg, {"image_shape": (36, 36, 3), "num_classes": 2, "num_tasks": 1})
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # "trained": every parameter off its init
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    model.reinit_encoder()
    for name, p in model.named_parameters():
        if name.startswith("encoder."):
            assert not torch.equal(p, before[name]), name
            assert (p == 0.1).all() if name.endswith("bias") else p.abs().max() <= 0.2, name
        else:
            assert torch.equal(p, before[name]), name


def test_a_rebuilt_head_takes_the_models_dtype() -> None:
    torch.manual_seed(7)
    cfg = OmegaConf.create({"central": "mlp1", "conv_channels": 2, "conv_kernel": 3, "conv_stride": 2,
                            "central_output": 4, "output_hidden": 8})
    model = ImageRelationalModel(cfg, {"image_shape": (7, 7, 1), "num_classes": 2, "num_tasks": 1}).double()
    model.reinit_head(num_tasks=3)
    assert all(p.dtype == torch.double for p in model.head.parameters())
    image = torch.randint(0, 256, (2, 7, 7, 1), dtype=torch.uint8)
    assert model(image, torch.tensor([0, 2])).dtype == torch.double


def test_the_model_benchmark_offers_every_central_module_with_its_shipped_settings() -> None:
    """``models.relational.bench_models`` times each registered central module, built from its shipped YAML."""
    from pathlib import Path

    import yaml

    from models.relational import bench_models
    from models.relational.central import CENTRAL_MODULES
    from models.relational.shipped import shipped_model_cfg

    assert sorted(bench_models.MODELS) == sorted(CENTRAL_MODULES)
    folder = Path(bench_models.__file__).parent
    for name in bench_models.MODELS:
        shipped = yaml.safe_load((folder / f"{name}.yaml").read_text())["config"]["model"]
        assert OmegaConf.to_container(shipped_model_cfg(name)) == shipped, name


def test_build_central_builds_each_baseline_by_its_name() -> None:
    cfg = OmegaConf.create({"central_output": 5, "central_hidden": 6, "heads": 1, "key_size": 2})
    assert type(build_central("mlp1", 3, 4, cfg)) is MLP1 and type(build_central("mlp2", 3, 4, cfg)) is MLP2
    assert type(build_central("mha", 3, 4, cfg)) is MultiHeadAttention


def test_paper_init_draws_each_weight_once_in_parameter_order() -> None:
    """A seed fixes the init: every weight is drawn once, in ``named_parameters`` order, from TF's truncated normal
    (stddev 0.1, re-drawn beyond 2 stddev), and every bias is 0.1 without a draw; so a run's initial parameters are
    the same numbers whatever the module nesting."""
    from models.relational.init import paper_init_, truncated_normal_

    cfg = OmegaConf.create({"central": "mlp2", "conv_channels": 2, "conv_kernel": 3, "conv_stride": 2,
                            "central_output": 4, "central_hidden": 5, "output_hidden": 8})
    model = ImageRelationalModel(cfg, {"image_shape": (7, 7, 1), "num_classes": 2, "num_tasks": 3})
    torch.manual_seed(8)
    paper_init_(model)
    torch.manual_seed(8)
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            assert (p == 0.1).all(), name
        else:
            torch.testing.assert_close(p.detach(), truncated_normal_(torch.empty_like(p)), rtol=0, atol=0, msg=name)
