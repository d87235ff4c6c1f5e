"""tasks/babi/compare.py: the generator-against-files statistics behind the README's bAbI generator table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.paths import data_dir
from reports.babi_generator import babi_generator_section
from tasks.babi import compare

STORY = ["1 Mary moved to the bathroom.\n", "2 John went to the hallway.\n", "3 Where is Mary? \tbathroom\t1\n",
         "4 Daniel went back to the hallway.\n", "5 Where is John? \thallway\t2\n", "1 Sandra went to the garden.\n",
         "2 Where is Sandra? \tgarden\t1\n"]


def test_a_story_is_parsed_with_how_far_back_each_first_support_lies():
    stories = compare.parse(STORY)
    assert [len(story.statements) for story in stories] == [3, 1]
    assert [(q.answer, q.first_support_back) for q in stories[0].questions] == [("bathroom", 2), ("hallway", 2)]
    assert stories[1].questions[0].first_support_back == 1
    assert compare.describe(stories) == {"stories": 2, "questions": 3, "statements_per_story": 2.0,
                                         "questions_per_story": 1.5, "vocabulary": 16}  # 14 words, "." and "?"


def test_total_variation_is_zero_for_equal_and_one_for_disjoint_distributions():
    assert compare.total_variation({"a": 0.5, "b": 0.5}, {"b": 0.5, "a": 0.5}) == 0
    assert compare.total_variation({"a": 1.0}, {"b": 1.0}) == 1
    assert compare.total_variation({"a": 0.75, "b": 0.25}, {"a": 0.25, "b": 0.75}) == pytest.approx(0.5)


@pytest.mark.skipif(not (data_dir() / "babi" / "en-10k").is_dir(), reason="the official bAbI files are not staged")
def test_task_1_generated_matches_the_files_and_the_readme_section_renders_the_record(tmp_path: Path):
    stored = compare.main(["--tasks", "1", "--json", str(tmp_path / "generators" / "babi.json")])
    task = stored["tasks"]["1"]
    assert task["official"]["questions"] == task["generated"]["questions"] == 11_000
    assert task["generated"]["statements_per_story"] == task["official"]["statements_per_story"] == 10
    assert task["generated"]["vocabulary"] == task["official"]["vocabulary"]
    assert task["answers_tv"] < task["answers_tv_train_test"] and task["support_tv"] < task["support_tv_train_test"]
    assert json.loads((tmp_path / "generators" / "babi.json").read_text())["tasks"]["1"] == task
    section = babi_generator_section(tmp_path)
    assert section[0].startswith("### bAbI: our generator") and section[-1].startswith("| 1 | 11,000 | 10.00 / 10.00")


def test_the_stored_command_names_the_tasks_it_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.babi.generator import write_dataset

    write_dataset(tmp_path / "data" / "babi" / "en-10k", 1, seed=5, n_train=20, n_test=10)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "generators" / "babi.json"
    stored = compare.main(["--tasks", "1", "--json", str(out)])
    assert stored["command"] == f"python -m tasks.babi.compare --tasks 1 --json {out}"
    assert json.loads(out.read_text())["command"] == stored["command"]
    assert compare.command(sorted(range(1, 21)), 0, None) == "python -m tasks.babi.compare"


def test_files_are_found_in_the_release_folder_layout_the_task_reads(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.babi.generator import file_name, write_dataset

    write_dataset(tmp_path / "tasks_1-20_v1-2" / "en-10k", 1, seed=5, n_train=20, n_test=10)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    stored = compare.main(["--tasks", "1"])
    assert stored["tasks"]["1"]["files"] == [f"en-10k/{file_name(1, split)}" for split in ("train", "test")]
    assert stored["tasks"]["1"]["official"]["questions"] == 30


def test_a_malformed_file_is_refused_naming_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """parse assumes a well-formed file: a question whose supporting fact is a question line (a KeyError before) is
    the reader's one-line error, exit code 2."""
    from tasks.babi.generator import file_name, write_dataset

    folder = tmp_path / "babi" / "en-10k"
    write_dataset(folder, 1, seed=5, n_train=20, n_test=10)
    train = folder / file_name(1, "train")
    lines = train.read_text().splitlines(keepends=True)
    second = next(i for i, line in enumerate(lines) if "\t" in line and i > 0 and "\t" in "".join(lines[:i]))
    head, text = lines[second].split(" ", 1)
    question_id = next(line.split(" ", 1)[0] for line in reversed(lines[:second]) if "\t" in line)
    lines[second] = f"{head} {text.rsplit(chr(9), 1)[0]}\t{question_id}\n"
    train.write_text("".join(lines))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as info:
        compare.main(["--tasks", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{train}:{second + 1}: supporting fact {question_id} is the id of a question line" in err, err
