"""Tests for the built-in bAbI generator's tasks 4, 17, 18 and 19 (tasks/babi/generator_spatial.py).

Generated stories are parsed with regexes and replayed by small world models written here, independently of the
generator: rooms and shapes get grid positions from the statements, objects a size order; every answer and every
supporting fact is checked. Their statistics are compared with the released v1.2 files (the 1k ``en`` set, whose
train and test files give the spread of the original generator itself; for the rare early-stopped blocks of task
18, the 10k ``en-10k`` set) when those are found under ``$BABI_REAL_DIR`` (default: ``$HARNESS_DATA_DIR/babi``).
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tasks.babi.generator import generate_stories
from tasks.babi.generator_spatial import STORIES, TASK_NAMES
from tests.babi_story_checks import (
    ROOM,
    ROOMS,
    SPREAD_FACTOR,
    STAT_QUESTIONS,
    Line,
    Stories,
    answer_distribution,
    assert_corruption_caught,
    assert_distribution_matches,
    assert_question_count,
    assert_support_distances_match,
    assert_within_spread,
    distribution,
    max_gap,
    parse,
    question_count,
    read_released,
    released_or_skip,
    released_path,
    replay_stories,
    story_length,
    support_cases,
    total_variation,
    words,
    yardstick,
)

TASKS = (4, 17, 18, 19)
PER_STORY = {4: 1, 17: 8, 18: 9, 19: 1}  # the most a story holds; task 18: 5, or 6 to 9 after a block stopped early
SIZE_BLOCK = 5  # task 18: the questions of a block that does not stop early
REPLAY_QUESTIONS = 3000  # STAT_QUESTIONS (4,000) for the statistics
SIZE_STAT_QUESTIONS = 20000  # task 18: its stories run from 5 to 25 statements and 1.7% of them stop a block early
SEED = 11

_COMPASS = "(north|south|east|west)"
ROOM_FACT = re.compile(rf"^The {ROOM} is {_COMPASS} of the {ROOM}$")
WHAT_IS_DIR_OF = re.compile(rf"^What is {_COMPASS} of the {ROOM}\?$")
WHAT_IS_ROOM_DIR_OF = re.compile(rf"^What is the {ROOM} {_COMPASS} of\?$")
HOW_TO_GO = re.compile(rf"^How do you go from the {ROOM} to the {ROOM}\?$")

_SHAPE = "(triangle|blue square|pink rectangle|red square|red sphere|yellow square)"
_RELATIVE = "(above|below|to the left of|to the right of)"
SHAPE_FACT = re.compile(rf"^The {_SHAPE} is {_RELATIVE} the {_SHAPE}$")
IS_SHAPE = re.compile(rf"^Is the {_SHAPE} {_RELATIVE} the {_SHAPE}\?$")

_THING = "(chocolate|box of chocolates|box|chest|container|suitcase)"
FITS_INSIDE = re.compile(rf"^The {_THING} fits inside the {_THING}$")
IS_BIGGER = re.compile(rf"^The {_THING} is bigger than the {_THING}$")
ASK_BIGGER = re.compile(rf"^Is the {_THING} bigger than the {_THING}\?$")
ASK_FIT = re.compile(rf"^Does the {_THING} fit in the {_THING}\?$")

PATH_ANSWER = re.compile(r"\t([nsew](?:,[nsew])*)\t")
UNIT = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0),
        "above": (0, 1), "below": (0, -1), "to the right of": (1, 0), "to the left of": (-1, 0)}
LETTER = {"n": "north", "s": "south", "e": "east", "w": "west"}


def parse_task(task: int, lines: list[str]) -> Stories:
    """Stories of parsed lines (no space before the tab in any of these tasks). Task-19 answers ("n,w") are checked
    for their comma-joined form here and then read as letters ("nw")."""
    if task == 19:
        for raw in lines:
            if "\t" in raw:
                assert PATH_ANSWER.search(raw), f"malformed path answer: {raw!r}"
        lines = [PATH_ANSWER.sub(lambda m: "\t" + m.group(1).replace(",", "") + "\t", raw) for raw in lines]
    return parse(lines, space_before_tab=False)


# ---------------------------------------------------------------------------------------------------------------
# replay: what a reader of the story knows


@dataclass
class Layout:
    """Tasks 4, 17 and 19: places told relative to one another ("A is <direction> of B"), as a graph of told
    steps; positions follow by walking it from the first place named."""

    told: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)  # (from, to) -> (dx, dy, id)

    def read(self, line: Line, fact: re.Pattern[str]) -> None:
        """A statement "The A is <direction> the B" matched by ``fact`` (groups: A, direction, B)."""
        m = fact.match(line.text)
        assert m, f"unknown statement {line.text!r}"
        subject, direction, obj = m.groups()
        self.tell(subject, UNIT[direction], obj, line.id)

    def tell(self, subject: str, unit: tuple[int, int], obj: str, line_id: int) -> None:
        assert subject != obj, f"a place related to itself: {line_id}"
        assert (obj, subject) not in self.told, f"the same two places told twice: {line_id}"
        for (here, _), (dx, dy, _) in self.told.items():
            assert not (here == obj and (dx, dy) == unit), f"two places on the same side of {obj}: {line_id}"
            assert not (here == subject and (dx, dy) == (-unit[0], -unit[1])), f"side of {subject} taken: {line_id}"
        self.told[obj, subject] = (*unit, line_id)
        self.told[subject, obj] = (-unit[0], -unit[1], line_id)

    def step(self, here: str, unit: tuple[int, int]) -> tuple[str, int] | None:
        """The place told to lie one ``unit`` from ``here`` and the id telling it."""
        for (start, there), (dx, dy, line_id) in self.told.items():
            if start == here and (dx, dy) == unit:
                return there, line_id
        return None

    def positions(self) -> dict[str, tuple[int, int]]:
        start = next(iter(self.told))[0]
        position = {start: (0, 0)}
        frontier = [start]
        while frontier:
            here = frontier.pop()
            for (a, b), (dx, dy, _) in self.told.items():
                if a == here and b not in position:
                    position[b] = (position[here][0] + dx, position[here][1] + dy)
                    frontier.append(b)
        return position

    def neighbours(self, here: str) -> list[str]:
        return [b for (a, b) in self.told if a == here]


def _told_between(layout: Layout, a: str, b: str) -> int:
    assert (a, b) in layout.told, f"nothing told between the {a} and the {b}"
    return layout.told[a, b][2]


@dataclass
class RoomLineWorld:
    """Task 4: "What is north of the kitchen?" is answered by the one room told to lie north of it."""

    layout: Layout = field(default_factory=Layout)

    def read(self, line: Line) -> None:
        self.layout.read(line, ROOM_FACT)

    def check(self, line: Line) -> None:
        if m := WHAT_IS_DIR_OF.match(line.text):
            direction, known = m.groups()
            unit = UNIT[direction]
        elif m := WHAT_IS_ROOM_DIR_OF.match(line.text):
            known, direction = m.groups()
            unit = (-UNIT[direction][0], -UNIT[direction][1])  # the answer lies the other way from it
        else:
            raise AssertionError(f"unknown question {line.text!r}")
        found = self.layout.step(known, unit)
        assert found is not None, f"nothing is told {direction} of the {known}: {line}"
        assert line.answer == found[0], line
        assert line.support == (found[1],), f"support should be {(found[1],)}: {line}"


@dataclass
class ShapeWorld:
    """Task 17: two statements place three shapes; questions are about the two not told together."""

    layout: Layout = field(default_factory=Layout)

    def read(self, line: Line) -> None:
        self.layout.read(line, SHAPE_FACT)

    def check(self, line: Line) -> None:
        m = IS_SHAPE.match(line.text)
        assert m, f"unknown question {line.text!r}"
        x, relation, y = m.groups()
        position = self.layout.positions()
        assert x in position and y in position and x != y, line
        assert (x, y) not in self.layout.told, f"asked about two shapes told together: {line}"
        offset = (position[x][0] - position[y][0], position[x][1] - position[y][1])
        unit = UNIT[relation]
        holds = offset[0] * unit[0] + offset[1] * unit[1] > 0
        assert line.answer == ("yes" if holds else "no"), line
        (middle,) = set(self.layout.neighbours(x)) & set(self.layout.neighbours(y))
        expected = (_told_between(self.layout, x, middle), _told_between(self.layout, middle, y))
        assert line.support == expected, f"support should be {expected}: {line}"


def _size_fact(text: str) -> tuple[str, str]:
    """(bigger, smaller) of a statement."""
    if m := FITS_INSIDE.match(text):
        return m.group(2), m.group(1)
    m = IS_BIGGER.match(text)
    assert m, f"unknown statement {text!r}"
    return m.groups()


def _claims(line: Line) -> tuple[str, str]:
    """(the object a question calls bigger, the other one)."""
    if m := ASK_BIGGER.match(line.text):
        return m.groups()
    m = ASK_FIT.match(line.text)
    assert m, f"unknown question {line.text!r}"
    return m.group(2), m.group(1)


@dataclass
class SizeWorld:
    """Task 18: told size orders; "is A bigger than B" needs a chain of two told facts."""

    bigger: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (bigger, smaller) -> statement ids

    def read(self, line: Line) -> None:
        big, small = _size_fact(line.text)
        assert big != small and small not in self._above(big), f"contradicts earlier statements: {line}"
        self.bigger.setdefault((big, small), []).append(line.id)

    def _above(self, obj: str) -> set[str]:
        """Everything told (directly or by a chain of facts) to be bigger than ``obj``."""
        out: set[str] = set()
        frontier = [obj]
        while frontier:
            here = frontier.pop()
            for big, small in self.bigger:
                if small == here and big not in out:
                    out.add(big)
                    frontier.append(big)
        return out

    def check(self, line: Line) -> None:
        claimed_big, claimed_small = _claims(line)
        yes = claimed_big in self._above(claimed_small)
        no = claimed_small in self._above(claimed_big)
        assert yes != no, f"the story does not order the {claimed_big} and the {claimed_small}: {line}"
        assert line.answer == ("yes" if yes else "no"), line
        # the support is a chain of two facts starting from the object the question calls bigger
        assert len(line.support) == 2, line
        first, second = (self._fact(i) for i in line.support)
        if yes:  # claimed_big > middle > claimed_small
            assert first[0] == claimed_big and first[1] == second[0] and second[1] == claimed_small, line
        else:  # claimed_big < middle < claimed_small
            assert first[1] == claimed_big and first[0] == second[1] and second[0] == claimed_small, line

    def _fact(self, line_id: int) -> tuple[str, str]:
        (fact,) = [pair for pair, ids in self.bigger.items() if line_id in ids]
        return fact


@dataclass
class RoomMapWorld:
    """Task 19: the told steps between rooms form a tree; the question asks for the shortest walk."""

    layout: Layout = field(default_factory=Layout)

    def read(self, line: Line) -> None:
        self.layout.read(line, ROOM_FACT)

    def _distances(self, start: str) -> dict[str, int]:
        distance = {start: 0}
        frontier = [start]
        while frontier:
            here = frontier.pop(0)
            for there in self.layout.neighbours(here):
                if there not in distance:
                    distance[there] = distance[here] + 1
                    frontier.append(there)
        return distance

    def check(self, line: Line) -> None:
        m = HOW_TO_GO.match(line.text)
        assert m, f"unknown question {line.text!r}"
        source, target = m.groups()
        here, support = source, []
        for letter in line.answer:
            found = self.layout.step(here, UNIT[LETTER[letter]])
            assert found is not None, f"no room told {LETTER[letter]} of the {here}: {line}"
            here = found[0]
            support.append(found[1])
        assert here == target, f"the walk ends in the {here}: {line}"
        assert len(line.answer) == self._distances(source)[target], f"not a shortest walk: {line}"
        assert line.support == tuple(support), f"support should be {tuple(support)}: {line}"


World = RoomLineWorld | ShapeWorld | SizeWorld | RoomMapWorld
WORLDS: dict[int, type[World]] = {4: RoomLineWorld, 17: ShapeWorld, 18: SizeWorld, 19: RoomMapWorld}


def replay(task: int, lines: list[str]) -> Stories:
    """The stories of ``lines``, each replayed in a fresh world of the task."""
    return replay_stories(parse_task(task, lines), WORLDS[task])


@pytest.fixture(scope="module")
def generated() -> dict[int, list[str]]:
    return {task: generate_stories(task, REPLAY_QUESTIONS, seed=SEED) for task in TASKS}


# ---------------------------------------------------------------------------------------------------------------
# correctness and format


def test_task_names_are_official() -> None:
    assert TASK_NAMES == {4: "two-arg-relations", 17: "positional-reasoning", 18: "size-reasoning",
                          19: "path-finding"}
    assert {task: per_story for task, (_, per_story) in STORIES.items()} == PER_STORY


@pytest.mark.parametrize("task", TASKS)
def test_answers_and_supports_replay(task: int, generated: dict[int, list[str]]) -> None:
    assert question_count(replay(task, generated[task])) == REPLAY_QUESTIONS


PATHS = {f"{a},{b}" for a in "nsew" for b in "nsew" if {a, b} not in ({"n", "s"}, {"e", "w"})}
ANSWERS = {
    4: set(ROOMS),
    17: {"yes", "no"},
    18: {"yes", "no"},
    19: PATHS,
}
CORRUPTIONS = [(task, how) for task in TASKS for how in ("answer", "id", "order") if (task, how) != (4, "order")]


@pytest.mark.parametrize(("task", "corruption"), CORRUPTIONS)
def test_replay_catches_corruption(task: int, corruption: str) -> None:
    lines = generate_stories(task, PER_STORY[task], seed=5)  # one whole story
    assert_corruption_caught(functools.partial(replay, task), lines, corruption, ANSWERS[task])


def test_size_world_catches_contradiction() -> None:
    lines = ["1 The box fits inside the chest.\n", "2 The chest fits inside the suitcase.\n",
             "3 The suitcase is bigger than the box.\n", "4 The box is bigger than the suitcase.\n"]
    replay(18, lines[:3])
    with pytest.raises(AssertionError):
        replay(18, lines)


def test_layout_catches_two_rooms_on_one_side() -> None:
    lines = ["1 The office is north of the kitchen.\n", "2 The garden is north of the kitchen.\n",
             "3 What is north of the kitchen?\toffice\t1\n"]
    with pytest.raises(AssertionError):
        replay(4, lines)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [0, 1, 3, 5, 7, 8, 13, 40])
def test_exact_question_count(task: int, n: int) -> None:
    lines = generate_stories(task, n, seed=1)
    assert_question_count(lines, n)
    stories = replay(task, lines)
    per_story = PER_STORY[task]
    counts = [sum(line.is_question for line in story) for story in stories]
    if task == 18:
        assert all(SIZE_BLOCK <= count <= per_story for count in counts[:-1]) and max(counts, default=0) <= per_story
    else:
        assert counts[: n // per_story] == [per_story] * (n // per_story)
        assert len(stories) == -(-n // per_story)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [0, -1, 9])
def test_story_functions_refuse_bad_counts(task: int, n: int) -> None:
    make_story, per_story = STORIES[task]
    with pytest.raises(ValueError, match=f"task-{task}"):
        make_story(random.Random(0), per_story + 1 if n == 9 else n)


@pytest.mark.parametrize("task", TASKS)
def test_format_and_story_shape(task: int, generated: dict[int, list[str]]) -> None:
    lines = generated[task]
    assert all(line.isascii() and line.endswith("\n") and "\r" not in line for line in lines)
    assert all(" \t" not in line for line in lines), "no space before the tab in these tasks"
    stories = parse_task(task, lines)
    for i, story in enumerate(stories):
        kinds = "".join("q" if line.is_question else "s" for line in story)
        if task == 18:  # at most one block stopped early, then five statements and a whole block (the last story
            # may be cut short)
            assert re.fullmatch(r"(?:s{5})+(?:q{1,4}s{5})?" + ("q{1,5}" if i == len(stories) - 1 else "q{5}"), kinds)
        else:
            statements = {4: 2, 17: 2, 19: 5}[task]
            assert kinds == "s" * statements + "q" * PER_STORY[task], kinds


# ---------------------------------------------------------------------------------------------------------------
# statistics against the released files (tests/babi_story_checks.py says how the tolerances are set)


def _files(task: int, folder: str = "en") -> dict[str, Path]:
    return {split: released_path(task, TASK_NAMES[task], split, folder) for split in ("train", "test")}


@functools.cache
def _real_lines(task: int) -> dict[str, list[str]] | None:
    return read_released(_files(task), list)


def _real_or_skip(task: int) -> dict[str, Stories]:
    real = released_or_skip(_real_lines(task))
    return {split: parse_task(task, lines) for split, lines in real.items()}


@pytest.fixture(scope="module")
def ours() -> dict[int, Stories]:
    sizes = {task: SIZE_STAT_QUESTIONS if task == 18 else STAT_QUESTIONS for task in TASKS}
    return {task: parse_task(task, generate_stories(task, sizes[task], seed=SEED)) for task in TASKS}


@pytest.mark.parametrize("task", TASKS)
def test_replay_accepts_released_files(task: int) -> None:
    """The checkers' reading of the tasks is the released files' own: every story of the en train and test files
    replays."""
    _real_or_skip(task)
    for lines in _real_lines(task).values():
        replay(task, lines)


@pytest.mark.parametrize("task", TASKS)
def test_vocabulary_matches_released_files(task: int, generated: dict[int, list[str]]) -> None:
    _real_or_skip(task)
    real_text = "".join("".join(lines) for lines in _real_lines(task).values())
    assert words("".join(generated[task])) == words(real_text)


def _questions_per_story(stories: Stories) -> dict[int, float]:
    return distribution([sum(line.is_question for line in story) for story in stories[:-1]])


@pytest.mark.parametrize("task", TASKS)
def test_story_length_and_questions_per_story(task: int, ours: dict[int, Stories]) -> None:
    real = _real_or_skip(task)
    pooled = real["train"] + real["test"]
    length_gap = yardstick(real, lambda a, b: abs(story_length(a) - story_length(b)))
    assert abs(story_length(ours[task]) - story_length(pooled)) <= SPREAD_FACTOR * length_gap
    mine = _questions_per_story(ours[task])
    if task != 18:
        assert mine == {PER_STORY[task]: 1.0}
    count_gap = yardstick(real, lambda a, b: max_gap(_questions_per_story(a), _questions_per_story(b)))
    assert max_gap(mine, _questions_per_story(pooled)) <= SPREAD_FACTOR * count_gap


@pytest.mark.parametrize("task", TASKS)
def test_answer_distribution(task: int, ours: dict[int, Stories]) -> None:
    assert_distribution_matches(_real_or_skip(task), ours[task], answer_distribution)


SUPPORTS = {4: 1, 17: 2, 18: 2, 19: 2}


@pytest.mark.parametrize(("task", "k"), support_cases(SUPPORTS))
def test_support_distance_distribution(task: int, k: int, ours: dict[int, Stories]) -> None:
    """How far back the k-th supporting fact lies: total variation distance to the pooled released files."""
    assert_support_distances_match(_real_or_skip(task), ours[task], k)


def _subject_roles(stories: Stories) -> dict[str, float]:
    """Tasks 4 and 17: whether each statement names the middle place (the one both statements name) first."""
    roles: list[str] = []
    for story in stories:
        facts = [(ROOM_FACT.match(line.text) or SHAPE_FACT.match(line.text)).groups() for line in story
                 if not line.is_question]
        (middle,) = {facts[0][0], facts[0][2]} & {facts[1][0], facts[1][2]}
        roles += ["middle" if subject == middle else "end" for subject, _, _ in facts]
    return distribution(roles)


@pytest.mark.parametrize("task", (4, 17))
def test_which_place_statements_name_first(task: int, ours: dict[int, Stories]) -> None:
    assert_within_spread(_real_or_skip(task), ours[task], lambda a, b: max_gap(_subject_roles(a), _subject_roles(b)))


# ---------------------------------------------------------------------------------------------------------------
# task 19: the order and the wording in which the map is told


def _path_story(story: list[Line]) -> tuple[list[tuple[str, str, str]], tuple[int, ...], dict[str, str]]:
    """The statements (subject, direction, object) of a task-19 story, the ids of its two path statements and the
    role ("source", "middle", "target") of each path room."""
    facts = [ROOM_FACT.match(line.text).groups() for line in story if not line.is_question]
    (question,) = [line for line in story if line.is_question]
    source, target = HOW_TO_GO.match(question.text).groups()
    first, second = (facts[i - 1] for i in question.support)
    (middle,) = {first[0], first[2]} & {second[0], second[2]}
    return facts, question.support, {source: "source", middle: "middle", target: "target"}


def _path_positions(stories: Stories) -> dict[tuple[int, int], float]:
    """Where the two path statements stand among the five statements (the pair of positions)."""
    return distribution([tuple(sorted(_path_story(story)[1])) for story in stories])


def _rooms_named_before(stories: Stories) -> dict[int, float]:
    """How many of the statements after the first name a room that an earlier statement named."""
    counts = []
    for story in stories:
        named: set[str] = set()
        count = 0
        for subject, _, obj in _path_story(story)[0]:
            count += bool(named & {subject, obj})
            named |= {subject, obj}
        counts.append(count)
    return distribution(counts)


def _path_subjects(stories: Stories) -> dict[str, float]:
    """How often the first path statement names the source first, the second one the middle room first, and a
    decoy statement the decoy first."""
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for story in stories:
        facts, support, role = _path_story(story)
        for line_id, (subject, _, _) in enumerate(facts, 1):
            if line_id == support[0]:
                key, hit = "step 1: source first", role.get(subject) == "source"
            elif line_id == support[1]:
                key, hit = "step 2: middle first", role.get(subject) == "middle"
            else:
                key, hit = "decoy: decoy first", subject not in role
            hits[key] += hit
            totals[key] += 1
    return {key: hits[key] / totals[key] for key in totals}


def test_path_statement_positions(ours: dict[int, Stories]) -> None:
    """The files tell the path statements late (the last statement is a path step in 58% of the 1k files'
    stories): total variation distance of the pair of positions to the pooled released files."""
    assert_within_spread(_real_or_skip(19), ours[19],
                         lambda a, b: total_variation(_path_positions(a), _path_positions(b)))


def test_path_statements_name_rooms_told_before(ours: dict[int, Stories]) -> None:
    """The files seldom tell a map as a walk (all four statements after the first name a room named before in 21%
    of stories, against 36% for a shuffle): total variation distance to the pooled released files."""
    assert_within_spread(_real_or_skip(19), ours[19],
                         lambda a, b: total_variation(_rooms_named_before(a), _rooms_named_before(b)))


def test_which_room_path_statements_name_first(ours: dict[int, Stories]) -> None:
    assert_within_spread(_real_or_skip(19), ours[19],
                         lambda a, b: max_gap(_path_subjects(a), _path_subjects(b)))


# ---------------------------------------------------------------------------------------------------------------
# task 18: which questions a story asks and which telling of a repeated fact they cite


def _last_questions(story: list[Line]) -> list[Line]:
    """The story's last run of questions (the files stop a run early in 1.7% of stories and tell more)."""
    run: list[Line] = []
    for line in story:
        run = [*run, line] if line.is_question else []
    return run


