"""Composition and validation of a run's configuration (OmegaConf only).

Order, later wins::

    harness/defaults.yaml + harness/defaults_<kind>.yaml          (kind: supervised | rl)
      <- task.yaml `config`  <- model yaml `config`  <- tasks/<task>/pairs/<model>.yaml `config`
      <- harness/profiles/<profile>.yaml <- task / model / pair `profiles.<profile>`
      <- command-line overrides (an OmegaConf dotlist such as ``optim.lr=3e-4 task.babi_id=2``)

Struct mode holds from the first layer: the harness defaults define every section and every key of the
harness's own sections; a task file may add keys only under ``task`` (and ``agent``, for RL tasks), a
model file only under ``model``. Anything else a layer sets must already exist, so a misspelt key in any
YAML file or override fails with its name (``harness list`` composes every pair at every profile, so a
typo in a task or model file fails there).

A run carries only the sections of its kind: ``optim``, ``train``, ``protocol`` and ``analysis`` for
supervised runs, ``rl`` and ``agent`` for RL runs. A model that serves both kinds (a central module as a
Relations Game model and as an RL agent's core) keeps its supervised settings in its file; they are left
out of an RL run's config, where they would do nothing.

Every key is typed (:mod:`harness.schema`): by its default, or by a ``schema`` declaration where the
default is null or a string. A value of the wrong type, outside its range or not among its choices is a
one-line error naming the key.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from harness import PROJECT_ROOT
from harness.errors import UserError, did_you_mean
from harness.registry import KINDS, REGISTRY, Adapter, ModelSpec, Registry, TaskSpec, load_yaml_mapping, project_path
from harness.schema import KeyType, check_value, key_type, leaves, parse_entry

SMOKE_PROFILE = "smoke"
"""The profile of a few batches and epochs, evaluated on a sample of the test set (``harness/profiles/smoke.yaml``):
a check that a pair runs, never a number to set beside a published one, whatever the paper's settings."""
PROFILES = (SMOKE_PROFILE, "cpu", "paper")
HARNESS_DIR = PROJECT_ROOT / "harness"
DEFAULT_FILES = {"common": HARNESS_DIR / "defaults.yaml", "supervised": HARNESS_DIR / "defaults_supervised.yaml",
                 "rl": HARNESS_DIR / "defaults_rl.yaml", "stepwise": HARNESS_DIR / "defaults_stepwise.yaml"}
SCHEMA_FILE = HARNESS_DIR / "schema.yaml"
PROFILES_DIR = HARNESS_DIR / "profiles"
KIND_SECTIONS = {"supervised": ("optim", "train", "protocol", "analysis"), "rl": ("rl", "agent"),
                 "stepwise": ("optim", "stepwise")}
COMMON_SECTIONS = ("seed", "profile", "task", "model", "data", "tracking")
SET_BY_HARNESS = ("data.fingerprint", "task.name", "model.name", "profile")  # never from a YAML layer or override


@dataclass(frozen=True)
class Composed:
    """A resolved configuration with the specs it was built from."""

    cfg: DictConfig
    task: TaskSpec
    model: ModelSpec

    @property
    def run_id(self) -> str:
        return run_id(self.cfg)

    @property
    def kind(self) -> str:
        return self.task.kind


def _read(path: Path) -> dict[str, Any]:
    """A YAML mapping (a fresh copy: callers may change it); read once per file and modification time."""
    return copy.deepcopy(_read_cached(path, path.stat().st_mtime_ns if path.exists() else 0))


@cache
def _read_cached(path: Path, mtime_ns: int) -> dict[str, Any]:
    return load_yaml_mapping(path)


def _defaults(kind: str) -> dict[str, Any]:
    return {**_read(DEFAULT_FILES["common"]), **_read(DEFAULT_FILES[kind])}


@cache
def _harness_schema() -> dict[str, dict[str, Any]]:
    where = str(SCHEMA_FILE.relative_to(PROJECT_ROOT))
    return {key: parse_entry(key, entry, where) for key, entry in _read(SCHEMA_FILE).items()}


