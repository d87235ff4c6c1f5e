"""Config key types accept exactly what their documented fields allow, boundaries included.

Source: the module docstring of ``harness/schema.py`` (fields ``type``, ``nullable``, ``choices``, ``min``/``max``
"for lists, every item", ``items``, ``length``, ``item_choices``, ``unique``, ``min_length``, ``interfaces``; "A
float key (and every item of a list of floats) also refuses nan, infinities and magnitudes beyond float32's"; "any
other integer, magnitudes beyond int64's") and
the declarations of ``harness/schema.yaml``. :func:`documented_accepts` below is a plain transcription of those
sentences; :func:`harness.schema.check_value` must agree with it on every (entry, value) of a small grid that
sits on and just beyond each bound, and its refusal must name the key.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from harness.errors import UserError
from harness.schema import FLOAT32_MAX, INT64_MAX, check_value, key_type, leaves, parse_entry

PY_TYPES = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
            "list": lambda v: isinstance(v, list), "dict": lambda v: isinstance(v, dict)}


def documented_accepts(value: Any, entry: dict[str, Any], default: Any) -> bool:
    """The docstring's rules, one sentence at a time, for a key declared ``entry`` whose default is ``default``."""
    if value is None:
        return bool(entry.get("nullable", False))
    choices = entry.get("choices")
    if choices:  # the allowed values; 1.0 is not the choice 1, nor True the choice 1
        return any(value == choice and type(value) is type(choice) for choice in choices)
    types = entry.get("type")
    if types is None:  # typed by the default
        types = next(name for name in ("bool", "int", "float", "list", "dict") if PY_TYPES[name](default)
                     and not (name == "int" and isinstance(default, bool)))
    names = [types] if isinstance(types, str) else list(types)
    if not any(PY_TYPES[name](value) for name in names):
        return False
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list):
        if entry.get("items") is not None:
            for item in items:
                if not PY_TYPES[entry["items"]](item):
                    return False
        if entry.get("length") is not None and len(value) != entry["length"]:
            return False
        if entry.get("min_length") is not None and len(value) < entry["min_length"]:
            return False
        if entry.get("item_choices") is not None:
            for item in items:
                if item not in entry["item_choices"]:
                    return False
        if entry.get("unique"):
            for i in range(len(items)):
                for j in range(i):
                    if repr(items[i]) == repr(items[j]):
                        return False
    is_float_key = "float" in names or entry.get("items") == "float"
    for number in items:
        if isinstance(number, bool) or not isinstance(number, int | float):
            continue
        if is_float_key or isinstance(number, float):
            if isinstance(number, float) and (math.isnan(number) or math.isinf(number)):
                return False
            if abs(number) > FLOAT32_MAX:
                return False
        elif abs(number) > INT64_MAX:
            return False
        if entry.get("min") is not None and number < entry["min"]:  # both bounds inclusive
            return False
        if entry.get("max") is not None and number > entry["max"]:
            return False
    return True


NAN, INF = float("nan"), float("inf")
NUMBERS = [None, True, False, -1, 0, 1, 2, 0.0, 1.0, 0.5, -0.0, -1e-9, 1 + 1e-9, 100, 100.0, 100.5, NAN, INF, -INF,
           FLOAT32_MAX, -FLOAT32_MAX, 3.5e38, -3.5e38, 10**39, 2**63 - 1, 2**63, -(2**63), "1", [1], {"a": 1}]
LISTS = [[], [0.9, 0.999], [0.0, 1.0], [1.0, 0.0], [0.9, 1.5], [1.5, 0.9], [-0.1, 0.5], [0.5, -0.1], [0.9, "x"],
         ["x", 0.9], [0.9, True], [0.9], [0.9, 0.99, 0.999], [1, 2], [1, 1], [2, 1, 2], [0, 1], [1, 0], [1, 2.0],
         [1, NAN], [NAN, 1], [0.5, INF], [0.5, 3.5e38], [1, 10**39], ["a"], ["a", "b"], ["b", "a", "b"], ["a", "c"],
         ["c", "a"], ["a", 1], [1, "a"], None, 3, "a"]

