"""Edits the reference runs are carried over (harness/code_changes.py): a run is not stale over an edit whose
evidence holds (a run trained before it, reproduced bit for bit after it), and is stale over any other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness import PROJECT_ROOT
from harness.code_changes import check_all, record_change
from harness.errors import UserError
from harness.provenance import code_status, source_digest

RUN = "toy-m-cpu-s0-aaaa1111"
LATER = "toy-m-cpu-s1-bbbb2222"
FILE = "tasks/toy.py"


class Project:
    """A project root with one computing file, a reference run that imported it, and the two records."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.results = root / "results"
        (root / "tasks").mkdir(parents=True)
        self.digests = [self.edit("old words")]
        self.add_run(RUN, self.digests[0])

    def edit(self, words: str) -> str:
        path = self.root / FILE
        path.write_text(f"def f():\n    raise ValueError({words!r})\n")
        return source_digest(path)

    def add_run(self, run_id: str, digest: str) -> None:
        folder = self.results / "toy" / "m" / run_id
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(
            {"run_id": run_id, "status": "completed", "code": {"files": {FILE: digest}}}))

    def write(self, name: str, entries: list[dict]) -> None:
        (self.results / name).write_text(json.dumps(entries))

    def check(self, run_id: str, digest: str, equal: int = 3) -> dict:
        return {"run_id": run_id, "figures": 3, "equal": equal, "code": {"files": {FILE: digest}}}

    def change(self, before: str, after: str, evidence: str = RUN) -> dict:
        return {"what": "error wording", "files": {FILE: [before, after]}, "evidence": [evidence]}

    def stale(self, digest: str) -> list[str]:
        return code_status({FILE: digest}, self.root).stale


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "project")


def test_an_edit_with_evidence_carries_the_runs_before_it(project: Project) -> None:
    before = project.digests[0]
    after = project.edit("new words")
    assert project.stale(before) == [FILE]  # no record: stale
    project.write("reproductions.json", [project.check(RUN, after)])
    project.write("code_changes.json", [project.change(before, after)])
    assert project.stale(before) == [] and project.stale(after) == []
    carried = code_status({FILE: before}, project.root).carried
    assert [(rel, change.what) for rel, change in carried] == [(FILE, "error wording")]
    assert code_status({FILE: after}, project.root).carried == []
    assert check_all(project.root) == []
    project.edit("words never shown")  # an edit after the recorded one is not carried
    assert project.stale(before) == [FILE]


@pytest.mark.parametrize(("damage", "problem"), [
    ("not bit for bit", "no check in reproductions.json"),
    ("check under other code", "no check in reproductions.json"),
    ("evidence trained after", "was not trained on the code before the change"),
    ("evidence unknown", "is not a reference run"),
])
def test_an_edit_whose_evidence_fails_carries_nothing(project: Project, damage: str, problem: str) -> None:
    before = project.digests[0]
    after = project.edit("new words")
    check = project.check(RUN, after, equal=2 if damage == "not bit for bit" else 3)
    if damage == "check under other code":
        check["code"]["files"][FILE] = before
    evidence = {"evidence trained after": LATER, "evidence unknown": "nowhere-s0-00000000"}.get(damage, RUN)
    project.add_run(LATER, after)
    project.write("reproductions.json", [check, project.check(LATER, after)])
    project.write("code_changes.json", [project.change(before, after, evidence)])
    assert project.stale(before) == [FILE]
    assert any(problem in line for line in check_all(project.root)), check_all(project.root)


def test_edits_chain(project: Project) -> None:
    first, second = project.digests[0], project.edit("second words")
    project.add_run(LATER, second)
    third = project.edit("third words")
    project.write("reproductions.json", [project.check(RUN, second), project.check(LATER, third)])
    project.write("code_changes.json", [project.change(first, second), project.change(second, third, LATER)])
    assert project.stale(first) == [] and project.stale(second) == []
    assert len(code_status({FILE: first}, project.root).carried) == 2


@pytest.mark.parametrize("anchored", [True, False])
def test_a_file_carried_once_is_carried_again_by_a_run_reproduced_under_its_digest(project: Project,
                                                                                    anchored: bool) -> None:
    """RUN recorded the file at ``first``; a bit-for-bit check under ``second`` carried it over the first edit. That
    check shows the code at ``second`` computes RUN's figures, so RUN, checked again under ``third``, shows the
    second edit too. A check under ``second`` that did not come back bit for bit shows nothing."""
    first, second = project.digests[0], project.edit("second words")
    third = project.edit("third words")
    checks = [project.check(RUN, second), project.check(RUN, third)]
    if not anchored:
        checks[0]["equal"] = 2
    project.write("reproductions.json", checks)
    project.write("code_changes.json", [project.change(first, second), project.change(second, third)])
    problems = check_all(project.root)
    if anchored:
        assert problems == [] and project.stale(first) == []
        assert len(code_status({FILE: first}, project.root).carried) == 2
    else:
        assert any("was not trained on the code before the change" in line for line in problems), problems
        assert project.stale(first) == [FILE]


