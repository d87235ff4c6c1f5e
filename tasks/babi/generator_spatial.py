"""bAbI tasks 4 (two-arg-relations), 17 (positional-reasoning), 18 (size-reasoning) and 19 (path-finding): rooms,
shapes and boxes placed relative to one another (Weston et al., 2015, §3 tasks 4, 17, 18 and 19).

Recipes of the original Lua generator (facebookarchive/bAbI-tasks: ``lua/babi/tasks/IsDir.lua``,
``PositionalReasoning.lua``, ``Size.lua``, ``PathFinding.lua``, the world of ``lua/babi/tasks/worlds/world_sizes.txt``
and the templates ``Dir``, ``EvalDir``, ``YesNoDir``, ``SimpleOrdering``, ``EvalOrdering`` and ``Path`` of
``lua/babi/stringify.lua``), with every detail where the released v1.2 files disagree with that code taken from the
files (they came from an earlier version of the generator). In all four tasks the question is followed directly by
the tab (no space), as in the files; every random choice is uniform unless said otherwise. Fractions quoted below
are of the en-10k training file.

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
five, the pairs that a chain of two told facts (big > middle > small) orders can be asked about. If there is none,
five more statements follow; otherwise the story ends with five questions, each on a pair drawn uniformly among
those and one of its chains (middle drawn uniformly when several chains order the pair; a fact told twice is cited
by its first statement). The question calls bigger ("Is the X bigger than ...", "Does ... fit in the X?") the end
object of the chain's newer fact with probability 0.69 (the files: 69.1%), otherwise the other end, each of the two
wordings one half: "Is the big bigger than the small?" / "Does the small fit in the big?" (yes), "Is the small
bigger than the big?" / "Does the big fit in the small?" (no). Support: the two facts of the chain, starting from
the object the question calls bigger ("Is the chocolate bigger than the suitcase?": the chocolate's fact first), as
in all 10,000 questions of the files; so the newer fact is cited first in 69% of questions. *Deviations from the
Lua* (a chain of ``steps`` facts plus 2 to 7 random ones, all distinct, shuffled, then every pair at path length two
asked once): the block-of-five layout, repeated facts and pairs asked several times are the files'. The files' pairs
also have a told fact of their own in 31% of the questions, which this rule allows too. What is not reproduced: in
1.7% of the files' stories a block stops after one to four questions and the story goes on (8 or 9 questions); and
the files ask about fewer different pairs per block than uniform draws (a block with two pairs sharing a fact asks
only one of them in about 70% of cases), which comes from the original's graph walk that the files do not pin down;
the files cite a later copy of a repeated fact about one time in five.

Task 19, path-finding. The six rooms, shuffled: a path of two unit steps from the first room to the third (the
second step never goes back: the twelve answers "n,e", "s,s", ... are equally likely, as in the files), then three
decoy rooms, each attached to a path room by a free side, drawn uniformly among the free (room, direction) sides of
the three path rooms (as in the files, where every decoy touches the path and the source, middle and target get 38,
25 and 38% of them: 3, 2 and 3 free sides). Sides are free per room, not per grid cell, so two decoys can land on
the same cell (7.4% of the files' stories). Each statement "The A is north of the B." names the room farther from
the source as its subject with probability 0.56 for path steps and the decoy with probability 0.73 (the files' 56.3%
and 72.9%). The five statements are shuffled uniformly (as the Lua); the question "How do you go from the A to the
B?" is answered with the comma-joined steps and supported by the two path statements in path order. *Deviations*:
the Lua has two decoys and checks with Yen's algorithm that no second path exists on the grid; the files have three
decoys and only the told tree. The files put the path statements later in the story than a uniform shuffle does
(the last statement is a path step in 57% of stories, a uniform shuffle: 40%); that bias is not reproduced.

Choices the files leave open: the order of the random draws.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

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
SIZE_QUESTIONS = 5
PATH_QUESTIONS = 1
SIZE_STATEMENTS_PER_BLOCK = 5
DECOYS = 3

MIDDLE_OBJECT_PROBABILITY = 2 / 3  # task 4: a statement names the middle room as its object
SHARED_SUBJECT_PROBABILITY = 2 / 3  # task 17: a statement names the middle shape as its subject
PATH_FAR_SUBJECT_PROBABILITY = 0.56  # task 19: a path statement names the room farther from the source first
DECOY_SUBJECT_PROBABILITY = 0.73  # task 19: a decoy statement names the decoy first
NEWER_FIRST_PROBABILITY = 0.69  # task 18: a question calls bigger the object of the newer fact of its chain

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


def _chains(first_told: dict[tuple[str, str], int]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(big, small) -> the (big > middle, middle > small) statement ids of every chain of two told facts."""
    chains: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for (big, middle), upper in first_told.items():
        for (top, small), lower in first_told.items():
            if top == middle:
                chains.setdefault((big, small), []).append((upper, lower))
    return chains


