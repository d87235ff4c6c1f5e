"""Markdown tables for the README's generated sections (:mod:`reports.readme`, :mod:`reports.perf`)."""

from __future__ import annotations


def table(header: list[str], rows: list[list[str]], empty: str | None = "_No reference run yet._") -> list[str]:
    """A Markdown table's lines (a '|' inside a cell escaped); ``empty`` instead when there are no rows (None: the
    header alone)."""
    if not rows and empty is not None:
        return [empty]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines
