"""Tests for the bAbI generator's tasks 5, 13, 14 and 20 (tasks/babi/generator_narrative.py).

Generated stories are parsed with regexes and replayed by small world simulations written here, independently of
the generator, which check every answer and every supporting fact. The same checkers accept the released v1.2 files,
and the statistics of generated stories are compared with those files (the 1k ``en`` set, whose train and test files
give the spread of the original generator itself) when they are found under ``$BABI_REAL_DIR``.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.babi.generator import generate_stories
from tasks.babi.generator_narrative import STORIES, TASK_NAMES
from tests.babi_story_checks import (
    CONJ_MOVE,
    GO,
    OBJ,
    ROOM,
    ROOMS,
    SPREAD_FACTOR,
    STAT_QUESTIONS,
    THEN,
    WHERE_IS_ACTOR,
    Line,
    Rooms,
    Stories,
    answer_distribution,
    assert_corruption_caught,
    assert_distribution_matches,
    assert_question_count,
    assert_support_distances_match,
    distribution,
    drop_pattern,
    give_pattern,
    move_pattern,
    parse,
    question_count,
    questions,
    read_released,
    released_or_skip,
    released_path,
    replay_stories,
    story_length,
    support_cases,
    take_pattern,
    total_variation,
    words,
    yardstick,
)

TASKS = (5, 13, 14, 20)
SPACE_BEFORE_TAB = {5: True, 13: True, 14: True, 20: False}
SAMPLE_QUESTIONS = 3000
SEED = 11

_GIVER = "(Bill|Fred|Jeff|Mary)"
MOVE_5 = move_pattern(_GIVER)
TAKE_5 = take_pattern(_GIVER)
DROP_5 = drop_pattern(_GIVER)
GIVE_5 = give_pattern(_GIVER)
# question -> the fields of a give it names, in the order of its groups, and the field it asks for
GIVE_QUESTIONS = (
    (re.compile(rf"^What did {_GIVER} give to {_GIVER}\?$"), ("giver", "receiver"), "obj"),
    (re.compile(rf"^Who received the {OBJ}\?$"), ("obj",), "receiver"),
    (re.compile(rf"^Who did {_GIVER} give the {OBJ} to\?$"), ("giver", "obj"), "receiver"),
    (re.compile(rf"^Who gave the {OBJ}\?$"), ("obj",), "giver"),
    (re.compile(rf"^Who gave the {OBJ} to {_GIVER}\?$"), ("obj", "receiver"), "giver"),
)

THEY = re.compile(rf"^{THEN} they {GO} the {ROOM}$")

TIME_WORDS = ("yesterday", "this morning", "this afternoon", "this evening")
_WHEN = "(yesterday|this morning|this afternoon|this evening)"
_TIMED = "(Bill|Fred|Julie|Mary)"
_PLACE = "(bedroom|cinema|kitchen|office|park|school)"
TIME_FIRST = re.compile(rf"^(Yesterday|This morning|This afternoon|This evening) {_TIMED} {GO} the {_PLACE}$")
TIME_LAST = re.compile(rf"^{_TIMED} {GO} the {_PLACE} {_WHEN}$")
WHERE_WAS = re.compile(rf"^Where was {_TIMED} before the {_PLACE}\?$")

_AGENT = "(Jason|Antoine|Sumit|Yann)"
NEEDS = {"hungry": ("kitchen", "apple"), "thirsty": ("kitchen", "milk"), "bored": ("garden", "football"),
         "tired": ("bedroom", "pajamas")}
FEELS = re.compile(rf"^{_AGENT} is (hungry|thirsty|bored|tired)$")
GOES = re.compile(rf"^{_AGENT} {GO} the (kitchen|garden|bedroom)$")
GETS = take_pattern(_AGENT, "(apple|milk|football|pajamas)")
WHERE_WILL = re.compile(r"^Where will (jason|antoine|sumit|yann) go\?$")
WHY_GO = re.compile(r"^Why did (jason|antoine|sumit|yann) go to the (kitchen|garden|bedroom)\?$")
WHY_GET = re.compile(r"^Why did (jason|antoine|sumit|yann) get the (apple|milk|football|pajamas)\?$")

SUPPORTS = {5: 1, 13: 2, 14: 2, 20: 1}  # supporting facts per question
WINDOW = 5  # tasks 5, 13: the fact asked about is among the last five statements


def parse_task(task: int, lines: list[str]) -> Stories:
    """The shared parser (format, ids, supports); task-5 answers are names, which it reads lower-cased."""
    if task != 5:
        return parse(lines, SPACE_BEFORE_TAB[task])
    answers = [line.split("\t")[1] for line in lines if "\t" in line]
    lowered = [re.sub(r"\t([A-Z][a-z]+)\t", lambda m: f"\t{m.group(1).lower()}\t", line) for line in lines]
    stories = parse(lowered, True)
    for line, answer in zip((line for story in stories for line in story if line.is_question), answers, strict=True):
        line.answer = answer
    return stories


# ---------------------------------------------------------------------------------------------------------------
# replay: what a reader of the story knows


@dataclass
class GiveWorld:
    """Task 5: people moving, picking up, giving and putting down objects; questions about the latest fitting give.
    ``released``: also accept what the released files do in 2 of their 2,000 questions (20 of the en-10k training
    file's 10,000), asking again about an earlier question's give although a later give fits the question."""

    released: bool = False
    asked: set[int] = field(default_factory=set)  # ids of the gives earlier questions were about
    holder: dict[str, str] = field(default_factory=dict)  # object -> actor
    gives: list[dict[str, str | int]] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)
    rooms: Rooms = field(default_factory=Rooms)  # hidden rooms: unknowns unified by pick-ups and gives
    where: dict[str, str] = field(default_factory=dict)  # actor or object -> its room term

    def _at(self, thing: str) -> str:
        return self.where.setdefault(thing, f"start:{thing}")

    def read(self, line: Line) -> None:
        self.statements.append(line.id)
        if m := MOVE_5.match(line.text):
            self.where[m.group(1)] = f"room:{m.group(2)}"
        elif m := TAKE_5.match(line.text):
            actor, obj = m.groups()
            assert obj not in self.holder, f"{obj} is already held: {line}"
            self.rooms.same(self._at(actor), self._at(obj))
            self.holder[obj] = actor
        elif m := GIVE_5.match(line.text):
            giver, obj, receiver = m.groups()
            assert giver != receiver and self.holder.get(obj) == giver, f"not held by the giver: {line}"
            self.rooms.same(self._at(giver), self._at(receiver))
            self.holder[obj] = receiver
            self.gives.append({"id": line.id, "giver": giver, "obj": obj, "receiver": receiver})
        elif m := DROP_5.match(line.text):
            actor, obj = m.groups()
            assert self.holder.pop(obj, None) == actor, f"not held by the dropper: {line}"
            self.where[obj] = self._at(actor)
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        for pattern, named, asked in GIVE_QUESTIONS:
            if m := pattern.match(line.text):
                values = dict(zip(named, m.groups(), strict=True))
                fitting = [give for give in self.gives if all(give[f] == v for f, v in values.items())]
                assert fitting, f"no give fits: {line}"
                give = fitting[-1]
                if self.released and line.support[0] in self.asked:
                    give = next((give for give in fitting if give["id"] == line.support[0]), give)
                self.asked.add(give["id"])
                assert line.answer == give[asked], line
                assert line.support == (give["id"],), f"support should be {give['id']}: {line}"
                assert give["id"] in self.statements[-WINDOW:], f"the give is too far back: {line}"
                return
        raise AssertionError(f"unknown question {line.text!r}")


@dataclass
class CompoundWorld:
    """Task 13: pairs of actors moving together, then "they" moving again."""

    location: dict[str, tuple[str, tuple[int, int]]] = field(default_factory=dict)  # actor -> (room, support)
    pair: tuple[str, str, str, int] | None = None  # the latest "A and B" statement: A, B, room, id
    statements: list[int] = field(default_factory=list)

    def read(self, line: Line) -> None:
        self.statements.append(line.id)
        if m := CONJ_MOVE.match(line.text):
            first, second, room = m.groups()
            assert first != second, line
            assert room not in {self.location.get(a, ("", ()))[0] for a in (first, second)}, f"already there: {line}"
            self.pair = (first, second, room, line.id)
        elif m := THEY.match(line.text):
            assert self.pair is not None and self.pair[3] == line.id - 1, f"'they' must follow a pair: {line}"
            first, second, room, pair_id = self.pair
            assert m.group(1) != room, f"they are already there: {line}"
            for actor in (first, second):
                self.location[actor] = (m.group(1), (pair_id, line.id))
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        m = WHERE_IS_ACTOR.match(line.text)
        assert m, f"unknown question {line.text!r}"
        room, support = self.location[m.group(1)]
        assert line.answer == room and line.support == support, f"should be {room} {support}: {line}"
        assert support[1] in self.statements[-WINDOW:], f"the move is too far back: {line}"


def _time_move(text: str) -> tuple[str, str, str]:
    """(actor, room, time lower-cased) of a task-14 statement."""
    if m := TIME_FIRST.match(text):
        when, actor, room = m.groups()
        return actor, room, when.lower()
    m = TIME_LAST.match(text)
    assert m, f"unknown statement {text!r}"
    actor, room, when = m.groups()
    return actor, room, when


@dataclass
class TimeWorld:
    """Task 14: each actor's rooms at the four times of the day."""

    day: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)  # actor -> time -> (room, id)

    def read(self, line: Line) -> None:
        actor, room, when = _time_move(line.text)
        time = TIME_WORDS.index(when)
        day = self.day.setdefault(actor, {})
        assert time not in day, f"{actor} already has a room {when}: {line}"
        for neighbour in (time - 1, time + 1):
            assert day.get(neighbour, ("",))[0] != room, f"{actor} stays in the {room}: {line}"
        day[time] = (room, line.id)

    def check(self, line: Line) -> None:
        m = WHERE_WAS.match(line.text)
        assert m, f"unknown question {line.text!r}"
        actor, room = m.groups()
        day = self.day[actor]
        assert all(sorted(told) == list(range(len(told))) for told in map(set, self.day.values())), (
            f"an actor's told times must run from yesterday on: {line}")
        later_id, earlier_id = line.support
        later = next((t for t, (_, i) in day.items() if i == later_id), None)
        assert later is not None and day[later][0] == room, f"{later_id} is not {actor} going to the {room}: {line}"
        earlier = max((t for t in day if t < later), default=None)
        assert earlier is not None, f"nothing told before: {line}"
        assert (line.answer, earlier_id) == day[earlier], f"should be {day[earlier]}: {line}"


@dataclass
class MotivationWorld:
    """Task 20: each actor's motivation, trip and object; every statement is followed by a question about it."""

    feeling: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (motivation, id)
    went: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)
    last: tuple[str, str] | None = None  # (actor, kind) of the latest statement, until its question

    def read(self, line: Line) -> None:
        assert self.last is None, f"two statements without a question: {line}"
        if m := FEELS.match(line.text):
            actor = m.group(1)
            assert actor not in self.feeling, line
            self.feeling[actor] = (m.group(2), line.id)
            self.last = (actor, "feel")
        elif m := GOES.match(line.text):
            actor, place = m.groups()
            assert actor in self.feeling and actor not in self.went, line
            assert NEEDS[self.feeling[actor][0]][0] == place, f"{actor} goes elsewhere: {line}"
            self.went.add(actor)
            self.last = (actor, "go")
        elif m := GETS.match(line.text):
            actor, obj = m.groups()
            assert actor in self.went and NEEDS[self.feeling[actor][0]][1] == obj, line
            assert obj not in self.taken, f"the {obj} is already taken: {line}"
            self.taken.add(obj)
            self.last = (actor, "get")
        else:
            raise AssertionError(f"unknown statement {line.text!r}")

    def check(self, line: Line) -> None:
        assert self.last is not None, f"a question must follow a statement: {line}"
        actor, kind = self.last
        self.last = None
        feeling, feeling_id = self.feeling[actor]
        place, obj = NEEDS[feeling]
        expected = {"feel": (WHERE_WILL, place), "go": (WHY_GO, feeling), "get": (WHY_GET, feeling)}[kind]
        m = expected[0].match(line.text)
        assert m and m.group(1) == actor.lower(), f"the question must be about the statement before: {line}"
        assert m.groups()[1:] in ((), (place,), (obj,)), line
        assert line.answer == expected[1] and line.support == (feeling_id,), line