# (name, schema entry, default): the fields one at a time and together, as harness/schema.yaml uses them
ENTRIES: list[tuple[str, dict[str, Any], Any]] = [
    ("lr", {"min": 0, "max": 100}, 0.001),
    ("eps", {"min": 0}, 1e-8),
    ("gamma", {"min": 0, "max": 1}, 0.99),
    ("batch", {"min": 1}, 32),
    ("seed", {"min": 0, "max": 2147483647}, 0),
    ("stop_at", {"type": "float", "nullable": True}, None),
    ("max_time", {"type": "float", "nullable": True, "min": 0}, None),
    ("max_steps", {"type": "int", "nullable": True, "min": 1}, None),
    ("threads", {"type": "int", "nullable": True, "min": 1, "max": 1024}, None),
    ("gpus", {"type": "float", "min": 0}, 0),
    ("win_rate", {"type": "float", "nullable": True, "min": 0, "max": 1}, None),
    ("choice_str", {"choices": ["adam", "sgd"]}, "adam"),
    ("choice_int", {"choices": [1, 2, 3, "all"]}, 1),
    ("typed_int", {}, 5),
    ("typed_float", {}, 0.5),
    ("typed_bool", {}, False),
    ("int_or_list", {"type": ["int", "list"]}, None),
]
LIST_ENTRIES: list[tuple[str, dict[str, Any], Any]] = [
    ("betas", {"items": "float", "min": 0, "max": 1, "length": 2}, [0.9, 0.999]),
    ("horizons", {"items": "int", "min": 1, "unique": True}, [1, 2]),
    ("tags", {"items": "str"}, []),
    ("sources", {"type": "list", "items": "str", "item_choices": ["a", "b"], "unique": True, "min_length": 1}, ["a"]),
    ("plain_list", {}, [1]),
    ("float_items", {"items": "float"}, [0.5]),
    ("at_least_two", {"type": "list", "min_length": 2}, None),
]


def _grid() -> list[tuple[str, dict[str, Any], Any, Any]]:
    cases = []
    for name, entry, default in ENTRIES:
        cases.extend((name, entry, default, value) for value in NUMBERS + [[0.5, 0.5], "adam", "all", 2.0])
    for name, entry, default in LIST_ENTRIES:
        cases.extend((name, entry, default, value) for value in LISTS)
    return cases


@pytest.mark.parametrize(("name", "entry", "default", "value"), _grid(),
                         ids=[f"{c[0]}-{c[3]!r}" for c in _grid()])
def test_check_value_agrees_with_the_documented_rules(name: str, entry: dict[str, Any], default: Any,
                                                       value: Any) -> None:
    key = f"section.{name}"
    kind = key_type(key, default, parse_entry(key, entry, "test"))
    assert kind is not None
    if documented_accepts(value, entry, default):
        check_value(key, value, kind, " (command line)")
    else:
        with pytest.raises(UserError) as refused:
            check_value(key, value, kind, " (command line)")
        message = str(refused.value)
        assert message.startswith(f"bad value for '{key}' (command line): ") and "\n" not in message


def test_a_key_typed_by_its_default_is_untyped_only_for_null_and_strings() -> None:
    assert key_type("k", None, None) is None and key_type("k", "text", None) is None
    assert key_type("k", 3, None).types == ("int",)  # type: ignore[union-attr]
    assert key_type("k", True, None).types == ("bool",)  # type: ignore[union-attr]  # bool before int
    assert key_type("k", 0.5, None).types == ("float",)  # type: ignore[union-attr]
    assert key_type("k", [1], None).types == ("list",)  # type: ignore[union-attr]
    assert key_type("k", "x", {"choices": [1, 2]}).types == ("int",)  # type: ignore[union-attr]  # the first's
    assert key_type("k", "x", {"choices": ["a", 1]}).types == ("str",)  # type: ignore[union-attr]


@pytest.mark.parametrize(("entry", "field"), [
    ({"min": 0, "maxx": 1}, "unknown field(s) maxx"), ({"type": "double"}, "has type 'double'"),
    ({"items": "number"}, "has items 'number'"), ({"length": -1}, "has length -1"),
    ({"min_length": True}, "has min_length True"), ({"item_choices": "ab"}, "has item_choices 'ab'"),
    ({"unique": "yes"}, "has unique 'yes'"), ({"interfaces": []}, "has interfaces []"),
    ({"interfaces": ["nowhere"]}, "has interfaces ['nowhere']"), ({"interfaces": "sequence"}, "has interfaces"),
])
def test_a_bad_schema_entry_is_refused_naming_the_file_and_key(entry: dict[str, Any], field: str) -> None:
    with pytest.raises(UserError) as refused:
        parse_entry("model.width", entry, "models/x.yaml")
    assert str(refused.value).startswith("models/x.yaml: schema entry 'model.width' ") and field in str(refused.value)


