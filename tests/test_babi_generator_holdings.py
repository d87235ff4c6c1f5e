"""Tests for the built-in bAbI generator's tasks 7 (counting), 8 (lists-sets), 9 (simple-negation) and 10
(indefinite-knowledge), in ``tasks/babi/generator_holdings.py``.

Generated stories are parsed with regexes and replayed by small world simulations written here, independently of
the generator, which check every answer and supporting fact, and the rules the released v1.2 files follow (a
question only about someone a recent statement names, pick-ups only where the object lies, gives only between
people in one room). The same checkers replay the released files. Statistics are compared with the released
1k files (``en``: their train and test files give the original generator's own spread), found under
``$BABI_REAL_DIR`` (default:
``$HARNESS_DATA_DIR/babi``); those tests skip without them.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.babi.generator import generate_stories
from tasks.babi.generator_holdings import STORIES, TASK_NAMES
from tests.babi_story_checks import (
    ACTOR,
    DROP,
    GO,
    MOVE,
    ROOM,
    STAT_QUESTIONS,
    Line,
    Rooms,
    Stories,
    answer_distribution,
    ask_in_pattern,
    assert_corruption_caught,
    assert_question_count,
    assert_support_distances_match,
    assert_within_spread,
    distribution,
    give_pattern,
    max_gap,
    move_pattern,
    parse,
    question_count,
    questions,
    read_released,
    released_or_skip,
    released_path,
    replay_stories,
    take_pattern,
    words,
)

TASKS = (7, 8, 9, 10)
PER_STORY = 5
WINDOW = 5  # a question's subject is named by one of the last five statements
SEED = 13  # our samples: STAT_QUESTIONS (4,000) questions per task, all replayed

TAKE = take_pattern()  # always "there" in tasks 7, 8
GIVE = give_pattern()
HOW_MANY = re.compile(rf"^How many objects is {ACTOR} carrying\?$")
WHAT = re.compile(rf"^What is {ACTOR} carrying\?$")
COUNTS = ("none", "one", "two", "three")

IS_IN = re.compile(rf"^{ACTOR} is in the {ROOM}$")
NOT_IN = re.compile(rf"^{ACTOR} is (?:not|no longer) in the {ROOM}$")
ASK_IN = ask_in_pattern()

_ACTOR_10 = "(Fred|Mary|Bill|Julie)"
_ROOM_10 = "(bedroom|cinema|kitchen|office|park|school)"
MOVE_10 = move_pattern(_ACTOR_10, _ROOM_10)
IS_IN_10 = re.compile(rf"^{_ACTOR_10} is in the {_ROOM_10}$")
EITHER = re.compile(rf"^{_ACTOR_10} is either in the {_ROOM_10} or the {_ROOM_10}$")
ASK_IN_10 = ask_in_pattern(_ACTOR_10, _ROOM_10)

LIST_ANSWER = re.compile(r"^(?:nothing|(?:apple|football|milk)(?:,(?:apple|football|milk))*)$")


def parse_stories(lines: list[str]) -> Stories:
    """The shared parser (one-word answers, a space before the tab), with task 8's comma-separated lists put back
    in after it checked everything else."""
    answers = [line.split("\t")[1] for line in lines if "\t" in line]
    plain = [line if line.count("\t") != 2 else re.sub(r"\t[^\t]*\t", "\tlist\t", line) for line in lines]
    stories = parse(plain, True)
    asked = iter(answers)
    for story in stories:
        for line in story:
            if line.is_question:
                line.answer = next(asked)
    return stories


# ---------------------------------------------------------------------------------------------------------------
# replay: what a reader of the story knows


@dataclass
class HoldingWorld:
    """Tasks 7 and 8: people moving, picking up, putting down and (task 7) giving objects."""

    babi_id: int
    rooms: Rooms = field(default_factory=Rooms)
    where: dict[str, str] = field(default_factory=dict)  # actor or put-down object -> its room term
    holder: dict[str, str] = field(default_factory=dict)  # object -> actor
    handled: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # actor -> object -> ids, first-hand order
    agents: list[str | None] = field(default_factory=list)  # per statement: who handled an object
    question_due: bool = False

    def _room(self, name: str) -> str:
        return self.where.setdefault(name, f"start:{name}")

    def _handle(self, actor: str, obj: str, line_id: int) -> None:
        self.handled.setdefault(actor, {}).setdefault(obj, []).append(line_id)

    def read(self, line: Line) -> None:
        assert not self.question_due, f"a question should come before {line}"
        agent = None
        if m := MOVE.match(line.text):
            actor, room = m.groups()
            assert self.where.get(actor) != f"room:{room}", f"nobody moves to the room they are in: {line}"
            self.where[actor] = f"room:{room}"
        elif m := TAKE.match(line.text):
            agent, obj = m.groups()
            assert obj not in self.holder, f"{obj} is already held: {line}"
            self.rooms.same(self._room(agent), self._room(obj))  # fails when both rooms are told and differ
            self.holder[obj] = agent
            self._handle(agent, obj, line.id)
        elif m := DROP.match(line.text):
            agent, obj = m.groups()
            assert self.holder.pop(obj, None) == agent, f"not held by the dropper: {line}"
            self.where[obj] = self._room(agent)
            self._handle(agent, obj, line.id)
        elif (m := GIVE.match(line.text)) and self.babi_id == 7:
            agent, obj, receiver = m.groups()
            assert agent != receiver and self.holder.get(obj) == agent, f"not held by the giver: {line}"
            self.rooms.same(self._room(agent), self._room(receiver))
            self.holder[obj] = receiver
            self._handle(agent, obj, line.id)
            self._handle(receiver, obj, line.id)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")
        self.agents.append(agent)
        if len(self.agents) % 2 == 0:  # after each pair: a question exactly when someone handled an object lately
            self.question_due = any(self.agents[-WINDOW:])

    def check(self, line: Line) -> None:
        assert self.question_due, f"no question is due here: {line}"
        self.question_due = False
        m = (HOW_MANY if self.babi_id == 7 else WHAT).match(line.text)
        assert m, f"unknown question {line.text!r}"
        actor = m.group(1)
        assert actor in self.agents[-WINDOW:], f"{actor} handled no object in the last {WINDOW} statements: {line}"
        handled = self.handled[actor]
        held = [obj for obj in handled if self.holder.get(obj) == actor]
        if self.babi_id == 7:
            assert line.answer == COUNTS[len(held)], line
            expected = tuple(sorted(i for ids in handled.values() for i in ids))
        else:
            assert line.answer == (",".join(held) or "nothing"), line
            expected = tuple(i for ids in handled.values() for i in ids)
        assert line.support == expected, f"support should be {expected}: {line}"


@dataclass
class LocatedWorld:
    """Tasks 9 and 10: the latest thing told about each actor's room (a room, not a room, or one of two rooms)."""

    babi_id: int
    fact: dict[str, tuple[str, tuple[str, ...], int]] = field(default_factory=dict)  # actor -> (kind, rooms, id)
    actors: list[str] = field(default_factory=list)  # per statement: whom it is about
    statements_since_question: int = 0

    def read(self, line: Line) -> None:
        move, is_in = (MOVE, IS_IN) if self.babi_id == 9 else (MOVE_10, IS_IN_10)
        if m := move.match(line.text) or is_in.match(line.text):
            actor, room = m.groups()
            kind, rooms = "in", (room,)
        elif self.babi_id == 9 and (m := NOT_IN.match(line.text)):
            actor, room = m.groups()
            kind, rooms = "not", (room,)
        elif self.babi_id == 10 and (m := EITHER.match(line.text)):
            actor, first, second = m.groups()
            kind, rooms = "either", (first, second)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")
        before = self.fact.get(actor)
        if before is not None and before[0] == "in" and kind == "in":
            assert rooms != before[1], f"{actor} is told to be in the room they are in: {line}"
        if before is not None and kind == "not":  # one leaves the room one is in, then another one
            assert (rooms == before[1]) == (before[0] == "in"), f"wrong room left: {line}"
        self.fact[actor] = (kind, rooms, line.id)
        self.actors.append(actor)
        self.statements_since_question += 1

    def check(self, line: Line) -> None:
        assert self.statements_since_question == 2, f"questions come after pairs of statements: {line}"
        self.statements_since_question = 0
        m = (ASK_IN if self.babi_id == 9 else ASK_IN_10).match(line.text)
        assert m, f"unknown question {line.text!r}"
        actor, room = m.groups()
        assert actor in self.actors[-WINDOW:], f"{actor} is named by none of the last {WINDOW} statements: {line}"
        kind, rooms, fact_id = self.fact[actor]
        if kind == "in":
            expected = "yes" if room == rooms[0] else "no"
        elif kind == "not":
            assert room == rooms[0], f"unanswerable: only the negated room is known not to hold {actor}: {line}"
            expected = "no"
        else:
            expected = "maybe" if room in rooms else "no"
        assert line.answer == expected, line
        assert line.support == (fact_id,), f"support should be {(fact_id,)}: {line}"


