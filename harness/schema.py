"""Types, choices and ranges of configuration keys: what makes a config unable to lie.

Every leaf of a composed configuration has a type. Where its default is a number, a bool, a list or a
mapping, the type is that of the default. Where the default is ``null`` or a string, the type must be
declared in a ``schema`` section (``harness/schema.yaml`` for the harness's keys, the ``schema`` section of
a task's or model's YAML for its own), keyed by the dotted name::

    schema:
      train.stop_at: {type: float, nullable: true, min: 0}
      optim.name: {choices: [adam, adamw, tf1_nadam, tf1_rmsprop, sgd]}
      task.env.solution_length: {type: [int, list]}

Fields: ``type`` (``int``, ``float``, ``bool``, ``str``, ``list``, ``dict``, or a list of them), ``nullable``
(default false), ``choices`` (the allowed values; implies the type of the first), ``min`` / ``max``
(numbers; for lists, every item), ``items`` (the type of every item of a list), ``length`` (the number of
items a list must have, e.g. 2 for Adam's betas), ``item_choices`` (the values every item of a list must be
one of), ``unique`` (no item twice), ``min_length`` (the fewest items) and ``interfaces`` (the task interfaces
under which the model reads the key, e.g. ``[sequence]`` for a chunk size only its sequence reader uses: an
override of it on a task of another interface is refused, since it would change the run id and nothing else). A
declared entry may also
refine a key whose default is typed (e.g. ``train.batch_size: {min: 1}``). A float key (and every item of
a list of floats) also refuses nan, infinities and magnitudes beyond float32's (about 3.4e38), which torch
cannot hold; any other integer, magnitudes beyond int64's (about 9.2e18), which torch, numpy and a data loader's
batching cannot hold. :func:`check_value` names the key, the value and what was expected, as one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from harness.errors import UserError
from harness.registry import INTERFACES

TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "bool": (bool,), "str": (str,), "list": (list, ListConfig),
    "dict": (dict, DictConfig),
}
FIELDS = ("type", "nullable", "choices", "min", "max", "items", "length", "item_choices", "unique", "min_length",
          "interfaces")
FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32: a float key's value reaches torch as one
INT64_MAX = 2**63 - 1  # the largest int64: an int key's value reaches torch, numpy and itertools as one


ITEM_NOUNS = {"str": "strings", "int": "integers", "float": "numbers", "bool": "booleans"}  # a list's items, described


@dataclass(frozen=True)
class KeyType:
    """What one key accepts."""

    types: tuple[str, ...]
    nullable: bool = False
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: str | None = None
    length: int | None = None
    item_choices: tuple[Any, ...] | None = None
    unique: bool = False
    min_length: int | None = None
    interfaces: tuple[str, ...] | None = None  # the task interfaces under which the key is read (None: all)

    def describe(self) -> str:
        if self.choices is not None:
            text = "one of " + ", ".join(_runs(self.choices))
        else:
            text = " or ".join(f"a{'n' if t == 'int' else ''} {t}" for t in self.types)
            items = ITEM_NOUNS.get(self.items or "", "values")
            if self.types == ("list",) and (self.length is not None or self.items is not None):
                text = f"a list of {'' if self.length is None else f'{self.length} '}{items}"
            text += self._list_rules()
            bound = ""
            if self.minimum is not None and self.maximum is not None:
                bound = f"in [{_num(self.minimum)}, {_num(self.maximum)}]"
            elif self.minimum is not None:
                bound = f">= {_num(self.minimum)}"
            elif self.maximum is not None:
                bound = f"<= {_num(self.maximum)}"
            if bound:  # of a list: the bound holds for each item
                text += f", each {bound}" if self.types == ("list",) else f" {bound}"
        return text + (" (or null)" if self.nullable else "")

    def _list_rules(self) -> str:
        """What a list must also satisfy, as text: its items' choices, distinct items, its fewest items."""
        rules = []
        if self.item_choices is not None:
            rules.append("items from " + ", ".join(map(str, self.item_choices)))
        if self.unique:
            rules.append("each at most once")
        if self.min_length:
            rules.append(f"at least {self.min_length}")
        return f" ({'; '.join(rules)})" if rules else ""


