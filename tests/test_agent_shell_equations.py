"""The BoxWorld agent shell (Clift et al., "Logic and the 2-Simplicial Transformer", ICLR 2020, §4.1, and
dmurfet/2simplicialtransformer agent/agent_relational.py), the control MLP agent and the agents' benchmark loss,
against literal transcriptions written with explicit loops from the modules' own parameters:

    encoder:  x = obs / 255;  F = ReLU(conv_2x2(ReLU(conv_2x2(x))))  (VALID, 12 then 24 channels);
              e_n = [F_{r,c} W; y_r; x_c], n = r (W - 2) + c, y and x on linspace(-1, 1)
    shell:    h = ReLU(Dense_256(... ReLU(Dense_256(central(e))))) 4 layers;  logits = Dense_A(h), value = Dense_1(h)
    control:  two separate torsos (RLlib's ``vf_share_layers=False``), tanh(Linear(S, 64)) -> tanh(Linear(64, 64))
              -> Linear(64, A) for the policy and -> Linear(64, 1) for the value (Mnih et al., ICML 2016, actor-critic)
    benchmark loss: mean_b [-log pi(a_b | s_b) A_b + 0.5 (V_b - R_b)^2 - 0.005 H(pi(. | s_b))]; the reported
              ratio is simplicial / relational (Clift et al. 2020, Appendix C: 80 ms / 35 ms = 2.3)
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.config import compose
from models.agents import bench_agents
from models.agents.encoder import GridEntityEncoder
from models.agents.shell import AGENT_DEFAULTS, AgentShell
from models.control.mlp_agent import MLPAgent
from tests.test_agent_shell import model_cfg

Tensor = torch.Tensor


def dense(layer: nn.Linear, x: Tensor) -> Tensor:
    """W x + b as a sum over the inputs: x [d_in] -> [d_out]."""
    return torch.stack([sum(layer.weight[o, i] * x[i] for i in range(len(x))) + layer.bias[o]
                        for o in range(layer.out_features)])


def relu(x: Tensor) -> Tensor:
    return torch.where(x > 0, x, torch.zeros_like(x))


def conv_valid(conv: nn.Conv2d, x: Tensor) -> Tensor:
    """A VALID k x k convolution with bias: x [H, W, C_in] -> [H - k + 1, W - k + 1, C_out], by loops."""
    height, width, channels = x.shape
    k = conv.kernel_size[0]
    out = torch.zeros(height - k + 1, width - k + 1, conv.out_channels)
    for r in range(height - k + 1):
        for c in range(width - k + 1):
            for o in range(conv.out_channels):
                total = conv.bias[o]
                for i in range(channels):
                    for dy in range(k):
                        for dx in range(k):
                            total = total + conv.weight[o, i, dy, dx] * x[r + dy, c + dx, i]
                out[r, c, o] = total
    return out


def test_the_agent_defaults_are_the_papers():
    assert AGENT_DEFAULTS == {"conv_channels": [12, 24], "conv_kernel": 2, "entity_dim": 64,
                              "torso": [256, 256, 256, 256]}


def test_the_encoder_is_two_relu_convolutions_projected_then_row_column_coordinates():
    torch.manual_seed(0)
    encoder = GridEntityEncoder((4, 5, 3), [2, 3], 2, 6).eval()  # 2 x 3 grid after two 2x2 VALID convolutions
    obs = torch.randint(0, 256, (2, 4, 5, 3), dtype=torch.uint8)
    with torch.no_grad():
        got = encoder(obs)  # [B, 6, 6]
        first, second = encoder.convs[0], encoder.convs[2]
        for b in range(2):
            features = relu(conv_valid(second, relu(conv_valid(first, obs[b].float() / 255))))  # [2, 3, 3]
            for r in range(2):
                for c in range(3):
                    projected = [sum(encoder.project.weight[o, i] * features[r, c, i] for i in range(3))
                                 for o in range(4)]
                    want = torch.tensor([*projected, -1 + 2 * r / 1, -1 + 2 * c / 2])
                    torch.testing.assert_close(got[b, r * 3 + c], want, rtol=1e-5, atol=1e-6)


def test_the_shell_runs_the_central_output_through_four_relu_layers_to_policy_and_value():
    torch.manual_seed(0)
    agent = AgentShell(model_cfg("mlp1"), OmegaConf.create(AGENT_DEFAULTS), (4, 5, 3), 3).eval()
    assert [layer.out_features for layer in agent.torso if isinstance(layer, nn.Linear)] == [256] * 4
    with torch.no_grad():  # non-zero biases, so that every term shows
        for part in (agent.torso, agent.policy, agent.value):
            for name, param in part.named_parameters():
                if name.endswith("bias"):
                    param.uniform_(-0.1, 0.1)
    obs = torch.randint(0, 256, (1, 4, 5, 3), dtype=torch.uint8)
    with torch.no_grad():
        logits, value = agent(obs)
        h = agent.central(agent.encoder(obs))[0]
        for layer in agent.torso:
            if isinstance(layer, nn.Linear):
                h = relu(h @ layer.weight.T + layer.bias)
        torch.testing.assert_close(logits[0], dense(agent.policy, h), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(value[0], dense(agent.value, h)[0], rtol=1e-5, atol=1e-6)


# the control agent --------------------------------------------------------------------------------------------
def test_the_control_agent_has_two_separate_tanh_torsos():
    cfg: Any = compose("cartpole", "mlp_agent", "smoke").cfg.model
    assert list(cfg.hidden) == [64, 64]
    torch.manual_seed(0)
    agent = MLPAgent(OmegaConf.create({"hidden": [5, 4]}), None, (3,), 2).eval()
    obs = torch.randn(2, 3)

    def mlp(layers: nn.Sequential, x: Tensor) -> Tensor:
        linears = [layer for layer in layers if isinstance(layer, nn.Linear)]
        for layer in linears[:-1]:
            x = torch.tanh(dense(layer, x))
        return dense(linears[-1], x)

    with torch.no_grad():
        logits, value = agent(obs)
        for b in range(2):
            torch.testing.assert_close(logits[b], mlp(agent.policy, obs[b]), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(value[b], mlp(agent.value, obs[b])[0], rtol=1e-5, atol=1e-6)


# the benchmark -----------------------------------------------------------------------------------------------
def test_the_benchmark_loss_is_policy_gradient_plus_half_value_mse_minus_entropy():
    torch.manual_seed(0)
    logits, value = torch.randn(3, 4), torch.randn(3)
    actions, advantages, returns = torch.tensor([2, 0, 3]), torch.randn(3), torch.randn(3)
    total = 0.0
    for b in range(3):
        z = sum(math.exp(v) for v in logits[b].tolist())
        probs = [math.exp(v) / z for v in logits[b].tolist()]
        entropy = -sum(p * math.log(p) for p in probs)
        total += (-math.log(probs[int(actions[b])]) * float(advantages[b])
                  + 0.5 * (float(value[b]) - float(returns[b])) ** 2 - 0.005 * entropy)
    loss = bench_agents.actor_critic_loss(logits, value, actions, advantages, returns)
    assert loss.item() == pytest.approx(total / 3, rel=1e-5)


def test_the_benchmark_ratio_is_simplicial_over_relational(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bench_agents, "time_steps", lambda *_args: {"relational": 35.0, "simplicial": 80.0})
    figures = bench_agents.main(["--batch-sizes", "2", "--repeats", "1", "--warmup", "0", "--threads", "1"])
    assert figures["ms"]["2"] == {"relational": 35.0, "simplicial": 80.0}
    assert figures["ratio"]["2"] == round(80 / 35, 3)  # the paper's 2.3
