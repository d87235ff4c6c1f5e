"""bAbI tasks 15 (basic deduction) and 16 (basic induction): short stories of "X is a <animal>" facts and one
rule-like fact per animal or colour (Weston et al., 2015, §3 tasks 15 and 16).

Recipes of the original Lua generator (facebookarchive/bAbI-tasks: ``lua/babi/tasks/Deduction.lua`` and
``lua/babi/tasks/Induction.lua``, templates ``Is``, ``HasFear``, ``EvalHasFear``, ``HasColor`` and
``EvalHasColor`` in ``lua/babi/stringify.lua``), with every detail where the released v1.2 files disagree with that
code taken from the files (they came from an earlier version of the generator). Lines follow the conventions of
:mod:`tasks.babi.generator`, except that in both tasks the question is followed directly by the tab (no space), as
in the files. Figures of the files below are of the en-10k train and test files pooled, those of this generator of
11,000 questions (seed 0).

Task 15, basic deduction. Actors Gertrude, Winona, Jessica, Emily; animals mouse, sheep, wolf, cat (plurals mice,
sheep, wolves, cats). Each animal is afraid of another animal drawn uniformly from the other three (as the Lua).
A story is eight statements, the four fears and the four actors' animals ("Mice are afraid of wolves.",
"Gertrude is a mouse."), then four questions "What is gertrude afraid of?" answered with the singular name of the
feared animal and supported by the actor's statement, then the fear statement. *Deviations from the Lua* (which
gives the actors distinct animals, shuffles the eight statements uniformly and asks about each actor once, with
sorted supports), all read off the released files:

* statements come one at a time: draw an animal uniformly; if its fear has not been told, tell it; otherwise draw
  an actor uniformly and, if that actor's animal has not been told yet, tell that the actor is this animal;
  otherwise draw again. So the first statement is always a fear (2,750 of 2,750 stories in the files), an actor is
  only ever said to be an animal whose fear was told before (11,000 of 11,000), each such animal equally likely,
  and actors often share an animal (three distinct animals among the four actors in 49% of stories, two in 42%);
* each question's actor is drawn uniformly with replacement (the files ask four different actors in 10% of
  stories, independent draws 9.4%);
* the actor's name is lower-cased in the question, as in every question of the files.

Task 16, basic induction. Actors Lily, Bernhard, Greg, Julius, Brian; animals swan, lion, frog, rhino; colours gray,
white, yellow, green. A story is nine statements ("Lily is a frog.", "Lily is green.") and one question "What color
is Greg?". *Deviations from the Lua*, which maps animals to colours one-to-one, redraws the asked actor's animal
until another actor shares it, shuffles the nine statements uniformly and supports the answer with every sharer:

* order: ten statements are drawn, each actor's "is a" before their colour: at each step an actor is drawn
  uniformly among those with a statement left and their next statement is told. The actor of the tenth statement
  (always a colour) is the one asked about and that statement is not told. In the files the asked actor's "is a"
  is the last statement in 31% of stories (this rule: 31%; a uniform shuffle: 11%), and a colour never precedes
  its actor's "is a";
* animals: drawn uniformly and independently for the five actors, again until the asked actor's animal is shared
  by one, three or four others. The files never have exactly two others sharing it (0 of 11,000 questions); the
  shares of one, three and four (89, 10 and 1%) are those of independent draws conditioned this way;
* colours: each "X is a A" statement opens a new period for animal A; the first colour told about an A-actor in a
  period is drawn uniformly from the four, and later ones in the same period repeat it. In the released files this
  rule predicts all 5,888 colours it constrains, and the colours it draws afresh are uniform and independent of
  everything else. Actors of one animal therefore disagree on their colour in a third of the stories (34% in the
  files, 34% here), which makes some questions ambiguous, as in the files;
* answer and support: the colour of the other actor of the asked actor's animal whose "is a" statement comes last,
  supported by the asked actor's "is a", that actor's "is a" and that actor's colour (three ids in every question
  of the files).

Choices the files leave open: the order of the random draws.
"""

from __future__ import annotations

import random

from tasks.babi.generator import StoryMaker

DEDUCTION_ACTORS: tuple[str, ...] = ("Gertrude", "Winona", "Jessica", "Emily")
DEDUCTION_ANIMALS: dict[str, str] = {"mouse": "mice", "sheep": "sheep", "wolf": "wolves", "cat": "cats"}
DEDUCTION_QUESTIONS = 4

INDUCTION_ACTORS: tuple[str, ...] = ("Lily", "Bernhard", "Greg", "Julius", "Brian")
INDUCTION_ANIMALS: tuple[str, ...] = ("swan", "lion", "frog", "rhino")
COLORS: tuple[str, ...] = ("gray", "white", "yellow", "green")
INDUCTION_QUESTIONS = 1
ASKED_GROUP_SIZES: frozenset[int] = frozenset({2, 4, 5})  # actors of the asked actor's animal, the asked one included