def _different_questions(stories: Stories, by: str) -> dict[int, float]:
    """How many different pairs of objects (``by="pair"``) or different questions up to wording (``by="question"``:
    which object is called bigger than which) the last five questions of a story ask."""
    counts = []
    for story in stories:
        run = _last_questions(story)
        if len(run) == SIZE_BLOCK:
            claims = [_claims(line) for line in run]
            counts.append(len({frozenset(c) for c in claims} if by == "pair" else set(claims)))
    return distribution(counts)


def _later_tellings_cited(stories: Stories) -> dict[str, float]:
    """Of the supporting facts told more than once before their question, the share whose support cites a later
    telling than the first."""
    later = repeated = 0
    for story in stories:
        told: dict[int, tuple[str, str]] = {}
        for line in story:
            if not line.is_question:
                told[line.id] = _size_fact(line.text)
                continue
            for line_id in line.support:
                tellings = [i for i, fact in told.items() if fact == told[line_id]]
                if len(tellings) > 1:
                    repeated += 1
                    later += line_id != tellings[0]
    return {"later": later / repeated}


@pytest.mark.parametrize("by", ["pair", "question"])
def test_size_questions_ask_few_different_things(by: str, ours: dict[int, Stories]) -> None:
    """The files' five questions concentrate on few pairs and few questions (60% of the 1k files' stories ask about
    one pair only): total variation distance to the pooled released files."""
    assert_within_spread(_real_or_skip(18), ours[18],
                         lambda a, b: total_variation(_different_questions(a, by), _different_questions(b, by)))


