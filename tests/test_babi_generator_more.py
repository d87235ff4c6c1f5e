"""Tests for the built-in bAbI generator's tasks 2, 3, 15 and 16.

Generated stories are parsed with regexes and replayed by small world simulations written here, independently of
the generator, which check every answer and every supporting fact. Their statistics are compared with the released
v1.2 files (the 1k ``en`` set, whose train and test files give the spread of the original generator itself) when
those are found under ``$BABI_REAL_DIR`` (default:
``$HARNESS_DATA_DIR/babi``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.babi.generator import SUPPORTED_TASKS, file_name, generate_stories, write_dataset
from tests.babi_story_checks import (
    ACTOR,
    DROP,
    MOVE,
    OBJ,
    REAL_DIR,
    ROOM,
    ROOMS,
    STAT_QUESTIONS,
    TAKE_VERB,
    Line,
    Rooms,
    Stories,
    answer_distribution,
    assert_corruption_caught,
    assert_distribution_matches,
    assert_question_count,
    assert_support_distances_match,
    parse,
    question_count,
    questions,
    read_released,
    released_or_skip,
    replay_stories,
    story_length,
    support_cases,
    support_distances,
    words,
)

NEW_TASKS = (2, 3, 15, 16)
PER_STORY = {2: 5, 3: 5, 15: 4, 16: 1}
SPACE_BEFORE_TAB = {2: True, 3: True, 15: False, 16: False}
SAMPLE_QUESTIONS = 1000  # the size of each released 1k file, so that their spread is the yardstick
SEED = 11

TAKE = re.compile(rf"^{ACTOR} {TAKE_VERB} the {OBJ}( there)?$")  # "there" optional, a group of its own (task 2)
WHERE_IS = re.compile(rf"^Where is the {OBJ}\?$")
WHERE_WAS = re.compile(rf"^Where was the {OBJ} before the {ROOM}\?$")

PLURAL = {"mouse": "mice", "sheep": "sheep", "wolf": "wolves", "cat": "cats"}
SINGULAR = {plural.capitalize(): single for single, plural in PLURAL.items()} | {
    plural: single for single, plural in PLURAL.items()
}
_FEARFUL = "(Mice|Sheep|Wolves|Cats)"
_BEAST = "(mice|sheep|wolves|cats)"
FEAR = re.compile(rf"^{_FEARFUL} are afraid of {_BEAST}$")
IS_ANIMAL_15 = re.compile(r"^(Gertrude|Winona|Jessica|Emily) is a (mouse|sheep|wolf|cat)$")
AFRAID = re.compile(r"^What is (gertrude|winona|jessica|emily) afraid of\?$")

IS_ANIMAL_16 = re.compile(r"^(Lily|Bernhard|Greg|Julius|Brian) is a (swan|lion|frog|rhino)$")
HAS_COLOR = re.compile(r"^(Lily|Bernhard|Greg|Julius|Brian) is (gray|white|yellow|green)$")
WHAT_COLOR = re.compile(r"^What color is (Lily|Bernhard|Greg|Julius|Brian)\?$")

# ---------------------------------------------------------------------------------------------------------------
# replay: what a reader of the story knows


@dataclass
class ObjectWorld:
    """Tasks 2 and 3: people moving, picking up and putting down objects."""

    babi_id: int
    room: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (room, id of the move there)
    holder: dict[str, str] = field(default_factory=dict)  # object -> actor
    fact: dict[str, int] = field(default_factory=dict)  # object -> id of its latest pick-up or put-down
    dropped_in: dict[str, tuple[str, int] | None] = field(default_factory=dict)  # object -> (room, move id)
    carried: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # object -> holder's moves since pick-up

    def read(self, line: Line) -> None:
        if m := MOVE.match(line.text):
            actor, room = m.groups()
            assert self.room.get(actor, ("", 0))[0] != room, f"nobody moves to the room they are in: {line}"
            self.room[actor] = (room, line.id)
            for obj, holder in self.holder.items():
                if holder == actor:
                    self.carried[obj].append((room, line.id))
        elif m := TAKE.match(line.text):
            actor, obj, there = m.groups()
            if self.babi_id == 2:
                assert there, f"task-2 pick-ups end with 'there': {line}"
            assert obj not in self.holder, f"{obj} is already held: {line}"
            lying = self.dropped_in.get(obj)
            if lying is not None and actor in self.room:
                assert lying[0] == self.room[actor][0], f"{actor} is not where the {obj} is: {line}"
            self.holder[obj] = actor
            self.fact[obj] = line.id
            self.carried[obj] = []
            self.dropped_in.pop(obj, None)
        elif m := DROP.match(line.text):
            actor, obj = m.groups()
            assert self.holder.pop(obj, None) == actor, f"not held by the dropper: {line}"
            self.fact[obj] = line.id
            self.dropped_in[obj] = self.room.get(actor)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        if m := WHERE_IS.match(line.text):
            assert self.babi_id == 2, line
            obj = m.group(1)
            assert obj in self.fact, f"the {obj} was never mentioned: {line}"
            if obj in self.holder:
                assert self.holder[obj] in self.room, f"the holder's room was never told: {line}"
                room, move_id = self.room[self.holder[obj]]
                assert move_id > self.fact[obj], f"asked before the holder moved with it: {line}"
            else:
                lying = self.dropped_in[obj]
                assert lying is not None, f"put down where the story never said: {line}"
                room, move_id = lying
            assert line.answer == room, line
            assert line.support == (self.fact[obj], move_id), f"support should be {(self.fact[obj], move_id)}: {line}"
        elif m := WHERE_WAS.match(line.text):
            assert self.babi_id == 3, line
            obj, later_room = m.groups()
            fact_id, later_id, earlier_id = line.support
            assert fact_id == self.fact.get(obj), f"first support must be the latest pick-up or put-down: {line}"
            moves = self.carried[obj]
            ids = [move_id for _, move_id in moves]
            assert later_id in ids, f"{later_id} is not a move carrying the {obj}: {line}"
            k = ids.index(later_id)
            assert k >= 1 and ids[k - 1] == earlier_id, f"support must be two consecutive carrying moves: {line}"
            assert moves[k][0] == later_room and moves[k - 1][0] == line.answer, line
        else:
            raise AssertionError(f"unknown question {line.text!r}")


@dataclass
class DeductionWorld:
    """Task 15: what each animal fears and which animal each actor is."""

    fear: dict[str, tuple[str, int]] = field(default_factory=dict)  # animal -> (feared animal, id)
    kind: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (animal, id)

    def read(self, line: Line) -> None:
        if m := FEAR.match(line.text):
            animal, feared = SINGULAR[m.group(1)], SINGULAR[m.group(2)]
            assert animal not in self.fear and animal != feared, line
            self.fear[animal] = (feared, line.id)
        elif m := IS_ANIMAL_15.match(line.text):
            actor, animal = m.groups()
            assert actor not in self.kind, line
            self.kind[actor] = (animal, line.id)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        m = AFRAID.match(line.text)
        assert m, f"unknown question {line.text!r}"
        animal, kind_id = self.kind[m.group(1).capitalize()]
        feared, fear_id = self.fear[animal]
        assert line.answer == feared, line
        assert line.support == (kind_id, fear_id), f"support should be {(kind_id, fear_id)}: {line}"


@dataclass
class InductionWorld:
    """Task 16: actors' animals and colours. The released files answer with the colour of the other actor of the
    same animal whose "is a" statement comes last, supported by the asked actor's "is a" and that actor's two
    statements."""

    kind: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (animal, id)
    color: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (colour, id)

    def read(self, line: Line) -> None:
        if m := IS_ANIMAL_16.match(line.text):
            actor, animal = m.groups()
            assert actor not in self.kind, line
            self.kind[actor] = (animal, line.id)
        elif m := HAS_COLOR.match(line.text):
            actor, color = m.groups()
            assert actor in self.kind and actor not in self.color, f"colour before the animal or twice: {line}"
            self.color[actor] = (color, line.id)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        m = WHAT_COLOR.match(line.text)
        assert m, f"unknown question {line.text!r}"
        asked = m.group(1)
        assert asked in self.kind and asked not in self.color, line
        animal, kind_id = self.kind[asked]
        sharers = [actor for actor, (other, _) in self.kind.items() if actor != asked and other == animal]
        assert sharers, f"no other {animal} to induce from: {line}"
        witness = max(sharers, key=lambda actor: self.kind[actor][1])
        color, color_id = self.color[witness]
        assert line.answer == color, line
        expected = (kind_id, self.kind[witness][1], color_id)
        assert line.support == expected, f"support should be {expected}: {line}"


def _world(task: int) -> ObjectWorld | DeductionWorld | InductionWorld:
    if task in (2, 3):
        return ObjectWorld(task)
    return DeductionWorld() if task == 15 else InductionWorld()


def replay(task: int, lines: list[str]) -> Stories:
    """The stories of ``lines``, each replayed in a fresh world of the task."""
    return replay_stories(parse(lines, SPACE_BEFORE_TAB[task]), lambda: _world(task))


@pytest.fixture(scope="module")
def generated() -> dict[int, list[str]]:
    return {task: generate_stories(task, SAMPLE_QUESTIONS, seed=SEED) for task in NEW_TASKS}


# ---------------------------------------------------------------------------------------------------------------
# correctness and format


def test_tasks_are_supported() -> None:
    assert {task: SUPPORTED_TASKS[task] for task in NEW_TASKS} == {
        2: "two-supporting-facts",
        3: "three-supporting-facts",
        15: "basic-deduction",
        16: "basic-induction",
    }
    assert file_name(3, "train") == "qa3_three-supporting-facts_train.txt"
    assert file_name(16, "test") == "qa16_basic-induction_test.txt"


@pytest.mark.parametrize("task", NEW_TASKS)
def test_answers_and_supports_replay(task: int, generated: dict[int, list[str]]) -> None:
    assert question_count(replay(task, generated[task])) == SAMPLE_QUESTIONS


ANSWERS = {
    2: set(ROOMS),
    3: set(ROOMS),
    15: set(PLURAL),
    16: {"gray", "white", "yellow", "green"},
}


@pytest.mark.parametrize("task", NEW_TASKS)
@pytest.mark.parametrize("corruption", ["answer", "order", "id"])
def test_replay_catches_corruption(task: int, corruption: str) -> None:
    lines = generate_stories(task, PER_STORY[task], seed=5)  # one whole story
    assert_corruption_caught(functools.partial(replay, task), lines, corruption, ANSWERS[task])


@pytest.mark.parametrize("task", NEW_TASKS)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 7, 13, 40])
def test_exact_question_count(task: int, n: int) -> None:
    lines = generate_stories(task, n, seed=1)
    assert_question_count(lines, n)
    stories = replay(task, lines)
    per_story = PER_STORY[task]
    counts = [sum(line.is_question for line in story) for story in stories]
    assert counts[: n // per_story] == [per_story] * (n // per_story)
    assert len(stories) == -(-n // per_story)


@pytest.mark.parametrize("task", NEW_TASKS)
def test_format_and_story_shape(task: int, generated: dict[int, list[str]]) -> None:
    lines = generated[task]
    assert all(line.isascii() and line.endswith("\n") and "\r" not in line for line in lines)
    stories = parse(lines, SPACE_BEFORE_TAB[task])
    assert len(stories) == SAMPLE_QUESTIONS // PER_STORY[task]
    for story in stories:
        assert story[-1].is_question
        statements = [line for line in story if not line.is_question]
        if task in (2, 3):
            before = [line.id - sum(other.is_question for other in story[: line.id]) for line in story
                      if line.is_question]
            assert all(count % 2 == 0 for count in before), "questions come after pairs of statements"
        if task == 15:
            assert len(statements) == 8 and all(line.is_question for line in story[8:])
        if task == 16:
            assert len(statements) == 9 and len(story) == 10


@pytest.mark.parametrize("task", NEW_TASKS)
def test_write_dataset(task: int, tmp_path: Path) -> None:
    first = write_dataset(tmp_path / "a", task, seed=5, n_train=20, n_test=8)
    second = write_dataset(tmp_path / "b", task, seed=5, n_train=20, n_test=8)
    for split, n in (("train", 20), ("test", 8)):
        assert first[split].name == file_name(task, split)
        assert first[split].read_bytes() == second[split].read_bytes()
        text = first[split].read_text(encoding="ascii")
        assert len(questions(text.splitlines(keepends=True))) == n
        replay(task, text.splitlines(keepends=True))
    assert first["train"].read_bytes()[:200] != first["test"].read_bytes()[:200]


def check_hidden_world(story: list[Line]) -> None:
    """Whoever picks an object up is in the object's room. Rooms the story never tells (where people and objects
    start) are unknowns; unifying them at every pick-up must never equate two different told rooms."""
    rooms = Rooms()
    where: dict[str, str] = {}  # actor or object -> its room term (a held object's is set when it is put down)
    for line in story:
        if m := MOVE.match(line.text):
            where[m.group(1)] = f"room:{m.group(2)}"
        elif m := TAKE.match(line.text):
            actor, obj = m.group(1), m.group(2)
            rooms.same(where.setdefault(actor, f"start:{actor}"), where.setdefault(obj, f"start:{obj}"))
        elif m := DROP.match(line.text):
            actor, obj = m.groups()
            where[obj] = where.setdefault(actor, f"start:{actor}")


@pytest.mark.parametrize("task", (2, 3))
def test_hidden_world_is_consistent(task: int, generated: dict[int, list[str]]) -> None:
    for story in parse(generated[task], True):
        check_hidden_world(story)


def test_hidden_world_check_catches_contradiction() -> None:
    lines = [
        "1 Mary got the milk there.\n",  # Mary and the milk start in the same untold room
        "2 John took the apple there.\n",
        "3 John discarded the apple.\n",  # the apple lies in John's untold starting room
        "4 Mary moved to the garden.\n",
        "5 Mary left the milk.\n",
        "6 John moved to the office.\n",
        "7 John picked up the milk there.\n",  # John is in the office, the milk in the garden
    ]
    check_hidden_world(parse(lines[:6], True)[0])
    with pytest.raises(AssertionError):
        check_hidden_world(parse(lines, True)[0])


# ---------------------------------------------------------------------------------------------------------------
# statistics against the released files (tests/babi_story_checks.py says how the tolerances are set)


@functools.cache
def _real(task: int) -> dict[str, Stories] | None:
    files = {split: REAL_DIR / "en" / file_name(task, split) for split in ("train", "test")}
    return read_released(files, functools.partial(parse, space_before_tab=SPACE_BEFORE_TAB[task]))


def _real_or_skip(task: int) -> dict[str, Stories]:
    return released_or_skip(_real(task))


@pytest.fixture(scope="module")
def ours() -> dict[int, Stories]:
    return {task: parse(generate_stories(task, STAT_QUESTIONS, seed=SEED), SPACE_BEFORE_TAB[task])
            for task in NEW_TASKS}


@pytest.mark.parametrize("task", NEW_TASKS)
def test_replay_accepts_released_files(task: int) -> None:
    """The checkers' reading of the tasks is the released files' own: every story of the en train and test files
    replays (answers, supports, and for tasks 2 and 3 a consistent hidden world)."""
    real = _real_or_skip(task)
    for split in ("train", "test"):
        lines = (REAL_DIR / "en" / file_name(task, split)).read_text(encoding="ascii").splitlines(keepends=True)
        stories = replay(task, lines)
        if task in (2, 3):
            for story in stories:
                check_hidden_world(story)
    assert real


@pytest.mark.parametrize("task", NEW_TASKS)
def test_vocabulary_matches_released_files(task: int, generated: dict[int, list[str]]) -> None:
    _real_or_skip(task)
    real_text = "".join((REAL_DIR / "en" / file_name(task, split)).read_text(encoding="ascii")
                        for split in ("train", "test"))
    assert words("".join(generated[task])) == words(real_text)


@pytest.mark.parametrize("task", NEW_TASKS)
def test_story_length_and_questions_per_story(task: int, ours: dict[int, Stories]) -> None:
    real = _real_or_skip(task)
    pooled = real["train"] + real["test"]
    assert abs(story_length(ours[task]) / story_length(pooled) - 1) <= 0.15
    for stories in (*real.values(), ours[task]):
        assert {sum(line.is_question for line in story) for story in stories} == {PER_STORY[task]}


@pytest.mark.parametrize("task", NEW_TASKS)
def test_answer_distribution(task: int, ours: dict[int, Stories]) -> None:
    assert_distribution_matches(_real_or_skip(task), ours[task], answer_distribution)


SUPPORTS = {2: 2, 3: 3, 15: 2, 16: 3}


@pytest.mark.parametrize(("task", "k"), support_cases(SUPPORTS))
def test_support_distance_distribution(task: int, k: int, ours: dict[int, Stories]) -> None:
    """How far back the k-th supporting fact lies: total variation distance to the pooled released files."""
    real = _real_or_skip(task)
    assert_support_distances_match(real, ours[task], k)
    if task in (2, 3) and k == 0:  # the object fact is always among the last five statements
        assert max(support_distances(ours[task], k)) == max(support_distances(real["train"] + real["test"], k)) == 5
