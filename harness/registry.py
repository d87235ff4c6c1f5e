"""The registry of tasks and models, and the task x model compatibility matrix.

Every task and model is described by a YAML file beside its code:

* ``tasks/<task>/task.yaml`` with a ``spec`` section (name, interface, kind, entry, paper);
* ``models/<family>/<model>.yaml`` with a ``spec`` section (name, shape, paper; the interfaces it reads
  with a reader of its own, each mapped to the ``module:Class`` that builds it; a sequence ``core``);
* ``models/adapters.yaml``: how a model of each shape reads each interface, declared once for all models
  of that shape (a central module reads a story as sentence entities, a sequence core reads an image as
  a patch sequence, ...). A model's own readers take precedence.

Both files also carry the config defaults (``config``) and per-profile settings (``profiles``) that
:mod:`harness.config` composes. The registry reads only these YAML files; code is imported lazily,
when a run actually builds the task or model, so ``harness list`` and every error path stay free of
torch, Lightning, Ray and wandb.

Compatibility is computed, never listed by hand: a model fits a task when it trains the task's kind and
reads the task's interface, with a reader of its own or through its shape's adapter (the way MTEB checks
modalities); each cell has a route (``story -> sentence entities + question entity -> predinet -> output
MLP``) or a reason. Out-of-tree code can add entries with
:func:`register_task` / :func:`register_model`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness import PROJECT_ROOT
from harness.errors import UserError, did_you_mean

# What a task hands a model: images, bAbI stories, token sequences, streams of world states, and two
# kinds of environment: "env" observes a grid as an image [H, W, 3] (BoxWorld), "state_env" a flat
# state vector (CartPole, the control of the RL ladder).
INTERFACES = ("image", "story", "sequence", "stream", "env", "state_env")
KINDS = ("supervised", "rl", "stepwise")  # stepwise: world-state streams trained step by step (Algorithm 1 of U-E)
INTERFACE_KIND = {"image": "supervised", "story": "supervised", "sequence": "supervised",
                  "stream": "stepwise", "env": "rl", "state_env": "rl"}  # the kind of task each one serves


@dataclass(frozen=True)
class TaskSpec:
    """What one example of a task looks like, and where its code lives."""

    name: str
    title: str
    interface: str  # one of INTERFACES
    kind: str  # one of KINDS
    entry: str  # "module:Class", imported lazily
    paper: str = ""
    data_check: str = ""  # "module:function" called with the task config before a run starts; it only raises
    describe: str = ""  # "module:function" rendering test examples as text (harness/runners/predictions.py)
    source: Path | None = None  # the YAML file it came from
    config: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=dict)  # dotted key -> type declaration (harness/schema.py)


@dataclass(frozen=True)
class Adapter:
    """How models of one shape read one interface (``models/adapters.yaml``)."""

    shape: str
    interface: str
    entry: str  # "module:Class"
    route: str  # with {model} for the model's name
    needs: str = ""  # "core": only models with a sequence core
    config: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=dict)


def load_adapters(path: Path) -> dict[str, dict[str, Adapter]]:
    """``{shape: {interface: Adapter}}`` from ``models/adapters.yaml``."""
    adapters: dict[str, dict[str, Adapter]] = {}
    for shape, entries in load_yaml_mapping(path).items():
        if not isinstance(entries, dict):
            raise UserError(f"{project_path(path)}: shape '{shape}' must map interfaces to adapters")
        for interface, entry in entries.items():
            where = f"{project_path(path)}: {shape}/{interface}"
            if interface not in INTERFACES:
                raise UserError(f"{where}: unknown interface; known: {', '.join(INTERFACES)}")
            if not isinstance(entry, dict):
                raise UserError(f"{where}: expected a mapping with entry and route")
            unknown = sorted(set(entry) - {"entry", "route", "needs", "config", "schema"})
            if unknown or entry.get("needs", "core") != "core":
                raise UserError(f"{where}: unknown key(s) {', '.join(unknown) or 'needs'}")
            adapters.setdefault(str(shape), {})[interface] = Adapter(
                shape=str(shape), interface=interface,
                entry=_entry_form(_require(entry, "entry", path), f"{shape}.{interface}.entry", path),
                route=_require(entry, "route", path), needs=entry.get("needs", ""),
                config=entry.get("config") or {}, schema=entry.get("schema") or {})
    return adapters


def with_adapters(spec: ModelSpec, adapters: dict[str, dict[str, Adapter]]) -> ModelSpec:
    """The model with its shape's adapters added where it has no reader of its own, trains that kind of task,
    and meets the adapter's needs (a supervised-only model is offered no environment adapter)."""
    own = {i: e for i, e in spec.interfaces.items() if i not in spec.adapted}
    adapted = {i: a for i, a in adapters.get(spec.shape, {}).items()
               if i not in own and INTERFACE_KIND[i] in spec.kinds and not (a.needs == "core" and not spec.core)}
    routes = {i: f"{i} -> {spec.name} (its own reader)" for i in own}
    routes.update({i: a.route.format(model=spec.name) for i, a in adapted.items()})
    return replace(spec, interfaces={**own, **{i: a.entry for i, a in adapted.items()}}, adapted=adapted,
                   routes=routes)