def max_seed() -> int:
    """The largest seed a run takes (``seed``'s ``max`` in harness/schema.yaml): for the seed lists of ``--seeds``
    and sweep files, refused before any config is composed."""
    return int(_harness_schema()["seed"]["max"])


def _for_kind(layer: Any, kind: str, where: str, serves: tuple[str, ...],
              own: tuple[str, ...] = ()) -> dict[str, Any]:
    """The part of a config layer that applies to runs of ``kind``.

    Sections of another kind that the layer's owner also serves are left out; a section of a kind the
    owner does not serve, or a section nobody defines, is an error naming the file. So is a key the harness
    sets (``SET_BY_HARNESS``), unless it is one of ``own`` (a task file may name its task; the registry's name
    wins anyway)."""
    if layer is None:
        return {}
    if not isinstance(layer, dict):
        raise UserError(f"{where}: expected a mapping of config sections, got {type(layer).__name__}")
    kept: dict[str, Any] = {}
    for section, value in layer.items():
        if section in COMMON_SECTIONS or section in KIND_SECTIONS[kind]:
            kept[section] = value
            continue
        owner_kind = next((k for k, sections in KIND_SECTIONS.items() if section in sections), None)
        if owner_kind is None:
            known = [*COMMON_SECTIONS, *(s for sections in KIND_SECTIONS.values() for s in sections)]
            raise UserError(f"{where}: unknown config section '{section}'{did_you_mean(str(section), known)}; "
                            f"sections: {', '.join(known)}")
        if owner_kind not in serves:
            raise UserError(f"{where}: section '{section}' configures {owner_kind} runs, which this file's "
                            f"{'task' if len(serves) == 1 else 'model'} does not serve ({'/'.join(serves)})")
    for key, _value in leaves(kept):
        if key in SET_BY_HARNESS and key not in own:
            raise UserError(f"{where} sets '{key}'; it is set by the harness, not by a config file")
    return kept


def _merge(base: dict[str, Any], layer: dict[str, Any], where: str, open_sections: tuple[str, ...] = (),
           prefix: str = "") -> dict[str, Any]:
    """``base`` with ``layer`` merged in (plain dicts; neither is changed). The layer may define new keys only
    inside ``open_sections``; anywhere else an unknown key is an error naming it and the file."""
    merged = dict(base)
    for key, value in layer.items():
        path = f"{prefix}{key}"
        if key not in base:
            if path.split(".")[0] not in open_sections:
                raise UserError(f"{where} sets unknown config key '{path}'"
                                f"{suggest_key(path, [k for k, _ in leaves(_root_keys(base, prefix))])}")
            merged[key] = copy.deepcopy(value)
        elif isinstance(base[key], dict) and isinstance(value, dict):
            merged[key] = _merge(base[key], value, where, open_sections, f"{path}.")
        elif isinstance(base[key], dict) and base[key]:  # null too: a section emptied breaks the run later
            shown = "null" if value is None else repr(value)
            example = next((k for k in base[key] if f"{path}.{k}" not in SET_BY_HARNESS), next(iter(base[key])))
            raise UserError(f"{where} sets '{path}' to {shown}; it is a section (set its keys, e.g. "
                            f"{path}.{example}=...)")
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# words a user may write for a config key's last word: the harness's (shorter) names, compared with "_" left out
KEY_SYNONYMS = {"learningrate": "lr", "lrate": "lr", "wd": "weightdecay", "l2": "weightdecay", "bs": "batchsize",
                "batch": "batchsize", "epochs": "maxepochs", "numepochs": "maxepochs", "nepochs": "maxepochs",
                "optimizer": "name", "optimiser": "name", "gradientclip": "gradclip", "clipgrad": "gradclip",
                "gradnorm": "gradclip", "epsilon": "eps", "beta": "betas", "timelimit": "maxtimes",
                "maxtime": "maxtimes", "numlayers": "layers", "nlayers": "layers", "numheads": "heads",
                "nheads": "heads"}


