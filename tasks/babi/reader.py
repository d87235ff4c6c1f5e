"""Reading the official bAbI v1.2 text format into (story, question, answer) samples.

Format (Weston et al. 2015): ``ID text`` lines, each ending with a newline; a question line is
``ID question<TAB>answer<TAB>supporting ids``; the ID returning to 1 starts a new story. A question mark
outside a tab-separated question line (its tabs lost), a file cut mid-line, a blank line before the file's end and a
supporting-fact id that is not an earlier statement of the story (a later line, or a question) are format errors,
never silently a statement or a shorter file. Every question
yields one sample whose story is all the statements before it in its story (questions are not part
of the story), as the TPR-RNN reference reader does (ischlag/TPR-RNN, preprocessor/reader.py, ``parse_stories``).

Tokens: lower-cased words and punctuation marks, ``re.findall(r"\\w+|[^\\w\\s]+")``, which gives the
tokens the reference tokenizer produced on Python 3.6 (its own pattern misbehaves on Python >= 3.7).
The answer (e.g. ``apple,football`` in task 8 or ``n,w`` in task 19) is one vocabulary word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import DataFormatError

_TOKEN = re.compile(r"\w+|[^\w\s]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Sample:
    story: tuple[tuple[str, ...], ...]  # statements before the question, tokenised
    question: tuple[str, ...]
    answer: str
    story_id: int  # index of the story in its file (keeps a story's questions together when splitting)


def _is_number(word: str) -> bool:
    """Whether ``word`` is a line id: ASCII digits only (``str.isdigit`` also accepts digits such as '²' that
    ``int`` refuses)."""
    return word.isascii() and word.isdigit()


def check_supports(field: str, line_id: int, where: str, questions: frozenset[int] | set[int] = frozenset()) -> None:
    """The supporting-fact ids of the question on line ``line_id``: space-separated ids of earlier statements of
    its story, not of its ``questions`` (their line ids; none is accepted: the reader does not use them). Anything
    else is a DataFormatError naming ``where``."""
    for support in field.split():
        if not _is_number(support) or not 1 <= int(support) < line_id:
            raise DataFormatError(f"{where}: supporting fact {support!r} is not the id of an earlier line of the "
                                  f"story (1..{line_id - 1})")
        if int(support) in questions:
            raise DataFormatError(f"{where}: supporting fact {support} is the id of a question line, not of a "
                                  "statement")


def read_samples(path: Path) -> list[Sample]:
    """All samples of one file; a malformed line raises DataFormatError naming the file and line."""
    samples: list[Sample] = []
    story: list[tuple[str, ...]] = []
    questions: set[int] = set()  # the line ids of the story's questions so far
    story_id = -1
    expected_id = 1
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if text and not text.endswith("\n"):
        raise DataFormatError(f"{path}: the file ends in the middle of line {text.count(chr(10)) + 1} "
                              "(cut short? every bAbI line ends with a newline)")
    lines = text.splitlines()
    while lines and not lines[-1].strip():  # blank lines at the end of the file are harmless
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataFormatError(f"{path}:{lineno}: a blank line (bAbI files have none: a line lost its text?)")
        head, _, text = line.partition(" ")
        if not _is_number(head) or not text.strip():
            raise DataFormatError(f"{path}:{lineno}: expected 'ID text', got {line[:60]!r}")
        line_id = int(head)
        if line_id == 1:
            story, questions, story_id, expected_id = [], set(), story_id + 1, 1
        if line_id != expected_id or story_id < 0:
            raise DataFormatError(f"{path}:{lineno}: line id {line_id} out of sequence (expected {expected_id} or 1)")
        expected_id += 1
        if "\t" in text:
            fields = text.split("\t")
            if len(fields) < 2 or not fields[1].strip():
                raise DataFormatError(f"{path}:{lineno}: a question line needs 'question<TAB>answer<TAB>supports'")
            check_supports(fields[2] if len(fields) > 2 else "", line_id, f"{path}:{lineno}", questions)
            questions.add(line_id)
            samples.append(Sample(tuple(story), tuple(tokenize(fields[0])), fields[1].strip().lower(), story_id))
        elif "?" in text:  # bAbI statements never ask: a question whose tabs were lost (e.g. turned into spaces)
            raise DataFormatError(f"{path}:{lineno}: a question without its tab-separated answer "
                                  f"(expected 'ID question?<TAB>answer<TAB>supports'), got {line[:60]!r}")
        else:
            story.append(tuple(tokenize(text)))
    if not samples:
        raise DataFormatError(f"{path}: no question lines found")
    return samples