def _why_no_interface(spec: ModelSpec, adapters: dict[str, dict[str, Adapter]]) -> str:
    """What a model that reads nothing lacks: a sequence core, or a shape adapter of a kind it trains."""
    own = adapters.get(spec.shape, {})
    if any(a.needs == "core" and INTERFACE_KIND[i] in spec.kinds for i, a in own.items()):
        return (f"the {spec.shape} adapters of models/adapters.yaml need a sequence core (spec.core: module:Class), "
                "or give readers of its own (spec.interfaces)")
    return (f"no {spec.shape} adapter of models/adapters.yaml serves {'/'.join(spec.kinds)} tasks; give readers of "
            "its own (spec.interfaces)")


@dataclass(frozen=True)
class ModelSpec:
    """A model, the interfaces it reads (each with the class that builds it), and its kinds."""

    name: str
    title: str
    shape: str  # one of ADAPTERS' shapes: "central", "recurrent", "agent"
    interfaces: dict[str, str]  # interface -> "module:Class": its own readers, then its shape's adapters
    kinds: tuple[str, ...] = ("supervised",)
    paper: str = ""
    core: str = ""  # "module:Class" of its sequence core ([B, T, D] -> [B, H]), for the sequence adapters
    routes: dict[str, str] = field(default_factory=dict)  # interface -> the route `harness list` prints
    adapted: dict[str, Adapter] = field(default_factory=dict)  # interfaces read through a shape adapter
    source: Path | None = None
    config: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Compatibility:
    """One cell of the task x model matrix: whether the pair runs, and why not when it does not."""

    ok: bool
    reason: str = ""
    route: str = ""  # how the model reads the task, when it runs


def _require(data: dict[str, Any], key: str, path: Path) -> Any:
    if key not in data:
        raise UserError(f"{project_path(path)}: the spec section has no '{key}'")
    return data[key]


