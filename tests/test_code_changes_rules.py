"""Rules of carrying runs over an edit (harness/code_changes.py), each on a tiny project: the evidence is a check
of the evidence run itself that came back bit for bit on at least one figure, every changed file needs an evidence
run that imported it, and a change carries only the digest it starts from."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.code_changes import check_all
from harness.provenance import code_status
from tests.test_code_changes import FILE, LATER, RUN, Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "project")


def test_a_check_of_no_figures_is_no_evidence(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    empty = {"run_id": RUN, "figures": 0, "equal": 0, "code": {"files": {FILE: after}}}
    project.write("reproductions.json", [empty])
    project.write("code_changes.json", [project.change(before, after)])
    assert project.stale(before) == [FILE]
    assert any("no check in reproductions.json" in line for line in check_all(project.root))


def test_another_runs_check_under_the_code_before_does_not_stand_for_the_evidence_run(project: Project) -> None:
    """RUN trained on ``first``; the change goes from ``second`` to ``third``. LATER came back bit for bit under
    ``second``, RUN never did: RUN is no evidence that ``second`` computes its figures."""
    first, second = project.digests[0], project.edit("second words")
    third = project.edit("third words")
    project.add_run(LATER, second)
    project.write("reproductions.json", [project.check(LATER, second), project.check(RUN, third)])
    project.write("code_changes.json", [project.change(second, third, RUN)])
    assert project.stale(second) == [FILE] and project.stale(first) == [FILE]
    assert any("was not trained on the code before the change" in line for line in check_all(project.root))


def test_a_changed_file_no_evidence_run_imported_is_not_carried(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    project.write("reproductions.json", [project.check(RUN, after)])
    change = project.change(before, after)
    change["files"]["tasks/other.py"] = ["1111111111111111", "2222222222222222"]
    project.write("code_changes.json", [change])
    assert check_all(project.root) == ["change 1 (error wording): no evidence run that holds imported tasks/other.py"]
    assert project.stale(before) == [FILE]


def test_a_change_carries_only_the_digest_it_starts_from(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    project.write("reproductions.json", [project.check(RUN, after)])
    project.write("code_changes.json", [project.change(before, after)])
    assert project.stale(before) == [] and project.stale("0123456789abcdef") == [FILE]
    assert code_status({FILE: "0123456789abcdef"}, project.root).carried == []
