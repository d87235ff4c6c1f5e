"""Tests for the built-in bAbI generator's tasks 1, 6, 11 and 12 (tasks 2, 3, 15, 16: test_babi_generator_more.py).

Generated stories are parsed with a small regex parser (tests/babi_story_checks.py) and replayed by an interpreter
written here, independently of the generator, which checks every answer and supporting fact.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.babi.generator import (
    SUPPORTED_TASKS,
    UnsupportedTaskError,
    file_name,
    generate_stories,
    write_dataset,
)
from tests.babi_story_checks import (
    CONJ_MOVE,
    DROP,
    GO,
    MOVE,
    ROOM,
    ROOMS,
    THEN,
    WHERE_IS_ACTOR,
    Line,
    Stories,
    ask_in_pattern,
    assert_question_count,
    questions,
    replay_stories,
    take_pattern,
    words,
)
from tests.babi_story_checks import parse as parse_format

TASKS = [1, 6, 11, 12]  # the four-people-six-rooms tasks; 2, 3, 15 and 16: tests/test_babi_generator_more.py
ACTORS = {"Mary": "she", "Sandra": "she", "John": "he", "Daniel": "he"}
LOCATIONS = set(ROOMS)
OBJECTS = {"apple", "football", "milk"}
DATA_DIR = Path(
    os.environ.get("HARNESS_DATA_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "data")
)

PRONOUN_MOVE = re.compile(rf"^{THEN} (he|she) {GO} the {ROOM}$")
TAKE = take_pattern()
IS_IN = ask_in_pattern()


def parse(lines: list[str]) -> Stories:
    """Stories of parsed lines; fails on anything that is not in the official format (a space before the tab)."""
    return parse_format(lines, space_before_tab=True, distinct_supports=False)


@dataclass
class World:
    """What a reader knows after the statements so far."""

    location: dict[str, str] = field(default_factory=dict)
    support: dict[str, tuple[int, ...]] = field(default_factory=dict)
    holder: dict[str, str] = field(default_factory=dict)
    last_named: tuple[str, int] | None = None

    def move(self, actor: str, room: str, support: tuple[int, ...]) -> None:
        assert self.location.get(actor) != room, "nobody moves to the room they are in"
        self.location[actor] = room
        self.support[actor] = support

    def read(self, line: Line) -> None:
        if m := MOVE.match(line.text):
            self.move(m.group(1), m.group(2), (line.id,))
            self.last_named = (m.group(1), line.id)
        elif m := PRONOUN_MOVE.match(line.text):
            assert self.last_named is not None and self.last_named[1] == line.id - 1
            actor, named_id = self.last_named
            assert ACTORS[actor] == m.group(1), f"wrong pronoun for {actor}: {line.text!r}"
            self.move(actor, m.group(2), (named_id, line.id))
        elif m := CONJ_MOVE.match(line.text):
            first, second, room = m.groups()
            assert first != second
            self.move(first, room, (line.id,))
            self.move(second, room, (line.id,))
        elif m := TAKE.match(line.text):
            assert m.group(2) not in self.holder, f"{m.group(2)} is already held: {line.text!r}"
            self.holder[m.group(2)] = m.group(1)
        elif m := DROP.match(line.text):
            assert self.holder.pop(m.group(2), None) == m.group(1), f"not held by the dropper: {line.text!r}"
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        if m := WHERE_IS_ACTOR.match(line.text):
            actor = m.group(1)
            assert line.answer == self.location[actor], line
        elif m := IS_IN.match(line.text):
            actor, room = m.groups()
            assert line.answer == ("yes" if self.location[actor] == room else "no"), line
        else:
            raise AssertionError(f"unknown question {line.text!r}")
        assert line.support == self.support[actor], f"support should be {self.support[actor]}: {line}"


def replay(stories: Stories) -> None:
    """Replays every story, checking each answer and supporting fact."""
    replay_stories(stories, World)


@pytest.fixture(scope="module")
def generated() -> dict[int, list[str]]:
    return {task: generate_stories(task, 1000, seed=7) for task in TASKS}


@pytest.mark.parametrize("task", sorted(SUPPORTED_TASKS))
def test_deterministic_per_seed(task: int) -> None:
    """Every task, whichever module writes it: the same seed gives the same lines, another seed other lines."""
    assert generate_stories(task, 40, seed=3) == generate_stories(task, 40, seed=3)
    assert generate_stories(task, 40, seed=3) != generate_stories(task, 40, seed=4)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [0, 1, 5, 7, 13, 100])
def test_exact_question_count(task: int, n: int) -> None:
    lines = generate_stories(task, n, seed=1)
    assert_question_count(lines, n)
    stories = parse(lines)
    assert all(sum(line.is_question for line in story) == 5 for story in stories[: n // 5])


def test_negative_count_rejected() -> None:
    with pytest.raises(ValueError):
        generate_stories(1, -5, seed=0)


@pytest.mark.parametrize("task", TASKS)
def test_format_and_story_shape(task: int, generated: dict[int, list[str]]) -> None:
    lines = generated[task]
    assert all(line.isascii() and line.endswith("\n") and "\r" not in line for line in lines)
    stories = parse(lines)
    assert len(stories) == 200
    for story in stories:
        assert story[-1].is_question
        assert sum(line.is_question for line in story) == 5
        if task != 6:  # task 6 stories grow when a question cannot be asked yet, as in the real file
            assert len(story) == 15
            assert [line.id for line in story if line.is_question] == [3, 6, 9, 12, 15]


@pytest.mark.parametrize("task", TASKS)
def test_answers_and_supports_replay(task: int, generated: dict[int, list[str]]) -> None:
    replay(parse(generated[task]))


@pytest.mark.parametrize(
    ("old", "new"),
    [("\tbathroom\t1\n", "\tkitchen\t1\n"), ("\tbathroom\t1\n", "\tbathroom\t2\n")],
)
def test_replay_catches_wrong_answer_or_support(old: str, new: str) -> None:
    lines = [
        "1 Mary moved to the bathroom.\n",
        "2 John went to the hallway.\n",
        "3 Where is Mary? \tbathroom\t1\n",
    ]
    replay(parse(lines))
    lines[2] = lines[2].replace(old, new)
    with pytest.raises(AssertionError):
        replay(parse(lines))


def test_task11_support_is_named_and_pronoun_lines(generated: dict[int, list[str]]) -> None:
    for story in parse(generated[11]):
        for line in story:
            if line.is_question:
                first, second = line.support
                assert second == first + 1
                assert PRONOUN_MOVE.match(story[second - 1].text)


def test_yes_no_balanced(generated: dict[int, list[str]]) -> None:
    answers = [line.split("\t")[1] for line in questions(generated[6])]
    assert set(answers) == {"yes", "no"}
    assert 0.4 <= answers.count("yes") / len(answers) <= 0.6


@pytest.mark.parametrize("task", TASKS)
def test_vocabulary_matches_official_file(task: int, generated: dict[int, list[str]]) -> None:
    tokens = words("".join(generated[task]))
    assert set(ACTORS) <= tokens and LOCATIONS <= tokens
    if task == 6:
        assert OBJECTS <= tokens
    official = DATA_DIR / "babi" / "en-10k" / file_name(task, "train")
    if not official.is_file():
        pytest.skip(f"official bAbI file not found: {official}")
    real_tokens = words(official.read_text(encoding="ascii"))
    assert tokens == real_tokens


def test_file_names() -> None:
    assert file_name(1, "train") == "qa1_single-supporting-fact_train.txt"
    assert file_name(6, "test") == "qa6_yes-no-questions_test.txt"
    assert file_name(11, "train") == "qa11_basic-coreference_train.txt"
    assert file_name(12, "test") == "qa12_conjunction_test.txt"
    with pytest.raises(ValueError):
        file_name(1, "valid")


@pytest.mark.parametrize("call", ["generate_stories", "file_name", "write_dataset"])
def test_unsupported_task(call: str, tmp_path: Path) -> None:
    calls = {
        "generate_stories": lambda: generate_stories(21, 10, 0),
        "file_name": lambda: file_name(21, "train"),
        "write_dataset": lambda: write_dataset(tmp_path, 21, 0),
    }
    covered = ", ".join(str(task) for task in range(1, 21))
    with pytest.raises(UnsupportedTaskError, match=rf"tasks {covered}; task 21 ") as info:
        calls[call]()
    assert isinstance(info.value, ValueError)


def test_family_modules_hold_the_tasks_they_are_listed_for() -> None:
    """Every task is written by this module or by exactly one family module, under its official name."""
    import importlib

    from tasks.babi.generator import FAMILY_MODULES

    elsewhere = [task for tasks in FAMILY_MODULES.values() for task in tasks]
    assert len(elsewhere) == len(set(elsewhere))
    assert sorted(set(elsewhere) | {1, 6, 11, 12}) == list(range(1, 21)) == sorted(SUPPORTED_TASKS)
    for name, tasks in FAMILY_MODULES.items():
        module = importlib.import_module(name)
        assert sorted(module.STORIES) == sorted(tasks), name
        assert module.TASK_NAMES == {task: SUPPORTED_TASKS[task] for task in tasks}, name


@pytest.mark.parametrize("task", TASKS)
def test_write_dataset(task: int, tmp_path: Path) -> None:
    first = write_dataset(tmp_path / "a", task, seed=5, n_train=40, n_test=15)
    second = write_dataset(tmp_path / "b", task, seed=5, n_train=40, n_test=15)
    assert set(first) == {"train", "test"}
    for split, n in (("train", 40), ("test", 15)):
        assert first[split].name == file_name(task, split)
        assert first[split].read_bytes() == second[split].read_bytes()
        text = first[split].read_text(encoding="ascii")
        assert len(questions(text.splitlines(keepends=True))) == n
    assert first["train"].read_bytes()[:200] != first["test"].read_bytes()[:200]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(file_name(task, s) for s in first)
    again = write_dataset(tmp_path / "a", task, seed=5, n_train=40, n_test=15)
    assert again["train"].read_bytes() == second["train"].read_bytes()
    other = write_dataset(tmp_path / "c", task, seed=6, n_train=40, n_test=15)
    assert other["train"].read_bytes() != first["train"].read_bytes()