# libyaml's parser where PyYAML was built with it: the same safe constructor and resolver, so the same values, about
# eight times faster (the 46 YAML files of harness/, tasks/ and models/: 0.28 s in pure Python, 0.04 s with libyaml).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` with libyaml's parser where there is one (the same values; a store's 483
    config.yaml files: 1.3 s in pure Python, 0.17 s with libyaml)."""
    return yaml.load(text, Loader=_SAFE_LOADER)


def project_path(path: Path | str | None) -> str:
    """A spec file as error messages name it: relative to the project root when inside it (as the config's
    messages do), else as given."""
    if path is None:
        return "registered spec"
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def load_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file whose top level is a mapping; anything else is a one-line error naming the file."""
    try:
        data = safe_load_yaml(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{project_path(path)}: not valid YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise UserError(f"{project_path(path)}: expected a mapping at the top level")
    return data


SPEC_FILE_SECTIONS = ("spec", "config", "profiles", "schema")
TASK_SPEC_KEYS = ("name", "title", "interface", "kind", "entry", "paper", "data_check", "describe")
MODEL_SPEC_KEYS = ("name", "title", "shape", "interfaces", "kinds", "paper", "core")


def _check_spec_keys(spec: Any, known: tuple[str, ...], path: Path) -> dict[str, Any]:
    """The spec section as a mapping whose keys are all known: a misspelt key (``cores:``) would be ignored."""
    if not isinstance(spec, dict):
        raise UserError(f"{project_path(path)}: 'spec' must be a mapping")
    for key in spec:
        if key not in known:
            raise UserError(f"{project_path(path)}: spec has unknown key '{key}'{did_you_mean(str(key), known)}; "
                            f"known: {', '.join(known)}")
    return spec


def _check_sections(data: dict[str, Any], path: Path) -> None:
    """A task or model file holds these sections only: a misspelt one would be silently ignored."""
    unknown = sorted(set(data) - set(SPEC_FILE_SECTIONS))
    if unknown:
        raise UserError(f"{project_path(path)}: unknown section(s) {', '.join(unknown)}"
                        f"{did_you_mean(unknown[0], SPEC_FILE_SECTIONS)}; known: {', '.join(SPEC_FILE_SECTIONS)}")
    for section in ("config", "profiles", "schema"):
        if not isinstance(data.get(section) or {}, dict):
            raise UserError(f"{project_path(path)}: '{section}' must be a mapping")


def _read_spec_file(path: Path, keys: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A task or model file's sections, checked, and its spec section, whose keys must be among ``keys``."""
    data = load_yaml_mapping(path)
    _check_sections(data, path)
    return data, _check_spec_keys(data.get("spec") or {}, keys, path)


def _file_sections(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The fields a task or model spec takes from its file as a whole: the file and its other sections."""
    return {"source": path, "config": data.get("config") or {}, "profiles": data.get("profiles") or {},
            "schema": data.get("schema") or {}}


def _entry_form(value: Any, key: str, path: Path, optional: bool = False) -> str:
    """A spec's ``module:Name`` reference (``key`` names it in messages), checked for its form only: nothing is
    imported until a run needs it (:func:`load_entry`), so a malformed one is caught by ``harness list`` too."""
    text = "" if value is None else str(value)
    if optional and not text:
        return text
    if not well_formed_entry(text):
        raise UserError(f"{project_path(path)}: spec.{key} '{text}' is not of the form 'package.module:Name' (e.g. "
                        "models.lstm.model:LSTMModel)")
    return text


def well_formed_entry(text: str) -> bool:
    """Whether ``text`` has the form ``package.module:Name`` (dotted identifiers, a colon, an identifier)."""
    module, sep, attr = text.partition(":")
    return bool(sep) and attr.isidentifier() and all(part.isidentifier() for part in module.split("."))


def task_spec_from_yaml(path: Path) -> TaskSpec:
    data, spec = _read_spec_file(path, TASK_SPEC_KEYS)
    interface = _require(spec, "interface", path)
    kind = spec.get("kind", "supervised")
    if interface not in INTERFACES:
        raise UserError(f"{project_path(path)}: interface '{interface}'{did_you_mean(str(interface), INTERFACES)} "
                        f"is not one of {', '.join(INTERFACES)}")
    if kind not in KINDS:
        raise UserError(f"{project_path(path)}: kind '{kind}'{did_you_mean(str(kind), KINDS)} is not one of "
                        f"{', '.join(KINDS)}")
    return TaskSpec(
        name=_require(spec, "name", path),
        title=spec.get("title", ""),
        interface=interface,
        kind=kind,
        entry=_entry_form(_require(spec, "entry", path), "entry", path),
        paper=spec.get("paper", ""),
        data_check=_entry_form(spec.get("data_check", ""), "data_check", path, optional=True),
        describe=_entry_form(spec.get("describe", ""), "describe", path, optional=True),
        **_file_sections(path, data),
    )


def model_spec_from_yaml(path: Path) -> ModelSpec:
    data, spec = _read_spec_file(path, MODEL_SPEC_KEYS)
    interfaces = spec.get("interfaces") or {}
    unknown = sorted(set(interfaces) - set(INTERFACES))
    if unknown:
        raise UserError(f"{project_path(path)}: unknown interface(s) {', '.join(unknown)}"
                        f"{did_you_mean(str(unknown[0]), INTERFACES)}; known: {', '.join(INTERFACES)}")
    kinds = spec.get("kinds", ["supervised"])
    if isinstance(kinds, str) or not isinstance(kinds, list) or not kinds:
        raise UserError(f"{project_path(path)}: spec.kinds must be a list, e.g. [supervised] or [supervised, rl]")
    for kind in kinds:
        if kind not in KINDS:
            raise UserError(f"{project_path(path)}: spec.kinds has '{kind}'{did_you_mean(str(kind), KINDS)}, "
                            f"not one of {', '.join(KINDS)}")
    return ModelSpec(
        name=_require(spec, "name", path),
        title=spec.get("title", ""),
        shape=spec.get("shape", "recurrent"),
        interfaces={name: _entry_form(entry, f"interfaces.{name}", path) for name, entry in interfaces.items()},
        kinds=tuple(kinds),
        paper=spec.get("paper", ""),
        core=_entry_form(spec.get("core", ""), "core", path, optional=True),
        **_file_sections(path, data),
    )


class Registry:
    """Tasks and models by name, discovered from the YAML files under the project root."""

    def __init__(self, root: Path = PROJECT_ROOT) -> None:
        self.root = root
        self._tasks: dict[str, TaskSpec] | None = None
        self._models: dict[str, ModelSpec] | None = None
        self._extra_tasks: dict[str, TaskSpec] = {}
        self._extra_models: dict[str, ModelSpec] = {}
        self._adapters: dict[str, dict[str, Adapter]] | None = None

    # discovery -------------------------------------------------------------------------------
    def _discover(self) -> None:
        tasks: dict[str, TaskSpec] = {}
        for path in sorted((self.root / "tasks").glob("*/task.yaml")):
            spec = task_spec_from_yaml(path)
            if spec.name in tasks:
                raise UserError(f"task '{spec.name}' is declared twice: {tasks[spec.name].source} and {path}")
            tasks[spec.name] = spec
        models: dict[str, ModelSpec] = {}
        for path in sorted((self.root / "models").glob("*/*.yaml")):
            data = load_yaml_mapping(path)
            if "spec" not in data:
                _check_sections(data, path)  # a misspelt `spec:` would hide the model
                continue  # shared config of a family, not a model
            spec = model_spec_from_yaml(path)
            if spec.name in models:
                raise UserError(f"model '{spec.name}' is declared twice: {models[spec.name].source} and {path}")
            if spec.shape not in self.adapters:
                raise UserError(f"{project_path(path)}: shape '{spec.shape}' is not one of {', '.join(self.adapters)} "
                                "(models/adapters.yaml)")
            models[spec.name] = with_adapters(spec, self.adapters)
            if not models[spec.name].interfaces:
                raise UserError(f"{project_path(path)}: {spec.name} reads no interface, so it runs on no task: "
                                f"{_why_no_interface(spec, self.adapters)}")
        self._tasks, self._models = tasks, models

    @property
    def adapters(self) -> dict[str, dict[str, Adapter]]:
        if self._adapters is None:
            path = self.root / "models" / "adapters.yaml"
            self._adapters = load_adapters(path) if path.exists() else {}
        return self._adapters

    @property
    def tasks(self) -> dict[str, TaskSpec]:
        if self._tasks is None:
            self._discover()
        assert self._tasks is not None
        return {**self._tasks, **self._extra_tasks}

    @property
    def models(self) -> dict[str, ModelSpec]:
        if self._models is None:
            self._discover()
        assert self._models is not None
        return {**self._models, **self._extra_models}

    def add_task(self, spec: TaskSpec) -> None:
        self._extra_tasks[spec.name] = spec

    def add_model(self, spec: ModelSpec) -> None:
        self._extra_models[spec.name] = with_adapters(spec, self.adapters)

    # lookup ----------------------------------------------------------------------------------
    def task(self, name: str) -> TaskSpec:
        return _lookup("task", name, self.tasks, self._undeclared_task)

    def model(self, name: str) -> ModelSpec:
        return _lookup("model", name, self.models, self._undeclared_model)

    def _undeclared_task(self, name: str) -> str:
        """A hint when ``tasks/<name>/`` exists but declares no task (a task is its folder's ``task.yaml``)."""
        folder = self.root / "tasks" / name
        if folder.is_dir() and not (folder / "task.yaml").exists():
            return f" ({folder} has no task.yaml: a task is declared by tasks/<task>/task.yaml with a spec section)"
        return ""

    def _undeclared_model(self, name: str) -> str:
        """A hint when a YAML file named after the model exists but was not read as a model."""
        for path in sorted((self.root / "models").glob(f"**/{name}.yaml")):
            if path.parent.parent != self.root / "models":
                return (f" ({path} is not read: model files are models/<family>/<model>.yaml, "
                        "one folder below models/)")
            data = load_yaml_mapping(path)
            if "spec" not in data:
                return f" ({path} has no spec section, so it is not read as a model)"
            declared = data["spec"].get("name") if isinstance(data["spec"], dict) else None
            if declared != name:
                return f" ({path} declares spec.name '{declared}')"
        return ""

    def compatibility(self, task: TaskSpec, model: ModelSpec) -> Compatibility:
        if task.kind not in model.kinds:
            return Compatibility(False, f"{model.name} trains {'/'.join(model.kinds)}; {task.name} is {task.kind}")
        if task.interface not in model.interfaces:
            adapter = self.adapters.get(model.shape, {}).get(task.interface)
            if adapter is not None and adapter.needs == "core":
                why = f"the {model.shape} adapter for {task.interface} needs a sequence core, which {model.name} lacks"
            else:
                why = f"no {model.shape} adapter reads {task.interface}"
            return Compatibility(
                False, f"{model.name} reads {'/'.join(sorted(model.interfaces)) or 'nothing'}; {task.name} gives "
                       f"{task.interface} ({why})")
        return Compatibility(True, route=model.routes.get(task.interface, ""))

    def check_pair(self, task_name: str, model_name: str) -> tuple[TaskSpec, ModelSpec]:
        """Both specs, or a UserError that says why the pair cannot run and which models fit."""
        task, model = self.task(task_name), self.model(model_name)
        compat = self.compatibility(task, model)
        if not compat.ok:
            fitting = [m.name for m in self.models.values() if self.compatibility(task, m).ok]
            raise UserError(
                f"{model.name} cannot run on {task.name}: {compat.reason}; "
                f"models that fit {task.name}: {', '.join(sorted(fitting)) or 'none yet'}"
            )
        return task, model

    def matrix(self) -> dict[tuple[str, str], Compatibility]:
        return {
            (t.name, m.name): self.compatibility(t, m) for t in self.tasks.values() for m in self.models.values()
        }


def _declared_in(entry: str) -> str:
    """Where ``entry`` is declared (a task's, model's or adapter's YAML file and key), for error messages."""
    for task in REGISTRY.tasks.values():
        for key in ("entry", "data_check", "describe"):
            if getattr(task, key) == entry:
                return f"{project_path(task.source)}: spec.{key}"
    for model in REGISTRY.models.values():
        if model.core == entry:
            return f"{project_path(model.source)}: spec.core"
        for interface, own in model.interfaces.items():
            if own == entry and interface not in model.adapted:
                return f"{project_path(model.source)}: spec.interfaces.{interface}"
    for shape, adapters in REGISTRY.adapters.items():
        for interface, adapter in adapters.items():
            if adapter.entry == entry:
                return f"{project_path(REGISTRY.root / 'models' / 'adapters.yaml')}: {shape}/{interface}/entry"
    return f"entry '{entry}'"


def load_entry(entry: str) -> Any:
    """Import ``module:attr`` lazily; a module or attribute that does not exist is a UserError naming the YAML file
    and key that declare it (an import error inside the module itself is raised as it is)."""
    module_name, _, attr = entry.partition(":")
    if not well_formed_entry(entry):
        raise UserError(f"{_declared_in(entry)}: '{entry}' is not of the form 'package.module:Name'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
            raise
        raise UserError(f"{_declared_in(entry)}: no module '{exc.name}' (from '{entry}'; "
                        "the module path is relative to the project root)") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        names = [n for n in vars(module) if not n.startswith("_")]
        raise UserError(f"{_declared_in(entry)}: {module_name} has no attribute '{attr}'"
                        f"{did_you_mean(attr, names)}") from None


Spec = TypeVar("Spec")


def _lookup(kind: str, name: str, specs: Mapping[str, Spec], hint: Callable[[str], str]) -> Spec:
    """``specs[name]``; else a UserError naming the known ``kind``s, a close name and ``hint(name)`` (why a file
    that looks like one is not read)."""
    if name not in specs:
        raise UserError(f"unknown {kind} '{name}'{did_you_mean(name, specs)}; "
                        f"known {kind}s: {', '.join(sorted(specs))}{hint(name)}")
    return specs[name]


REGISTRY = Registry()


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task defined outside the project tree."""
    REGISTRY.add_task(spec)
    return spec


def register_model(spec: ModelSpec) -> ModelSpec:
    """Add a model defined outside the project tree."""
    REGISTRY.add_model(spec)
    return spec