def test_size_questions_cite_later_tellings(ours: dict[int, Stories]) -> None:
    assert_within_spread(_real_or_skip(18), ours[18],
                         lambda a, b: max_gap(_later_tellings_cited(a), _later_tellings_cited(b)))


# ---------------------------------------------------------------------------------------------------------------
# task 18: question blocks stopped early (1.7% of the files' stories), measured against the 10k files


def _runs(story: list[Line]) -> list[tuple[str, int]]:
    """The story's runs of statements ("s") and of questions ("q") with their lengths."""
    kinds = "".join("q" if line.is_question else "s" for line in story)
    return [(m.group()[0], len(m.group())) for m in re.finditer(r"s+|q+", kinds)]


def _stopped(stories: Stories) -> list[list[tuple[str, int]]]:
    """The runs of the stories whose first block of questions is followed by more statements."""
    return [runs for runs in map(_runs, stories) if sum(kind == "q" for kind, _ in runs) > 1]


def _stop_share(stories: Stories) -> float:
    return len(_stopped(stories)) / len(stories)


def _stopped_block_size(stories: Stories) -> float:
    """The mean number of questions in a stopped block (0 with none)."""
    sizes = [next(length for kind, length in runs if kind == "q") for runs in _stopped(stories)]
    return sum(sizes) / len(sizes) if sizes else 0.0