def replay(task: int, lines: list[str]) -> Stories:
    """The stories of ``lines``, each replayed in a fresh world of the task."""
    return replay_stories(parse_stories(lines), lambda: HoldingWorld(task) if task in (7, 8) else LocatedWorld(task))


@pytest.fixture(scope="module")
def generated() -> dict[int, list[str]]:
    return {task: generate_stories(task, STAT_QUESTIONS, SEED) for task in TASKS}


@pytest.fixture(scope="module")
def ours(generated: dict[int, list[str]]) -> dict[int, Stories]:
    return {task: parse_stories(lines) for task, lines in generated.items()}


# ---------------------------------------------------------------------------------------------------------------
# correctness and format


def test_task_names_and_story_sizes() -> None:
    assert TASK_NAMES == {7: "counting", 8: "lists-sets", 9: "simple-negation", 10: "indefinite-knowledge"}
    assert {task: per_story for task, (_, per_story) in STORIES.items()} == dict.fromkeys(TASKS, PER_STORY)


@pytest.mark.parametrize("task", TASKS)
def test_answers_and_supports_replay(task: int, generated: dict[int, list[str]]) -> None:
    assert question_count(replay(task, generated[task])) == STAT_QUESTIONS


ANSWERS = {
    7: set(COUNTS),
    8: {"nothing", "apple", "football", "milk", "apple,milk", "milk,apple"},
    9: {"yes", "no"},
    10: {"yes", "no", "maybe"},
}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("corruption", ["answer", "id"])
def test_replay_catches_corruption(task: int, corruption: str) -> None:
    lines = generate_stories(task, PER_STORY, seed=5)  # one whole story; every question corrupted, one at a time
    assert_corruption_caught(functools.partial(replay, task), lines, corruption, ANSWERS[task], every_question=True)


