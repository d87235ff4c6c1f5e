"""A stepwise model behind :class:`OnDevice` (the GPU path of the stepwise runner) trains, checkpoints and resumes as
the bare model does. Without a GPU here the wrapper runs with the CPU as its device, where it must change nothing."""

from __future__ import annotations

import pytest
import torch

from harness.runners import stepwise, stepwise_device
from harness.runners.stepwise_device import OnDevice, accelerator, on_accelerator, to_device
from harness.runs import Run
from tests.test_stepwise_runner import RememberTheBit, TinyRecurrent, Tracker, config, curve_without_timing

CPU = torch.device("cpu")


def test_on_the_cpu_the_wrapped_model_trains_bit_for_bit_as_the_bare_one(tmp_path):
    cfg = config()
    torch.manual_seed(0)
    bare = stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path / "bare"), Tracker())
    torch.manual_seed(0)
    wrapped = stepwise.train_stepwise(cfg, RememberTheBit(), OnDevice(TinyRecurrent(), CPU), Run(tmp_path / "wrapped"),
                                      Tracker())
    assert wrapped["metrics"] == bare["metrics"] and wrapped["best"] == bare["best"]
    assert curve_without_timing(tmp_path / "wrapped") == curve_without_timing(tmp_path / "bare")


def test_its_checkpoints_are_the_bare_models_so_a_run_moves_between_devices(tmp_path):
    """A checkpoint written through the wrapper has the bare model's entries, on the CPU; a bare model loads it, and
    a wrapped model resumes from a bare model's checkpoint."""
    cfg = config()
    torch.manual_seed(0)
    stepwise.train_stepwise(cfg, RememberTheBit(), OnDevice(TinyRecurrent(), CPU), Run(tmp_path / "run"), Tracker())
    saved = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    bare = TinyRecurrent()
    assert set(saved["model"]) == set(bare.state_dict())
    bare.load_state_dict(saved["model"])
    wrapped = OnDevice(TinyRecurrent(), CPU)
    wrapped.load_state_dict(bare.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(wrapped.state_dict().values(), bare.state_dict().values(),
                                                 strict=True))
    assert all(t.device.type == "cpu" for t in wrapped.state_dict().values())


def test_the_state_goes_to_the_device_and_the_answers_come_back():
    """w_0 built on the CPU (as TinyRecurrent's zeros) is moved to the model's device; the Extractor's logits are
    returned on the CPU with their graph, so the runner's loss reaches the parameters."""
    model = OnDevice(TinyRecurrent(), CPU)
    task = RememberTheBit()
    generator = torch.Generator().manual_seed(0)
    worlds, step = task.step(task.reset(4, generator, "train"), 1, generator, "train")
    state = model.update(model.initial_state(4), step)
    logits = model.extract(state, step)
    assert logits.shape == (4, 1, 2) and logits.device.type == "cpu" and logits.grad_fn is not None
    logits.sum().backward()
    assert model.inner.out.weight.grad is not None
    nested = to_device((torch.ones(2), [torch.zeros(1, dtype=torch.long)]), CPU)
    assert isinstance(nested, tuple) and isinstance(nested[1], list) and nested[1][0].dtype == torch.long
    with pytest.raises(TypeError, match="tensor or a tuple of tensors"):
        to_device({"w": torch.ones(1)}, CPU)


def test_the_launcher_wraps_the_model_only_where_a_gpu_is_available(monkeypatch):
    model = TinyRecurrent()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert accelerator() is None and on_accelerator(model) is model  # the CPU path is the runner's own
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert accelerator() == torch.device("cuda")
    monkeypatch.setattr(stepwise_device, "accelerator", lambda: CPU)  # what a GPU would get, on a device we have
    wrapped = on_accelerator(model)
    assert isinstance(wrapped, OnDevice) and wrapped.inner is model