def test_a_malformed_record_is_one_line(project: Project) -> None:
    (project.results / "code_changes.json").write_text('[{"what": "x"}]')
    project.edit("new words")
    with pytest.raises(UserError, match="change 1 needs"):
        project.stale(project.digests[0])


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def test_harness_carry_records_an_edit_against_git(project: Project) -> None:
    _git(project.root, "init", "-q")
    _git(project.root, "add", FILE)
    _git(project.root, "commit", "-q", "-m", "before")
    with pytest.raises(UserError, match="computes the same in HEAD"):
        record_change([FILE], "error wording", [RUN], root=project.root)
    after = project.edit("new words")
    with pytest.raises(UserError, match="the evidence does not hold: evidence .* has no check"):
        record_change([FILE], "error wording", [RUN], root=project.root)
    assert not (project.results / "code_changes.json").exists()
    project.write("reproductions.json", [project.check(RUN, after)])
    with pytest.raises(UserError, match="--what"):
        record_change([FILE], " ", [RUN], root=project.root)
    path = record_change([FILE], "error wording", [RUN], root=project.root)
    stored = json.loads(path.read_text())
    assert stored[0]["files"] == {FILE: [project.digests[0], after]} and stored[0]["evidence"] == [RUN]
    assert project.stale(project.digests[0]) == []


def test_the_shipped_records_hold() -> None:
    """Every edit recorded in results/code_changes.json still has its evidence (else its runs read as stale)."""
    assert check_all(PROJECT_ROOT) == []


def test_a_probe_shows_an_edit_on_code_no_run_can_repeat(tmp_path: Path) -> None:
    """--probe: the probe runs on git's version and on the working tree; equal outputs carry the runs (here an RL
    run's env file), different ones refuse."""
    import shutil

    project = Project(tmp_path / "project")
    shutil.copytree(PROJECT_ROOT / "harness", project.root / "harness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project.root / "tasks" / "__init__.py").write_text("")
    (project.root / "tasks" / "toy_probe.py").write_text(
        "def probe():\n    from tasks import toy\n    return str(toy.SIZE)\n")
    path = project.root / FILE

    def edit(words: str, size: int) -> str:
        path.write_text(f"SIZE = {size}\n\ndef f():\n    raise ValueError({words!r})\n")
        return source_digest(path)

    before = edit("old words", 3)
    (project.results / "toy" / "m" / RUN / "results.json").write_text(json.dumps(
        {"run_id": RUN, "status": "completed", "code": {"files": {FILE: before}}}))
    _git(project.root, "init", "-q")
    _git(project.root, "add", "harness", "tasks")
    _git(project.root, "commit", "-q", "-m", "before")
    edit("new words", 4)
    with pytest.raises(UserError, match=r"probe tasks.toy_probe: its output before and after the edit differ"):
        record_change([FILE], "error wording", [], root=project.root, probes=["tasks.toy_probe"])
    after = edit("new words", 3)
    stored = json.loads(record_change([FILE], "error wording", [], root=project.root,
                                      probes=["tasks.toy_probe"]).read_text())
    assert stored[0]["evidence"][0]["output"] == ["3", "3"]
    assert stored[0]["evidence"][0]["files"][FILE] == [before, after]
    assert code_status({FILE: before}, project.root).stale == []
    assert check_all(project.root) == []


def test_the_boxworld_probe_covers_the_shipped_rl_settings() -> None:
    """tasks/boxworld/probe.py steps the env setting of every shipped BoxWorld run, and is deterministic."""
    import yaml

    from tasks.boxworld.probe import SETTINGS, probe

    shipped = {(path.parts[-4], json.dumps(yaml.safe_load(path.read_text())["task"]["env"], sort_keys=True))
               for path in (PROJECT_ROOT / "results").glob("*boxworld/*/*/config.yaml")}
    probed = {(task, json.dumps(env, sort_keys=True)) for task, env in SETTINGS}
    assert shipped and shipped <= probed
    assert probe(steps=30, boards=4) == probe(steps=30, boards=4) != probe(steps=31, boards=4)


@pytest.mark.slow
def test_the_shipped_probes_still_give_their_recorded_output() -> None:
    """A probe record whose files are still as recorded gives the recorded output when run again now."""
    from harness.code_changes import load_changes
    from harness.code_probes import run_probe

    ran = 0
    for change in load_changes(PROJECT_ROOT / "results"):
        for item in change.evidence:
            if not isinstance(item, dict) or any(
                    source_digest(PROJECT_ROOT / rel) != after for rel, (_, after) in item["files"].items()
                    if (PROJECT_ROOT / rel).is_file()):
                continue
            assert run_probe(item["probe"], PROJECT_ROOT)["output"] == item["output"][1], change.what
            ran += 1
    assert ran or not any(isinstance(item, dict) for change in load_changes(PROJECT_ROOT / "results")
                          for item in change.evidence)


def test_runs_stale_counts_the_runs_carried_over(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["runs", "--reference", "--stale"]) == 0
    out = capsys.readouterr().out
    assert "runs is stale (" in out and "carried over edits shown to compute nothing differently" in out