def _size_question(
    rng: random.Random, big: str, small: str, chain: tuple[int, int]
) -> tuple[str, str, tuple[int, int]]:
    """(question, answer, support) about a chain ``(upper, lower)`` = ids of "big > middle" and "middle > small".
    The question calls bigger the object of the newer fact with probability NEWER_FIRST_PROBABILITY; the support
    starts from that object's fact."""
    upper, lower = chain
    newer_is_upper = upper > lower
    if (rng.random() < NEWER_FIRST_PROBABILITY) == newer_is_upper:  # the question calls the big one bigger
        if rng.random() < 0.5:
            return f"Is the {big} bigger than the {small}?", "yes", (upper, lower)
        return f"Does the {small} fit in the {big}?", "yes", (upper, lower)
    if rng.random() < 0.5:
        return f"Is the {small} bigger than the {big}?", "no", (lower, upper)
    return f"Does the {big} fit in the {small}?", "no", (lower, upper)


def size_story(rng: random.Random, n_questions: int = SIZE_QUESTIONS) -> list[str]:
    """Lines of one task-18 story: blocks of five statements until a chain of two facts exists, then
    ``n_questions`` (at most five) questions."""
    _check_count(18, n_questions, SIZE_QUESTIONS)
    rank = _size_order(rng)
    lines: list[str] = []
    first_told: dict[tuple[str, str], int] = {}  # (bigger, smaller) -> id of its first statement
    while True:
        for _ in range(SIZE_STATEMENTS_PER_BLOCK):
            big, small, text = _size_statement(rng, rank)
            lines.append(f"{len(lines) + 1} {text}.\n")
            first_told.setdefault((big, small), len(lines))
        chains = _chains(first_told)
        if chains:
            break
    pairs = sorted(chains)
    for _ in range(n_questions):
        big, small = rng.choice(pairs)
        question, answer, support = _size_question(rng, big, small, rng.choice(chains[big, small]))
        lines.append(_question_line(len(lines) + 1, question, answer, support))
    return lines


def _free_sides(facts: Sequence[_Fact], rooms: Sequence[str]) -> list[tuple[str, str]]:
    """(room, direction) of every side of ``rooms`` that no statement uses yet."""
    used = {(obj, step) for _, step, obj in facts} | {(subject, OPPOSITE[step]) for subject, step, _ in facts}
    return [(room, step) for room in rooms for step in STEPS if (room, step) not in used]


def path_finding_story(rng: random.Random, n_questions: int = PATH_QUESTIONS) -> list[str]:
    """Lines of one task-19 story: five statements (a two-step path and three decoys), then one question."""
    _check_count(19, n_questions, PATH_QUESTIONS)
    source, middle, target, *decoys = rng.sample(LOCATIONS, len(LOCATIONS))
    step1 = rng.choice(tuple(STEPS))
    step2 = rng.choice([step for step in STEPS if step != OPPOSITE[step1]])
    path = [
        _oriented(source, middle, step1, rng.random() < PATH_FAR_SUBJECT_PROBABILITY),
        _oriented(middle, target, step2, rng.random() < PATH_FAR_SUBJECT_PROBABILITY),
    ]
    facts = list(path)
    for decoy in decoys[:DECOYS]:
        room, step = rng.choice(_free_sides(facts, (source, middle, target)))
        facts.append(_oriented(room, decoy, step, rng.random() < DECOY_SUBJECT_PROBABILITY))
    rng.shuffle(facts)
    support = (facts.index(path[0]) + 1, facts.index(path[1]) + 1)
    question = f"How do you go from the {source} to the {target}?"
    return [*_statement_lines(facts, COMPASS_OF), _question_line(6, question, f"{step1},{step2}", support)]


STORIES: dict[int, tuple[StoryMaker, int]] = {
    4: (two_arg_relations_story, TWO_ARG_QUESTIONS),
    17: (positional_story, POSITIONAL_QUESTIONS),
    18: (size_story, SIZE_QUESTIONS),
    19: (path_finding_story, PATH_QUESTIONS),
}
