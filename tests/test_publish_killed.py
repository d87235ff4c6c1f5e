"""A ``harness publish`` killed part-way leaves the reference store whole: it used to delete each run's earlier
copy before moving the new one in, one run after the other, so a kill there left the store without a run it had
held (a stack published again lost a member) and its staging folder behind. Now the next publication to the store
finishes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import PROJECT_ROOT
from harness.publish import publish
from tests.test_report import write_run

# Publishes argv[3:] from the store argv[1] to argv[2], killed (SIGKILL) at its second rename of a folder: after the
# first run was put in place, before the others.
KILLED_PUBLISH = """
import os, signal, sys
from pathlib import Path
calls = [0]
def killing(real):
    def renamed(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return renamed
from harness.publish import publish
os.replace, os.rename = killing(os.replace), killing(os.rename)
publish(sys.argv[3:], Path(sys.argv[1]), Path(sys.argv[2]))
"""


def _stored(results: Path) -> dict[str, str]:
    """Run id -> the ``finished_at`` of its copy in the store."""
    return {p.parent.name: json.loads(p.read_text())["finished_at"] for p in results.glob("*/*/*/results.json")}


def test_a_killed_publication_loses_no_run_and_the_next_one_finishes_it(tmp_path: Path) -> None:
    runs, results = tmp_path / "runs", tmp_path / "reference" / "results"
    names = [write_run(runs, "listops", "lstm", seed, metrics={"test/acc": 0.5}, finished="2026-01-01T00:00:00Z").name
             for seed in range(3)]
    publish(names, runs, results)
    for name in names:  # each run finished again since: its copy in the store is to be replaced
        path = runs / "listops" / "lstm" / name / "results.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "finished_at": "2026-02-02T00:00:00Z"}))
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    killed = subprocess.run([sys.executable, "-c", KILLED_PUBLISH, str(runs), str(results), *names], env=env,
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert len(_stored(results)) >= 2  # at most one run is out of the store, and only between two renames
    publish([names[0]], runs, results)  # the next publication to the store finishes the killed one first
    assert _stored(results) == dict.fromkeys(names, "2026-02-02T00:00:00Z")
    assert not list(results.parent.glob(".publish-*"))


def test_a_publication_killed_while_copying_is_discarded(tmp_path: Path) -> None:
    from harness.publish import finish_interrupted

    runs, results = tmp_path / "runs", tmp_path / "reference" / "results"
    name = write_run(runs, "listops", "lstm", 0, metrics={"test/acc": 0.5}).name
    publish([name], runs, results)
    staging = results.parent / ".publish-killed"  # no ready mark: killed before the copies were whole
    (staging / "new" / "listops" / "lstm" / "listops-lstm-cpu-s5-a").mkdir(parents=True)
    (staging / "to").write_text(f"{results.resolve()}\n")
    other = results.parent / ".publish-elsewhere"  # a publication to another store beside it: not touched
    (other / "new").mkdir(parents=True)
    (other / "ready").touch()
    (other / "to").write_text(f"{tmp_path / 'elsewhere'}\n")
    assert finish_interrupted(results) == []
    assert sorted(_stored(results)) == [name] and not staging.exists() and other.exists()