WORLDS = {5: GiveWorld, 13: CompoundWorld, 14: TimeWorld, 20: MotivationWorld}


def replay(task: int, lines: list[str], released: bool = False) -> Stories:
    """The stories of ``lines``, each replayed in a fresh world of the task (``released``: see :class:`GiveWorld`)."""
    new_world = functools.partial(GiveWorld, released=released) if task == 5 else WORLDS[task]
    return replay_stories(parse_task(task, lines), new_world)


def file_path(task: int, split: str) -> Path:
    return released_path(task, TASK_NAMES[task], split)


@pytest.fixture(scope="module")
def generated() -> dict[int, list[str]]:
    return {task: generate_stories(task, SAMPLE_QUESTIONS, seed=SEED) for task in TASKS}


# ---------------------------------------------------------------------------------------------------------------
# correctness and format


def test_task_names() -> None:
    assert TASK_NAMES == {5: "three-arg-relations", 13: "compound-coreference", 14: "time-reasoning",
                          20: "agents-motivations"}
    assert set(STORIES) == set(TASK_NAMES)
    assert {task: per_story for task, (_, per_story) in STORIES.items()} == {5: 5, 13: 5, 14: 5, 20: 12}


@pytest.mark.parametrize("task", TASKS)
def test_answers_and_supports_replay(task: int, generated: dict[int, list[str]]) -> None:
    assert question_count(replay(task, generated[task])) == SAMPLE_QUESTIONS