def _runs(choices: tuple[Any, ...]) -> list[str]:
    """The choices as text, three or more consecutive integers as one range: (1, 2, ..., 20, 'all') ->
    ['1..20', 'all']."""
    shown: list[str] = []
    run: list[int] = []
    for choice in (*choices, None):
        is_int = isinstance(choice, int) and not isinstance(choice, bool)
        if is_int and run and choice == run[-1] + 1:
            run.append(choice)
            continue
        if len(run) >= 3:
            shown.append(f"{run[0]}..{run[-1]}")
        else:
            shown.extend(map(str, run))
        run = [choice] if is_int else []
        if not is_int and choice is not None:
            shown.append(str(choice))
    return shown


def _num(value: float) -> str:
    """A bound as a message shows it: an int in full (a seed's 2147483647, not 2.14748e+09), a float short."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def _type_name(value: Any) -> str | None:
    """The schema type of a default value; None for null and strings, which must be declared."""
    if value is None or isinstance(value, str):
        return None
    for name in ("bool", "int", "float", "list", "dict"):  # bool before int: True is an int in Python
        if isinstance(value, TYPES[name]) and not (name == "int" and isinstance(value, bool)):
            return name
    return None


def parse_entry(key: str, entry: Any, where: str) -> dict[str, Any]:
    """One ``schema`` entry, checked; a mistake in it is the developer's and names the file."""
    if not isinstance(entry, Mapping):
        raise UserError(f"{where}: schema entry '{key}' must be a mapping such as {{type: float, nullable: true}}")
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise UserError(f"{where}: schema entry '{key}' has unknown field(s) {', '.join(unknown)}; "
                        f"known: {', '.join(FIELDS)}")
    types = entry.get("type")
    for name in [types] if isinstance(types, str) else list(types or []):
        if name not in TYPES:
            raise UserError(f"{where}: schema entry '{key}' has type {name!r}; one of {', '.join(TYPES)}")
    if entry.get("items") is not None and entry["items"] not in TYPES:
        raise UserError(f"{where}: schema entry '{key}' has items {entry['items']!r}; one of {', '.join(TYPES)}")
    for field in ("length", "min_length"):
        count = entry.get(field)
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise UserError(f"{where}: schema entry '{key}' has {field} {count!r}; a number of items (an int >= 0)")
    if entry.get("item_choices") is not None and not isinstance(entry["item_choices"], list | tuple):
        raise UserError(f"{where}: schema entry '{key}' has item_choices {entry['item_choices']!r}; a list of values")
    if entry.get("unique") is not None and not isinstance(entry["unique"], bool):
        raise UserError(f"{where}: schema entry '{key}' has unique {entry['unique']!r}; true or false")
    interfaces = entry.get("interfaces")
    if interfaces is not None and (not isinstance(interfaces, list | tuple) or not interfaces
                                   or any(name not in INTERFACES for name in interfaces)):
        raise UserError(f"{where}: schema entry '{key}' has interfaces {interfaces!r}; a list of task interfaces "
                        f"({', '.join(INTERFACES)})")
    return dict(entry)


def key_type(key: str, default: Any, declared: Mapping[str, Any] | None) -> KeyType | None:
    """The type of ``key`` from its declaration and its default; None when it is neither declared nor
    typed by its default (a null or string default without a ``schema`` entry)."""
    inferred = _type_name(default)
    if declared is None:
        return KeyType((inferred,)) if inferred else None
    types = declared.get("type")
    choices = declared.get("choices")
    if types is None and choices:
        types = _type_name(choices[0]) or "str"
    if types is None:
        types = inferred
    if types is None:
        return None
    return KeyType(
        types=(types,) if isinstance(types, str) else tuple(types),
        nullable=bool(declared.get("nullable", False)),
        choices=tuple(choices) if choices else None,
        minimum=declared.get("min"), maximum=declared.get("max"), items=declared.get("items"),
        length=declared.get("length"),
        item_choices=tuple(declared["item_choices"]) if declared.get("item_choices") is not None else None,
        unique=bool(declared.get("unique", False)), min_length=declared.get("min_length"),
        interfaces=tuple(declared["interfaces"]) if declared.get("interfaces") is not None else None,
    )