@pytest.mark.parametrize(
    ("task", "lines"),
    [
        (
            7,
            [
                "1 Mary got the milk there.\n",
                "2 John moved to the office.\n",
                "3 How many objects is Mary carrying? \tone\t1\n",
            ],
        ),
        (
            8,
            [
                "1 Mary got the milk there.\n",
                "2 Mary took the apple there.\n",
                "3 What is Mary carrying? \tmilk,apple\t1 2\n",
            ],
        ),
        (
            9,
            [
                "1 Mary is no longer in the office.\n",
                "2 John moved to the office.\n",
                "3 Is Mary in the office? \tno\t1\n",
            ],
        ),
        (
            10,
            [
                "1 Bill is either in the park or the school.\n",
                "2 Fred is in the park.\n",
                "3 Is Bill in the school? \tmaybe\t1\n",
            ],
        ),
    ],
)
def test_replay_catches_hand_made_mistakes(task: int, lines: list[str]) -> None:
    replay(task, lines)
    wrong = {
        7: [("\tone\t", "\tnone\t"), ("\t1\n", "\t2\n"), ("is Mary", "is John")],  # John handled nothing
        8: [("milk,apple", "apple,milk"), ("1 2\n", "2 1\n"), ("2 Mary took", "2 John took")],  # John took it
        9: [("\tno\t", "\tyes\t"), ("\t1\n", "\t2\n"), ("in the office?", "in the garden?")],  # garden: unknown
        10: [("\tmaybe\t", "\tno\t"), ("\t1\n", "\t2\n"), ("the school?", "the kitchen?")],  # kitchen: "no"
    }
    for old, new in wrong[task]:
        with pytest.raises(AssertionError):
            replay(task, [line.replace(old, new) for line in lines])


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [0, 1, 4, 5, 6, 13, 40])
def test_exact_question_count(task: int, n: int) -> None:
    lines = generate_stories(task, n, seed=1)
    assert_question_count(lines, n)
    stories = replay(task, lines)
    counts = [sum(line.is_question for line in story) for story in stories]
    assert counts == [PER_STORY] * (n // PER_STORY) + ([n % PER_STORY] if n % PER_STORY else [])


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [0, 6, -1])
def test_story_rejects_bad_question_count(task: int, n: int) -> None:
    make_story, _ = STORIES[task]
    with pytest.raises(ValueError, match=f"task-{task} story holds 1 to 5 questions"):
        make_story(random.Random(0), n)


@pytest.mark.parametrize("task", TASKS)
def test_format_and_story_shape(task: int, generated: dict[int, list[str]]) -> None:
    lines = generated[task]
    assert all(line.isascii() and line.endswith("\n") and "\r" not in line for line in lines)
    assert all(line.count("\t") == 2 and "? \t" in line for line in questions(lines))
    if task == 8:
        assert all(LIST_ANSWER.match(line.split("\t")[1]) for line in questions(lines))
    stories = parse_stories(lines)
    assert len(stories) == STAT_QUESTIONS // PER_STORY
    for story in stories:
        assert story[-1].is_question and sum(line.is_question for line in story) == PER_STORY
        if task in (9, 10):
            assert [line.id for line in story if line.is_question] == [3, 6, 9, 12, 15]
        else:
            assert sum(not line.is_question for line in story) >= 2 * PER_STORY


# ---------------------------------------------------------------------------------------------------------------
# statistics against the released files (tests/babi_story_checks.py says how the tolerances are set)


def _path(task: int, split: str) -> Path:
    return released_path(task, TASK_NAMES[task], split)


