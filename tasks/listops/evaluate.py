"""ListOps' fixed vocabulary and an exact evaluator of a tokenised expression.

ListOps (Nangia & Bowman, NAACL SRW 2018) expressions are prefix-notation trees over the digits 0-9 with the
operators ``[MIN``, ``[MAX``, ``[MED`` (median) and ``[SM`` (sum modulo 10), each closed by ``]``; the label
is the expression's value. The values follow Long Range Arena's generator (Tay et al., ICLR 2021;
google-research/long-range-arena, ``lra_benchmarks/data/listops.py``, ``to_value``): ``[MED`` is
``int(np.median(values))``, i.e. the middle value, or for an even count the floor of the mean of the two
middle values (values are never negative); ``[SM`` is ``sum(values) % 10``.

Token ids (a fixed vocabulary of 16, 0 = padding)::

    0 <pad>   1 [MIN   2 [MAX   3 [MED   4 [SM   5 ]   6..15 the digits 0..9
"""

from __future__ import annotations

from collections.abc import Sequence

PAD = "<pad>"
MIN, MAX, MED, SUM_MOD, END = "[MIN", "[MAX", "[MED", "[SM", "]"
OPERATORS = (MIN, MAX, MED, SUM_MOD)
DIGITS = tuple(str(d) for d in range(10))
VOCAB: tuple[str, ...] = (PAD, *OPERATORS, END, *DIGITS)
TOKEN_ID: dict[str, int] = {token: i for i, token in enumerate(VOCAB)}
VOCAB_SIZE = len(VOCAB)  # 16
NUM_CLASSES = 10
END_ID = TOKEN_ID[END]  # 5
FIRST_DIGIT_ID = TOKEN_ID["0"]  # 6: digit d has id 6 + d
OPERATOR_IDS = tuple(TOKEN_ID[op] for op in OPERATORS)  # (1, 2, 3, 4)


class MalformedExpression(ValueError):
    """A token sequence that is not one well-formed ListOps expression (the message says why)."""


def apply(op: str, values: Sequence[int]) -> int:
    """The value of one operator over its arguments (LRA's ``to_value``)."""
    if not values:
        raise MalformedExpression(f"{op} has no arguments")
    if op == MIN:
        return min(values)
    if op == MAX:
        return max(values)
    if op == SUM_MOD:
        return sum(values) % 10
    if op == MED:  # int(np.median(values)): the middle value, or floor of the mean of the two middle ones
        ordered = sorted(values)
        half = len(ordered) // 2
        return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) // 2
    raise MalformedExpression(f"unknown operator {op!r}")


def evaluate_ids(ids: Sequence[int]) -> int:
    """The value (0-9) of one expression given as token ids (no padding), e.g. ``[4, 12, 11, 5]`` (``[SM 6 5 ]``)
    -> 1. Raises :class:`MalformedExpression` for unbalanced brackets, stray tokens, or more than one value."""
    stack: list[tuple[int, list[int]]] = []  # open operators: (op id, arguments so far)
    result: int | None = None
    for position, token in enumerate(ids):
        token = int(token)
        if result is not None:
            raise MalformedExpression(f"token {position + 1} follows a complete expression")
        if token >= FIRST_DIGIT_ID and token < VOCAB_SIZE:
            value = token - FIRST_DIGIT_ID
        elif token in OPERATOR_IDS:
            stack.append((token, []))
            continue
        elif token == END_ID:
            if not stack:
                raise MalformedExpression(f"token {position + 1}: ']' closes no operator")
            op, arguments = stack.pop()
            value = apply(VOCAB[op], arguments)
        else:
            raise MalformedExpression(f"token {position + 1}: id {token} is not an operator, ']' or a digit")
        if stack:
            stack[-1][1].append(value)
        else:
            result = value
    if stack:
        raise MalformedExpression(f"{len(stack)} operator(s) never closed by ']'")
    if result is None:
        raise MalformedExpression("empty expression")
    return result


def evaluate_tokens(tokens: Sequence[str]) -> int:
    """The value of one expression given as token strings, e.g. ``["[SM", "6", "5", "]"]`` -> 1."""
    unknown = [t for t in tokens if t not in TOKEN_ID or t == PAD]
    if unknown:
        raise MalformedExpression(f"unknown token {unknown[0]!r}")
    return evaluate_ids([TOKEN_ID[t] for t in tokens])