ANSWERS = {
    5: {"Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"},
    13: set(ROOMS),
    14: {"bedroom", "cinema", "kitchen", "office", "park", "school"},
    20: {"kitchen", "garden", "bedroom", "hungry", "thirsty", "bored", "tired"},
}


CORRUPTIONS = [(task, how) for task in TASKS for how in ("answer", "support", "order")
               if how != "order" or SUPPORTS[task] == 2]


@pytest.mark.parametrize(("task", "how"), CORRUPTIONS)
def test_replay_catches_corruption(task: int, how: str) -> None:
    """A wrong answer, a wrong support id or supports in the wrong order (two-fact tasks) fail the replay."""
    lines = generate_stories(task, 5, seed=5)
    assert_corruption_caught(functools.partial(replay, task), lines, "id" if how == "support" else how, ANSWERS[task])


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [1, 4, 5, 7, 13, 40])
def test_exact_question_count(task: int, n: int) -> None:
    lines = generate_stories(task, n, seed=1)
    assert_question_count(lines, n)
    stories = replay(task, lines)
    counts = [sum(line.is_question for line in story) for story in stories]
    if task == 20:  # whole stories of 9 to 12 questions, the last one cut short
        assert all(9 <= count <= 12 for count in counts[:-1]) and counts[-1] <= 12
    else:
        assert counts == [5] * (n // 5) + ([n % 5] if n % 5 else [])


@pytest.mark.parametrize("task", TASKS)
def test_story_function_rejects_or_honours_counts(task: int) -> None:
    make_story, per_story = STORIES[task]
    story = make_story(random.Random(0), per_story)
    if task == 20:
        assert 9 <= len(questions(story)) <= 12
        with pytest.raises(ValueError):
            make_story(random.Random(0), 0)
    else:
        assert len(questions(story)) == per_story


@pytest.mark.parametrize("task", TASKS)
def test_format_and_story_shape(task: int, generated: dict[int, list[str]]) -> None:
    lines = generated[task]
    assert all(line.isascii() and line.endswith("\n") and "\r" not in line for line in lines)
    assert all(line.count("\t") == 2 for line in questions(lines))
    for story in parse_task(task, lines):
        assert story[-1].is_question
        gaps = [line.id - 1 - sum(other.is_question for other in story[: line.id - 1])
                for line in story if line.is_question]  # statements before each question
        if task == 13:
            assert gaps == [2, 4, 6, 8, 10][: len(gaps)]
        elif task in (5, 14):
            assert all(gap % 2 == 0 for gap in gaps), "questions come after pairs of statements"
        else:
            assert [line.is_question for line in story] == [False, True] * (len(story) // 2)
    if task == 20:  # a whole story: four motivations, four trips, one get per motivation present
        story = parse_task(task, lines)[0]
        feelings = {m.group(2) for line in story if (m := FEELS.match(line.text))}
        assert len(questions([f"{line.text}\t" for line in story if line.is_question])) == 8 + len(feelings)


# ---------------------------------------------------------------------------------------------------------------
# the released files


@functools.cache
def _released(task: int) -> dict[str, Stories] | None:
    paths = {split: file_path(task, split) for split in ("train", "test")}
    return read_released(paths, functools.partial(replay, task, released=True))


def _released_or_skip(task: int) -> dict[str, Stories]:
    return released_or_skip(_released(task))


@pytest.mark.parametrize("task", TASKS)
def test_replay_accepts_released_files(task: int) -> None:
    """The checkers' reading of the tasks is the released files' own: every story of the en train and test files
    replays (answers, supports, and for task 5 a consistent hidden world)."""
    real = _released_or_skip(task)
    assert sum(question_count(split) for split in real.values()) == 2000


@pytest.mark.parametrize("task", TASKS)
def test_vocabulary_matches_released_files(task: int, generated: dict[int, list[str]]) -> None:
    _released_or_skip(task)
    real_text = "".join(file_path(task, split).read_text(encoding="ascii") for split in ("train", "test"))
    assert words("".join(generated[task])) == words(real_text)


@pytest.fixture(scope="module")
def ours() -> dict[int, Stories]:
    return {task: parse_task(task, generate_stories(task, STAT_QUESTIONS, seed=SEED)) for task in TASKS}


def _questions_per_story(stories: Stories) -> float:
    return question_count(stories) / len(stories)


def _whole(task: int, stories: Stories) -> Stories:
    """Task 20: the stories not cut short at the end of a file."""
    return stories[:-1] if task == 20 else stories


@pytest.mark.parametrize("task", TASKS)
def test_story_length_and_questions_per_story(task: int, ours: dict[int, Stories]) -> None:
    real = _released_or_skip(task)
    pooled = [*_whole(task, real["train"]), *_whole(task, real["test"])]
    mine = _whole(task, ours[task])
    tolerance = SPREAD_FACTOR * yardstick(real, lambda a, b: abs(story_length(a) - story_length(b)))
    assert abs(story_length(mine) - story_length(pooled)) <= tolerance, (story_length(mine), story_length(pooled))
    if task == 20:
        gap = lambda a, b: abs(_questions_per_story(a) - _questions_per_story(b))  # noqa: E731
        tolerance = SPREAD_FACTOR * yardstick(real, gap)
        assert abs(_questions_per_story(mine) - _questions_per_story(pooled)) <= tolerance
    else:
        for stories in (*real.values(), mine):
            assert {sum(line.is_question for line in story) for story in stories} == {5}


@pytest.mark.parametrize("task", TASKS)
def test_answer_distribution(task: int, ours: dict[int, Stories]) -> None:
    assert_distribution_matches(_released_or_skip(task), ours[task], answer_distribution)


def _question_kinds(stories: Stories) -> dict[str, float]:
    """Question templates: the words of each question with names, rooms and objects left out."""
    return distribution([" ".join(re.findall(r"\b(?:[Ww]ho|[Ww]hat|did|gave|give|received|to|Where|Why|will|go|"
                                             r"get|before)\b", line.text))
                         for story in stories for line in story if line.is_question])


@pytest.mark.parametrize("task", TASKS)
def test_question_kinds(task: int, ours: dict[int, Stories]) -> None:
    assert_distribution_matches(_released_or_skip(task), ours[task], _question_kinds)


@pytest.mark.parametrize(("task", "k"), support_cases(SUPPORTS))
def test_support_distance_distribution(task: int, k: int, ours: dict[int, Stories]) -> None:
    """How far back the k-th supporting fact lies: total variation distance to the pooled released files."""
    assert_support_distances_match(_released_or_skip(task), ours[task], k)


def _opening_times(stories: Stories) -> dict[tuple[str, ...], float]:
    """Task 14: the times of each story's first two statements. The statements before a story's first question are
    not told in the order they were drawn in (each actor's times from yesterday on), so a story often opens with an
    actor's second time ("this morning", then "yesterday")."""
    openings = []
    for story in stories:
        statements = [line for line in story if not line.is_question]
        openings.append(tuple(_time_move(line.text)[2] for line in statements[:2]))
    return distribution(openings)


def test_time_story_openings(ours: dict[int, Stories]) -> None:
    """Task 14: the times of each story's first two statements: total variation distance to the pooled files."""
    real = _released_or_skip(14)
    pooled, mine = _opening_times(real["train"] + real["test"]), _opening_times(ours[14])
    tolerance = SPREAD_FACTOR * yardstick(real, lambda a, b: total_variation(_opening_times(a), _opening_times(b)))
    assert total_variation(mine, pooled) <= tolerance, (mine, pooled, tolerance)