@functools.cache
def _released(task: int) -> dict[str, Stories] | None:
    return read_released({split: _path(task, split) for split in ("train", "test")}, functools.partial(replay, task))


def _released_or_skip(task: int) -> dict[str, Stories]:
    return released_or_skip(_released(task))


@pytest.mark.parametrize("task", TASKS)
def test_replay_accepts_released_files(task: int) -> None:
    """The checkers' reading of the tasks is the released files' own: every story of the en train and test files
    replays (answers, supports, question rhythm and subjects, a consistent hidden world)."""
    released = _released_or_skip(task)
    assert question_count(released["train"]) == 1000


@pytest.mark.parametrize("task", TASKS)
def test_vocabulary_matches_released_files(task: int, generated: dict[int, list[str]]) -> None:
    _released_or_skip(task)
    real_text = "".join(_path(task, split).read_text(encoding="ascii") for split in ("train", "test"))
    assert words("".join(generated[task])) == words(real_text)


def _statements(stories: Stories) -> list[int]:
    return [sum(not line.is_question for line in story) for story in stories]


def _mean_length_gap(a: Stories, b: Stories) -> float:
    return abs(sum(_statements(a)) / len(a) - sum(_statements(b)) / len(b))


@pytest.mark.parametrize("task", TASKS)
def test_story_length_and_questions_per_story(task: int, ours: dict[int, Stories]) -> None:
    released = _released_or_skip(task)
    for stories in (*released.values(), ours[task]):
        assert {sum(line.is_question for line in story) for story in stories} == {PER_STORY}
    if task in (9, 10):
        assert set(_statements(ours[task])) == set(_statements(released["train"] + released["test"])) == {10}
    else:
        assert_within_spread(_released_or_skip(task), ours[task], _mean_length_gap)


@pytest.mark.parametrize("task", TASKS)
def test_answer_distribution(task: int, ours: dict[int, Stories]) -> None:
    released = _released_or_skip(task)

    def unordered(stories: Stories) -> set[str]:  # task 8's lists as sets: a given three-object order is rare
        return {",".join(sorted(answer.split(","))) for answer in answer_distribution(stories)}

    assert unordered(ours[task]) == unordered(released["train"] + released["test"])
    assert_within_spread(_released_or_skip(task), ours[task],
                         lambda a, b: max_gap(answer_distribution(a), answer_distribution(b)))


_KINDS = {
    "move": re.compile(rf"^\w+ {GO} the \w+$"),
    "take": TAKE,
    "drop": DROP,
    "give": GIVE,
    "is in": re.compile(r"^\w+ is in the \w+$"),
    "not": NOT_IN,
    "either": EITHER,
}


def _statement_kinds(stories: Stories) -> dict[str, float]:
    kinds = [
        next(kind for kind, pattern in _KINDS.items() if pattern.match(line.text))
        for story in stories
        for line in story
        if not line.is_question
    ]
    return distribution(kinds)


@pytest.mark.parametrize("task", TASKS)
def test_statement_kind_distribution(task: int, ours: dict[int, Stories]) -> None:
    """Shares of moves, pick-ups, put-downs, gives, "is in", negations and "either" statements."""
    assert_within_spread(_released_or_skip(task), ours[task],
                         lambda a, b: max_gap(_statement_kinds(a), _statement_kinds(b)))


def _holder_kinds(stories: Stories) -> dict[str, float]:
    """What people do while they hold something: the kinds of the statements made by an actor holding an object."""
    kinds = []
    for story in stories:
        holder: dict[str, str] = {}
        for line in story:
            if line.is_question:
                continue
            actor = line.text.split()[0]
            kind = next(kind for kind, pattern in _KINDS.items() if pattern.match(line.text))
            if actor in holder.values():
                kinds.append(kind)
            if m := TAKE.match(line.text):
                holder[m.group(2)] = m.group(1)
            elif m := GIVE.match(line.text):
                holder[m.group(2)] = m.group(3)
            elif m := DROP.match(line.text):
                del holder[m.group(2)]
    return distribution(kinds)


@pytest.mark.parametrize("task", (7, 8))
def test_holder_action_distribution(task: int, ours: dict[int, Stories]) -> None:
    """Moves, pick-ups, put-downs and gives of people holding something (the give weight is fitted to these)."""
    assert_within_spread(_released_or_skip(task), ours[task],
                         lambda a, b: max_gap(_holder_kinds(a), _holder_kinds(b)))


@pytest.mark.parametrize(("task", "k"), [(task, k) for task in TASKS for k in (0, -1)])
def test_support_distance_distribution(task: int, k: int, ours: dict[int, Stories]) -> None:
    """How far back the first (k = 0) and last (k = -1) supporting fact lies: total variation distance."""
    assert_support_distances_match(_released_or_skip(task), ours[task], k)
