"""bAbI tasks 4 (two-arg-relations), 17 (positional-reasoning), 18 (size-reasoning) and 19 (path-finding): rooms,
shapes and boxes placed relative to one another (Weston et al., 2015, §3 tasks 4, 17, 18 and 19).

Recipes of the original Lua generator (facebookarchive/bAbI-tasks: ``lua/babi/tasks/IsDir.lua``,
``PositionalReasoning.lua``, ``Size.lua``, ``PathFinding.lua``, the world of ``lua/babi/tasks/worlds/world_sizes.txt``
and the templates ``Dir``, ``EvalDir``, ``YesNoDir``, ``SimpleOrdering``, ``EvalOrdering`` and ``Path`` of
``lua/babi/stringify.lua``), with every detail where the released v1.2 files disagree with that code taken from the
files (they came from an earlier version of the generator). In all four tasks the question is followed directly by
the tab (no space), as in the files; every random choice is uniform unless said otherwise. Fractions quoted below
are of the en-10k training file; this generator's, unless said otherwise, of 11,000 questions (seed 0).

Task 4, two-arg-relations. Three different rooms (of :data:`tasks.babi.generator.LOCATIONS`) in a line running
north or east (each one half); the two neighbouring pairs are told ("The office is north of the kitchen."), in
random order, then one question, supported by one of the two statements drawn uniformly: "What is north of the
kitchen?" or "What is the kitchen south of?" (one half each), always answered with the told statement's subject.
*Deviations from the Lua* (whose two wordings per statement are equally likely and whose question always involves
the middle room): in the files each statement names the middle room as its object two times in three (66.5%,
independently for the two statements), and the question always asks for its supporting statement's subject, so the
answer is the middle room one time in three (33.8%).

Task 17, positional-reasoning. Three different shapes of six (triangle, blue square, pink rectangle, red square, red
sphere, yellow square: the only ones in the files, where the Lua has twenty) are placed by a walk of two unit steps
on a grid (the second step never goes back, so the two end shapes are diagonal two times in three, in a line one time
in three, as in the files). The statements are "The A is above / below / to the left of / to the right of the B."
for the first and the second step; each names the shared (middle) shape as its subject two times in three (66.8% in
the files; the Lua: one half). Then eight questions, each about the two end shapes (all 10,000 questions of the
files; the Lua also asks about neighbours): the first-named shape X is drawn uniformly from the two, the answer is
"yes" or "no" (one half each) and the relation is drawn uniformly among the four that are true (or false) of X
relative to Y: "Is the X to the left of the Y?". So a "no" about shapes in a line names the other axis two times
in three (the files: 1,140 of 1,726 such questions, 66%). Support: the statement naming X, then the one naming Y.

Task 18, size-reasoning. Six objects: chocolate < box of chocolates < box, chest, container, suitcase (the last four
in a hidden order drawn per story; the Lua names "treasure chest", the files "chest"). A statement tells the size
order of two objects drawn uniformly among the fifteen pairs: "The box fits inside the chest." or "The chest is
bigger than the box." (one half each; the same fact may be told again). Statements come five at a time; after each
five, if a question can be asked, the story ends with five questions (but for the early stops below), otherwise five
more statements follow. Which
questions can be asked is recorded as the statements are told, by the files' rule (found from them): a new fact "big
> small" looks on each of its two sides for earlier facts it chains with ("x > big" above it, "small > z" below it)
and takes the earliest of those that did not themselves take a partner on that side when they were told; the chain of
the two can then be asked citing the new fact first, and citing the partner first as well if the partner is the only
earlier fact on that side. A fact told again takes away, with probability 1/2, the questions that cite an earlier
telling of it first (maximum likelihood over the four released files: 0.53). Each question draws a statement
uniformly among those some recorded chain cites first, then one of its chains and one of two wordings; it calls
bigger the outer object of the first-cited fact: "Is the big bigger than the small?" / "Does the small fit in the
big?" (yes) when that is the upper fact, "Is the small bigger than the big?" / "Does the big fit in the small?" (no)
when it is the lower one; support: the first-cited fact, then the other (as in all 10,000 questions of the files).
All 13,000 questions of the four released files ask a chain this rule records, citing first a fact it lets them cite
first. Hence the files' figures (ours from 10,000 stories, then uniform draws among all chained pairs): 57% of
stories ask about a single pair (56.5%; 39%); of two chained pairs sharing a fact on the same side of it (a block's only
chained pairs) only one is asked in 68% of blocks (67%; 6%), always the one with the earlier partner, and (but for
chance) both when the shared fact was told first; in a story's last block the newer fact is cited first in 68.7% of
questions (67.9%) and a support naming a fact told more than once names a later telling 23.1% of the time (22.3%; none);
31% of questions ask about a pair that also has a told fact of its own (33%). *Deviations from the Lua* (a chain of
``steps`` facts plus 2 to 7 random ones, all distinct, shuffled, then every pair at path length two asked once): the
block-of-five layout, repeated facts, the recorded questions and the early stops are the files'. Early stops (found from
the files; counts from the 2,175 whole stories of the en-10k files, whose test file is the en one and whose training
file begins with the en one): a block stops early only when the story has recorded a single chain (counting questions a
repeated fact took away), with probability 10/217 when the statements that the record lets a question cite first are one
in five of those told, 28/73 when fewer, and never when more (0 of 678 blocks) or with two chains or more (0 of 1,207
blocks). A stopped block asks 0, 1, 2, 3 or 4 questions (2, 1, 4, 16 and 15 of the files' 38 stops; one asking none
shows only as five more statements), all about that chain; the story goes on with five statements and a last block of
five questions (all 38; a story stops at most once), so it holds 5 to 9 questions. Figures, the files' then ours
(200,000 questions): a stopped block in 1.66% of whole stories (36 of 2,175) and 1.83%, of 3.25 and 3.28 questions on
average, always followed by five statements and five questions; stops per eligible block 10 of 217 and 28 of 73 (4.6 and
38%) against 4.4 and 40%. The stops' finer pattern is left as chance: at five statements they came only when the fact
told last formed the chain (8 of 95 such blocks, none of 98 formed earlier).

Task 19, path-finding. The six rooms, shuffled: a path of two unit steps from the first room to the third (the second
step never goes back: the twelve answers "n,e", "s,s", ... are equally likely, as in the files), then three decoy
rooms, each attached to a path room by a free side, drawn uniformly among the free (room, direction) sides of the
three path rooms (as in the files, where every decoy touches the path and the source, middle and target get 38, 25
and 38% of them: 3, 2 and 3 free sides). Sides are free per room, not per grid cell, so two decoys can land on the
same cell (7.4% of the files' stories). The map is told by the files' rule (found from them): again and again a room
is drawn uniformly among the six and one of its neighbours on the map uniformly; the pair, if not told yet, is told
next with the drawn room as the subject ("The office is north of the kitchen."), until all five pairs are told. So a
statement between rooms with a and b neighbours comes next with weight 1/a + 1/b (the files' maximum-likelihood power
of the neighbour counts: 1.0; the files' ten arrangements of path and decoy statements against this rule: chi-square
15 on 9 degrees of freedom), and names first the room with fewer neighbours with probability b / (a + b): a room with
one neighbour against one with two, three or four in 66.8, 75.6 and 78.9% of the files' statements (2/3, 3/4, 4/5).
Path statements join busier rooms, so they come late: a path statement stands at positions 1 to 5 in 31, 34, 37, 42
and 57% of the files' stories (ours: 31, 32, 37, 43, 57%; a uniform shuffle: 40% each); of the four statements after
the first, 2, 3 or 4 name a room named before in 8, 70.5 and 21% of the files' stories (ours 9, 70, 21%; a shuffle 4,
60, 35%); the first path statement names the source first in 57% of stories, the second names the middle room first
in 44%, a decoy statement the decoy in 73% (ours 57, 44, 72%). The question "How do you go from the A to the B?" is
answered with the comma-joined steps and supported by the two path statements in path order. *Deviations*: the Lua
has two decoys, checks with Yen's algorithm that no second path exists on the grid and shuffles the statements
uniformly; the files have three decoys, only the told tree and the telling order above.

Choices the files leave open: the order of the random draws.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from tasks.babi.generator import LOCATIONS, StoryMaker
from tasks.babi.generator_logic import _question_line

TASK_NAMES: dict[int, str] = {
    4: "two-arg-relations",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
}

# unit steps on a grid, x to the east and y to the north
STEPS: dict[str, tuple[int, int]] = {"n": (0, 1), "s": (0, -1), "e": (1, 0), "w": (-1, 0)}
OPPOSITE: dict[str, str] = {"n": "s", "s": "n", "e": "w", "w": "e"}
COMPASS: dict[str, str] = {"n": "north", "s": "south", "e": "east", "w": "west"}
COMPASS_OF: dict[str, str] = {step: f"{word} of" for step, word in COMPASS.items()}
RELATIVE: dict[str, str] = {"n": "above", "s": "below", "e": "to the right of", "w": "to the left of"}

SHAPES: tuple[str, ...] = ("triangle", "blue square", "pink rectangle", "red square", "red sphere", "yellow square")
SMALL_OBJECTS: tuple[str, ...] = ("chocolate", "box of chocolates")  # always the smallest, in this order
CONTAINERS: tuple[str, ...] = ("box", "chest", "container", "suitcase")  # bigger, in an order drawn per story

TWO_ARG_QUESTIONS = 1
POSITIONAL_QUESTIONS = 8
SIZE_QUESTIONS = 5  # questions in a task-18 block
SIZE_STORY_QUESTIONS = 2 * SIZE_QUESTIONS - 1  # the most a task-18 story holds: a block stopped early, then a whole one
PATH_QUESTIONS = 1
SIZE_STATEMENTS_PER_BLOCK = 5
DECOYS = 3

MIDDLE_OBJECT_PROBABILITY = 2 / 3  # task 4: a statement names the middle room as its object
SHARED_SUBJECT_PROBABILITY = 2 / 3  # task 17: a statement names the middle shape as its subject
RETOLD_DROP_PROBABILITY = 0.5  # task 18: a fact told again takes the questions of an earlier telling away
# task 18: how likely a block that can ask one chain only stops early, by the share of the told statements that a
# question can cite first (stops / blocks in the en-10k files), and how many questions a stopped block asks
ONE_IN_FIVE_STOP_PROBABILITY = 10 / 217  # exactly one statement in five
FEWER_STOP_PROBABILITY = 28 / 73  # fewer than one in five
STOPPED_BLOCK_WEIGHTS = (2, 1, 4, 16, 15)  # stops after 0, 1, 2, 3 and 4 questions

_Fact = tuple[str, str, str]  # (subject, direction of the subject from the object, object)


def _check_count(babi_id: int, n_questions: int, most: int) -> None:
    if not 0 < n_questions <= most:
        raise ValueError(f"a task-{babi_id} story holds 1 to {most} questions, not {n_questions}")


def _oriented(near: str, far: str, step: str, far_first: bool) -> _Fact:
    """The fact "far is ``step`` of near", or the same told the other way round."""
    return (far, step, near) if far_first else (near, OPPOSITE[step], far)


def _statement_lines(facts: Sequence[_Fact], words: dict[str, str]) -> list[str]:
    """Numbered statements "The A is <words[direction]> the B." from id 1."""
    return [f"{i} The {subject} is {words[step]} the {obj}.\n" for i, (subject, step, obj) in enumerate(facts, 1)]


def two_arg_relations_story(rng: random.Random, n_questions: int = TWO_ARG_QUESTIONS) -> list[str]:
    """Lines of one task-4 story: two statements about three rooms in a line, then one question."""
    _check_count(4, n_questions, TWO_ARG_QUESTIONS)
    rooms = rng.sample(LOCATIONS, 3)  # rooms[k] lies k steps along ``step`` from rooms[0]
    step = rng.choice(("n", "e"))
    facts = []
    for near, far in ((rooms[1], rooms[0]), (rooms[1], rooms[2])):  # middle room, end room
        outward = step if far == rooms[2] else OPPOSITE[step]
        facts.append(_oriented(near, far, outward, rng.random() < MIDDLE_OBJECT_PROBABILITY))
    rng.shuffle(facts)
    told = rng.randrange(2)
    subject, direction, obj = facts[told]
    if rng.random() < 0.5:
        question = f"What is {COMPASS[direction]} of the {obj}?"
    else:
        question = f"What is the {obj} {COMPASS[OPPOSITE[direction]]} of?"
    return [*_statement_lines(facts, COMPASS_OF), _question_line(3, question, subject, (told + 1,))]


def _relations_of(offset: tuple[int, int]) -> dict[str, bool]:
    """For each step direction, whether a shape at ``offset`` from another lies that way of it."""
    dx, dy = offset
    return {"e": dx > 0, "w": dx < 0, "n": dy > 0, "s": dy < 0}


def positional_story(rng: random.Random, n_questions: int = POSITIONAL_QUESTIONS) -> list[str]:
    """Lines of one task-17 story: two statements placing three shapes, then ``n_questions`` (at most eight)
    yes/no questions about the two end shapes."""
    _check_count(17, n_questions, POSITIONAL_QUESTIONS)
    first, middle, last = rng.sample(SHAPES, 3)
    step1 = rng.choice(tuple(STEPS))
    step2 = rng.choice([step for step in STEPS if step != OPPOSITE[step1]])
    facts = [
        _oriented(first, middle, step1, rng.random() < SHARED_SUBJECT_PROBABILITY),
        _oriented(middle, last, step2, rng.random() >= SHARED_SUBJECT_PROBABILITY),
    ]
    position = {first: (0, 0), middle: STEPS[step1]}
    position[last] = (position[middle][0] + STEPS[step2][0], position[middle][1] + STEPS[step2][1])
    told_in = {first: 1, last: 2}
    lines = _statement_lines(facts, RELATIVE)
    for _ in range(n_questions):
        x, y = (first, last) if rng.random() < 0.5 else (last, first)
        truth = rng.random() < 0.5
        offset = (position[x][0] - position[y][0], position[x][1] - position[y][1])
        relation = rng.choice([step for step, holds in _relations_of(offset).items() if holds == truth])
        question = f"Is the {x} {RELATIVE[relation]} the {y}?"
        answer = "yes" if truth else "no"
        lines.append(_question_line(len(lines) + 1, question, answer, (told_in[x], told_in[y])))
    return lines


def _size_order(rng: random.Random) -> dict[str, int]:
    """Rank of each object, 0 for the smallest."""
    order = [*SMALL_OBJECTS, *rng.sample(CONTAINERS, len(CONTAINERS))]
    return {obj: rank for rank, obj in enumerate(order)}


def _size_statement(rng: random.Random, rank: dict[str, int]) -> tuple[str, str, str]:
    """(bigger, smaller, sentence) for a pair drawn uniformly."""
    small, big = sorted(rng.sample(list(rank), 2), key=rank.__getitem__)
    if rng.random() < 0.5:
        return big, small, f"The {small} fits inside the {big}"
    return big, small, f"The {big} is bigger than the {small}"


@dataclass
class _SizeFact:
    """One told size statement "big > small" and whether, when it was told, it found an earlier partner above it
    (a fact "x > big") and below it (a fact "small > z")."""

    line_id: int
    big: str
    small: str
    linked_above: bool = False
    linked_below: bool = False


@dataclass
class _SizeQuestions:
    """The questions a task-18 story can ask: statement id -> the chains (upper id, lower id) of two facts that a
    question citing that statement first may ask about."""

    told: list[_SizeFact] = field(default_factory=list)
    first_cited: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    recorded: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # the same, none taken away

    def tell(self, rng: random.Random, fact: _SizeFact) -> None:
        """Record a new statement: a fact told again takes the questions of each earlier telling away with
        probability RETOLD_DROP_PROBABILITY; then the new fact links to one partner on each side."""
        for earlier in self.told:
            if (earlier.big, earlier.small) == (fact.big, fact.small) and earlier.line_id in self.first_cited:
                if rng.random() < RETOLD_DROP_PROBABILITY:
                    del self.first_cited[earlier.line_id]
        self._link(fact, below=False)
        self._link(fact, below=True)
        self.told.append(fact)

    def _link(self, fact: _SizeFact, below: bool) -> None:
        """Chain ``fact`` with the earliest earlier fact on one side that did not link towards it when it was told
        itself; the chain is asked citing ``fact`` first, and citing the partner first too when the partner is the
        only earlier fact on that side."""
        if below:  # partners "fact.small > z"
            side = [other for other in self.told if other.big == fact.small]
            free = [other for other in side if not other.linked_above]
        else:  # partners "x > fact.big"
            side = [other for other in self.told if other.small == fact.big]
            free = [other for other in side if not other.linked_below]
        if not free:
            return
        partner = free[0]
        if below:
            chain, fact.linked_below = (fact.line_id, partner.line_id), True
        else:
            chain, fact.linked_above = (partner.line_id, fact.line_id), True
        for cited in (self.first_cited, self.recorded):
            cited.setdefault(fact.line_id, []).append(chain)
            if len(side) == 1:
                cited.setdefault(partner.line_id, []).append(chain)

    def block_size(self, rng: random.Random) -> int:
        """How many questions the next block asks: SIZE_QUESTIONS, or fewer (from none to four) when it stops early,
        which only a block of a story that has recorded one chain does (questions taken away by a repeated fact
        count here), the likelier the fewer of the told statements the record lets a question cite first."""
        chains = {chain for cited in self.recorded.values() for chain in cited}
        cited_per_five = len(self.recorded) * SIZE_STATEMENTS_PER_BLOCK  # against the number told
        if len(chains) != 1 or cited_per_five > len(self.told):
            return SIZE_QUESTIONS
        stop = ONE_IN_FIVE_STOP_PROBABILITY if cited_per_five == len(self.told) else FEWER_STOP_PROBABILITY
        if rng.random() >= stop:
            return SIZE_QUESTIONS
        return rng.choices(range(len(STOPPED_BLOCK_WEIGHTS)), STOPPED_BLOCK_WEIGHTS)[0]

    def question(self, rng: random.Random) -> tuple[str, str, tuple[int, int]]:
        """(question, answer, support): a statement drawn uniformly among those a question can cite first, one of
        its chains, one of the two wordings. The question calls bigger the object of the first-cited fact's outer
        end: the big end of the upper fact ("yes") or the small end of the lower fact ("no")."""
        first = rng.choice(sorted(self.first_cited))
        upper, lower = rng.choice(self.first_cited[first])
        facts = {fact.line_id: fact for fact in self.told}
        big, small = facts[upper].big, facts[lower].small
        if first == upper:
            if rng.random() < 0.5:
                return f"Is the {big} bigger than the {small}?", "yes", (upper, lower)
            return f"Does the {small} fit in the {big}?", "yes", (upper, lower)
        if rng.random() < 0.5:
            return f"Is the {small} bigger than the {big}?", "no", (lower, upper)
        return f"Does the {big} fit in the {small}?", "no", (lower, upper)


def size_story(rng: random.Random, n_questions: int = SIZE_STORY_QUESTIONS) -> list[str]:
    """Lines of one task-18 story: blocks of five statements until a question can be asked, then five questions,
    or (once per story at most) a block stopped early, five more statements and five questions; the story ends
    early once ``n_questions`` (at most nine) are asked."""
    _check_count(18, n_questions, SIZE_STORY_QUESTIONS)
    rank = _size_order(rng)
    lines: list[str] = []
    asks = _SizeQuestions()
    stopped = False  # whether a block stopped early
    while n_questions:
        for _ in range(SIZE_STATEMENTS_PER_BLOCK):
            big, small, text = _size_statement(rng, rank)
            lines.append(f"{len(lines) + 1} {text}.\n")
            asks.tell(rng, _SizeFact(len(lines), big, small))
        if not asks.first_cited:
            continue
        block = SIZE_QUESTIONS if stopped else asks.block_size(rng)
        asked = min(block, n_questions)
        for _ in range(asked):
            question, answer, support = asks.question(rng)
            lines.append(_question_line(len(lines) + 1, question, answer, support))
        n_questions -= asked
        if block == SIZE_QUESTIONS:
            break
        stopped = True
    return lines


def _free_sides(facts: Sequence[_Fact], rooms: Sequence[str]) -> list[tuple[str, str]]:
    """(room, direction) of every side of ``rooms`` that no statement uses yet."""
    used = {(obj, step) for _, step, obj in facts} | {(subject, OPPOSITE[step]) for subject, step, _ in facts}
    return [(room, step) for room in rooms for step in STEPS if (room, step) not in used]


def _tell_map(rng: random.Random, rooms: Sequence[str], facts: Sequence[_Fact]) -> list[_Fact]:
    """The statements of a map in the files' order and wording: again and again a room is drawn uniformly among
    ``rooms`` and one of its neighbours uniformly; the pair, if not told yet, is told next with the drawn room as
    the subject ("The <room> is <direction> of the <neighbour>.")."""
    beside: dict[str, list[tuple[str, str]]] = {room: [] for room in rooms}  # room -> (its direction, neighbour)
    for subject, step, obj in facts:
        beside[subject].append((step, obj))
        beside[obj].append((OPPOSITE[step], subject))
    told: list[_Fact] = []
    pairs: set[frozenset[str]] = set()
    while len(told) < len(facts):
        room = rng.choice(rooms)
        step, neighbour = rng.choice(beside[room])
        if frozenset((room, neighbour)) not in pairs:
            pairs.add(frozenset((room, neighbour)))
            told.append((room, step, neighbour))
    return told


def path_finding_story(rng: random.Random, n_questions: int = PATH_QUESTIONS) -> list[str]:
    """Lines of one task-19 story: five statements (a two-step path and three decoys), then one question."""
    _check_count(19, n_questions, PATH_QUESTIONS)
    rooms = rng.sample(LOCATIONS, len(LOCATIONS))
    source, middle, target, *decoys = rooms
    step1 = rng.choice(tuple(STEPS))
    step2 = rng.choice([step for step in STEPS if step != OPPOSITE[step1]])
    facts = [(middle, step1, source), (target, step2, middle)]  # (room, its direction from the other, other)
    for decoy in decoys[:DECOYS]:
        room, step = rng.choice(_free_sides(facts, (source, middle, target)))
        facts.append((decoy, step, room))
    told = _tell_map(rng, rooms[: 3 + DECOYS], facts)
    support = tuple(_told_index(told, *pair) for pair in ((source, middle), (middle, target)))
    question = f"How do you go from the {source} to the {target}?"
    return [*_statement_lines(told, COMPASS_OF), _question_line(6, question, f"{step1},{step2}", support)]


def _told_index(told: Sequence[_Fact], a: str, b: str) -> int:
    """Line id (from 1) of the statement relating rooms ``a`` and ``b``."""
    return next(i for i, (subject, _, obj) in enumerate(told, 1) if {subject, obj} == {a, b})


STORIES: dict[int, tuple[StoryMaker, int]] = {
    4: (two_arg_relations_story, TWO_ARG_QUESTIONS),
    17: (positional_story, POSITIONAL_QUESTIONS),
    18: (size_story, SIZE_STORY_QUESTIONS),
    19: (path_finding_story, PATH_QUESTIONS),
}