def test_leaves_keeps_an_empty_mapping_and_a_list_as_leaves() -> None:
    tree = {"a": {"b": 1, "c": {}, "d": [1, 2]}, "e": None}
    assert list(leaves(tree)) == [("a.b", 1), ("a.c", {}), ("a.d", [1, 2]), ("e", None)]


HARNESS_RANGES = {  # key: (values the schema.yaml declaration takes, values it refuses), read off its text
    "seed": ([0, 2147483647], [-1, 2147483648]),
    "optim.lr": ([0, 0.0, 100, 100.0], [-1e-9, 100.5]),
    "optim.betas": ([[0.0, 1.0], [0.9, 0.999]], [[0.9], [0.9, 0.99, 0.999], [0.9, 1.01], [-0.1, 0.9]]),
    "optim.decay": ([0.0, 1.0], [-0.1, 1.01]),
    "rl.gamma": ([0.0, 1.0], [-0.01, 1.01]),
    "rl.stop_at_win_rate": ([None, 0.0, 1.0], [-0.01, 1.01]),
    "rl.ppo.gae_lambda": ([0.0, 1.0], [-0.01, 1.01]),
    "rl.eval_episodes": ([1], [0]),
    "rl.num_gpus_per_learner": ([0, 0.5, 1], [-0.5]),
    "train.batch_size": ([1], [0]),
    "train.max_epochs": ([1], [0]),
    "train.max_steps": ([None, 1], [0]),
    "train.threads": ([None, 1, 1024], [0, 1025]),
    "stepwise.threads": ([None, 1, 1024], [0, 1025]),
    "stepwise.horizons": ([[1, 2, 5]], [[0, 1], [1, 1], [2, 5, 2]]),
    "stepwise.stop_at": ([None, 0.0, 1.0], [-0.01, 1.01]),
    "stepwise.curriculum.threshold": ([0.0, 1.0], [-0.01, 1.01]),
    "train.monitor": (["val/acc", "val/loss"], ["val/nope"]),
    "rl.algorithm": (["impala", "ppo"], ["a2c"]),
}
DEFAULTS_FOR_TYPING = {"seed": 0, "optim.lr": 0.001, "optim.betas": [0.9, 0.999], "optim.decay": 0.9,
                       "rl.gamma": 0.99, "rl.ppo.gae_lambda": 0.95, "rl.eval_episodes": 10,
                       "rl.num_gpus_per_learner": 0, "train.batch_size": 32, "train.max_epochs": 10,
                       "stepwise.horizons": [1, 2], "stepwise.curriculum.threshold": 0.9}


@pytest.mark.parametrize("key", sorted(HARNESS_RANGES))
def test_the_harness_schema_file_keeps_its_documented_ranges(key: str) -> None:
    """The bounds a shipped config relies on (a discount in [0, 1], two Adam betas, a batch of at least one, a
    numpy-sized seed, distinct horizons) stay declared in harness/schema.yaml."""
    from harness.config import SCHEMA_FILE

    declared = yaml.safe_load(SCHEMA_FILE.read_text())
    kind = key_type(key, DEFAULTS_FOR_TYPING.get(key), parse_entry(key, declared[key], "harness/schema.yaml"))
    assert kind is not None
    takes, refuses = HARNESS_RANGES[key]
    for value in takes:
        check_value(key, value, kind)
    for value in refuses:
        with pytest.raises(UserError, match=f"bad value for '{key}'"):
            check_value(key, value, kind)


def test_item_choices_are_typed_as_choices_are() -> None:
    """``item_choices`` holds every item to its choices as ``choices`` holds a value: of the same type too (True is
    not 1, 1.0 is not 1), so a list of ints cannot take a bool or a float in place of one of its choices."""
    from harness.errors import UserError
    from harness.schema import KeyType, check_value

    kind = KeyType(types=("list",), item_choices=(1, 2, 3))  # no `items` type: the choices alone decide
    check_value("k", [1, 3], kind)
    for bad in ([True], [1.0], [2, 4]):
        with pytest.raises(UserError):
            check_value("k", bad, kind)
