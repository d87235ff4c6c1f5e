"""The task x model matrix against a literal transcription of its documented rule, read from the YAML files alone.

The rule (harness/registry.py, module docstring; models/adapters.yaml, header comment): a model fits a task when it
trains the task's kind and reads the task's interface, with a reader of its own (``spec.interfaces``, which takes
precedence) or through its shape's adapter, where the adapter serves a kind the model trains and, for an adapter
marked ``needs: core``, the model names a sequence core. Each cell has a route (its own reader, or the adapter's
route with the model's name) or a reason. The same style as MTEB's modality checks (Muennighoff et al., 2023,
"MTEB: Massive Text Embedding Benchmark", EACL).

These tests parse the YAML files with PyYAML directly and loop over every cell, so they share none of the
registry's code; the defaults of an omitted ``kind`` (supervised) and ``shape`` (recurrent) are the documented ones.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.registry import Adapter, ModelSpec, Registry, model_spec_from_yaml, task_spec_from_yaml, with_adapters
from tests.conftest import ROOT

# The kind of task each interface serves (harness/registry.py's INTERFACES comment).
KIND_OF = {"image": "supervised", "story": "supervised", "sequence": "supervised", "stream": "stepwise",
           "env": "rl", "state_env": "rl"}


def _yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def _expected_cells() -> dict[tuple[str, str], tuple[bool, str]]:
    """(task, model) -> (fits, route), by the rule above, one cell at a time."""
    adapters = _yaml(ROOT / "models" / "adapters.yaml")
    tasks = {}
    for path in sorted((ROOT / "tasks").glob("*/task.yaml")):
        spec = _yaml(path)["spec"]
        tasks[spec["name"]] = (spec["interface"], spec.get("kind", "supervised"))
    cells: dict[tuple[str, str], tuple[bool, str]] = {}
    for path in sorted((ROOT / "models").glob("*/*.yaml")):
        data = _yaml(path)
        if "spec" not in data:
            continue
        spec = data["spec"]
        name, shape = spec["name"], spec.get("shape", "recurrent")
        kinds = spec.get("kinds", ["supervised"])
        own = spec.get("interfaces") or {}
        for task, (interface, kind) in tasks.items():
            fits, route = False, ""
            if kind in kinds:
                if interface in own:
                    fits, route = True, f"{interface} -> {name} (its own reader)"
                else:
                    adapter = (adapters.get(shape) or {}).get(interface)
                    if adapter is not None and KIND_OF[interface] in kinds:
                        if adapter.get("needs") != "core" or spec.get("core"):
                            fits, route = True, adapter["route"].replace("{model}", name)
            cells[(task, name)] = (fits, route)
    return cells


def test_every_cell_of_the_matrix_follows_the_documented_rule() -> None:
    matrix = Registry().matrix()
    expected = _expected_cells()
    assert set(matrix) == set(expected)
    for cell, (fits, route) in expected.items():
        got = matrix[cell]
        assert got.ok == fits, (cell, got)
        assert got.route == route, (cell, got.route, route)
        assert got.ok or got.reason, cell  # an empty cell always says why


def test_a_refusal_names_the_kind_or_the_missing_core(tmp_path: Path) -> None:
    registry = Registry()
    tasks, models = registry.tasks, registry.models
    for task in tasks.values():
        for model in models.values():
            cell = registry.compatibility(task, model)
            if cell.ok:
                continue
            if task.kind not in model.kinds:
                assert cell.reason == f"{model.name} trains {'/'.join(model.kinds)}; {task.name} is {task.kind}"
                continue
            adapter = (_yaml(ROOT / "models" / "adapters.yaml").get(model.shape) or {}).get(task.interface)
            lacks_core = adapter is not None and adapter.get("needs") == "core"
            why = (f"the {model.shape} adapter for {task.interface} needs a sequence core, which {model.name} lacks"
                   if lacks_core else f"no {model.shape} adapter reads {task.interface}")
            assert cell.reason.endswith(f"gives {task.interface} ({why})"), cell.reason
    # a recurrent model without a core: the recurrent story adapter needs one
    coreless = ModelSpec(name="coreless", title="", shape="recurrent", interfaces={"image": "x:Y"})
    registry.add_model(coreless)
    cell = registry.compatibility(tasks["babi"], registry.model("coreless"))
    assert not cell.ok
    assert cell.reason.endswith("(the recurrent adapter for story needs a sequence core, which coreless lacks)")


def test_omitted_kind_and_shape_take_their_documented_defaults(tmp_path: Path) -> None:
    task_file = tmp_path / "task.yaml"
    task_file.write_text("spec: {name: toy, interface: image, entry: 'x:Y'}\n")
    assert task_spec_from_yaml(task_file).kind == "supervised"
    model_file = tmp_path / "toy_model.yaml"
    model_file.write_text("spec: {name: toy_model, interfaces: {image: 'x:Y'}}\n")
    spec = model_spec_from_yaml(model_file)
    assert spec.shape == "recurrent" and spec.kinds == ("supervised",)


def test_adapting_an_adapted_model_again_changes_nothing() -> None:
    """A spec taken from the registry and registered again (register_model) keeps its routes: an interface read
    through an adapter stays an adapter route, not "its own reader"."""
    registry = Registry()
    for name, model in registry.models.items():
        again = with_adapters(model, registry.adapters)
        assert again.routes == model.routes, name
        assert again.interfaces == model.interfaces and set(again.adapted) == set(model.adapted), name


def test_a_registered_model_replaces_a_discovered_one_of_the_same_name() -> None:
    registry = Registry()
    lstm = registry.model("lstm")
    registry.add_model(replace(lstm, title="my own lstm"))
    assert registry.model("lstm").title == "my own lstm"
    assert registry.models["lstm"].title == "my own lstm"


@pytest.mark.parametrize("interface", sorted(KIND_OF))
def test_an_adapter_is_offered_only_to_models_that_train_its_kind(interface: str) -> None:
    """On the shipped adapters and on a made-up shape with an adapter for every interface (a stream adapter
    included, which no shipped shape has yet)."""
    made_up = {"probe_shape": {name: Adapter(shape="probe_shape", interface=name, entry="x:Y", route="r")
                               for name in KIND_OF}}
    for adapters in (Registry().adapters, made_up):
        for shape, entries in adapters.items():
            if interface not in entries:
                continue
            for kinds in (("supervised",), ("rl",), ("stepwise",)):
                spec = ModelSpec(name="probe", title="", shape=shape, interfaces={}, kinds=kinds, core="x:Y")
                adapted = with_adapters(spec, adapters)
                assert (interface in adapted.interfaces) == (KIND_OF[interface] in kinds), (shape, interface, kinds)
