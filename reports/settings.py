"""Like-for-like: the settings a published number was measured under, and whether a run shares them.

A paper file states, for a table (and optionally a row or a fact), ``settings``: a mapping from a dotted
config key of our runs to what the paper's number was measured under::

    settings:
      task.source: files                          # equal (lists in order; those of SETS' keys in any)
      task.data_set: {any_of: [en-10k, en-valid-10k]}
      task.test_sets: {contains: "{object_set}"}  # a list that holds the value; {field} reads the row
      task.env.n: 9
      model.operations: {absent_or: [write, move, backlink]}   # runs from before the key existed count

A run matches when its resolved config satisfies every entry. The report colours a published cell only
against matching runs that are not stale; every other run of the row's task and model appears beside it,
labelled with the settings that differ (``n 6 ≠ 9``), never as a match. A run of the ``smoke`` profile (a few
batches) matches no published number.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.config import SMOKE_PROFILE
from reports.store import RunRecord, canonical_operations, cfg_get

_ABSENT = object()
OPERATORS = ("any_of", "contains", "absent_or")

SETS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "model.operations": lambda operations: list(canonical_operations(operations)),
}
"""Config keys whose list names a set, each with its one spelling: TPR-RNN runs the memory operations named in its
own order whatever order they were listed in, so a run of ``[move, write]`` is Table 3's write + move and a run
of ``[backlink, move, write]`` is the full model."""


def check(settings: Any, where: str) -> dict[str, Any]:
    """A ``settings`` mapping, checked (a mistake names the paper file)."""
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: 'settings' must map config keys to values")
    for key, want in settings.items():
        if isinstance(want, dict) and (len(want) != 1 or next(iter(want)) not in OPERATORS):
            raise ValueError(f"{where}: settings.{key} must be a value or one of "
                             f"{{any_of: [...]}}, {{contains: value}}, {{absent_or: value}}")
    return dict(settings)


def fill(settings: dict[str, Any], labels: dict[str, Any]) -> dict[str, Any]:
    """Row fields substituted into string values (``"{object_set}"`` -> ``"stripes"``)."""
    def one(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return value.format(**labels)
            except (KeyError, IndexError, ValueError):
                return value
        if isinstance(value, list):
            return [one(v) for v in value]
        if isinstance(value, dict):
            return {k: one(v) for k, v in value.items()}
        return value
    return {key: one(value) for key, value in settings.items()}


def _norm(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _satisfied(have: Any, want: Any) -> bool:
    if isinstance(want, dict) and "absent_or" in want:  # a key added later: older runs ran with this value
        return have is _ABSENT or _norm(have) == _norm(want["absent_or"])
    if have is _ABSENT:
        return False
    if isinstance(want, dict) and "any_of" in want:
        return any(_norm(have) == _norm(option) for option in want["any_of"])
    if isinstance(want, dict) and "contains" in want:
        return isinstance(have, list) and any(_norm(item) == _norm(want["contains"]) for item in have)
    if isinstance(want, int | float) and not isinstance(want, bool) and isinstance(have, int | float):
        return float(have) == float(want)
    return _norm(have) == _norm(want)


def _one_spelling(key: str, value: Any) -> Any:
    """A setting (or a paper's operator over settings) with the lists of a set-valued key (:data:`SETS`) in that
    key's one spelling; every other value as it is."""
    spell = SETS.get(key)
    if spell is None:
        return value
    if isinstance(value, list):
        return spell(value)
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in OPERATORS:
        operator, operand = next(iter(value.items()))
        if operator == "any_of" and isinstance(operand, list):
            return {operator: [_one_spelling(key, option) for option in operand]}
        return {operator: _one_spelling(key, operand)}
    return value


def _shown(value: Any) -> str:
    """A setting as the config files and overrides spell it (``null``, ``true``), not as Python prints it."""
    if value is _ABSENT:
        return "unset"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and "any_of" in value:
        return " or ".join(_shown(v) for v in value["any_of"])
    if isinstance(value, dict) and "contains" in value:
        return f"⊇ {_shown(value['contains'])}"
    if isinstance(value, dict) and "absent_or" in value:
        return _shown(value["absent_or"])
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


DATA_SET = "task.data_set"


def sets_read(run: RunRecord) -> list[str]:
    """The data sets a run read its files from (``babi/en/qa3_..._train.txt`` -> ``en``), from the file
    hashes in results.json: where a file is missing from the configured set, a task may read another set's
    (bAbI's en-10k lacks task 3's train file, and the runs train on en's 1,000 examples)."""
    data = run.results.get("data")
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return []
    parts = [str(path).split("/") for path in files]
    return sorted({p[1] for p in parts if len(p) > 2 and p[0] == run.task})


def other_sets_read(run: RunRecord) -> list[str]:
    """The data sets besides the one its config names (``task.data_set``) that a run on the official files read
    files from (:func:`sets_read`); empty for generated data or a task without data sets."""
    named = cfg_get(run.config, DATA_SET)
    if not isinstance(named, str) or cfg_get(run.config, "task.source", "files") != "files":
        return []
    return [name for name in sets_read(run) if name != named]


def differences(run: RunRecord, settings: dict[str, Any]) -> list[str]:
    """The settings the run does not share, as ``"<key> <ours> ≠ <paper's>"`` (short key names). A run that
    read files of another data set than its config names does not share ``task.data_set``; a run of the smoke
    profile shares no published number's settings."""
    out = []
    if run.profile == SMOKE_PROFILE:
        out.append(f"profile {SMOKE_PROFILE} (a few batches) ≠ a full run")
    for key, want in settings.items():
        have = cfg_get(run.config, key, _ABSENT)
        if not _satisfied(_one_spelling(key, have), _one_spelling(key, want)):
            out.append(f"{key.rsplit('.', 1)[-1]} {_shown(have)} ≠ {_shown(want)}")
        elif key == DATA_SET and (others := other_sets_read(run)):
            out.append(f"{key.rsplit('.', 1)[-1]} {have} (files also from {', '.join(others)}) ≠ {_shown(want)}")
    return out


def describe(settings: dict[str, Any]) -> str:
    """The settings as one line, for captions."""
    return "; ".join(f"{key} = {_shown(want)}" for key, want in settings.items())