def suggest_key(key: str, known: list[str]) -> str:
    """A ' (did you mean X?)' suffix for a config key that does not exist, or ''. In order: a key of the same
    section whose last word means the same (a known synonym, learning_rate for lr); one of another section with
    that last word (train.lr: optim.lr); a key of the same section whose words' initials it is, or whose name is
    its words' initials (wd: weight_decay); the closest spelling (:func:`harness.errors.did_you_mean`). A rule that
    fits several keys suggests none of them."""
    section, _, word = key.rpartition(".")
    squashed = _squash(word)
    meant = KEY_SYNONYMS.get(squashed, squashed)
    siblings = [k for k in known if k.rpartition(".")[0] == section and k != key]
    others = [k for k in known if k.rpartition(".")[0] != section]
    own_initials = _initials(word)
    for pool, fits in ((siblings, lambda last: _squash(last) == meant),
                       (others, lambda last: _squash(last) == meant),
                       (siblings, lambda last: ("_" in last and _initials(last) == squashed)
                        or ("_" in word and own_initials == _squash(last)))):
        found = [k for k in pool if fits(k.rpartition(".")[2])]
        if len(found) == 1:
            return f" (did you mean '{found[0]}'?)"
    return did_you_mean(key, known)


def _squash(word: str) -> str:
    """A key's word compared loosely: lower case, without ``_`` and ``-`` (``Learning-Rate``: ``learningrate``)."""
    return word.lower().replace("_", "").replace("-", "")


def _initials(word: str) -> str:
    """``weight_decay``: ``wd``."""
    return "".join(part[0] for part in word.lower().replace("-", "_").split("_") if part)


