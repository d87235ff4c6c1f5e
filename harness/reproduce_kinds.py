"""Which kind of CPU the reference runs of one machine image trained on, where their own records do not say.

Runs recorded before the CPU model was name only their processor (``harness.reproduce.cpu_relation`` is ``name``),
and a cloud's "AMD EPYC" covers generations whose vector kernels round differently (family 25 model 1 with AVX2,
model 17 with AVX512): one run trained again on the other generation differs in every figure that rounding touches.
The checks in ``reproductions.json`` tell them apart after the fact, for the runs of one *image* (the processor
name and operating system of the machine record, the kernel build included, e.g. ``...-fc-v782-...``), which so far
ran on one kind of machine each: the kind on which every check of the image's runs came back bit for bit is where
they trained, once a check on another kind differed (a run that differs where it trained is no reproduction at
all; on another kind it is rounding, though not every run differs there: a model whose kernels do not depend on the
vector width comes back bit for bit on either).

``harness reproduce --unchecked`` leaves out the runs of an image whose checks differed on this machine's kind and
came back bit for bit, every one, on another: training them here says nothing about the runs, and such an image's
queue can hold hours (61 runs, 16 h, of the image above on a model-17 machine). ``harness reproduce RUN`` still
checks any one of them, and says first that its figures may differ for that reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Kind = tuple[str, str]
"""A kind of CPU as a machine record gives it: family, model and stepping (``cpu_id``) and torch's vector kernels."""
Image = tuple[str, str]
"""A machine image as a run's record gives it: the processor name and the operating system (``system``)."""


def this_machine() -> dict[str, Any]:
    """This machine's record as a run writes it (with torch imported: its vector kernels and threads)."""
    import torch  # noqa: F401  machine_info names the vector kernels of an imported torch

    from harness.provenance import machine_info

    return machine_info()


def kind(host: dict[str, Any]) -> Kind:
    return str(host.get("cpu_id") or ""), str(host.get("cpu_capability") or "")


def image(host: dict[str, Any]) -> Image:
    return str(host.get("processor") or ""), str(host.get("system") or "")


def shown_kind(value: Kind) -> str:
    return ", ".join(part for part in value if part) or "an unrecorded kind"


@dataclass(frozen=True)
class Tally:
    """How the checks of one image's runs on one kind of CPU came out."""

    equal: int = 0  # bit for bit
    checks: int = 0

    def add(self, bit_for_bit: bool) -> Tally:
        return Tally(self.equal + bit_for_bit, self.checks + 1)


@dataclass(frozen=True)
class Elsewhere:
    """Why the runs of an image are taken to have trained on ``trained_on``, not on this machine's kind."""

    trained_on: Kind
    there: Tally  # every one bit for bit
    here: Tally  # some differed


def tallies_by_image(checks: Iterable[dict[str, Any]]) -> dict[Image, dict[Kind, Tally]]:
    """For each image, how its runs' checks came out on each kind of CPU. Only checks of runs whose record names no
    CPU model (``cpu`` is ``name``), made on a machine that records its own: the others compare kinds already."""
    found: dict[Image, dict[Kind, Tally]] = {}
    for check in checks:
        now_on = check.get("now_on") or {}
        if check.get("cpu") != "name" or not now_on.get("cpu_id"):
            continue
        kinds = found.setdefault(image(check.get("stored_on") or {}), {})
        bit_for_bit = bool(check.get("figures")) and check.get("equal") == check.get("figures")
        kinds[kind(now_on)] = kinds.get(kind(now_on), Tally()).add(bit_for_bit)
    return found


def trained_elsewhere(stored_on: dict[str, Any], here: dict[str, Any],
                      tallies: dict[Image, dict[Kind, Tally]]) -> Elsewhere | None:
    """Where the image of a run stored on ``stored_on`` trained, when its record and ``here`` share only the
    processor name (:func:`harness.reproduce.cpu_relation` is ``name``) and its checks show it was another kind than
    ``here``'s (module docstring); else None."""
    from harness.reproduce import cpu_relation

    if cpu_relation(stored_on, here) != "name":
        return None
    kinds = tallies.get(image(stored_on), {})
    mine = kinds.get(kind(here))
    if mine is None or mine.equal == mine.checks:
        return None
    clean = [(tally.checks, other) for other, tally in kinds.items() if tally.equal == tally.checks]
    if not clean:
        return None
    _, trained_on = max(clean)
    return Elsewhere(trained_on, kinds[trained_on], mine)


def shown_why(why: Elsewhere) -> str:
    """The evidence of ``why`` in words."""
    return (f"trained on {shown_kind(why.trained_on)} as the checks of its runs show ({why.there.equal} of "
            f"{why.there.checks} bit for bit there, {why.here.checks - why.here.equal} of {why.here.checks} "
            f"differing on this machine's kind)")


def left_out_line(count: int, left_out: Image, why: Elsewhere) -> str:
    """The queue's line for the ``count`` runs of image ``left_out`` left out because of ``why``."""
    processor, system = left_out
    return (f"left out: {count} run{'s' * (count != 1)} of {processor} on {system or 'an unrecorded system'}, "
            f"which {shown_why(why)}; `harness reproduce RUN` checks one here anyway")


def kind_caveat(stored_on: dict[str, Any], checks: list[dict[str, Any]], here: dict[str, Any] | None = None) -> str:
    """For ``harness reproduce RUN`` of a run stored on ``stored_on``: where its record names no CPU model and the
    ``checks`` of its image show it trained on another kind than this machine's, the caveat that says so; else
    an empty string. This machine's record (torch imported) is read only where the run's lacks the model: a record
    with it is of the same kind as this machine's or of another, never of the same name only."""
    if stored_on.get("cpu_id"):
        return ""
    here = this_machine() if here is None else here
    why = trained_elsewhere(stored_on, here, tallies_by_image(checks))
    return "" if why is None else f"its machine image {shown_why(why)}"
