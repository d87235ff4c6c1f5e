"""bAbI generator rules (tasks/babi/generator*.py docstrings) that the other generator tests leave open, checked on
the generator's own output with a replay written here.

* Task 6: an object is picked up only when no one holds it and it lies where the actor is, or has never been put
  down; one put down lies where its dropper was (an actor not yet seen moving is somewhere of their own).
* Task 3: "Where was the O before the L?" names one pair of consecutive rooms of the object's carried moves; the
  latest pair is the likeliest, each step back drawn 2/3 as often as the one after it (with two pairs: the latest
  3/5 of the time).
* Task 14: moves are told in a cyclic order of their drawing order, in which none keeps its place.
* A negative number of questions is refused.
"""

from __future__ import annotations

import random
import re

import pytest

from tasks.babi.generator import generate_stories
from tasks.babi.generator_narrative import _cyclic_order

GO = r"(?:moved|went|went back|journeyed|travelled) to"
MOVE = re.compile(rf"^(\w+) {GO} the (\w+)\.$")
TAKE = re.compile(r"^(\w+) (?:got|took|grabbed|picked up) the (\w+)(?: there)?\.$")
DROP = re.compile(r"^(\w+) (?:dropped|left|discarded|put down) the (\w+)(?: there)?\.$")
WHERE_WAS = re.compile(r"^Where was the (\w+) before the (\w+)\? $")


def stories(lines: list[str]) -> list[list[tuple[int, str]]]:
    """The lines as stories of (id, text)."""
    out: list[list[tuple[int, str]]] = []
    for line in lines:
        head, _, text = line.rstrip("\n").partition(" ")
        if head == "1":
            out.append([])
        out[-1].append((int(head), text))
    return out


def test_task6_objects_are_taken_where_they_lie() -> None:
    takes = 0
    for story in stories(generate_stories(6, 3000, 0)):
        room: dict[str, str] = {}
        holder: dict[str, str] = {}
        lies: dict[str, str] = {}  # object -> where it was put down
        for _, text in story:
            if "\t" in text:
                continue
            if move := MOVE.match(text):
                room[move[1]] = move[2]
            elif take := TAKE.match(text):
                actor, obj = take[1], take[2]
                assert obj not in holder, text
                assert lies.get(obj, room.get(actor, "?" + actor)) == room.get(actor, "?" + actor), text
                holder[obj] = actor
                lies.pop(obj, None)
                takes += 1
            else:
                drop = DROP.match(text)
                assert drop and holder.pop(drop[2]) == drop[1], text
                lies[drop[2]] = room.get(drop[1], "?" + drop[1])
    assert takes > 1000


def test_task3_the_latest_pair_of_rooms_is_asked_three_times_in_five_of_two() -> None:
    latest = with_two_pairs = 0
    for story in stories(generate_stories(3, 6000, 0)):
        holder: dict[str, str] = {}
        carried: dict[str, list[tuple[int, str]]] = {}  # object -> (move id, room) since its latest pick-up
        for line_id, text in story:
            if "\t" in text:
                question, answer, support = text.split("\t")
                asked = WHERE_WAS.match(question)
                assert asked
                obj, after_room = asked[1], asked[2]
                fact, after_id, before_id = map(int, support.split())
                moves = carried[obj]
                k = [i for i, _ in moves].index(after_id)
                assert k >= 1 and moves[k][1] == after_room and moves[k - 1] == (before_id, answer)
                if len(moves) == 3:  # two pairs to choose from
                    with_two_pairs += 1
                    latest += k == 2
            elif move := MOVE.match(text):
                for obj, actor in holder.items():
                    if actor == move[1]:
                        carried[obj].append((line_id, move[2]))
            elif take := TAKE.match(text):
                holder[take[2]] = take[1]
                carried[take[2]] = []
            else:
                drop = DROP.match(text)
                assert drop
                del holder[drop[2]]
    assert with_two_pairs > 300
    assert abs(latest / with_two_pairs - 0.6) < 0.08


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_task14_a_cyclic_order_moves_every_move(n: int) -> None:
    moves = [("Mary", i, f"room{i}") for i in range(n)]
    for seed in range(200):
        order = _cyclic_order(moves, random.Random(seed))
        assert sorted(order) == sorted(moves)
        assert all(order[i] != moves[i] for i in range(n))


def test_a_negative_number_of_questions_is_refused() -> None:
    with pytest.raises(ValueError, match="n_questions must be >= 0"):
        generate_stories(1, -1, 0)
