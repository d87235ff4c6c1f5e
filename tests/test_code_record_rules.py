"""Rules of a run's code record and of carrying it over an edit (harness/provenance.py, harness/code_changes.py),
each against the rule the modules' docstrings state, on a tiny project:

* a run is stale when a file it recorded changed *or was removed*; a recorded file that has since become one that
  computes nothing (``NOT_COMPUTING``) no longer counts; only project packages' files are recorded;
* a docstring is the first statement of a module, class or function only (a string first in an ``if`` is code);
* the fingerprint of a ``{name: digest}`` mapping does not depend on its order; the git record's ``dirty`` counts
  tracked files only; the machine record counts torch's intra-op threads (the ones OMP_NUM_THREADS sets);
* a change's evidence check must show *every* changed file the evidence run imported at its digest after; a file
  that computes nothing cannot be carried; a probe must have run the code at both digests of the change;
* the cache of valid changes follows an edit of reproductions.json as well as of code_changes.json.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.code_changes import Change, check_all, problems, valid_changes
from harness.provenance import code_files, code_status, fingerprint, git_info, source_digest, text_digest
from tests.test_code_changes import FILE, RUN, Project

OTHER = "tasks/other.py"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "project")


def test_a_removed_file_is_stale_and_a_file_that_became_non_computing_is_not(project: Project) -> None:
    (project.root / "harness").mkdir()
    (project.root / "harness" / "cli.py").write_text("x = 2\n")
    recorded = {FILE: source_digest(project.root / FILE), "tasks/gone.py": "0" * 16, "harness/cli.py": "1" * 16}
    assert code_status(recorded, project.root).stale == ["tasks/gone.py (removed)"]


def test_only_the_project_packages_files_are_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for package in ("tasks", "scripts"):
        (tmp_path / package).mkdir()
        (tmp_path / package / f"record_rule_{package}.py").write_text("x = 1\n")
        monkeypatch.syspath_prepend(str(tmp_path / package))
    try:
        for package in ("tasks", "scripts"):
            importlib.import_module(f"record_rule_{package}")
        assert list(code_files(tmp_path)) == ["tasks/record_rule_tasks.py"]
    finally:
        for package in ("tasks", "scripts"):
            sys.modules.pop(f"record_rule_{package}", None)


def test_a_string_first_in_a_block_that_is_no_definition_is_code() -> None:
    assert text_digest("if x:\n    'kept'\n    y = 1\n") != text_digest("if x:\n    y = 1\n")
    assert text_digest("for i in x:\n    'kept'\n") != text_digest("for i in x:\n    pass\n")


def test_a_fingerprint_does_not_depend_on_the_mappings_order() -> None:
    assert fingerprint({"a.py": "1", "b.py": "2"}) == fingerprint({"b.py": "2", "a.py": "1"})
    assert fingerprint({"a.py": "1", "b.py": "2"}) != fingerprint({"a.py": "2", "b.py": "1"})


def test_the_git_record_is_dirty_for_tracked_files_only(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-q", "-m", "a")
    (tmp_path / "notes.txt").write_text("untracked\n")
    assert git_info(tmp_path)["dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    record = git_info(tmp_path)
    assert record["dirty"] is True and record["changed"] == ["a.py"]


def test_the_machine_record_counts_torchs_intra_op_threads() -> None:
    import torch

    from harness.provenance import machine_info

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert machine_info()["torch_threads"] == 1
    finally:
        torch.set_num_threads(threads)


def test_evidence_must_show_every_changed_file_it_imported_at_its_digest_after(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    (project.root / OTHER).write_text("def g():\n    return 1\n")
    other_before = source_digest(project.root / OTHER)
    (project.root / OTHER).write_text("def g():\n    return 2\n")
    other_after = source_digest(project.root / OTHER)
    folder = project.results / "toy" / "m" / RUN
    (folder / "results.json").write_text(json.dumps(
        {"run_id": RUN, "status": "completed", "code": {"files": {FILE: before, OTHER: other_before}}}))
    change = {"what": "two files", "files": {FILE: [before, after], OTHER: [other_before, other_after]},
              "evidence": [RUN]}
    half = {"run_id": RUN, "figures": 3, "equal": 3, "code": {"files": {FILE: after, OTHER: other_before}}}
    project.write("reproductions.json", [half])
    project.write("code_changes.json", [change])
    assert any("has no check in reproductions.json" in line for line in check_all(project.root))
    assert code_status({FILE: before, OTHER: other_before}, project.root).stale == [OTHER, FILE]


def test_a_file_that_computes_nothing_is_not_carried(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    project.write("reproductions.json", [project.check(RUN, after)])
    change = project.change(before, after)
    change["files"]["harness/cli.py"] = ["1" * 16, "2" * 16]
    project.write("code_changes.json", [change])
    assert check_all(project.root) == [
        "change 1 (error wording): harness/cli.py is a file runs do not record (it computes nothing), so there is "
        "nothing to carry"]


def test_a_probe_must_have_run_the_code_at_both_digests_of_the_change(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")

    def probe(files: list[str]) -> Change:
        record = {"probe": "tasks.toy_probe", "output": ["3", "3"], "files": {FILE: files}}
        return Change(what="w", files={FILE: (before, after)}, evidence=(record,))

    assert problems(probe([before, after]), project.results, []) == []
    for wrong in ([after, after], [before, before], ["0" * 16, after]):
        assert problems(probe(wrong), project.results, [])[0] == (
            f"probe tasks.toy_probe did not run the code before and after the change ({FILE})"), wrong


def test_the_valid_changes_follow_an_edit_of_the_checks(project: Project) -> None:
    before, after = project.digests[0], project.edit("new words")
    project.write("reproductions.json", [project.check(RUN, after)])
    project.write("code_changes.json", [project.change(before, after)])
    assert len(valid_changes(project.root)) == 1 and project.stale(before) == []
    project.write("reproductions.json", [project.check(RUN, after, equal=2)])  # the check no longer bit for bit
    stamp = (project.results / "code_changes.json").stat().st_mtime_ns
    os.utime(project.results / "reproductions.json", ns=(stamp + 10**9, stamp + 10**9))
    assert valid_changes(project.root) == () and project.stale(before) == [FILE]
