"""Reading ListOps files: Long Range Arena's TSVs and the original ListOps release.

Two layouts, both one example per line, the expression written with the binarising parentheses of the
generators' ``to_string`` (e.g. ``( ( ( [SM 6 ) 5 ) ] )``):

* LRA (Tay et al., ICLR 2021; google-research/long-range-arena, ``lra_benchmarks/data/listops.py``,
  ``write_to_file``): ``{task}_{train,val,test}.tsv`` (``basic_*.tsv`` in the release), written by Python's
  ``csv.writer`` with a tab delimiter: a header ``Source<TAB>Target``, then ``expression<TAB>label`` rows,
  lines ending in ``\\r\\n``.
* The original ListOps release (Nangia & Bowman, NAACL SRW 2018; nyu-mll/spinn, branch ``listops-release``,
  ``python/spinn/data/listops/``): ``train_d20s.tsv`` / ``test_d20s.tsv``, no header, ``label<TAB>expression``.

Tokenisation as LRA's input pipeline after its fix of March 2021 (``lra_benchmarks/listops/input_pipeline.py``;
issue #20 there: the first tokeniser dropped the brackets, which made the task unsolvable): the parentheses are
removed and the rest split on whitespace; ``]`` is a token of its own. So the token count is the generator's
``length`` (operators, digits and closing brackets). Token ids: the fixed vocabulary of
:mod:`tasks.listops.evaluate`.

Empty lines are skipped. A malformed file (not UTF-8, cut mid-line, empty, a line of only spaces or tabs, a
missing tab, a label that is not 0-9, an unknown token, unbalanced brackets or parentheses) raises
:class:`harness.errors.DataFormatError`, one line naming the file and line. A label that disagrees with the
expression's value is kept as given and counted (``mismatched``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import DataFormatError
from tasks.listops.evaluate import TOKEN_ID, MalformedExpression, evaluate_ids

LRA_HEADER = ("Source", "Target")
LAYOUTS = ("lra", "original")


@dataclass
class Examples:
    """The examples of one file: token ids per expression (uint8 [L] each), labels int64 [N]."""

    tokens: list[np.ndarray]
    labels: np.ndarray
    mismatched: int = 0  # labels that differ from the expression's value (kept as given)

    @property
    def longest(self) -> int:
        return max((len(t) for t in self.tokens), default=0)


def tokenize(expression: str) -> list[str]:
    """``( ( [SM 6 ) 5 ) ] )`` -> ``["[SM", "6", "5", "]"]``: parentheses removed, split on whitespace."""
    return expression.replace("(", " ").replace(")", " ").split()


def parse_expression(expression: str) -> np.ndarray:
    """Token ids (uint8 [L]) of one expression; a ValueError saying what is wrong with it."""
    depth = 0
    for char in expression:  # the binarising parentheses must balance too: a cut expression shows here
        depth += (char == "(") - (char == ")")
        if depth < 0:
            raise ValueError("a ')' closes no '('")
    if depth:
        raise ValueError(f"{depth} '(' never closed")
    tokens = tokenize(expression)
    if not tokens:
        raise ValueError("empty expression")
    ids = []
    for token in tokens:
        if token not in TOKEN_ID or token == "<pad>":
            raise ValueError(f"unknown token {token[:20]!r} (ListOps has [MIN [MAX [MED [SM ] and the digits 0-9)")
        ids.append(TOKEN_ID[token])
    return np.array(ids, dtype=np.uint8)


def read_file(path: Path, layout: str) -> Examples:
    """All examples of one file in ``layout`` ``lra`` or ``original``; a DataFormatError naming file:line."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise DataFormatError(f"{path}: the file is empty (expected ListOps examples, one per line)")
    if not text.endswith("\n"):
        raise DataFormatError(f"{path}:{text.count(chr(10)) + 1}: the file ends in the middle of this line "
                              "(cut short? every line ends with a newline)")
    tokens: list[np.ndarray] = []
    labels: list[int] = []
    mismatched = 0
    for lineno, raw in enumerate(text.split("\n")[:-1], start=1):
        line = raw.removesuffix("\r")  # csv.writer ends lines with \r\n
        if layout == "lra" and lineno == 1:
            if tuple(line.split("\t")) != LRA_HEADER:
                raise DataFormatError(f"{path}:1: expected the header 'Source<TAB>Target' of an LRA ListOps file, "
                                      f"got {line[:60]!r}")
            continue
        if not line:
            continue  # an empty line: a file written with a blank line between examples loses nothing
        if not line.strip():
            raise DataFormatError(f"{path}:{lineno}: a line of only spaces or tabs (an example that lost its "
                                  f"text?), got {line[:60]!r}")
        fields = line.split("\t")
        if len(fields) != 2:
            want = "expression<TAB>label" if layout == "lra" else "label<TAB>expression"
            raise DataFormatError(f"{path}:{lineno}: expected '{want}' ({len(fields)} tab-separated field(s)), "
                                  f"got {line[:60]!r}")
        expression, label = fields if layout == "lra" else fields[::-1]
        if label.strip() not in {str(d) for d in range(10)}:
            raise DataFormatError(f"{path}:{lineno}: the label must be a digit 0-9, got {label[:20]!r}")
        try:
            ids = parse_expression(expression)
            value = evaluate_ids(ids)
        except (ValueError, MalformedExpression) as exc:
            raise DataFormatError(f"{path}:{lineno}: malformed expression: {exc}") from None
        tokens.append(ids)
        labels.append(int(label))
        mismatched += value != int(label)
    if not tokens:
        raise DataFormatError(f"{path}: no examples (only a header or blank lines)")
    return Examples(tokens=tokens, labels=np.array(labels, dtype=np.int64), mismatched=mismatched)


def pad(tokens: list[np.ndarray], max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(token ids int64 [N, max_len] padded with 0, lengths int64 [N]); every sequence must fit."""
    lengths = np.array([len(t) for t in tokens], dtype=np.int64)  # [N]
    padded = np.zeros((len(tokens), max_len), dtype=np.int64)  # [N, max_len]
    for i, ids in enumerate(tokens):
        padded[i, : len(ids)] = ids
    return padded, lengths
