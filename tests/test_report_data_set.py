"""A run that read another data set's files than its config names (bAbI's en-10k has no task 3 train file, and
the task falls back to en's 1,000 examples) does not share a published number's ``task.data_set``."""

from __future__ import annotations

from reports.index_tables import setting_label
from reports.settings import differences, sets_read
from reports.store import RunRecord
from tests.run_records import run_record

SETTINGS = {"task.source": "files", "task.data_set": {"any_of": ["en-10k", "en-valid-10k"]}}


def _run(files: list[str], source: str = "files") -> RunRecord:
    return run_record(model="tpr_rnn", rel_path="x", results={"data": {"files": {name: "0" for name in files}}},
                      config={"task": {"name": "babi", "source": source, "data_set": "en-10k", "babi_id": 3}})


def test_a_run_that_trained_on_another_sets_file_is_not_like_for_like() -> None:
    fallback = _run(["babi/en/qa3_three-supporting-facts_train.txt", "babi/en-10k/qa3_three-supporting-facts_test.txt"])
    assert sets_read(fallback) == ["en", "en-10k"]
    assert differences(fallback, SETTINGS) == ["data_set en-10k (files also from en) ≠ en-10k or en-valid-10k"]
    own = _run(["babi/en-10k/qa1_single-supporting-fact_train.txt", "babi/en-10k/qa1_single-supporting-fact_test.txt"])
    assert differences(own, SETTINGS) == []
    # a generated run differs by its source already; the files it was also tested on add nothing
    generated = _run(["babi/en/qa3_three-supporting-facts_train.txt"], source="generator")
    assert differences(generated, SETTINGS) == ["source generator ≠ files"]
    assert differences(_run([]), SETTINGS) == []  # no file hashes recorded: the config decides


def test_the_ranked_view_names_the_fallback_in_its_setting() -> None:
    fallback = _run(["babi/en/qa3_three-supporting-facts_train.txt", "babi/en-10k/qa3_three-supporting-facts_test.txt"])
    assert setting_label(fallback).endswith("(en-10k, files, files also from en)")
    own = _run(["babi/en-10k/qa3_three-supporting-facts_test.txt"])
    assert setting_label(own).endswith("(en-10k, files)")


def test_a_run_on_generated_data_names_no_data_set_it_never_read() -> None:
    generated = _run([], source="generator")
    assert setting_label(generated).endswith("(generator)")
    generated.config["task"]["test_on"] = ["files"]  # tested on the official files too: their data set counts
    assert setting_label(generated).endswith("(en-10k, generator)")