def _question_line(line_id: int, question: str, answer: str, support: tuple[int, ...]) -> str:
    return f"{line_id} {question}\t{answer}\t{' '.join(str(i) for i in support)}\n"


def deduction_story(rng: random.Random, n_questions: int = DEDUCTION_QUESTIONS) -> list[str]:
    """Lines of one task-15 story: eight statements, then ``n_questions`` (at most four) questions."""
    if not 0 < n_questions <= DEDUCTION_QUESTIONS:
        raise ValueError(f"a task-15 story holds 1 to {DEDUCTION_QUESTIONS} questions, not {n_questions}")
    animals = tuple(DEDUCTION_ANIMALS)
    statements: list[str] = []
    fear: dict[str, str] = {}  # animal -> the animal it is afraid of
    fear_id: dict[str, int] = {}
    kind: dict[str, str] = {}  # actor -> their animal
    kind_id: dict[str, int] = {}
    while len(statements) < len(animals) + len(DEDUCTION_ACTORS):
        animal = rng.choice(animals)
        if animal not in fear:
            fear[animal] = rng.choice([other for other in animals if other != animal])
            plural, feared = DEDUCTION_ANIMALS[animal], DEDUCTION_ANIMALS[fear[animal]]
            statements.append(f"{plural.capitalize()} are afraid of {feared}")
            fear_id[animal] = len(statements)
            continue
        actor = rng.choice(DEDUCTION_ACTORS)
        if actor not in kind:
            kind[actor] = animal
            statements.append(f"{actor} is a {animal}")
            kind_id[actor] = len(statements)
    lines = [f"{i} {text}.\n" for i, text in enumerate(statements, start=1)]
    for _ in range(n_questions):
        actor = rng.choice(DEDUCTION_ACTORS)
        animal = kind[actor]
        question = f"What is {actor.lower()} afraid of?"
        lines.append(_question_line(len(lines) + 1, question, fear[animal], (kind_id[actor], fear_id[animal])))
    return lines


def induction_story(rng: random.Random, n_questions: int = INDUCTION_QUESTIONS) -> list[str]:
    """Lines of one task-16 story: nine statements, then its one question."""
    if n_questions != INDUCTION_QUESTIONS:
        raise ValueError(f"a task-16 story holds {INDUCTION_QUESTIONS} question, not {n_questions}")
    left = dict.fromkeys(INDUCTION_ACTORS, 2)  # statements still to tell: "is a", then the colour
    order: list[tuple[str, bool]] = []  # (actor, is it their colour)
    while len(order) < 2 * len(INDUCTION_ACTORS):
        actor = rng.choice([name for name in INDUCTION_ACTORS if left[name]])
        order.append((actor, left[actor] == 1))
        left[actor] -= 1
    asked = order.pop()[0]  # the untold last statement is the asked actor's colour
    while True:
        kind = {actor: rng.choice(INDUCTION_ANIMALS) for actor in INDUCTION_ACTORS}
        if sum(kind[actor] == kind[asked] for actor in INDUCTION_ACTORS) in ASKED_GROUP_SIZES:
            break
    period_color: dict[str, str] = {}  # animal -> the colour told since that animal's latest "is a"
    color: dict[str, str] = {}
    kind_id: dict[str, int] = {}
    color_id: dict[str, int] = {}
    statements: list[str] = []
    for actor, is_color in order:
        if is_color:
            if kind[actor] not in period_color:
                period_color[kind[actor]] = rng.choice(COLORS)
            color[actor] = period_color[kind[actor]]
            statements.append(f"{actor} is {color[actor]}")
            color_id[actor] = len(statements)
        else:
            period_color.pop(kind[actor], None)
            statements.append(f"{actor} is a {kind[actor]}")
            kind_id[actor] = len(statements)
    lines = [f"{i} {text}.\n" for i, text in enumerate(statements, start=1)]
    sharers = [actor for actor in INDUCTION_ACTORS if actor != asked and kind[actor] == kind[asked]]
    witness = max(sharers, key=lambda actor: kind_id[actor])
    support = (kind_id[asked], kind_id[witness], color_id[witness])
    lines.append(_question_line(len(lines) + 1, f"What color is {asked}?", color[witness], support))
    return lines


TASK_NAMES: dict[int, str] = {15: "basic-deduction", 16: "basic-induction"}
STORIES: dict[int, tuple[StoryMaker, int]] = {
    15: (deduction_story, DEDUCTION_QUESTIONS),
    16: (induction_story, INDUCTION_QUESTIONS),
}
