"""bAbI (Weston et al. 2015, arXiv:1502.05698; v1.2 release): rules of the built-in generator checked on its own
output with a parser written here.

How far back a question's supporting facts lie: in the released en-10k training files of tasks 1, 6, 11 and 12
the latest supporting fact of every question is one of the last five statements before it (tasks 1 and 6 use
every distance 1..5), which tasks/babi/generator.py reproduces by asking only about actors whose latest move is
among the last five statements.

Task 10's "X is either in the A or the B.": A is X's new room and B is drawn from all six rooms, so one time in
six the statement names one room twice (16.9% of these statements in the released en-10k files,
tasks/babi/generator_holdings.py).

Task 16 (tasks/babi/generator_logic.py, read off the released en-10k files): the asked actor's animal is shared
by one, three or four others, never exactly two (0 of 11,000 questions); a colour told about an actor of animal A
repeats the colour told since the latest "is a A" statement (a new period), and actors of one animal disagree on
their colour in about a third of the stories (34% in the files).

How long a story is kept: the last ``max_story_sentences`` statements before the question (70, 130 for task 3),
as the TPR-RNN reference reader (ischlag/TPR-RNN, ``preprocessor/reader.py``; tasks/babi/README.md,
"Preprocessing").
"""

from __future__ import annotations

import re

import pytest

from tasks.babi.generator import generate_stories
from tasks.babi.reader import Sample
from tasks.babi.task import build_vocab, vectorize


def support_distances(lines: list[str]) -> list[int]:
    """For every question: how many statements lie from its latest supporting fact up to it (1 = the statement
    just before it)."""
    distances, statements = [], []
    for line in lines:
        head, text = line.split(" ", 1)
        if head == "1":
            statements = []
        if "\t" in text:
            latest = max(int(i) for i in text.split("\t")[2].split())
            distances.append(sum(1 for s in statements if s >= latest))
        else:
            statements.append(int(head))
    return distances


@pytest.mark.parametrize(("task", "reached"), [(1, 5), (6, 5), (11, 5), (12, 3)])
def test_the_latest_supporting_fact_is_one_of_the_last_five_statements(task: int, reached: int) -> None:
    distances = support_distances(generate_stories(task, 3000, seed=7))
    assert len(distances) == 3000
    assert max(distances) <= 5
    if task in (1, 6):
        assert set(distances) == {1, 2, 3, 4, 5}
    assert max(distances) >= reached


def test_a_long_story_keeps_its_last_statements() -> None:
    story = tuple((f"w{i}",) for i in range(6))  # six one-word statements w0..w5
    sample = Sample(story=story, question=("where", "?"), answer="w5", story_id=0)
    vocab = build_vocab([sample])
    data = vectorize([sample], vocab, limit=4, max_story=4, max_words=2)
    assert int(data.tensors["story_len"][0]) == 4
    kept = [data.tensors["story"][0, t, 0].item() for t in range(4)]
    assert kept == [vocab[f"w{i}"] for i in (2, 3, 4, 5)]  # the last four, in order


def test_task10_either_pairs_name_one_room_twice_one_time_in_six() -> None:
    pairs = []
    for line in generate_stories(10, 3000, seed=3):
        match = re.search(r"is either in the (\w+) or the (\w+)\.$", line)
        if match:
            pairs.append(match.groups())
    assert len(pairs) > 1000
    assert abs(sum(a == b for a, b in pairs) / len(pairs) - 1 / 6) < 0.04


def induction_stories(n: int) -> list[tuple[dict[str, str], dict[str, str], str, bool]]:
    """Per task-16 story: (actor -> animal, actor -> colour, the asked actor, whether every colour told agreed with
    its animal's period)."""
    out, kind, color, periods, consistent = [], {}, {}, {}, True
    for line in generate_stories(16, n, seed=5):
        text = line.split(" ", 1)[1].rstrip("\n")
        if "\t" in text:
            asked = re.match(r"What color is (\w+)\?$", text.split("\t")[0]).group(1)
            out.append((kind, color, asked, consistent))
            kind, color, periods, consistent = {}, {}, {}, True
        elif match := re.match(r"(\w+) is an? (\w+)\.$", text):
            kind[match[1]] = match[2]
            periods.pop(match[2], None)
        elif match := re.match(r"(\w+) is (\w+)\.$", text):
            animal = kind[match[1]]
            consistent &= periods.setdefault(animal, match[2]) == match[2]
            color[match[1]] = match[2]
    return out


def test_task16_sharers_of_the_asked_animal_and_colour_periods() -> None:
    stories = induction_stories(2000)
    sizes, disagree = [], 0
    for kind, color, asked, consistent in stories:
        assert consistent  # within a period every colour told about the animal is the same
        sizes.append(sum(animal == kind[asked] for animal in kind.values()))
        by_animal: dict[str, set[str]] = {}
        for actor, animal in kind.items():
            if actor in color:
                by_animal.setdefault(animal, set()).add(color[actor])
        disagree += any(len(colours) > 1 for colours in by_animal.values())
    assert set(sizes) <= {2, 4, 5} and sizes.count(2) > 0.8 * len(sizes)
    assert 0.2 < disagree / len(stories) < 0.5
