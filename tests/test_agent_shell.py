"""The BoxWorld agent shell (models/agents): observation -> entities, every registered central module
plugged in unchanged, output shapes, gradients, the Keras init, and the model specs' env interface."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from harness.registry import Registry
from models.agents.encoder import GridEntityEncoder
from models.agents.shell import AGENT_DEFAULTS, AgentShell, build_agent
from models.relational.central import CENTRAL_MODULES

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["mha", "predinet", "relation_net", "mlp1", "mlp2", "relational", "simplicial"]
AGENT = OmegaConf.create(AGENT_DEFAULTS)


def model_cfg(name: str):
    data = yaml.safe_load((ROOT / "models" / "relational" / f"{name}.yaml").read_text())
    return OmegaConf.create(data["config"]["model"])


def observations(batch: int, height: int, width: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, height, width, 3), dtype=torch.uint8, generator=gen)


def test_every_central_module_is_covered():
    assert sorted(MODELS) == sorted(CENTRAL_MODULES)


@pytest.mark.parametrize("shape", [(7, 10, 3), (14, 14, 3)])
@pytest.mark.parametrize("name", MODELS)
def test_shell_output_shapes_and_gradients(name, shape):
    torch.manual_seed(0)
    agent = AgentShell(model_cfg(name), AGENT, shape, num_actions=4)
    assert agent.encoder.n_entities == (shape[0] - 2) * (shape[1] - 2)
    logits, value = agent(observations(3, shape[0], shape[1]))
    assert logits.shape == (3, 4) and value.shape == (3,)
    assert torch.isfinite(logits).all() and torch.isfinite(value).all()
    (logits.logsumexp(-1) + value).sum().backward()
    missing = [n for n, p in agent.named_parameters() if p.grad is None]
    assert not missing


def test_bridge_boxworld_observation_gives_40_entities_with_row_column_coordinates():
    encoder = GridEntityEncoder((7, 10, 3), [12, 24], 2, 64)
    assert encoder.grid_hw == (5, 8) and encoder.n_entities == 40
    entities = encoder(observations(2, 7, 10))
    assert entities.shape == (2, 40, 64)
    rows, cols = entities[0, :, -2], entities[0, :, -1]
    torch.testing.assert_close(rows[::8], torch.linspace(-1, 1, 5))  # row-major: entity r * 8 + c
    torch.testing.assert_close(cols[:8], torch.linspace(-1, 1, 8))
    assert encoder.project.bias is None and encoder.project.out_features == 62


def test_float_and_uint8_observations_agree():
    torch.manual_seed(0)
    agent = AgentShell(model_cfg("relational"), AGENT, (7, 10, 3), 4)
    obs = observations(2, 7, 10)
    torch.testing.assert_close(agent(obs)[0], agent(obs.float())[0])


def test_shell_layers_get_keras_defaults_and_the_central_module_keeps_its_own():
    torch.manual_seed(0)
    agent = AgentShell(model_cfg("mha"), AGENT, (7, 10, 3), 4)
    for name, param in agent.named_parameters():
        if name.startswith("central."):
            continue
        if name.endswith("bias"):
            assert (param == 0).all(), name
        else:
            fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(param)
            assert param.abs().max() <= (6 / (fan_in + fan_out)) ** 0.5 + 1e-7, name
    assert len(agent.torso) == 8 and agent.policy.in_features == 256 and agent.value.out_features == 1
    assert all(p.abs().max() <= 0.2 for p in agent.central.parameters())  # its own paper's truncated normal
    relational = AgentShell(model_cfg("relational"), AGENT, (7, 10, 3), 4).central
    assert all((ln.weight == 1).all() and (ln.bias == 0).all() for ln in relational.output_norms)  # Keras


def test_build_agent_reads_the_run_config_and_defaults_the_agent_section():
    cfg = OmegaConf.create({"model": model_cfg("simplicial"), "agent": {**AGENT_DEFAULTS, "torso": [32, 16]}})
    agent = build_agent(cfg, (7, 10, 3), 5)
    assert agent.policy.in_features == 16 and agent.num_actions == 5
    default = build_agent(OmegaConf.create({"model": model_cfg("relational")}), (7, 10, 3), 4)
    assert default.policy.in_features == 256
    assert default(observations(2, 7, 10))[0].shape == (2, 4)


def test_model_specs_declare_the_env_interface_and_both_kinds():
    registry = Registry()
    for name in MODELS:
        spec = registry.model(name)
        assert spec.interfaces["env"] == "models.agents.shell:AgentShell"
        assert spec.interfaces["image"] == "models.relational.image_model:ImageRelationalModel"
        assert set(spec.kinds) == {"supervised", "rl"}
        assert spec.config["model"]["central"] == name
