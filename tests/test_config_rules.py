"""A run's configuration is composed, overridden and hashed as harness/config.py documents.

Source: the module docstring of ``harness/config.py`` ("Order, later wins: harness/defaults.yaml +
harness/defaults_<kind>.yaml <- task.yaml `config` <- model yaml `config` <- tasks/<task>/pairs/<model>.yaml `config`
<- harness/profiles/<profile>.yaml <- task / model / pair `profiles.<profile>` <- command-line overrides"; "A run
carries only the sections of its kind"), the docstrings of ``config_hash`` and ``run_id`` ("A short, stable hash of
the resolved configuration ... the keys of NEUTRAL_ADDED_KEYS left out at their neutral value"; "the same command
on the same data always maps to the same run") and of ``drop_redundant_test_sources``. The composition is
re-done here by hand, one layer at a time, from the YAML files themselves, and compared with :func:`compose`.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import DictConfig, OmegaConf

from harness import PROJECT_ROOT
from harness.config import NEUTRAL_ADDED_KEYS, compose, config_hash, drop_redundant_test_sources, run_id
from harness.errors import UserError
from harness.registry import REGISTRY

SECTIONS = {"supervised": ("optim", "train", "protocol", "analysis"), "rl": ("rl", "agent"),
            "stepwise": ("optim", "stepwise")}
COMMON = ("seed", "profile", "task", "model", "data", "tracking")
# one override per kind on a key its smoke profile sets: the override must win over the profile
KIND_OVERRIDES = {"supervised": ["train.max_epochs=3", "seed=7"], "rl": ["rl.total_env_steps=123", "seed=7"],
                  "stepwise": ["stepwise.iterations=5", "seed=7"]}


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def deep_merge(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """``layer`` over ``base``: a mapping into a mapping key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in layer.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def of_kind(layer: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The sections of ``layer`` a run of ``kind`` carries."""
    return {key: value for key, value in (layer or {}).items() if key in COMMON or key in SECTIONS[kind]}


def documented_compose(task_name: str, model_name: str, profile: str, overrides: list[str]) -> dict[str, Any]:
    """The docstring's order, written out layer by layer (values of the overrides: plain YAML scalars)."""
    task, model = REGISTRY.tasks[task_name], REGISTRY.models[model_name]
    kind = task.kind
    harness = PROJECT_ROOT / "harness"
    tree = deep_merge(load(harness / "defaults.yaml"), load(harness / f"defaults_{kind}.yaml"))
    tree = deep_merge(tree, of_kind(task.config, kind))
    tree = deep_merge(tree, of_kind(model.config, kind))
    adapter = model.adapted.get(task.interface)
    if adapter is not None:  # the keys of the adapter the pair reads through (models/adapters.yaml), model's own
        tree = deep_merge(tree, of_kind(adapter.config, kind))
    pair_file = task.source.parent / "pairs" / f"{model.name}.yaml"
    pair = load(pair_file) if pair_file.exists() else {}
    tree = deep_merge(tree, of_kind(pair.get("config"), kind))
    tree = deep_merge(tree, {"task": {"name": task.name}, "model": {"name": model.name}, "profile": profile})
    tree = deep_merge(tree, of_kind(load(harness / "profiles" / f"{profile}.yaml"), kind))
    for layer in (task.profiles, model.profiles, pair.get("profiles") or {}):
        tree = deep_merge(tree, of_kind(layer.get(profile), kind))
    for item in overrides:
        key, _, raw = item.partition("=")
        node = tree
        *path, leaf = key.split(".")
        for part in path:
            node = node[part]
        node[leaf] = yaml.safe_load(raw)
    return OmegaConf.to_container(OmegaConf.create(tree), resolve=True)  # type: ignore[return-value]




def _pairs() -> list[tuple[str, str]]:
    """Every pair with a pair file, the first runnable pair of every task, and one pair per adapter that adds
    config keys (tiny: the whole matrix would take half a minute)."""
    chosen: set[tuple[str, str]] = set()
    adapters_seen: set[str] = set()
    for task in REGISTRY.tasks.values():
        runnable = [m for m in REGISTRY.models.values() if REGISTRY.compatibility(task, m).ok]
        if runnable:
            chosen.add((task.name, runnable[0].name))
        for model in runnable:
            assert task.source is not None
            adapter = model.adapted.get(task.interface)
            if (task.source.parent / "pairs" / f"{model.name}.yaml").exists():
                chosen.add((task.name, model.name))
            elif adapter is not None and adapter.config and f"{adapter.shape}/{task.interface}" not in adapters_seen:
                adapters_seen.add(f"{adapter.shape}/{task.interface}")
                chosen.add((task.name, model.name))
    return sorted(chosen)


PAIRS = _pairs()


@pytest.mark.parametrize(("task", "model"), PAIRS, ids=[f"{t}-{m}" for t, m in PAIRS])
def test_compose_follows_the_documented_layer_order(task: str, model: str) -> None:
    kind = REGISTRY.tasks[task].kind
    for profile in ("smoke", "cpu", "paper"):
        for overrides in ([], KIND_OVERRIDES[kind]):
            composed = OmegaConf.to_container(compose(task, model, profile, list(overrides)).cfg, resolve=True)
            assert composed == documented_compose(task, model, profile, list(overrides)), (profile, overrides)


def test_an_override_wins_over_every_profile_layer() -> None:
    """tpr_rnn's cpu profile sets train.max_epochs; the harness smoke profile sets it too; the override wins."""
    for profile in ("smoke", "cpu", "paper"):
        assert compose("babi", "tpr_rnn", profile, ["train.max_epochs=11"]).cfg.train.max_epochs == 11
        assert compose("babi", "tpr_rnn", profile, ["+train.max_epochs=12"]).cfg.train.max_epochs == 12


def test_a_file_profile_wins_over_the_harness_profile() -> None:
    """babi's smoke profile sets task keys and tpr_rnn's cpu profile sets train.max_epochs, over harness/profiles."""
    smoke_file = load(PROJECT_ROOT / "harness" / "profiles" / "smoke.yaml")
    model = REGISTRY.models["tpr_rnn"]
    for profile in ("smoke", "cpu", "paper"):
        mine = (model.profiles.get(profile) or {}).get("train", {})
        cfg = compose("babi", "tpr_rnn", profile).cfg
        for key, value in mine.items():
            assert cfg.train[key] == value, (profile, key)
        if profile == "smoke":
            for key, value in smoke_file["train"].items():
                assert cfg.train[key] == mine.get(key, value), key


def documented_hash(cfg: DictConfig) -> str:
    """sha256 of the resolved config as sorted YAML, the neutral added keys left out, first 8 hex digits."""
    tree = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(tree, dict)
    for key, neutral in NEUTRAL_ADDED_KEYS.items():
        *path, leaf = key.split(".")
        node: Any = tree
        for part in path:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and leaf in node and node[leaf] == neutral:
            del node[leaf]
    text = OmegaConf.to_yaml(OmegaConf.create(tree), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


HASH_CASES = [("babi", "tpr_rnn", []), ("babi", "tpr_rnn", ["train.max_steps=5"]),
              ("babi", "tpr_rnn", ["task.trim_batches=true"]), ("listops", "transformer", []),
              ("cartpole", "mlp_agent", []), ("cartpole", "mlp_agent", ["rl.num_gpus_per_learner=0.5"]),
              ("game_of_life", "updater_extractor", [])]


@pytest.mark.parametrize(("task", "model", "overrides"), HASH_CASES)
def test_run_id_is_the_documented_hash_of_the_resolved_config(task: str, model: str, overrides: list[str]) -> None:
    cfg = compose(task, model, "smoke", overrides).cfg
    expected = documented_hash(cfg)
    assert config_hash(cfg) == expected
    assert run_id(cfg) == f"{task}-{model}-smoke-s{cfg.seed}-{expected}"


@pytest.mark.parametrize("key", sorted(NEUTRAL_ADDED_KEYS))
def test_each_neutral_key_is_out_of_the_hash_at_its_neutral_value_only(key: str) -> None:
    pair = {"train": ("babi", "tpr_rnn"), "task": ("babi", "tpr_rnn"), "rl": ("cartpole", "mlp_agent")}
    cfg = compose(*pair[key.split(".")[0]], "smoke").cfg
    section, _, leaf = key.rpartition(".")
    assert OmegaConf.select(cfg, key) == NEUTRAL_ADDED_KEYS[key]  # the shipped default is the neutral value
    without = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    del OmegaConf.select(without, section)[leaf]  # the config as composed before the key existed
    assert config_hash(cfg) == config_hash(without)
    other = {"train.max_steps": 3, "task.trim_batches": True, "rl.num_gpus_per_learner": 0.5}[key]
    changed = copy.deepcopy(cfg)
    OmegaConf.update(changed, key, other)
    assert config_hash(changed) != config_hash(cfg)


def test_the_hash_is_stable_under_key_order_and_unresolved_references() -> None:
    """Two configs with the same resolved values are the same run, whatever their key order or whether a value
    is still written as a reference."""
    cfg = compose("babi", "tpr_rnn", "smoke").cfg
    tree = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(tree, dict)
    reordered = OmegaConf.create({key: tree[key] for key in reversed(list(tree))})
    reordered.train = {key: tree["train"][key] for key in reversed(list(tree["train"]))}
    assert config_hash(reordered) == config_hash(cfg)
    referenced = OmegaConf.create(tree)
    referenced.train.eval_batch_size = "${train.batch_size}"
    resolved = OmegaConf.create(tree)
    resolved.train.eval_batch_size = tree["train"]["batch_size"]
    assert config_hash(referenced) == config_hash(resolved)


def test_a_test_source_that_is_the_training_source_is_left_out() -> None:
    cfg = OmegaConf.create({"task": {"source": "files", "test_on": ["generator", "files", "other"],
                                     "train_set": "a", "test_sets": ["a", "b"]}})
    notes = drop_redundant_test_sources(cfg)
    assert list(cfg.task.test_on) == ["generator", "other"] and list(cfg.task.test_sets) == ["b"]
    assert len(notes) == 2 and "task.test_on names files" in notes[0] and "task.test_sets names a" in notes[1]
    kept = OmegaConf.create({"task": {"source": "files", "test_on": ["generator"], "train_set": None,
                                      "test_sets": ["a"]}})
    assert drop_redundant_test_sources(kept) == [] and list(kept.task.test_on) == ["generator"]


@pytest.mark.parametrize(("override", "message"), [
    ("optim.lr=-0.1", "bad value for 'optim.lr' (command line): -0.1 is not a float in [0, 100]"),
    ("optim.betas=[0.9,0.999,0.5]", "bad value for 'optim.betas' (command line)"),
    ("optim.betas=[0.9,true]", "bad value for 'optim.betas' (command line)"),
    ("seed=-1", "bad value for 'seed' (command line)"),
    ("train.threads=1025", "bad value for 'train.threads' (command line)"),
    ("task.name=other", "'task.name' is set by the harness"),
    ("profile=paper", "'profile' is set by the harness"),
])
def test_an_override_is_checked_and_the_error_names_its_key(override: str, message: str) -> None:
    with pytest.raises(UserError) as refused:
        compose("babi", "tpr_rnn", "smoke", [override])
    assert message in str(refused.value)


def test_a_sweep_file_override_names_the_sweep_file() -> None:
    with pytest.raises(UserError, match=r"bad value for 'optim.lr' \(sweeps/x.yaml\)"):
        compose("babi", "tpr_rnn", "smoke", ["optim.lr=-1.0"], given_in="sweeps/x.yaml")


@pytest.mark.parametrize(("override", "value"), [("optim.lr=0", 0), ("optim.lr=100", 100),
                                                 ("optim.betas=[0.0,1.0]", [0.0, 1.0]), ("seed=2147483647", None),
                                                 ("train.max_time_s=null", None), ("tracking.tags=[a,b]", ["a", "b"])])
def test_an_override_on_a_bound_is_taken(override: str, value: Any) -> None:
    key, _, _ = override.partition("=")
    got = OmegaConf.select(compose("babi", "tpr_rnn", "smoke", [override]).cfg, key)
    got = OmegaConf.to_container(got) if not isinstance(got, int | float | str | type(None)) else got
    assert got == (value if value is not None or key != "seed" else 2147483647)


def with_layers(task_layers: dict[str, Any], model_layers: dict[str, Any]) -> Any:
    """A registry whose listops task and lstm model also set ``train.max_epochs`` in the layers named (``config``
    or a profile name), each to its own value."""
    from dataclasses import replace

    from harness.registry import Registry

    registry = Registry()
    registry.tasks  # noqa: B018  # loads both tables
    for table, name, layers in ((registry._tasks, "listops", task_layers), (registry._models, "lstm", model_layers)):
        assert table is not None
        spec: Any = table[name]
        config = deep_merge(spec.config, layers.get("config", {}))
        profiles = {**spec.profiles}
        for profile, layer in layers.items():
            if profile != "config":
                profiles[profile] = deep_merge(profiles.get(profile) or {}, layer)
        table[name] = replace(spec, config=config, profiles=profiles)
    return registry


def epochs(value: int) -> dict[str, Any]:
    return {"train": {"max_epochs": value}}


def test_each_layer_wins_over_the_layers_before_it() -> None:
    """train.max_epochs set in every layer to a different value: the latest layer's value is the run's; taking
    the layers away from the top, each earlier one shows through in the documented order."""
    task_all = {"config": epochs(11), "smoke": epochs(13)}
    model_all = {"config": epochs(12), "smoke": epochs(14)}
    harness_smoke = load(PROJECT_ROOT / "harness" / "profiles" / "smoke.yaml")["train"]["max_epochs"]

    def got(task_layers: dict[str, Any], model_layers: dict[str, Any], profile: str = "smoke",
            overrides: tuple[str, ...] = ()) -> int:
        cfg = compose("listops", "lstm", profile, list(overrides), registry=with_layers(task_layers, model_layers)).cfg
        return int(cfg.train.max_epochs)

    assert got(task_all, model_all, overrides=("train.max_epochs=15",)) == 15  # override, last
    assert got(task_all, model_all) == 14  # model's profiles.smoke over the task's
    assert got(task_all, {"config": epochs(12)}) == 13  # task's profiles.smoke over the harness profile
    assert got({"config": epochs(11)}, {"config": epochs(12)}) == harness_smoke  # harness profile over configs
    assert got({"config": epochs(11)}, {"config": epochs(12)}, "paper") == 12  # model config over the task's
    assert got({"config": epochs(11)}, {}, "paper") == 11  # task config over the harness defaults
    assert got({"smoke": epochs(13)}, {"config": epochs(12)}) == 13
    assert got({}, {"smoke": epochs(14), "config": epochs(12)}) == 14


def test_a_suggestion_rule_that_fits_several_keys_suggests_none_of_them() -> None:
    """``suggest_key``: "A rule that fits several keys suggests none of them" (the closest spelling decides)."""
    from harness.config import suggest_key
    from harness.errors import did_you_mean

    assert suggest_key("s.learning_rate", ["t.lr", "u.lr"]) == did_you_mean("s.learning_rate", ["t.lr", "u.lr"])
    assert suggest_key("s.learning_rate", ["t.lr", "u.x"]) == " (did you mean 't.lr'?)"
    both = ["s.alpha_beta", "s.all_buckets"]
    assert suggest_key("s.ab", both) == did_you_mean("s.ab", both)
    assert suggest_key("s.ab", ["s.alpha_beta", "s.other"]) == " (did you mean 's.alpha_beta'?)"


def test_a_bad_value_in_a_yaml_layer_is_refused_when_the_pair_composes() -> None:
    """Not only overrides are checked: a profile of a model file that sets a value out of range fails compose,
    naming the key and the run."""
    registry = with_layers({}, {"smoke": {"train": {"batch_size": 0}}})
    with pytest.raises(UserError) as refused:
        compose("listops", "lstm", "smoke", registry=registry)
    message = "bad value for 'train.batch_size' (listops / lstm, profile smoke): 0 is not an int >= 1"
    assert message in str(refused.value)
    compose("listops", "lstm", "cpu", registry=registry)  # the other profiles do not read it


def test_an_untyped_key_is_named_with_the_file_that_defines_it() -> None:
    registry = with_layers({"config": {"task": {"new_knob": None}}}, {})
    with pytest.raises(UserError) as refused:
        compose("listops", "lstm", "smoke", registry=registry)
    assert str(refused.value).startswith("tasks/listops/task.yaml: config key 'task.new_knob' defaults to null")
    registry = with_layers({}, {"config": {"model": {"new_knob": "text"}}})
    with pytest.raises(UserError) as refused:
        compose("listops", "lstm", "smoke", registry=registry)
    assert str(refused.value).startswith("models/lstm/lstm.yaml: config key 'model.new_knob' defaults to a string")


@pytest.mark.parametrize(("task", "model", "override", "refused"), [
    ("babi", "tpr_rnn", "model.operations=[write,move]", None),
    ("babi", "tpr_rnn", "model.operations=[write,write]", "'write' is listed twice"),
    ("babi", "tpr_rnn", "model.operations=[]", "[] has 0 item(s); at least 1 needed"),
    ("babi", "tpr_rnn", "model.operations=[move,jump]", "'jump' is not one of write, move, backlink"),
    ("babi", "tpr_rnn", "task.test_on=[generator,generator]", "'generator' is listed twice"),
    ("game_of_life", "updater_extractor", "stepwise.horizons=[10,20]", None),
    ("game_of_life", "updater_extractor", "stepwise.horizons=[10,10]", "10 is listed twice"),
    ("game_of_life", "updater_extractor", "stepwise.horizons=[10,0]", "is not a list of integers"),
])
def test_list_rules_of_shipped_keys_hold_on_every_item(task: str, model: str, override: str,
                                                       refused: str | None) -> None:
    """``items``, ``item_choices``, ``unique``, ``min_length`` and a per-item ``min`` hold for every item, the last
    one included, and the message names the key and the item."""
    if refused is None:
        compose(task, model, "smoke", [override])
        return
    with pytest.raises(UserError) as info:
        compose(task, model, "smoke", [override])
    key = override.partition("=")[0]
    assert str(info.value).startswith(f"bad value for '{key}' (command line): ") and refused in str(info.value)


@pytest.mark.parametrize(("override", "split_hint"), [("task.test_on=[files,", True), ("optim.name=a: b: c", False),
                                                      ("optim.name=\"x", False), ("optim.name=[a]]", False)])
def test_the_split_list_hint_is_given_only_for_a_list_left_open(override: str, split_hint: bool) -> None:
    """``_parse_override``: an unclosed list on the command line is most often one split at a space; any other
    value that is not YAML gets the general hint."""
    with pytest.raises(UserError) as refused:
        compose("babi", "tpr_rnn", "smoke", [override])
    message = str(refused.value)
    assert message.startswith(f"bad override '{override}': the value is not valid YAML")
    assert ("a space inside a list splits it" in message) is split_hint
    assert ("write a list as [a, b] and quote a value" in message) is not split_hint
