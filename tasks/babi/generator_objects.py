"""bAbI tasks 2 (two-supporting-facts) and 3 (three-supporting-facts): people moving between rooms, picking up
and putting down objects (Weston et al., 2015, §3 tasks 2 and 3).

Recipe of the original Lua generator (facebookarchive/bAbI-tasks: ``lua/babi/tasks/WhereIsObject.lua`` for task
2, ``lua/babi/tasks/WhereWasObject.lua`` for task 3, the world of ``lua/babi/tasks/worlds/world_basic.txt``, the
templates of ``lua/babi/stringify.lua``), with every detail where the released v1.2 files disagree with that code
taken from the files (they came from an earlier version of the generator). Output lines follow the conventions of
:mod:`tasks.babi.generator`; the question line is "question, space, tab, answer, tab, supporting ids".

World. Actors Mary, John, Sandra, Daniel; rooms bathroom, bedroom, garden, hallway, kitchen, office; objects
apple, football, milk. Every actor and every object starts in a room drawn uniformly from the six, which the story
never states (*deviation from world_basic.txt*, whose starting rooms are fixed: in the released files first moves
and first pick-ups are spread evenly over all six rooms, and an actor who has not moved yet picks up objects in
every room). Held objects travel with their holder.

Statements, one at a time. Draw an actor uniformly and an action uniformly from move / pick up / put down; a move
draws its room uniformly from all six, a pick-up an object uniformly among the free objects in the actor's room,
a put-down one of the objects the actor holds. When the draw cannot be done (the room drawn is the actor's own,
nothing to pick up, nothing held) the actor and the action are drawn again. *Deviation from the Lua*, which first
draws the action and then tries up to 100 (actor, argument) pairs, so that about a third of its statements are
moves: the released task-2 files (en-10k, train and test) have 65% moves and, for 0 / 1 / 2 / 3 objects held (by
anyone), move shares of 71 / 62 / 60 / 62%, which this rule reproduces to within two points (a move weighs 5/6
because one room in six is rejected).

Wording (each choice uniform): "X moved to / went to / went back to / journeyed to / travelled to the L."
("went back to" is not in the Lua templates but is in the files); "X got / took / grabbed / picked up the O
there." (task 2 always ends a pick-up with " there", task 3 one time in five, as the files); "X dropped / left /
discarded / put down the O." with " there" one time in five (the Lua's "let go of" never occurs in the files).

What a reader can know. An actor's room is known from their latest move. A held object's room is known once its
holder has moved after picking it up (support: the pick-up, then the holder's latest move); a put-down object's
room is known when the dropper had moved before (support: the put-down, then the dropper's latest move). In the
en-10k task-2 training file every held object asked about has a move after its pick-up (3,122 of 3,122), so an
object picked up in a known room is not asked about until its holder moves.

Questions. After every second statement (the gaps between questions are always even in the files) the subject is
drawn uniformly from the object mentions (pick-ups and put-downs) of the last five statements, keeping only objects
whose latest pick-up or put-down is among those five statements and that can be asked about; if there is none, no
question is asked and two more statements follow. A story ends right after its fifth question. *Deviation from the
Lua*, which asks with probability 1/2 after each statement once three statements have passed, about any object
held by an actor whose room is known: in the released files a question follows a pair of statements exactly when
this rule finds a subject (task 2, en-10k training file: all 21,996 pairs; task 3, en files: all but 5 of 14,753
pairs), the object fact lies at most five statements back, and an object mentioned twice in the window is about
twice as likely to be asked.

* Task 2, "Where is the O?": answered with the object's room, supported by its latest pick-up or put-down and
  then the move that put its holder (or dropper) there. An object can be asked about when its room is known.
* Task 3, "Where was the O before the L?": asked about objects whose holder moved at least twice while holding
  them since their latest pick-up (whether or not they have been put down since). Those moves take the object
  through rooms R1, R2, ..., Rn; the question names one pair of consecutive rooms (R(k), R(k+1)) = (answer, L),
  supported by the object's latest pick-up or put-down, the move to L and the move to the answer, in that order.
  *Deviation from the Lua*, which always asks about the latest pair: the released files name an earlier pair in
  20% of all questions (401 of the 783 that have a choice); each step back is drawn 2/3 as often as the one
  after it (fitted by maximum likelihood on the released train and test files: 2/3 beats equal weights and
  weights growing with k). The files' supports list the newest object fact first, not the Lua's sorted ids.

Choices the files leave open: the probability of " there" (one in five, the files' rate); the order of the random
draws; that the hidden starting rooms are independent and uniform.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tasks.babi.generator import (
    ACTORS,
    DROP_VERBS,
    LOCATIONS,
    MENTION_WINDOW,
    MOVE_VERBS,
    OBJECTS,
    QUESTIONS_PER_STORY,
    STATEMENTS_PER_QUESTION,
    TAKE_VERBS,
    StoryMaker,
)

OBJECT_TASKS: tuple[int, ...] = (2, 3)
ACTIONS: tuple[str, ...] = ("move", "take", "drop")
THERE_PROBABILITY = 0.2  # " there" after a put-down (both tasks) and after a task-3 pick-up, as in the files
EARLIER_PAIR_WEIGHT = 2 / 3  # task 3: weight ratio of a pair of rooms to the pair after it


@dataclass
class _ObjectStory:
    """One story being written: the hidden world and what its statements have told."""

    room: dict[str, str]  # actor or object -> the room it is in (hidden truth)
    holder: dict[str, str] = field(default_factory=dict)  # object -> actor carrying it
    lines: list[str] = field(default_factory=list)
    statement_ids: list[int] = field(default_factory=list)
    mentions: list[tuple[str, ...]] = field(default_factory=list)  # per statement: the objects it names
    last_move: dict[str, int] = field(default_factory=dict)  # actor -> id of their latest move
    last_fact: dict[str, int] = field(default_factory=dict)  # object -> id of its latest pick-up / put-down
    located: dict[str, tuple[int, int]] = field(default_factory=dict)  # object -> (fact id, move id) telling its room
    carried: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # object -> (move id, room) since pick-up

    @classmethod
    def start(cls, rng: random.Random) -> _ObjectStory:
        room = {actor: rng.choice(LOCATIONS) for actor in ACTORS}
        room.update({obj: rng.choice(LOCATIONS) for obj in OBJECTS})
        return cls(room=room)

    def add_statement(self, text: str, objects: tuple[str, ...]) -> int:
        line_id = len(self.lines) + 1
        self.lines.append(f"{line_id} {text}.\n")
        self.statement_ids.append(line_id)
        self.mentions.append(objects)
        return line_id

    def add_question(self, question: str, answer: str, support: tuple[int, ...]) -> None:
        ids = " ".join(str(i) for i in support)
        self.lines.append(f"{len(self.lines) + 1} {question} \t{answer}\t{ids}\n")

    def held_by(self, actor: str) -> list[str]:
        return [obj for obj in OBJECTS if self.holder.get(obj) == actor]


def _move(story: _ObjectStory, rng: random.Random, actor: str, room: str) -> None:
    line_id = story.add_statement(f"{actor} {rng.choice(MOVE_VERBS)} the {room}", ())
    story.room[actor] = room
    story.last_move[actor] = line_id
    for obj in story.held_by(actor):
        story.room[obj] = room
        story.located[obj] = (story.last_fact[obj], line_id)
        story.carried[obj].append((line_id, room))


def _take(story: _ObjectStory, rng: random.Random, babi_id: int, actor: str, obj: str) -> None:
    verb = rng.choice(TAKE_VERBS)
    there = " there" if babi_id == 2 or rng.random() < THERE_PROBABILITY else ""
    line_id = story.add_statement(f"{actor} {verb} the {obj}{there}", (obj,))
    story.holder[obj] = actor
    story.last_fact[obj] = line_id
    story.located.pop(obj, None)  # known again once the holder moves
    story.carried[obj] = []


def _drop(story: _ObjectStory, rng: random.Random, actor: str, obj: str) -> None:
    verb = rng.choice(DROP_VERBS)
    there = " there" if rng.random() < THERE_PROBABILITY else ""
    line_id = story.add_statement(f"{actor} {verb} the {obj}{there}", (obj,))
    del story.holder[obj]
    story.last_fact[obj] = line_id
    if actor in story.last_move:
        story.located[obj] = (line_id, story.last_move[actor])
    else:  # dropped somewhere the story has not told
        story.located.pop(obj, None)


def _statement(story: _ObjectStory, rng: random.Random, babi_id: int) -> None:
    """One statement: an (actor, action) pair drawn again until it can be carried out."""
    while True:
        actor = rng.choice(ACTORS)
        action = rng.choice(ACTIONS)
        if action == "move":
            room = rng.choice(LOCATIONS)
            if room != story.room[actor]:
                _move(story, rng, actor, room)
                return
        elif action == "take":
            here = [obj for obj in OBJECTS if obj not in story.holder and story.room[obj] == story.room[actor]]
            if here:
                _take(story, rng, babi_id, actor, rng.choice(here))
                return
        else:
            held = story.held_by(actor)
            if held:
                _drop(story, rng, actor, rng.choice(held))
                return


def _askable(story: _ObjectStory, babi_id: int, obj: str) -> bool:
    if babi_id == 2:
        return obj in story.located
    return len(story.carried.get(obj, ())) >= 2


def _subject(story: _ObjectStory, rng: random.Random, babi_id: int) -> str | None:
    """An object drawn from the mentions of the last few statements, among those whose latest pick-up or
    put-down is one of them and that can be asked about (None if there is none)."""
    recent = set(story.statement_ids[-MENTION_WINDOW:])
    candidates = [
        obj
        for objects in story.mentions[-MENTION_WINDOW:]
        for obj in objects
        if story.last_fact[obj] in recent and _askable(story, babi_id, obj)
    ]
    return rng.choice(candidates) if candidates else None


def _ask_where_is(story: _ObjectStory, obj: str) -> None:
    story.add_question(f"Where is the {obj}?", story.room[obj], story.located[obj])


def _ask_where_was(story: _ObjectStory, rng: random.Random, obj: str) -> None:
    moves = story.carried[obj]  # [(move id, room)] of its holder since its latest pick-up, oldest first
    n_pairs = len(moves) - 1
    weights = [EARLIER_PAIR_WEIGHT ** (n_pairs - 1 - k) for k in range(n_pairs)]
    k = rng.choices(range(n_pairs), weights)[0]
    (before_id, before), (after_id, after) = moves[k], moves[k + 1]
    story.add_question(f"Where was the {obj} before the {after}?", before, (story.last_fact[obj], after_id, before_id))


def object_story(babi_id: int, rng: random.Random, n_questions: int = QUESTIONS_PER_STORY) -> list[str]:
    """Lines of one task-2 or task-3 story that ends right after its ``n_questions``-th question."""
    if babi_id not in OBJECT_TASKS:
        raise ValueError(f"object stories are bAbI tasks 2 and 3, not {babi_id}")
    story = _ObjectStory.start(rng)
    asked = 0
    while asked < n_questions:
        for _ in range(STATEMENTS_PER_QUESTION):
            _statement(story, rng, babi_id)
        obj = _subject(story, rng, babi_id)
        if obj is None:
            continue
        if babi_id == 2:
            _ask_where_is(story, obj)
        else:
            _ask_where_was(story, rng, obj)
        asked += 1
    return story.lines


TASK_NAMES: dict[int, str] = {2: "two-supporting-facts", 3: "three-supporting-facts"}
STORIES: dict[int, tuple[StoryMaker, int]] = {
    task: ((lambda rng, n, task=task: object_story(task, rng, n)), QUESTIONS_PER_STORY) for task in TASK_NAMES
}
