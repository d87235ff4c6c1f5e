"""bAbI tasks 5 (three-arg-relations), 13 (compound-coreference), 14 (time-reasoning) and 20 (agents-motivations)
(Weston et al., 2015, §3).

Recipes of the original Lua generator (facebookarchive/bAbI-tasks: ``lua/babi/tasks/WhoWhatGave.lua``,
``CompoundCoreference.lua``, ``Time.lua``, ``Motivations.lua``, the worlds ``lua/babi/tasks/worlds/world_basic.txt``
and ``world_motivations.txt``, the templates of ``lua/babi/stringify.lua``), with every detail where the released
v1.2 files disagree with that code taken from the files (they came from an earlier version of the generator). Lines
follow the conventions of :mod:`tasks.babi.generator`: tasks 5, 13 and 14 put a space between the question and the
tab, task 20 does not, as in the files. Every random choice is uniform unless said otherwise. Figures of the files
below are of the en-10k train and test files pooled, those of this generator of 11,000 questions (seed 0), unless
said otherwise.

Task 5, three-arg-relations. Actors Bill, Fred, Jeff, Mary; the six rooms and three objects of task 2. As in task 2
(:mod:`tasks.babi.generator_objects`), every actor and object starts in an untold room drawn uniformly, held objects
travel with their holder, and each statement draws an actor and an action (move / pick up / give / put down) again
until the action can be carried out; a give is drawn 3.5 times as often as each other action (fitted: the files'
statements are 56% moves, 17% pick-ups, 15.5% gives and 12% put-downs, this rule's 56 / 17 / 15 / 12%). A give hands
one of the giver's objects to another actor in the same (possibly untold) room: "X gave / handed / passed the O to Y."
Pick-ups always end with " there", put-downs one time in five (as the files). After every second statement a question
is asked about the latest give among the last five statements (none: two more statements follow); one time in twenty
(the files: 168 of 3,595 questions that had the choice) it is asked again about the previous question's give instead,
when that give is still among the last five statements and still the latest one the new question could mean. (The
files, in 20 of the en-10k training file's 10,000 questions, ask again about an earlier give although a later one fits
the question; this generator never does.) The question asks about the object ("What did X give to Y?", a third of the
questions), the giver ("Who gave the O?", "Who gave the O to Y?") or the receiver ("Who received the O?", "Who did X
give the O to?"), a sixth each as in the files (34 / 17 / 17 / 16 / 16%); it is answered by the latest give that fits
it and supported by that give. *Deviation from the Lua*, which asks once about each give after 0 to 5 unrelated
statements and says "last" in its questions: the files ask after every pair of statements (all question gaps are even)
about a give at most five statements back, the latest one in 98% of questions, and never say "last". The files name
Mary, Fred, Bill and Jeff (and apple, football, milk) slightly unevenly; that bias is not reproduced (uniform draws).

Task 13, compound-coreference. The world of task 12 (:mod:`tasks.babi.generator`). Five times: "A and B <verb> the
L1." with two different actors and L1 neither one's room, then "<Opener> they <verb> the L2." (openers of task 11,
L2 different from L1), then "Where is X?" supported by both ids of X's latest pair. The subject is drawn as in tasks
1, 11 and 12: uniformly from the last five actor mentions (both statements mention A then B), keeping actors whose
latest move is among the last five statements. *Deviation from the Lua*, which always asks about one of the two
actors who just moved: in the files 7.6% of the questions ask about the second-named actor of the pair before, never
about the first, about a fifth of the times that actor is not in the new pair, exactly what this rule gives.

Task 14, time-reasoning. Actors Bill, Fred, Julie, Mary; rooms bedroom, cinema, kitchen, office, park, school; times
yesterday, this morning, this afternoon, this evening. Statements "X <verb> the L <time>." or "<Time> X <verb> the L."
(each half the time, as in the files). An actor's day is drawn from its start: each move draws an actor uniformly
among those with times left and gives them their next time, in a room other than the one of their previous time. Moves
are drawn two at a time until a question can be asked; then the moves drawn since the previous question are told in a
uniformly drawn cyclic order of their drawing order (Sattolo's shuffle, Fisher-Yates with every item swapped with a
strictly earlier one, so that no move keeps its place), and the question follows. Two moves are thus told in reverse
order, as every pair of statements followed by a question is in the files (all 2,380 such pairs about one actor in
en-10k's training file tell the later time first); the four or six moves drawn before a first question that comes
later are told in one of their 6 or 120 cycles: in the 213 stories of the files whose first question follows six
statements, the two moves drawn last (the only ones not yesterday) are never the last two told, which a uniform
shuffle would do in one story in 15, and their places fit a cyclic order (chi-square over the 14 pairs of places it
allows: p = 0.35); stories open with an actor's second time ("this morning", then mostly "yesterday") in 50% of the en
files' stories (54% en-10k; this rule: 53%), and the times of the first two statements are at a total variation distance
of 0.08 from the en files (1.5 times their spread: 0.125; pairs told in reverse: 0.52). The question "Where was X before
the L?" is about one of the last five moves drawn that is not an actor's first, drawn uniformly: it names that move's
room L and is answered with X's room at the time before, supported by the move asked about and then the statement of
the answer (the files' order, not sorted). When none of the last five moves qualifies (at the start of a story, while
no actor has two times) no question is asked and two more moves are drawn: this alone gives the files' first questions
after 2 / 4 / 6 statements in 24 / 66 / 10% of en-10k's stories (this rule: 1/4, 21/32, 3/32). In the files' 4,400
questions from the fourth of a story on (they hold the en files' stories too; the reversed pairs give away the drawing
order), the move asked about is each of the last five drawn about equally often (1,007 / 907 / 855 / 875 / 756 times,
966 / 941 / 890 / 833 / 771 expected) and never the sixth (0 of 2,959 questions where it could be): the later time's
statement is six statements back (told first of the third pair back) in 11.3% of the en files' questions and five back
in 2.5%, 11.9% and 2.8% here. The support distances' total variation distances to the en files are 0.025 and 0.025,
within 1.5 times the files' own spread (0.085 and 0.075); the earlier recipe (pairs told in reverse from the start,
questions about the pairs of times of the last six statements told) gave 0.11 and 0.09. *Deviations from the Lua*, which
states two moves of one actor at random times among the first four lines, fills the rest with moves at any free time to
rooms the actor never visited, and asks about a uniformly drawn actor and pair: in the files every actor's told times
are a prefix of the day (yesterday, then this morning, ...) whenever a question is asked, the supporting facts lie
mostly in the last five statements, and actors do come back to a room (9.6% of moves). A room named in a question can
therefore have been visited twice by that actor, which makes a few questions ambiguous, as in the files.

Task 20, agents-motivations. Actors Jason, Antoine, Sumit, Yann; motivations hungry (kitchen, apple), thirsty
(kitchen, milk), bored (garden, football), tired (bedroom, pajamas). Each actor's motivation is drawn uniformly and
independently (*deviation from the Lua*, which deals them out one each: the files' stories hold 1 / 2 / 3 / 4
different motivations in 1 / 33 / 57 / 9% of stories, as independent draws give). Each actor has three actions in
order: "X is <motivation>.", a move to the destination, getting the object ("X got / took / grabbed / picked up the
O there."). Until all are done, an actor with actions left is drawn and does the next one, except that a get is
skipped silently when someone already has the object (the files hold exactly one get per motivation present). Each
statement is followed by a question about it: "Where will x go?" (answer the destination), "Why did x go to the L?"
and "Why did x get the O?" (answer the motivation), the name lower-cased as in the files, always supported by the
actor's motivation statement. A story therefore holds 8 + (number of different motivations) questions, 9 to 12;
:data:`STORIES` gives 12, and a story function returns a whole story of at most the questions asked for, cut short
only when it would hold more.

Choices the files leave open: the order of the random draws; that hidden starting rooms are independent and uniform
(task 5); how the cyclic order of task 14 is drawn (only its distribution shows in the files).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tasks.babi.generator import (
    ACTORS,
    COREF_OPENERS,
    DROP_VERBS,
    LOCATIONS,
    MENTION_WINDOW,
    MOVE_VERBS,
    OBJECTS,
    QUESTIONS_PER_STORY,
    STATEMENTS_PER_QUESTION,
    TAKE_VERBS,
    StoryMaker,
    _ask_where,
    _destination,
    _question_subject,
    _Story,
)
from tasks.babi.generator_logic import _question_line
from tasks.babi.generator_objects import THERE_PROBABILITY, _ObjectStory

TASK_NAMES: dict[int, str] = {
    5: "three-arg-relations",
    13: "compound-coreference",
    14: "time-reasoning",
    20: "agents-motivations",
}

GIVE_ACTORS: tuple[str, ...] = ("Bill", "Fred", "Jeff", "Mary")
GIVE_VERBS: tuple[str, ...] = ("gave", "handed", "passed")
GIVE_ACTIONS: tuple[str, ...] = ("move", "take", "give", "drop")
GIVE_ACTION_WEIGHTS: tuple[float, ...] = (1.0, 1.0, 3.5, 1.0)  # move, take, give, drop: fitted
REASK_PROBABILITY = 1 / 20  # task 5: ask again about the previous question's give

TIME_ACTORS: tuple[str, ...] = ("Bill", "Fred", "Julie", "Mary")
TIME_PLACES: tuple[str, ...] = ("bedroom", "cinema", "kitchen", "office", "park", "school")
TIMES: tuple[str, ...] = ("yesterday", "this morning", "this afternoon", "this evening")
TIME_WINDOW = 5  # task 14: the last moves drawn that a question can ask about

MOTIVATED_ACTORS: tuple[str, ...] = ("Jason", "Antoine", "Sumit", "Yann")
MOTIVATIONS: dict[str, tuple[str, str]] = {  # motivation -> (destination, object), world_motivations.txt
    "hungry": ("kitchen", "apple"),
    "thirsty": ("kitchen", "milk"),
    "bored": ("garden", "football"),
    "tired": ("bedroom", "pajamas"),
}
MOTIVATION_QUESTIONS_MAX = 12


# ---------------------------------------------------------------------------------------------------------------
# task 5: who gave what to whom


@dataclass(frozen=True)
class _Give:
    line_id: int
    giver: str
    obj: str
    receiver: str


@dataclass
class _GiveStory(_ObjectStory):
    """One task-5 story being written: the hidden world of tasks 2 and 3 (its object-tracking fields unused) and the
    gives told so far."""

    gives: list[_Give] = field(default_factory=list)

    @classmethod
    def start(cls, rng: random.Random) -> _GiveStory:
        room = {actor: rng.choice(LOCATIONS) for actor in GIVE_ACTORS}
        room.update({obj: rng.choice(LOCATIONS) for obj in OBJECTS})
        return cls(room=room)


def _give_statement(story: _GiveStory, rng: random.Random) -> None:
    """One statement: an (actor, action) pair drawn again until it can be carried out."""
    while True:
        actor, action = rng.choice(GIVE_ACTORS), rng.choices(GIVE_ACTIONS, GIVE_ACTION_WEIGHTS)[0]
        held = story.held_by(actor)
        if action == "move":
            room = rng.choice(LOCATIONS)
            if room != story.room[actor]:
                story.add_statement(f"{actor} {rng.choice(MOVE_VERBS)} the {room}", ())
                story.room[actor] = room
                for obj in held:
                    story.room[obj] = room
                return
        elif action == "take":
            here = [obj for obj in OBJECTS if obj not in story.holder and story.room[obj] == story.room[actor]]
            if here:
                obj = rng.choice(here)
                story.add_statement(f"{actor} {rng.choice(TAKE_VERBS)} the {obj} there", ())
                story.holder[obj] = actor
                return
        elif action == "give":
            others = [other for other in GIVE_ACTORS if other != actor and story.room[other] == story.room[actor]]
            if held and others:
                obj, receiver = rng.choice(held), rng.choice(others)
                line_id = story.add_statement(f"{actor} {rng.choice(GIVE_VERBS)} the {obj} to {receiver}", ())
                story.holder[obj] = receiver
                story.gives.append(_Give(line_id, actor, obj, receiver))
                return
        elif held:
            obj = rng.choice(held)
            there = " there" if rng.random() < THERE_PROBABILITY else ""
            story.add_statement(f"{actor} {rng.choice(DROP_VERBS)} the {obj}{there}", ())
            del story.holder[obj]
            return


# (question, the fields of a give it names) for each role asked about; a give answers a question when it is the
# latest give that agrees with it on those fields
_GIVE_QUESTIONS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "obj": (("What did {giver} give to {receiver}?", ("giver", "receiver")),),
    "giver": (("Who gave the {obj}?", ("obj",)), ("Who gave the {obj} to {receiver}?", ("obj", "receiver"))),
    "receiver": (("Who received the {obj}?", ("obj",)), ("Who did {giver} give the {obj} to?", ("giver", "obj"))),
}


def _latest_fitting(story: _GiveStory, give: _Give, fields: tuple[str, ...]) -> bool:
    fitting = [other for other in story.gives if all(getattr(other, f) == getattr(give, f) for f in fields)]
    return fitting[-1] == give


def _ask_give(story: _GiveStory, rng: random.Random, previous: _Give | None) -> _Give | None:
    """Asks about the latest give of the last few statements (or, now and then, the previous question's); returns
    the give asked about, None if there was none to ask about."""
    recent = set(story.statement_ids[-MENTION_WINDOW:])
    candidates = [give for give in story.gives if give.line_id in recent]
    if not candidates:
        return None
    give = candidates[-1]
    options = [(role, wording) for role, wordings in _GIVE_QUESTIONS.items() for wording in wordings]
    if previous is not None and previous in candidates and rng.random() < REASK_PROBABILITY:
        still = [(role, wording) for role, wording in options if _latest_fitting(story, previous, wording[1])]
        if still:
            give, options = previous, still
    roles = sorted({role for role, _ in options}, key=list(_GIVE_QUESTIONS).index)
    role = rng.choice(roles)
    template, _ = rng.choice([wording for r, wording in options if r == role])
    question = template.format(giver=give.giver, obj=give.obj, receiver=give.receiver)
    answer = {"obj": give.obj, "giver": give.giver, "receiver": give.receiver}[role]
    story.lines.append(f"{len(story.lines) + 1} {question} \t{answer}\t{give.line_id}\n")
    return give


def give_story(rng: random.Random, n_questions: int = QUESTIONS_PER_STORY) -> list[str]:
    """Lines of one task-5 story that ends right after its ``n_questions``-th question."""
    story = _GiveStory.start(rng)
    asked, previous = 0, None
    while asked < n_questions:
        for _ in range(STATEMENTS_PER_QUESTION):
            _give_statement(story, rng)
        give = _ask_give(story, rng, previous)
        if give is not None:
            asked, previous = asked + 1, give
    return story.lines


# ---------------------------------------------------------------------------------------------------------------
# task 13: "A and B went to L1. Then they went to L2."


def _block_compound(story: _Story, rng: random.Random) -> None:
    pair = rng.sample(ACTORS, 2)
    first = _destination(story, rng, pair)
    first_id = story.add_statement(f"{pair[0]} and {pair[1]} {rng.choice(MOVE_VERBS)} the {first}", pair)
    for actor in pair:
        story.record_move(actor, first, (first_id,))
    second = _destination(story, rng, pair)
    second_id = story.add_statement(f"{rng.choice(COREF_OPENERS)} they {rng.choice(MOVE_VERBS)} the {second}", pair)
    for actor in pair:
        story.record_move(actor, second, (first_id, second_id))


def compound_story(rng: random.Random, n_questions: int = QUESTIONS_PER_STORY) -> list[str]:
    """Lines of one task-13 story: pairs of statements, each followed by a question, ``n_questions`` times."""
    story = _Story()
    for _ in range(n_questions):
        _block_compound(story, rng)
        actor = _question_subject(story, rng)
        assert actor is not None  # the pair just moved is always among the last mentions
        _ask_where(story, rng, actor)
    return story.lines


# ---------------------------------------------------------------------------------------------------------------
# task 14: where was X before the L?


_Move = tuple[str, int, str]  # task 14: actor, time, room


@dataclass
class _TimeStory:
    """One task-14 story being written: each actor's day, told from its start, and the moves in the order drawn."""

    lines: list[str] = field(default_factory=list)
    days: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # actor -> (room, id) per told time
    drawn: list[tuple[str, int]] = field(default_factory=list)  # (actor, time) of every move, in drawing order

    def next_move(self, rng: random.Random) -> _Move:
        """(actor, time, room) of the next move drawn; the room differs from the actor's previous one."""
        actor = rng.choice([name for name in TIME_ACTORS if len(self.days.get(name, ())) < len(TIMES)])
        day = self.days.setdefault(actor, [])
        room = rng.choice([place for place in TIME_PLACES if not day or place != day[-1][0]])
        day.append((room, 0))  # id set when the move is told
        self.drawn.append((actor, len(day) - 1))
        return actor, len(day) - 1, room

    def tell(self, rng: random.Random, actor: str, time: int, room: str) -> None:
        """Writes the statement of a move drawn earlier, its time first or last (each half the time)."""
        line_id = len(self.lines) + 1
        verb, when = rng.choice(MOVE_VERBS), TIMES[time]
        text = f"{when.capitalize()} {actor} {verb} the {room}" if rng.random() < 0.5 else (
            f"{actor} {verb} the {room} {when}")
        self.lines.append(f"{line_id} {text}.\n")
        self.days[actor][time] = (room, line_id)

    def askable(self) -> list[tuple[str, int]]:
        """(actor, time) of the last few moves drawn that have an earlier time of their actor to ask about."""
        return [(actor, time) for actor, time in self.drawn[-TIME_WINDOW:] if time >= 1]


def _cyclic_order(moves: list[_Move], rng: random.Random) -> list[_Move]:
    """``moves`` in a uniformly drawn cyclic order (Sattolo's shuffle: each one is swapped with a strictly earlier
    one), an order in which none keeps its place; two moves are simply reversed."""
    order = list(moves)
    for i in range(len(order) - 1, 0, -1):
        j = rng.randrange(i) if i > 1 else 0
        order[i], order[j] = order[j], order[i]
    return order


def _ask_before(story: _TimeStory, actor: str, later: int) -> None:
    """Asks "Where was X before the L?" about X's move at time ``later``, answered by X's move at the time before."""
    (answer, earlier_id), (room, later_id) = story.days[actor][later - 1], story.days[actor][later]
    question = f"Where was {actor} before the {room}?"
    story.lines.append(f"{len(story.lines) + 1} {question} \t{answer}\t{later_id} {earlier_id}\n")


def time_story(rng: random.Random, n_questions: int = QUESTIONS_PER_STORY) -> list[str]:
    """Lines of one task-14 story that ends right after its ``n_questions``-th question: moves drawn two at a time
    until one can be asked about, told in a cyclic order of their drawing order, then the question."""
    story = _TimeStory()
    asked = 0
    untold: list[_Move] = []  # moves drawn since the last question
    while asked < n_questions:
        untold.extend(story.next_move(rng) for _ in range(STATEMENTS_PER_QUESTION))
        askable = story.askable()
        if not askable:
            continue
        for move in _cyclic_order(untold, rng):
            story.tell(rng, *move)
        untold = []
        _ask_before(story, *rng.choice(askable))
        asked += 1
    return story.lines


# ---------------------------------------------------------------------------------------------------------------
# task 20: why did X go / get ...?


def motivation_story(rng: random.Random, n_questions: int = MOTIVATION_QUESTIONS_MAX) -> list[str]:
    """Lines of one task-20 story: the whole story (9 to 12 statements, each followed by its question), cut short
    after the ``n_questions``-th question if it holds more."""
    if n_questions < 1:
        raise ValueError(f"a task-20 story holds at least one question, not {n_questions}")
    motivation = {actor: rng.choice(list(MOTIVATIONS)) for actor in MOTIVATED_ACTORS}
    done = dict.fromkeys(MOTIVATED_ACTORS, 0)  # actions carried out or skipped: motivation, move, get
    taken: set[str] = set()
    state_id: dict[str, int] = {}
    lines: list[str] = []
    while len(lines) < 2 * n_questions and min(done.values()) < 3:
        actor = rng.choice([name for name in MOTIVATED_ACTORS if done[name] < 3])
        done[actor] += 1
        feeling = motivation[actor]
        place, obj = MOTIVATIONS[feeling]
        name = actor.lower()
        if done[actor] == 1:
            statement, question, answer = f"{actor} is {feeling}", f"Where will {name} go?", place
            state_id[actor] = len(lines) + 1
        elif done[actor] == 2:
            statement = f"{actor} {rng.choice(MOVE_VERBS)} the {place}"
            question, answer = f"Why did {name} go to the {place}?", feeling
        elif obj not in taken:
            taken.add(obj)
            statement = f"{actor} {rng.choice(TAKE_VERBS)} the {obj} there"
            question, answer = f"Why did {name} get the {obj}?", feeling
        else:  # someone already has the object
            continue
        lines.append(f"{len(lines) + 1} {statement}.\n")
        lines.append(_question_line(len(lines) + 1, question, answer, (state_id[actor],)))
    return lines


STORIES: dict[int, tuple[StoryMaker, int]] = {
    5: (give_story, QUESTIONS_PER_STORY),
    13: (compound_story, QUESTIONS_PER_STORY),
    14: (time_story, QUESTIONS_PER_STORY),
    20: (motivation_story, MOTIVATION_QUESTIONS_MAX),
}
