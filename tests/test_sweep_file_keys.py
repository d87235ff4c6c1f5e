"""A sweep file that names one key twice in a mapping is refused in one line naming the line, instead of YAML
keeping only the last value (tests of harness/runners/sweep_file.py)."""

from pathlib import Path

import pytest

from harness.errors import UserError
from harness.runners.sweep_file import load_sweep

HEAD = "name: twice\ntask: babi\nprofile: smoke\n"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "twice.yaml"
    path.write_text(HEAD + body)
    return path


@pytest.mark.parametrize("body, where", [
    ("models: [lstm]\nmodels: [memn2n]\n", r"line 5, column 1 \('models' is given twice \(first at line 4\)"),
    ("models: [lstm]\nspace:\n  optim.lr: {type: grid, values: [0.1]}\n  optim.lr: {type: grid, values: [0.2]}\n",
     r"line 7, column 3 \('optim.lr' is given twice \(first at line 6\)"),
    ("models: [lstm]\nspace: {optim.lr: {type: grid, values: [0.1], values: [0.2]}}\n",
     r"'values' is given twice \(first at line 5\)"),
])
def test_a_key_given_twice_is_refused_naming_its_line(tmp_path, body, where):
    with pytest.raises(UserError, match=where):
        load_sweep(write(tmp_path, body))


def test_distinct_keys_and_merge_keys_still_load(tmp_path):
    body = ("models: [lstm, memn2n]\noverrides: [optim.lr=0.1]\n"
            "space:\n  optim.grad_clip: &clip {type: grid, values: [1.0]}\n  optim.weight_decay:\n"
            "    <<: *clip\n    values: [0.0]\n")
    sweep = load_sweep(write(tmp_path, body))
    assert sweep.models == ["lstm", "memn2n"]
    assert sweep.space["optim.weight_decay"] == {"type": "grid", "values": [0.0]}
