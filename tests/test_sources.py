"""The project stands alone: no file of the product cites documents that live outside the repository.

A clone of the project has no sibling ``shared`` folder, so docstrings, comments, READMEs and YAML cite
primary sources instead (a paper's section, equation or table; a public repository and file; a library's
own source or documentation). This test lists every file git would ship (tracked, plus untracked files
that are not ignored), except the tests, and fails on any mention of the notes that were never part of
it: ``REFERENCE.md`` (also written ``REFERENCE §``), ``STACK.md``, ``DESIGN.md``, or a path into the
sibling folder (``../shared``, ``shared/papers``, ``shared/data``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"REFERENCE\.md|REFERENCE §|STACK\.md|DESIGN\.md|\.\./shared|shared/papers|shared/data")
EXEMPT_DIRS = ("tests/", ".ci/")  # .ci/run points HARNESS_DATA_DIR at the data staged beside CI's checkout


def product_files(root: Path = ROOT) -> list[str]:
    """Relative paths of the files git would commit: tracked, and untracked but not ignored."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc})")
    return sorted({p for p in out.split("\0") if p and not p.startswith(EXEMPT_DIRS)})


def outside_citations(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line that mentions a document outside the repository."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


@pytest.mark.parametrize("line", [
    "cited in REFERENCE.md §1.5", "as in pycolab (REFERENCE §2.5)", "the setting STACK.md saw",
    "see DESIGN.md", "export HARNESS_DATA_DIR=../shared/data", "text in /srv/shared/papers/x.txt",
    "files under shared/data/babi",
])
def test_every_form_of_outside_citation_is_caught(line: str) -> None:
    assert outside_citations(f"first line\n{line}\n") == [(2, line)]


@pytest.mark.parametrize("line", [
    "ischlag/TPR-RNN, tpr_rnn_graph.py", "Shanahan et al., ICML 2020, §3 and Table S1",
    "reference implementation", "shared weights across iterations", "$HARNESS_DATA_DIR/relations_game/",
])
def test_primary_sources_and_ordinary_words_pass(line: str) -> None:
    assert outside_citations(line) == []


def test_no_product_file_cites_documents_outside_the_repository() -> None:
    files = product_files()
    assert "harness/cli.py" in files, "the file list misses the product's sources"
    hits = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file():
            continue  # tracked but deleted in the working tree
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary (images, archives)
        hits += [f"{rel}:{n}: {line}" for n, line in outside_citations(text)]
    assert not hits, "cite the primary source instead of a document outside the repository:\n" + "\n".join(hits)
