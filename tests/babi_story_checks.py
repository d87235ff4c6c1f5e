"""Shared pieces of the bAbI generator tests (tests/test_babi_generator*.py): the parser of the official format, the
replay loop, question corruptions, the regexes of statements several tasks share, and the statistics that compare
generated stories with the released v1.2 files.

Like the checkers built on them, they are written independently of the generator in tasks/babi/.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from tasks.babi.compare import distribution, total_variation
from tests.conftest import SHARED_DATA

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

REAL_DIR = Path(os.environ.get("BABI_REAL_DIR", SHARED_DATA / "babi"))  # $HARNESS_DATA_DIR/babi by default

# ---------------------------------------------------------------------------------------------------------------
# regexes: groups of names and the statements of the people-rooms-objects tasks

ACTOR = "(Mary|John|Sandra|Daniel)"
ROOMS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
ROOM = f"({'|'.join(ROOMS)})"
OBJ = "(apple|football|milk)"
GO = "(?:moved to|went to|went back to|journeyed to|travelled to)"
TAKE_VERB = "(?:got|took|grabbed|picked up)"
THEN = "(?:After that|Afterwards|Following that|Then)"


def move_pattern(actor: str = ACTOR, room: str = ROOM) -> re.Pattern[str]:
    """"<actor> went to the <room>" (groups: actor, room)."""
    return re.compile(rf"^{actor} {GO} the {room}$")


def take_pattern(actor: str = ACTOR, obj: str = OBJ) -> re.Pattern[str]:
    """"<actor> got the <object> there", always with "there" (groups: actor, object)."""
    return re.compile(rf"^{actor} {TAKE_VERB} the {obj} there$")


def drop_pattern(actor: str = ACTOR) -> re.Pattern[str]:
    """"<actor> dropped the <object>", with or without "there" (groups: actor, object)."""
    return re.compile(rf"^{actor} (?:dropped|left|discarded|put down) the {OBJ}(?: there)?$")


def give_pattern(actor: str = ACTOR) -> re.Pattern[str]:
    """"<actor> gave the <object> to <actor>" (groups: giver, object, receiver)."""
    return re.compile(rf"^{actor} (?:gave|handed|passed) the {OBJ} to {actor}$")


def ask_in_pattern(actor: str = ACTOR, room: str = ROOM) -> re.Pattern[str]:
    """"Is <actor> in the <room>?" (groups: actor, room)."""
    return re.compile(rf"^Is {actor} in the {room}\?$")


MOVE = move_pattern()
DROP = drop_pattern()
CONJ_MOVE = re.compile(rf"^{ACTOR} and {ACTOR} {GO} the {ROOM}$")
WHERE_IS_ACTOR = re.compile(rf"^Where is {ACTOR}\?$")

# ---------------------------------------------------------------------------------------------------------------
# the official format

STATEMENT_LINE = re.compile(r"^(\d+) ([^\t?]+)\.\n$")
QUESTION_LINE = re.compile(r"^(\d+) ([^\t]+\?)( ?)\t([a-z]+)\t(\d+(?: \d+)*)\n$")


@dataclass
class Line:
    """One parsed line of the official format: a statement, or a question with its answer and supporting ids."""

    id: int
    text: str
    answer: str | None = None
    support: tuple[int, ...] = ()

    @property
    def is_question(self) -> bool:
        return self.answer is not None


Stories = list[list[Line]]


def parse(lines: list[str], space_before_tab: bool, distinct_supports: bool = True) -> Stories:
    """Stories of parsed lines; fails on anything that is not in the official format (with or without a space
    before a question's tab; with ``distinct_supports``, no support id twice)."""
    stories: Stories = []
    for raw in lines:
        question = QUESTION_LINE.match(raw)
        statement = STATEMENT_LINE.match(raw)
        assert question or statement, f"malformed line {raw!r}"
        if question:
            line_id, text, space, answer, support = question.groups()
            assert (space == " ") == space_before_tab, f"space before the tab: {raw!r}"
            line = Line(int(line_id), text, answer, tuple(int(i) for i in support.split()))
        else:
            line = Line(int(statement.group(1)), statement.group(2))
        if line.id == 1:
            stories.append([])
        assert stories, "the first story must start at id 1"
        assert line.id == len(stories[-1]) + 1, f"ids must count up from 1 within a story: {raw!r}"
        if line.is_question:
            earlier = {previous.id for previous in stories[-1] if not previous.is_question}
            assert set(line.support) <= earlier, f"support must name earlier statements: {raw!r}"
            if distinct_supports:
                assert len(set(line.support)) == len(line.support), f"repeated support id: {raw!r}"
        stories[-1].append(line)
    return stories


def question_count(stories: Stories) -> int:
    """How many questions the stories hold."""
    return sum(line.is_question for story in stories for line in story)


def questions(lines: list[str]) -> list[str]:
    """The question lines (the ones with a tab)."""
    return [line for line in lines if "\t" in line]


def words(text: str) -> set[str]:
    """The words of a text (runs of letters)."""
    return set(re.findall(r"[A-Za-z]+", text))


def assert_question_count(lines: list[str], n: int) -> None:
    """The lines hold ``n`` questions and end right after the last one."""
    assert len(questions(lines)) == n
    if n:
        assert "\t" in lines[-1], "the output ends right after the last question"


# ---------------------------------------------------------------------------------------------------------------
# replay: a world per story reads its statements and checks its questions


class StoryWorld(Protocol):
    """What a reader of one story knows: ``read`` takes a statement, ``check`` a question (failing on a wrong one)."""

    def read(self, line: Line) -> None: ...

    def check(self, line: Line) -> None: ...


def replay_stories(stories: Stories, new_world: Callable[[], StoryWorld]) -> Stories:
    """Replays each story in a fresh world, checking every question where it stands; returns the stories."""
    for story in stories:
        world = new_world()
        for line in story:
            if line.is_question:
                world.check(line)
            else:
                world.read(line)
    return stories


class Rooms:
    """Union-find over rooms: a told room ("room:<name>") or the untold starting room of an actor or object."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        while self.parent.get(x, x) != x:
            x = self.parent[x]
        return x

    def same(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        assert not (ra.startswith("room:") and rb.startswith("room:")), f"{a} and {b} cannot be the same room"
        if ra.startswith("room:"):
            ra, rb = rb, ra
        self.parent[ra] = rb


# ---------------------------------------------------------------------------------------------------------------
# corrupted questions, which a replay must reject


def corrupt_answer(line: str, answers: set[str]) -> str:
    """The question line with another of ``answers`` (the first in sorted order)."""
    head, answer, support = line.split("\t")
    return "\t".join((head, sorted(answers - {answer})[0], support))


def corrupt_support(line: str, how: str) -> str:
    """The question line with its support ids reversed (``how="order"``) or its first id moved by one (``"id"``)."""
    head, answer, support = line.split("\t")
    ids = [int(i) for i in support.split()]
    ids = ids[::-1] if how == "order" else [ids[0] - 1 if ids[0] > 1 else ids[0] + 1, *ids[1:]]
    return "\t".join((head, answer, " ".join(str(i) for i in ids))) + "\n"


def assert_corruption_caught(
    replay: Callable[[list[str]], object], lines: list[str], how: str, answers: set[str], every_question: bool = False
) -> None:
    """``lines`` replay; with the first question (or, with ``every_question``, any one question) corrupted as
    ``how`` says ("answer": another of ``answers``; "order", "id": see :func:`corrupt_support`), they do not."""
    replay(lines)
    targets = [i for i, line in enumerate(lines) if "\t" in line]
    for i in targets if every_question else targets[:1]:
        corrupted = list(lines)
        corrupted[i] = corrupt_answer(lines[i], answers) if how == "answer" else corrupt_support(lines[i], how)
        with pytest.raises(AssertionError):
            replay(corrupted)


# ---------------------------------------------------------------------------------------------------------------
# the released files


def released_path(task: int, name: str, split: str, folder: str = "en") -> Path:
    """A released file, e.g. ``en/qa1_single-supporting-fact_train.txt`` under REAL_DIR."""
    return REAL_DIR / folder / f"qa{task}_{name}_{split}.txt"


def read_released(paths: Mapping[str, Path], read: Callable[[list[str]], T]) -> dict[str, T] | None:
    """``read`` of each split's lines, or None where a file is missing."""
    if not all(path.is_file() for path in paths.values()):
        return None
    return {split: read(path.read_text(encoding="ascii").splitlines(keepends=True)) for split, path in paths.items()}


def released_or_skip(released: T | None, folder: str = "en") -> T:
    """``released``, or a skip of the test where the files were not found."""
    if released is None:
        pytest.skip(f"released bAbI files ({folder} set) not found under {REAL_DIR}; set BABI_REAL_DIR")
    return released


# ---------------------------------------------------------------------------------------------------------------
# statistics against the released files

Gap = Callable[[Stories, Stories], float]

# Tolerances come from the original generator's own spread. The released train and test files are two samples of
# it, 1,000 questions each; the gap between them on a statistic is that statistic's noise at this size. One pair of
# files is a single draw of that gap, so the yardstick is the larger of it and the mean gap between random halves
# of the pooled stories (whole stories, which keeps questions of one story together). Our questions are compared
# with the two files pooled (2,000 questions), whose expected gap is smaller (variance 1/4000 + 1/2000
# against 2/1000). A larger sample of ours (4,000 questions) makes our own noise small beside theirs; 1.5 times the
# yardstick then leaves room for a single draw of a maximum and for the small differences of a refit generator.
SPREAD_FACTOR = 1.5
HALF_SPLITS = 20
STAT_QUESTIONS = 4000


def yardstick(real: dict[str, Stories], gap: Gap) -> float:
    """The released files' own spread on ``gap``: the larger of train against test and the mean over random halves."""
    pooled = real["train"] + real["test"]
    rng = random.Random(0)
    halves = []
    for _ in range(HALF_SPLITS):
        shuffled = rng.sample(pooled, len(pooled))
        halves.append(gap(shuffled[: len(pooled) // 2], shuffled[len(pooled) // 2 :]))
    return max(gap(real["train"], real["test"]), sum(halves) / len(halves))


def max_gap(p: Mapping[K, float], q: Mapping[K, float]) -> float:
    """The largest difference between two distributions on one value."""
    return max(abs(p.get(key, 0.0) - q.get(key, 0.0)) for key in set(p) | set(q))


def answer_distribution(stories: Stories) -> dict[str, float]:
    """The share of each answer among the questions."""
    return distribution([line.answer for story in stories for line in story if line.is_question])


def support_cases(supports: Mapping[int, int]) -> list[tuple[int, int]]:
    """The (task, k) pairs of the support-distance tests: every task of ``supports`` with each k below its number
    of supporting facts."""
    return [(task, k) for task, n in supports.items() for k in range(n)]


def support_distances(stories: Stories, k: int) -> dict[int, float]:
    """How many statements back the k-th supporting fact of each question lies (1 = the latest), capped at 12."""
    out: list[int] = []
    for story in stories:
        position: dict[int, int] = {}
        for line in story:
            if line.is_question:
                out.append(min(len(position) - position[line.support[k]] + 1, 12))
            else:
                position[line.id] = len(position) + 1
    return distribution(out)


def story_length(stories: Stories) -> float:
    """The mean number of statements in a story."""
    return sum(sum(not line.is_question for line in story) for story in stories) / len(stories)


def assert_within_spread(real: dict[str, Stories], mine: Stories, statistic: Gap) -> None:
    """``statistic`` between our stories and the pooled released files is within SPREAD_FACTOR times the
    released files' own spread on it (:func:`yardstick`)."""
    gap, tolerance = statistic(mine, real["train"] + real["test"]), SPREAD_FACTOR * yardstick(real, statistic)
    assert gap <= tolerance, (gap, tolerance)


def assert_distribution_matches(real: dict[str, Stories], mine: Stories, measure: Callable[[Stories], dict]) -> None:
    """The distribution ``measure`` gives has the same values in our stories as in the released files, and its
    largest gap to theirs is within their spread."""
    pooled, ours_ = measure(real["train"] + real["test"]), measure(mine)
    assert set(ours_) == set(pooled), (ours_, pooled)
    assert_within_spread(real, mine, lambda a, b: max_gap(measure(a), measure(b)))


def assert_support_distances_match(real: dict[str, Stories], mine: Stories, k: int) -> None:
    """How far back the k-th supporting fact lies: total variation distance within the released files' spread."""
    assert_within_spread(real, mine, lambda a, b: total_variation(support_distances(a, k), support_distances(b, k)))