def _is(value: Any, name: str) -> bool:
    if name in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, TYPES[name])


def check_value(key: str, value: Any, kind: KeyType, origin: str = "") -> None:
    """Raise a one-line UserError when ``value`` does not fit ``kind``."""
    def fail() -> None:
        shown = OmegaConf.to_container(value) if isinstance(value, DictConfig | ListConfig) else value
        raise UserError(f"bad value for '{key}'{origin}: {shown!r} is not {kind.describe()}")

    if value is None:
        if not kind.nullable:
            fail()
        return
    if kind.choices is not None:
        if not _one_of(value, kind.choices):
            fail()
        return
    if not any(_is(value, name) for name in kind.types):
        fail()
    numbers = list(value) if isinstance(value, list | ListConfig) else [value]
    if isinstance(value, list | ListConfig) and kind.items is not None:
        if not all(_is(item, kind.items) for item in numbers):
            fail()
    if isinstance(value, list | ListConfig) and kind.length is not None and len(value) != kind.length:
        fail()
    problem = _list_problem(list(value), kind) if isinstance(value, list | ListConfig) else None
    if problem:
        raise UserError(f"bad value for '{key}'{origin}: {problem}")
    floats = "float" in kind.types or kind.items == "float"
    for number in numbers:
        if isinstance(number, bool) or not isinstance(number, int | float):
            continue
        if floats or isinstance(number, float):
            _check_float(key, number, origin)
        if (kind.minimum is not None and number < kind.minimum) or (kind.maximum is not None and number > kind.maximum):
            fail()
        if not floats and abs(number) > INT64_MAX:
            raise UserError(f"bad value for '{key}'{origin}: an integer of {len(str(abs(number)))} digits is beyond "
                            f"the int64 range (magnitude at most {INT64_MAX})")


def _one_of(value: Any, choices: tuple[Any, ...]) -> bool:
    """Whether ``value`` is one of ``choices``, of the same type too: 1.0 is not 1, True is not 1."""
    return any(value == choice and type(value) is type(choice) for choice in choices)


def _list_problem(items: list[Any], kind: KeyType) -> str | None:
    """What breaks a list's declared item choices, distinctness or fewest items, naming the item; None if none."""
    if kind.min_length is not None and len(items) < kind.min_length:
        return f"{items!r} has {len(items)} item(s); at least {kind.min_length} needed"
    if kind.item_choices is not None:
        for item in items:
            if not _one_of(item, kind.item_choices):
                return f"{item!r} is not one of {', '.join(map(str, kind.item_choices))}"
    if kind.unique:
        seen: set[str] = set()
        for item in items:
            if repr(item) in seen:
                return f"{item!r} is listed twice"
            seen.add(repr(item))
    return None


def _check_float(key: str, number: float, origin: str) -> None:
    """A one-line UserError for a number a float key cannot hold: not finite (nan, inf), or beyond float32's
    range, which torch cannot convert (an optimizer's learning rate of 1e300 fails inside a training step)."""
    if isinstance(number, float) and not math.isfinite(number):
        raise UserError(f"bad value for '{key}'{origin}: {number!r} is not a finite number")
    if abs(number) > FLOAT32_MAX:
        shown = f"{number:g}" if isinstance(number, float) else f"an integer of {len(str(abs(number)))} digits"
        raise UserError(f"bad value for '{key}'{origin}: {shown} is beyond the float32 range "
                        f"(magnitude at most {FLOAT32_MAX:.3g})")


def leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every leaf of a config; lists are leaves, empty mappings too."""
    if isinstance(node, DictConfig | dict) and (len(node) or not prefix):
        for key in node:
            yield from leaves(node[key], f"{prefix}{key}.")
        return
    yield prefix.rstrip("."), node