def _told_on_by_five(stories: Stories) -> float:
    """The share of stopped stories that go on with five statements and end with a block of five questions (0 with
    none)."""
    stopped = _stopped(stories)
    ends = [runs[-2:] == [("s", 5), ("q", SIZE_BLOCK)] and sum(kind == "q" for kind, _ in runs) == 2
            for runs in stopped]
    return sum(ends) / len(ends) if ends else 0.0


STOP_STATISTICS = {"stopped stories": _stop_share, "questions of a stopped block": _stopped_block_size,
                   "five statements and five questions after a stop": _told_on_by_five}


@functools.cache
def _real_10k_stories() -> dict[str, Stories] | None:
    """Whole stories (the last one of each file may be cut short) of the en-10k task-18 files."""
    return read_released(_files(18, "en-10k"), lambda lines: parse_task(18, lines)[:-1])


@pytest.mark.parametrize("statistic", STOP_STATISTICS)
def test_size_blocks_stop_early_as_often_as_in_the_files(statistic: str, ours: dict[int, Stories]) -> None:
    """Of the files' 2,175 whole stories 36 have a block that stops after one to four questions (3.25 on average);
    the story then goes on with five statements and a last block of five questions. Each statistic is compared with
    the pooled en-10k files within 1.5 times their own spread."""
    real = released_or_skip(_real_10k_stories(), "en-10k")
    measure = STOP_STATISTICS[statistic]
    mine = measure(ours[18][:-1])
    pooled = measure(real["train"] + real["test"])
    tolerance = SPREAD_FACTOR * yardstick(real, lambda a, b: abs(measure(a) - measure(b)))
    assert abs(mine - pooled) <= tolerance, (mine, pooled, tolerance)
