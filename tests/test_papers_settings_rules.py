"""The rules by which a published number is read and matched to our runs, each checked on a tiny hand-made case
against the rule as ``reports/papers.py`` and ``reports/settings.py`` document it:

* a paper table's defaults (``scale`` 100: our fractions to the paper's percent; ``decimals`` 1; ``tolerance`` 2
  points), a row's own ``task`` over the table's, a row's ``settings`` merged over the table's, and which row
  field is matched to the run's config (``row_key``: the config key's last part where a row field has that name,
  else the first identifying field the metric template does not use);
* a setting ``{absent_or: v}`` (a key added later: runs from before it count, and so do runs stating ``v``; a run
  stating another value does not), booleans and nulls spelt as the config files spell them, row fields filled in;
* the data sets a run read, from its own task's files only;
* the report store's derived numbers: the mean over the held-out sets a run reported (Shanahan et al. 2020,
  "An Explicitly Relational Neural Network Architecture", Table 1: accuracy on each held-out object set), a NaN
  metric read as missing, a tie of two settings naming both, one run per seed preferring the completed one;
* the README's "Reproduced" table: each check's machines with their kernel, and the figure furthest apart with
  its relative difference in scientific notation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reports.papers import load_paper
from reports.settings import differences, fill, sets_read
from reports.store import RunRecord, telling_keys
from tests.run_records import run_record


def _paper(tmp_path: Path, table: dict[str, Any]) -> Any:
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({"paper": "p", "tables": [table]}), encoding="utf-8")  # JSON is YAML
    return load_paper(path)


def test_a_tables_defaults_are_percent_one_decimal_and_two_points(tmp_path):
    table = _paper(tmp_path, {"id": "t", "task": "babi", "metric": "test/acc", "rows": [{"m": [1.0, None]}]}).tables[0]
    assert (table.scale, table.decimals, table.tolerance) == (100.0, 1, 2.0)


def test_a_rows_own_task_and_settings_override_the_tables(tmp_path):
    table = _paper(tmp_path, {
        "id": "t", "task": "listops", "metric": "test/acc", "settings": {"task.n_train": 10, "task.source": "files"},
        "rows": [{"task": "pathfinder", "m": [1.0, None], "settings": {"task.n_train": 20}},
                 {"m": [2.0, None]}]}).tables[0]
    first, second = table.rows
    assert table.task_for(first) == "pathfinder" and table.task_for(second) == "listops"
    assert table.tasks == ["pathfinder", "listops"]
    assert table.settings_for(first) == {"task.n_train": 20, "task.source": "files"}
    assert table.settings_for(second) == {"task.n_train": 10, "task.source": "files"}


@pytest.mark.parametrize(("row", "metric", "expected"), [
    ({"relation": "same", "tasks": "same", "name": "x"}, "test/acc", "tasks"),  # the config key's last part
    ({"relation": "same", "object_set": "stripes", "name": "x"}, "test_{object_set}/acc", "relation"),  # first left
])
def test_the_row_field_matched_to_the_config_is_its_last_part_else_the_first_one_the_metric_leaves(
        tmp_path, row: dict[str, Any], metric: str, expected: str):
    table = _paper(tmp_path, {"id": "t", "task": "relations_game", "metric": metric, "config_key": "task.tasks",
                              "rows": [{**row, "m": [1.0, None]}]}).tables[0]
    assert table.row_key == expected


def _run(config: dict[str, Any], profile: str = "cpu", task: str = "babi", **results: Any) -> RunRecord:
    return run_record(task=task, model="tpr_rnn", results={"profile": profile, **results},
                      config={"profile": profile, **config})


def test_absent_or_takes_runs_from_before_the_key_and_runs_stating_its_value_only():
    settings = {"model.operations": {"absent_or": ["write", "move", "backlink"]}}
    assert differences(_run({"model": {}}), settings) == []
    assert differences(_run({"model": {"operations": ["write", "move", "backlink"]}}), settings) == []
    assert differences(_run({"model": {"operations": ["write"]}}), settings) == [
        "operations [write] ≠ [write, move, backlink]"]


def test_tpr_rnn_operations_name_a_set_so_any_order_matches_and_other_lists_keep_their_order():
    full = {"model.operations": {"absent_or": ["write", "move", "backlink"]}}
    write_move = {"model.operations": ["write", "move"]}
    either = {"model.operations": {"any_of": [["write", "backlink"], ["write", "move"]]}}
    assert differences(_run({"model": {"operations": ["backlink", "move", "write"]}}), full) == []
    assert differences(_run({"model": {"operations": ["move", "write"]}}), write_move) == []
    assert differences(_run({"model": {"operations": ["move", "write"]}}), either) == []
    assert differences(_run({"model": {"operations": ["backlink", "write"]}}), write_move) == [
        "operations [backlink, write] ≠ [write, move]"]
    assert differences(_run({"task": {"test_sets": ["b", "a"]}}), {"task.test_sets": ["a", "b"]}) == [
        "test_sets [b, a] ≠ [a, b]"]


def test_a_boolean_or_null_setting_reads_as_the_config_spells_it():
    settings = {"task.env.has_bridge": True, "train.max_time_s": None}
    assert differences(_run({"task": {"env": {"has_bridge": False}}, "train": {"max_time_s": 600}}), settings) == [
        "has_bridge false ≠ true", "max_time_s 600 ≠ null"]


def test_row_fields_fill_a_setting_and_a_field_the_row_lacks_is_left_as_written():
    assert fill({"task.test_sets": {"contains": "{object_set}"}, "x": "{missing}", "n": 3},
                {"object_set": "stripes"}) == {"task.test_sets": {"contains": "stripes"}, "x": "{missing}", "n": 3}


def test_the_data_sets_read_are_those_of_the_runs_own_task():
    run = _run({}, data={"files": {"babi/en/qa3_train.txt": "h", "babi/en-10k/qa3_test.txt": "h",
                                   "listops/lra/train.tsv": "h", "babi/README": "h"}})
    assert sets_read(run) == ["en", "en-10k"]


def test_the_held_out_mean_is_over_the_held_out_sets_the_run_reported():
    """Held-out sets hexominoes and stripes: both reported, their mean; one reported, that one (a set the run did
    not report is no zero)."""
    from reports.store import HELD_OUT

    config = {"task": {"test_sets": ["hexominoes", "stripes"]}}
    both = _run(config, metrics={"test_hexominoes/acc": 0.9, "test_stripes/acc": 0.6})
    assert both.metric(HELD_OUT) == pytest.approx(0.75)
    one = _run(config, metrics={"test_hexominoes/acc": 0.9})
    assert one.metric(HELD_OUT) == pytest.approx(0.9)
    assert _run(config, metrics={}).metric(HELD_OUT) is None


def test_a_nan_or_infinite_metric_is_no_number():
    run = _run({}, metrics={"a": float("nan"), "b": float("inf"), "c": 0.5, "d": True})
    assert [run.metric(name) for name in "abcd"] == [None, None, 0.5, None]


def test_two_configurations_that_differ_in_one_setting_are_both_named_by_it():
    """No value is the usual one when two tie, so neither configuration is the plain one."""
    assert telling_keys([{"optim.lr": "0.1"}, {"optim.lr": "0.01"}]) == [["optim.lr"], ["optim.lr"]]
    three = [{"optim.lr": "0.1"}, {"optim.lr": "0.1"}, {"optim.lr": "0.01"}]
    assert telling_keys(three) == [[], [], ["optim.lr"]]


def test_one_run_per_seed_is_the_completed_one_even_where_a_failed_one_came_later():
    from reports.store import per_seed

    def run(run_id: str, status: str, finished: str) -> RunRecord:
        record = _run({}, seed=0, finished_at=finished)
        record.run_id, record.status = run_id, status
        return record

    chosen = per_seed([run("done", "completed", "2026-01-01"), run("later", "failed", "2026-02-01")])
    assert [record.run_id for record in chosen] == ["done"]


def test_a_reproduced_row_names_each_machines_kernel_and_the_furthest_figure_to_six_digits(tmp_path):
    """One check of run ``a``: trained on a Xeon under kernel 5.15.0-1057-azure, again on an EPYC under
    6.8.0-45-generic; 3 of 4 figures equal, ``test/acc`` furthest apart: 0.123456789 -> 0.1234561 (6.4e-06
    relative)."""
    from reports.reproduced import section

    (tmp_path / "babi" / "lstm" / "a").mkdir(parents=True)
    (tmp_path / "babi" / "lstm" / "a" / "results.json").write_text("{}")
    check = {"run_id": "a", "checked_at": "2026-11-21T10:00:00Z", "figures": 4, "equal": 3, "cpu": "other",
             "budget": "its own config",
             "stored_on": {"processor": "Intel Xeon", "system": "Linux-5.15.0-1057-azure-x86_64-with-glibc2.35"},
             "now_on": {"processor": "AMD EPYC", "system": "Linux-6.8.0-45-generic-x86_64-with-glibc2.39"},
             "largest": {"figure": "test/acc", "stored": 0.123456789, "now": 0.1234561, "relative": 6.4e-06}}
    (tmp_path / "reproductions.json").write_text(json.dumps([check]))
    (row,) = [line for line in section(tmp_path) if line.startswith("| `a` |")]
    assert row == ("| `a` | Intel Xeon; kernel 5.15.0-1057-azure | AMD EPYC; kernel 6.8.0-45-generic | another kind | "
                   "its own config | 3 of 4 | `test/acc`: 0.123457 → 0.123456 (6.4e-06 relative) | 2026-11-21 |"), row
