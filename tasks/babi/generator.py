"""A seeded, pure-Python generator for the 20 bAbI QA tasks (Weston et al., 2015).

This module holds tasks 1, 6, 11 and 12 and the public entry points; the other tasks are written by the family
modules of ``FAMILY_MODULES``: tasks 2 and 3 in :mod:`tasks.babi.generator_objects`, 4, 17, 18 and 19 in
:mod:`tasks.babi.generator_spatial`, 5, 13, 14 and 20 in :mod:`tasks.babi.generator_narrative`, 7 to 10 in
:mod:`tasks.babi.generator_holdings`, 15 and 16 in :mod:`tasks.babi.generator_logic`. Each module's docstring
gives its tasks' worlds, templates and rules, and where the released files made it depart from the original
generator.

The official bAbI tasks were produced by a Lua/Torch generator (facebookarchive/bAbI-tasks) that cannot
be run here. This module is an independent reimplementation of the four tasks whose world is just four
people moving between six rooms. It writes text in the v1.2 file format, byte for byte the same
conventions as the released files::

    1 Mary moved to the bathroom.
    2 John went to the hallway.
    3 Where is Mary? \tbathroom\t1

Every story restarts its line ids at 1; statements end with "."; a question line is the question, a
space, a tab, the answer, a tab and the space-separated ids of the supporting statements. Lines end
with "\\n". It does **not** reproduce the released files: they came from a random generator whose
exact stream is unrecoverable (the Lua generator could not regenerate them either). What it matches
are their vocabulary, templates, story layout and statistics, measured on the en-10k files.

World: actors Mary, Sandra (she) and John, Daniel (he); rooms bathroom, bedroom, garden, hallway,
kitchen, office; movement verbs "moved to", "went to", "went back to", "journeyed to",
"travelled to"; task 6 also has the objects apple, football and milk. Nobody ever moves to the room
they are already in, and every random choice is uniform unless said otherwise.

A story holds five questions. Before each question come two new statements, then the question's
subject is drawn uniformly from the last five *mentions* of actors (each statement mentions its
subject; "A and B ..." mentions A then B; a pronoun statement mentions its referent), keeping only
actors whose latest move is among the last five statements. This one rule reproduces, in all four
tasks, the released files' distribution of how far back the supporting fact lies (never more than
five statements back; in task 11 the first of its two supporting facts can be six back). If no
mention qualifies (possible only in task 6, after two object statements), no question is asked and
two more statements follow, so task-6 stories are sometimes longer than 15 lines, as in the
released file.

* Task 1, single-supporting-fact: statements "X <verb> the L."; question "Where is X?", answered with
  X's current room, supported by X's latest move.
* Task 6, yes-no-questions: as task 1, but about a third of the statements are object distractors
  that change no one's location: "X got/took/grabbed/picked up the O there." and "X dropped/left/
  discarded/put down the O." (with " there" before the full stop a fifth of the time). An object is
  picked up only when no one holds it and it lies where the actor is (or has never been put down),
  and dropped only by its holder. The action weights are fitted to the released file (about 68%
  moves, 21% pick-ups, 11% drops). The question is "Is X in the L?": "yes" with probability 1/2 (L is
  X's room), otherwise "no" with L one of the five other rooms; supported by X's latest move.
* Task 11, basic-coreference: each pair of statements is "X <verb> the L1." followed by "<Opener>
  he/she <verb> the L2." (openers "After that", "Afterwards", "Following that", "Then"; L2 differs
  from L1). "Where is X?" is supported by both ids of X's latest pair.
* Task 12, conjunction: statements "A and B <verb> the L." with two different actors and L different
  from both their rooms; "Where is X?" is supported by the latest statement mentioning X.

Where the released data leaves a detail open (e.g. how object distractors are chosen), the simplest
consistent rule that reproduces the files' statistics is used.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pathlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.runs import atomic_write

GENERATOR_VERSION = 1  # bump when the same (task, seed, counts) would give other files: cached data and run ids move
SUPPORTED_TASKS: dict[int, str] = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    4: "two-arg-relations",
    5: "three-arg-relations",
    6: "yes-no-questions",
    7: "counting",
    8: "lists-sets",
    9: "simple-negation",
    10: "indefinite-knowledge",
    11: "basic-coreference",
    12: "conjunction",
    13: "compound-coreference",
    14: "time-reasoning",
    15: "basic-deduction",
    16: "basic-induction",
    17: "positional-reasoning",
    18: "size-reasoning",
    19: "path-finding",
    20: "agents-motivations",
}
# Where the stories of the tasks not written here are: each module has STORIES {task: (story function, questions
# a story holds)} and TASK_NAMES. Imported when used, since those modules take their word lists from this one.
FAMILY_MODULES: dict[str, tuple[int, ...]] = {
    "tasks.babi.generator_objects": (2, 3),
    "tasks.babi.generator_spatial": (4, 17, 18, 19),
    "tasks.babi.generator_narrative": (5, 13, 14, 20),
    "tasks.babi.generator_holdings": (7, 8, 9, 10),
    "tasks.babi.generator_logic": (15, 16),
}

ACTORS: tuple[str, ...] = ("Mary", "John", "Sandra", "Daniel")
FEMALE: frozenset[str] = frozenset({"Mary", "Sandra"})
LOCATIONS: tuple[str, ...] = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
MOVE_VERBS: tuple[str, ...] = ("moved to", "went to", "went back to", "journeyed to", "travelled to")
OBJECTS: tuple[str, ...] = ("apple", "football", "milk")
TAKE_VERBS: tuple[str, ...] = ("got", "took", "grabbed", "picked up")
DROP_VERBS: tuple[str, ...] = ("dropped", "left", "discarded", "put down")
COREF_OPENERS: tuple[str, ...] = ("After that", "Afterwards", "Following that", "Then")

QUESTIONS_PER_STORY = 5
STATEMENTS_PER_QUESTION = 2
MENTION_WINDOW = 5

# Task 6 distractors: relative weights of one move, picking up one given object, dropping something.
_MOVE_WEIGHT = 1.0
_TAKE_WEIGHT_PER_OBJECT = 0.16
_DROP_WEIGHT = 2.0
_DROP_THERE_PROBABILITY = 0.2
_YES_PROBABILITY = 0.5

_SPLITS = ("train", "test")


class UnsupportedTaskError(ValueError):
    """The built-in generator does not cover the requested bAbI task."""


@dataclass
class _Story:
    """One story being written, with the world state its statements establish."""

    lines: list[str] = field(default_factory=list)
    location: dict[str, str] = field(default_factory=dict)
    support: dict[str, tuple[int, ...]] = field(default_factory=dict)
    mentions: list[str] = field(default_factory=list)
    statement_ids: list[int] = field(default_factory=list)
    holder: dict[str, str] = field(default_factory=dict)  # object -> actor carrying it
    place: dict[str, str] = field(default_factory=dict)  # object -> where it was put down

    def add_statement(self, text: str, mentioned: Sequence[str]) -> int:
        line_id = len(self.lines) + 1
        self.lines.append(f"{line_id} {text}.\n")
        self.statement_ids.append(line_id)
        self.mentions.extend(mentioned)
        return line_id

    def add_question(self, question: str, answer: str, support: Sequence[int]) -> None:
        ids = " ".join(str(i) for i in support)
        self.lines.append(f"{len(self.lines) + 1} {question} \t{answer}\t{ids}\n")

    def record_move(self, actor: str, room: str, support: tuple[int, ...]) -> None:
        self.location[actor] = room
        self.support[actor] = support

    def place_token(self, actor: str) -> str:
        """Where ``actor`` is; an actor not yet seen moving is somewhere of their own, unnamed."""
        return self.location.get(actor, f"?{actor}")


def _check_task(babi_id: int) -> None:
    if babi_id not in SUPPORTED_TASKS:
        ids = ", ".join(str(i) for i in SUPPORTED_TASKS)
        raise UnsupportedTaskError(
            f"the built-in bAbI generator covers tasks {ids}; task {babi_id} is not one of them"
        )


def _destination(story: _Story, rng: random.Random, actors: Sequence[str]) -> str:
    """A room none of ``actors`` is in."""
    here = {story.location.get(actor) for actor in actors}
    return rng.choice([room for room in LOCATIONS if room not in here])


def _move_statement(story: _Story, rng: random.Random, actor: str) -> None:
    room = _destination(story, rng, [actor])
    line_id = story.add_statement(f"{actor} {rng.choice(MOVE_VERBS)} the {room}", [actor])
    story.record_move(actor, room, (line_id,))


def _block_single(story: _Story, rng: random.Random) -> None:
    for _ in range(STATEMENTS_PER_QUESTION):
        _move_statement(story, rng, rng.choice(ACTORS))


def _take_statement(story: _Story, rng: random.Random, actor: str, takeable: Sequence[str]) -> None:
    obj = rng.choice(takeable)
    story.add_statement(f"{actor} {rng.choice(TAKE_VERBS)} the {obj} there", [actor])
    story.holder[obj] = actor
    story.place.pop(obj, None)


def _drop_statement(story: _Story, rng: random.Random, actor: str, held: Sequence[str]) -> None:
    obj = rng.choice(held)
    there = " there" if rng.random() < _DROP_THERE_PROBABILITY else ""
    story.add_statement(f"{actor} {rng.choice(DROP_VERBS)} the {obj}{there}", [actor])
    del story.holder[obj]
    story.place[obj] = story.place_token(actor)


def _distractor_statement(story: _Story, rng: random.Random) -> None:
    """One task-6 statement: a move, or picking up / putting down an object."""
    actor = rng.choice(ACTORS)
    here = story.place_token(actor)
    held = [obj for obj in OBJECTS if story.holder.get(obj) == actor]
    takeable = [obj for obj in OBJECTS if obj not in story.holder and story.place.get(obj, here) == here]
    take_weight = _TAKE_WEIGHT_PER_OBJECT * len(takeable)
    drop_weight = _DROP_WEIGHT if held else 0.0
    draw = rng.random() * (_MOVE_WEIGHT + take_weight + drop_weight)
    if draw < take_weight:
        _take_statement(story, rng, actor, takeable)
    elif draw < take_weight + drop_weight:
        _drop_statement(story, rng, actor, held)
    else:
        _move_statement(story, rng, actor)


def _block_distractors(story: _Story, rng: random.Random) -> None:
    for _ in range(STATEMENTS_PER_QUESTION):
        _distractor_statement(story, rng)


def _block_coreference(story: _Story, rng: random.Random) -> None:
    actor = rng.choice(ACTORS)
    first = _destination(story, rng, [actor])
    first_id = story.add_statement(f"{actor} {rng.choice(MOVE_VERBS)} the {first}", [actor])
    story.record_move(actor, first, (first_id,))
    second = _destination(story, rng, [actor])
    pronoun = "she" if actor in FEMALE else "he"
    text = f"{rng.choice(COREF_OPENERS)} {pronoun} {rng.choice(MOVE_VERBS)} the {second}"
    second_id = story.add_statement(text, [actor])
    story.record_move(actor, second, (first_id, second_id))


def _block_conjunction(story: _Story, rng: random.Random) -> None:
    for _ in range(STATEMENTS_PER_QUESTION):
        pair = rng.sample(ACTORS, 2)
        room = _destination(story, rng, pair)
        line_id = story.add_statement(f"{pair[0]} and {pair[1]} {rng.choice(MOVE_VERBS)} the {room}", pair)
        for actor in pair:
            story.record_move(actor, room, (line_id,))


def _ask_where(story: _Story, rng: random.Random, actor: str) -> None:
    story.add_question(f"Where is {actor}?", story.location[actor], story.support[actor])


def _ask_yes_no(story: _Story, rng: random.Random, actor: str) -> None:
    room = story.location[actor]
    if rng.random() < _YES_PROBABILITY:
        answer = "yes"
    else:
        answer = "no"
        room = rng.choice([other for other in LOCATIONS if other != room])
    story.add_question(f"Is {actor} in the {room}?", answer, story.support[actor])


_Step = Callable[[_Story, random.Random], None]
_Ask = Callable[[_Story, random.Random, str], None]
StoryMaker = Callable[[random.Random, int], list[str]]  # (rng, questions in this story) -> the story's lines

_RECIPES: dict[int, tuple[_Step, _Ask]] = {
    1: (_block_single, _ask_where),
    6: (_block_distractors, _ask_yes_no),
    11: (_block_coreference, _ask_where),
    12: (_block_conjunction, _ask_where),
}


def _question_subject(story: _Story, rng: random.Random) -> str | None:
    """An actor drawn from the last few mentions, among those whose latest move is one of the last few
    statements (None if there is none)."""
    recent = set(story.statement_ids[-MENTION_WINDOW:])
    candidates = [
        actor
        for actor in story.mentions[-MENTION_WINDOW:]
        if actor in story.support and story.support[actor][-1] in recent
    ]
    return rng.choice(candidates) if candidates else None


def _generate_story(babi_id: int, rng: random.Random, n_questions: int) -> list[str]:
    step, ask = _RECIPES[babi_id]
    story = _Story()
    asked = 0
    while asked < n_questions:
        step(story, rng)
        actor = _question_subject(story, rng)
        if actor is not None:
            ask(story, rng, actor)
            asked += 1
    return story.lines


def _story_maker(babi_id: int) -> tuple[StoryMaker, int]:
    """The story function of a task and the number of questions its stories hold (at most, for task 20)."""
    for module, tasks in FAMILY_MODULES.items():
        if babi_id in tasks:
            return importlib.import_module(module).STORIES[babi_id]
    return (lambda rng, n: _generate_story(babi_id, rng, n)), QUESTIONS_PER_STORY


def generate_stories(babi_id: int, n_questions: int, seed: int) -> list[str]:
    """Lines (each ending with '\\n') of whole stories in the official format, with exactly ``n_questions``
    question lines. A story holds the task's number of questions (five for most tasks; task 15: four, task 16:
    one; task 20: 8 to 12, as many as its world gives); the last story ends right after the ``n_questions``-th
    question line. Same arguments -> same lines.
    """
    _check_task(babi_id)
    if n_questions < 0:
        raise ValueError(f"n_questions must be >= 0, got {n_questions}")
    make_story, per_story = _story_maker(babi_id)
    rng = random.Random(seed)
    lines: list[str] = []
    remaining = n_questions
    while remaining > 0:
        story = make_story(rng, min(per_story, remaining))
        lines.extend(story)
        remaining -= sum("\t" in line for line in story)
    return lines


def file_name(babi_id: int, split: str) -> str:
    """The official file name, e.g. ``file_name(1, "train") == "qa1_single-supporting-fact_train.txt"``."""
    _check_task(babi_id)
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {', '.join(_SPLITS)}; got {split!r}")
    return f"qa{babi_id}_{SUPPORTED_TASKS[babi_id]}_{split}.txt"


def _split_seed(seed: int, babi_id: int, split: str) -> int:
    """An independent seed per (seed, task, split), stable across Python versions and platforms."""
    digest = hashlib.sha256(f"babi:{seed}:{babi_id}:{split}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def write_dataset(
    out_dir: str | os.PathLike[str], babi_id: int, seed: int, n_train: int = 10000, n_test: int = 1000
) -> dict[str, pathlib.Path]:
    """Writes the train and test files (official names) into ``out_dir``, each atomically (temporary file
    then ``os.replace``, with the mode this process's umask gives a new file), and returns
    ``{"train": path, "test": path}``. Train and test are drawn from different seeds derived from ``seed``, so
    they are independent; same arguments -> identical bytes.
    """
    _check_task(babi_id)
    directory = pathlib.Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, pathlib.Path] = {}
    for split, n_questions in (("train", n_train), ("test", n_test)):
        lines = generate_stories(babi_id, n_questions, _split_seed(seed, babi_id, split))
        path = directory / file_name(babi_id, split)
        text = "".join(lines).encode("ascii")
        atomic_write(path, lambda handle, text=text: handle.write(text))
        paths[split] = path
    return paths
