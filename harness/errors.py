"""Exceptions that carry a user-facing message.

A :class:`UserError` is a mistake the user can fix (a wrong name, a bad override, a malformed data
file). The command line prints its message as one line and exits with code 2, without a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

INTERRUPTED = 130  # the exit code of a command stopped by Ctrl-C (128 + SIGINT), whatever it had stored by then


class UserError(Exception):
    """A mistake in the user's input; reported as one readable line, exit code 2."""


class DataFormatError(UserError):
    """A data file does not follow its documented format; the message names the file and line."""


class SweepStopped(RuntimeError):
    """Ray Tune gave up on a sweep part-way (for one, when Ray's memory monitor kills trial workers, Tune 2.60's
    controller raises instead of failing the trials). The finished trials' runs are stored and the same command
    runs the rest, so the command line prints it as one line and exits with code 1."""


class DivergedError(RuntimeError):
    """Training produced a non-finite loss; the run is stored with status ``diverged``."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A ' (did you mean X?)' suffix for the closest choice, or '' when nothing is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def listed(names: list[str], shown: int) -> str:
    """The first ``shown`` names, comma-separated, and how many more: ``a, b and 3 more``."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def counted(n: int, noun: str) -> str:
    """``1 trial``, ``2 trials``: a count with its noun in the right number (for nouns that take an -s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