def _root_keys(base: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``base`` (a sub-mapping at ``prefix``) re-rooted, so suggestions show full dotted names."""
    node: dict[str, Any] = base
    for part in reversed([p for p in prefix.rstrip(".").split(".") if p]):
        node = {part: node}
    return node


def _all_keys(node: Any) -> list[str]:
    return [key for key, _ in leaves(node)]


def _set_path(tree: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    parts = key.split(".")
    layer: dict[str, Any] = {}
    node = layer
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return _merge(tree, layer, "override")


def _pair_file(task: TaskSpec, model: ModelSpec) -> Path | None:
    if task.source is None:
        return None
    path = task.source.parent / "pairs" / f"{model.name}.yaml"
    return path if path.exists() else None


def _pair_layers(task: TaskSpec, model: ModelSpec) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The optional per-cell file `tasks/<task>/pairs/<model>.yaml`: (config, profiles, where)."""
    path = _pair_file(task, model)
    if path is None:
        return {}, {}, "pair file"
    data = _read(path)
    unknown = sorted(set(data) - {"config", "profiles", "description"})
    if unknown:
        raise UserError(f"{project_path(path)}: unknown section(s) {', '.join(unknown)}; a pair file holds config and "
                        "profiles")
    return data.get("config") or {}, data.get("profiles") or {}, project_path(path)


def _schema_for(task: TaskSpec, model: ModelSpec, adapter: Adapter | None = None) -> dict[str, dict[str, Any]]:
    """The harness's declarations plus the task's, the model's and its adapter's, each only inside its own
    sections."""
    schema = dict(_harness_schema())
    owners = [(project_path(task.source), task.schema, ("task.", "agent.")),
              (project_path(model.source), model.schema, ("model.",))]
    if adapter is not None:
        owners.append((f"models/adapters.yaml {adapter.shape}/{adapter.interface}", adapter.schema, ("model.",)))
    for where, declared, owned in owners:
        for key, entry in declared.items():
            if not str(key).startswith(owned):
                raise UserError(f"{where}: schema entry '{key}' is outside this file's sections "
                                f"({', '.join(s.rstrip('.') for s in owned)})")
            schema[str(key)] = parse_entry(str(key), entry, where)
    return schema


def _check_profile_names(where: str, profiles: dict[str, Any]) -> None:
    """A file's ``profiles`` names only the harness's profiles: a misspelt one (``smoek``) would be ignored."""
    for name in profiles:
        if name not in PROFILES:
            raise UserError(f"{where}: profiles.{name} is not a profile{did_you_mean(str(name), PROFILES)}; "
                            f"profiles: {', '.join(PROFILES)}")


def _defined_keys(spec: TaskSpec | ModelSpec) -> set[str]:
    """The config keys a task or model file defines, in its config or any of its profiles."""
    defined = {key for key, _ in leaves(spec.config)}
    for layer in spec.profiles.values():
        defined.update(key for key, _ in leaves(layer or {}))
    return defined


_OUTSIDE_KEYS: dict[tuple[int, frozenset[str], frozenset[str]], set[str]] = {}


def _keys_outside_file(registry: Registry) -> set[str]:
    """Config keys a task or model file may declare a type for without defining them: the harness defaults' keys
    (every kind), every adapter's, and those any task or model file defines (a family's files share entries)."""
    tag = (id(registry), frozenset(registry.tasks), frozenset(registry.models))
    if tag not in _OUTSIDE_KEYS:
        _OUTSIDE_KEYS[tag] = _collect_outside_keys(registry)
    return _OUTSIDE_KEYS[tag]


def _collect_outside_keys(registry: Registry) -> set[str]:
    known = {key for kind in KINDS for key, _ in leaves(_defaults(kind))}
    for adapters in registry.adapters.values():
        known.update(key for adapter in adapters.values() for key, _ in leaves(adapter.config))
    for spec in [*registry.tasks.values(), *registry.models.values()]:
        known.update(_defined_keys(spec))
    return known


def _check_schema_keys(where: str, spec: TaskSpec | ModelSpec, registry: Registry) -> None:
    """Every ``schema`` entry of a task or model file names a key that exists: one naming a misspelt key
    (``model.hiden_size``) would leave the real key unchecked, silently."""
    if not spec.schema:
        return
    defined = _defined_keys(spec)
    known = defined | _keys_outside_file(registry)
    for key in spec.schema:
        if key not in known and not any(k.startswith(f"{key}.") for k in known):
            raise UserError(f"{where}: schema entry '{key}' names no key of this file's config"
                            f"{did_you_mean(str(key), sorted(defined))}")


def _types(defined: dict[str, Any], schema: dict[str, dict[str, Any]],
           files: tuple[tuple[str, set[str]], ...] = ()) -> dict[str, KeyType]:
    """Every key's type, from the defining layers and the declarations; an untyped key is an error naming the
    file that defines it (``files``: each file with the keys it defines)."""
    types: dict[str, KeyType] = {}
    for key, default in leaves(defined):
        kind = key_type(key, default, schema.get(key))
        if kind is None:
            what = "null" if default is None else "a string"
            path = next((path for path, keys in files if key in keys), "")
            raise UserError(f"{f'{path}: ' if path else ''}config key '{key}' defaults to {what} and declares no "
                            f"type; add it to {'its' if path else 'a'} `schema` section (e.g. {key}: {{type: float, "
                            f"nullable: true}} or {key}: {{choices: [...]}})")
        types[key] = kind
    return types


def _apply_overrides(tree: dict[str, Any], overrides: list[str], types: dict[str, KeyType],
                     given_in: str = "command line", task: TaskSpec | None = None) -> dict[str, Any]:
    """``overrides`` (``key=value``) applied to ``tree``, each value checked against its key's type; an error names
    where the overrides were given (``given_in``: the command line, or a sweep file). With the run's ``task``, a
    key of a section only another kind of run has (``train.max_epochs`` on a stepwise task) is named as such, and
    a key the model reads under other task interfaces only is refused (:func:`_check_read_under`)."""
    for item in overrides:
        if "=" not in item:
            raise UserError(f"bad override '{item}': expected key=value, e.g. optim.lr=3e-4")
        key, _, raw = item.partition("=")
        key = key.strip().lstrip("+")
        parsed = _parse_override(item, key, raw, given_in)
        if not _has_path(tree, key):
            raise UserError(f"unknown config key '{key}'{_other_kind_hint(key, tree, task)}"
                            f"{suggest_key(key, _all_keys(tree))}")
        if key in SET_BY_HARNESS:
            raise UserError(f"'{key}' is set by the harness, not by an override")
        new_value = OmegaConf.to_container(parsed)
        for part in key.split("."):
            new_value = new_value[part]  # type: ignore[index]
        if key in types:
            check_value(key, new_value, types[key], f" ({given_in})")
            if task is not None:
                _check_read_under(key, types[key], task)
        tree = _set_path(tree, key, new_value)
    return tree


KIND_WORDS = {"supervised": "supervised", "rl": "RL", "stepwise": "stepwise"}  # a run kind as a sentence names it


def _other_kind_hint(key: str, tree: dict[str, Any], task: TaskSpec | None) -> str:
    """For a key whose section this run lacks but another kind of run has: ': section S configures K runs, and
    this is a <kind> run (its sections: ...)'; otherwise ''."""
    section = key.split(".")[0]
    if task is None or section in tree:
        return ""
    kind = task.kind
    owners = [KIND_WORDS[other] for other, sections in KIND_SECTIONS.items() if section in sections and other != kind]
    if not owners:
        return ""
    own = ", ".join(sorted(name for name in tree if isinstance(tree[name], dict)))
    article = "an" if KIND_WORDS[kind][:1] in "aeiouR" else "a"
    return (f": section '{section}' configures {' and '.join(owners)} runs, and this is {article} "
            f"{KIND_WORDS[kind]} run (its sections: {own})")


def _parse_override(item: str, key: str, raw: str, given_in: str = "command line") -> DictConfig:
    """One override as an OmegaConf mapping; a value that is not valid YAML (an unclosed list such as
    ``[files``) or a key OmegaConf cannot read is a one-line error naming the override (on the command line, an
    unclosed list is most often one split at a space, and the error says so)."""
    try:
        return OmegaConf.from_dotlist([f"{key}={raw}"])
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if given_in == "command line" and _unclosed(raw):  # "[files," of [files, generator] split at its space
            hint = (f"a space inside a list splits it into two arguments (make's ARGS, an unquoted shell word): "
                    f"write it without spaces, e.g. {key}=[a,b], or quote the override")
        else:
            hint = "write a list as [a, b] and quote a value with brackets, commas or colons"
        raise UserError(f"bad override '{item}': the value is not valid YAML ({problem}); {hint}") from None
    except OmegaConfBaseException as exc:
        raise UserError(f"bad override '{item}': {str(exc).splitlines()[0]}") from None


def _unclosed(raw: str) -> bool:
    """Whether an override's value opens more lists or mappings than it closes."""
    return raw.count("[") + raw.count("{") > raw.count("]") + raw.count("}")


def _has_path(tree: dict[str, Any], key: str) -> bool:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _compose_tree(task_name: str, model_name: str, profile: str, overrides: list[str],
                  registry: Registry, given_in: str = "command line"
                  ) -> tuple[dict[str, Any], dict[str, KeyType], TaskSpec, ModelSpec]:
    """Every layer merged as plain mappings, with each key's type: the work of :func:`compose` up to building
    the OmegaConf object."""
    if profile not in PROFILES:
        hint = did_you_mean(profile, PROFILES)
        raise UserError(f"unknown profile '{profile}'{hint}; profiles: {', '.join(PROFILES)}")
    task, model = registry.check_pair(task_name, model_name)
    kind = task.kind
    pair_config, pair_profiles, pair_where = _pair_layers(task, model)
    task_where, model_where = project_path(task.source), project_path(model.source)
    for where, spec_profiles in ((task_where, task.profiles), (model_where, model.profiles),
                                 (pair_where, pair_profiles)):
        _check_profile_names(where, spec_profiles)
    _check_schema_keys(task_where, task, registry)
    _check_schema_keys(model_where, model, registry)

    tree = _defaults(kind)
    tree = _merge(tree, _for_kind(task.config, kind, task_where, (task.kind,), ("task.name",)), task_where,
                  ("task", "agent"))
    tree = _merge(tree, _for_kind(model.config, kind, model_where, model.kinds, ("model.name",)),
                  model_where, ("model",))
    adapter = model.adapted.get(task.interface)
    if adapter is not None and adapter.config:  # the keys of the adapter this pair reads through
        where = f"models/adapters.yaml {adapter.shape}/{adapter.interface}"
        tree = _merge(tree, _for_kind(adapter.config, kind, where, model.kinds), where, ("model",))
    tree = _merge(tree, _for_kind(pair_config, kind, pair_where, (kind,)), pair_where)
    tree = _merge(tree, {"task": {"name": task.name}, "model": {"name": model.name}, "profile": profile},
                  "registry")  # the registry's names win
    types = _types(tree, _schema_for(task, model, adapter),
                   ((task_where, _defined_keys(task)), (model_where, _defined_keys(model))))

    profile_file = PROFILES_DIR / f"{profile}.yaml"
    layers = [(project_path(profile_file), _read(profile_file), KINDS)]
    for spec_where, profiles, serves in ((task_where, task.profiles, (task.kind,)),
                                         (model_where, model.profiles, model.kinds),
                                         (pair_where, pair_profiles, (kind,))):
        layers.append((f"{spec_where} profiles.{profile}", profiles.get(profile) or {}, serves))
    for where, layer, serves in layers:
        tree = _merge(tree, _for_kind(layer, kind, where, serves), where)
    tree = _apply_overrides(tree, list(overrides), types, given_in, task)
    return tree, types, task, model


def _check_read_under(key: str, kind: KeyType, task: TaskSpec) -> None:
    """An override of a key the model reads under other task interfaces only (its schema's ``interfaces``, e.g.
    ``model.chunk_size`` of a sequence reader on a stream task) is refused: it would change nothing but the run id."""
    read_under = kind.interfaces
    if read_under is not None and task.interface not in read_under:
        named = ", ".join(read_under[:-1]) + (" or " if len(read_under) > 1 else "") + read_under[-1]
        raise UserError(f"'{key}' is read only on {named} tasks, and {task.name} is a "
                        f"{task.interface} task: setting it would change the run id and nothing else")


def _check_leaves(node: Any, types: dict[str, KeyType], where: str) -> None:
    for key, value in leaves(node):
        if key in types and not (isinstance(value, str) and value.startswith("${")):
            check_value(key, value, types[key], where)


def compose(
    task_name: str,
    model_name: str,
    profile: str = "cpu",
    overrides: list[str] | None = None,
    registry: Registry = REGISTRY,
    given_in: str = "command line",
) -> Composed:
    """The resolved, struct-mode configuration of one (task, model, profile) run; ``given_in`` says where the
    overrides come from, for error messages."""
    tree, types, task, model = _compose_tree(task_name, model_name, profile, list(overrides or []), registry,
                                             given_in)
    try:
        cfg = OmegaConf.create(tree)
        OmegaConf.set_struct(cfg, True)
        missing = sorted(OmegaConf.missing_keys(cfg))
        if missing:
            raise UserError(f"config keys without a value: {', '.join(missing)}")
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as exc:
        raise UserError(f"config does not resolve: {str(exc).splitlines()[0]}") from None
    _check_leaves(cfg, types, f" ({task.name} / {model.name}, profile {profile})")
    return Composed(cfg=cfg, task=task, model=model)


def recompose(stored: dict[str, Any], overrides: list[str], registry: Registry = REGISTRY) -> Composed:
    """A stored run's resolved config with ``overrides`` applied, checked against today's key types (for
    commands that reuse a trained run, such as ``harness retest``)."""
    task_name, model_name = str(stored["task"]["name"]), str(stored["model"]["name"])
    _, types, task, model = _compose_tree(task_name, model_name, str(stored.get("profile", "cpu")), [], registry)
    tree = _apply_overrides(copy.deepcopy(stored), list(overrides), types, task=task)
    cfg = OmegaConf.create(tree)
    OmegaConf.set_struct(cfg, True)
    return Composed(cfg=cfg, task=task, model=model)


def key_types(task_name: str, model_name: str, profile: str = "cpu",
              registry: Registry = REGISTRY) -> dict[str, KeyType]:
    """Every config key of a (task, model) run and what it accepts (its type, choices, items)."""
    return _compose_tree(task_name, model_name, profile, [], registry)[1]


def check_registry(registry: Registry = REGISTRY) -> int:
    """Compose every runnable (task, model) pair at every profile: a typo, an untyped key or a bad value in
    any task, model, pair or profile file fails here, with the file's name. Returns the number composed."""
    count = 0
    for task in registry.tasks.values():
        for model in registry.models.values():
            if not registry.compatibility(task, model).ok:
                pair = _pair_file(task, model)
                if pair is not None:
                    raise UserError(f"{project_path(pair)}: {model.name} cannot run on {task.name}, so this pair file "
                                    "is never used")
                continue
            for profile in PROFILES:
                tree, types, _, _ = _compose_tree(task.name, model.name, profile, [], registry)
                _check_leaves(tree, types, f" ({task.name} / {model.name}, profile {profile})")
                count += 1
    return count


_ABSENT = object()
NEUTRAL_ADDED_KEYS: dict[str, Any] = {"train.max_steps": None, "task.trim_batches": False,
                                      "rl.num_gpus_per_learner": 0}
"""Config keys added after runs were stored, with the value that changes nothing: at that value a key stays out of
the config hash, so a config composed now keeps the run id it had before the key existed (reports/store.py treats
such a run and one that states the value as one configuration)."""


def config_hash(cfg: DictConfig) -> str:
    """A short, stable hash of the resolved configuration (the data fingerprint included; the keys of
    ``NEUTRAL_ADDED_KEYS`` left out at their neutral value)."""
    neutral = [key for key, value in NEUTRAL_ADDED_KEYS.items() if OmegaConf.select(cfg, key, default=_ABSENT) == value]
    if neutral:
        cfg = copy.deepcopy(cfg)
        OmegaConf.set_struct(cfg, False)
        for key in neutral:
            section, _, leaf = key.rpartition(".")
            node = OmegaConf.select(cfg, section) if section else cfg
            del node[leaf]
    text = OmegaConf.to_yaml(cfg, resolve=True, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def drop_redundant_test_sources(cfg: DictConfig) -> list[str]:
    """Leave out of ``cfg`` a ``task.test_on`` source that is the one the run trains on (``task.source``, once the
    task has resolved ``auto``), and a ``task.test_sets`` object set that is its ``task.train_set`` (the Relations
    Game): neither adds a test split (its test split is the run's own ``test/``), and kept it would give the same
    run a second run id. Returns a note for each one left out."""
    notes = []
    task = cfg.task
    for key, trained, what in (("test_on", "source", "data"), ("test_sets", "train_set", "object set")):
        value, listed = task.get(trained), task.get(key)
        if value is None or not listed or value not in listed:
            continue
        with open_dict(cfg):
            task[key] = [item for item in listed if item != value]
        notes.append(f"task.{key} names {value}, the {what} this run trains on; its test split is the run's own "
                     "test/ metrics, so it is left out of the run's config (and its run id)")
    return notes


def run_id(cfg: DictConfig) -> str:
    """A readable name plus the config hash: the same command on the same data always maps to the same run."""
    return f"{cfg.task.name}-{cfg.model.name}-{cfg.profile}-s{cfg.seed}-{config_hash(cfg)}"


def save(cfg: DictConfig, path: Path) -> None:
    from harness.runs import atomic_write_text

    atomic_write_text(path, OmegaConf.to_yaml(cfg, resolve=True))


def read_config(path: Path) -> tuple[dict[str, Any], str | None]:
    """A run's config.yaml as a plain mapping and None, or ({}, what is wrong with the file, naming it): missing,
    not parsing, not a mapping, or without the task and model names."""
    try:
        stored = OmegaConf.to_container(OmegaConf.load(path))
    except FileNotFoundError:
        return {}, f"{path}: no such file"
    except (OSError, UnicodeDecodeError, yaml.YAMLError, OmegaConfBaseException) as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, f"{path} is damaged ({type(exc).__name__}: {problem})"
    if not isinstance(stored, dict):
        return {}, f"{path} is damaged (holds a {type(stored).__name__}, not a mapping)"
    missing = [f"{section}.name" for section in ("task", "model")
               if not isinstance(stored.get(section), dict) or not isinstance(stored[section].get("name"), str)]
    if missing:
        return {}, f"{path} is damaged (no {' or '.join(missing)})"
    return stored, None
