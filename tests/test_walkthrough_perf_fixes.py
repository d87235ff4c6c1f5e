"""`python -m reports.perf` (what `make perf` runs) with a user's mistakes: one line and exit code 2, nothing
recorded, no traceback, and nothing written outside bench/."""

from __future__ import annotations

import json
import sys

from reports.perf import publish, run_benchmark


def test_a_missing_command_or_a_bad_name_is_one_line_and_exit_2(tmp_path, capsys):
    assert run_benchmark("x", ["no-such-benchmark-command"], bench_dir=tmp_path) == 2
    assert run_benchmark("../escape", [sys.executable, "-c", "print('{}')"], bench_dir=tmp_path / "b") == 2
    assert run_benchmark("", [sys.executable, "-c", "print('{}')"], bench_dir=tmp_path / "b") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("perf") for line in lines)
    assert not list(tmp_path.rglob("*.json")) and not (tmp_path / "escape.log").exists()


def test_a_damaged_record_is_refused_by_publish_in_one_line(tmp_path, capsys):
    (tmp_path / "broken.json").write_text("garbage")
    assert publish(["broken"], bench_dir=tmp_path, results_dir=tmp_path / "results") == 2
    assert "is not a JSON record" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_a_failed_or_interrupted_rerun_leaves_the_previous_record_and_its_log(tmp_path, capsys):
    """The output goes to NAME.log.partial until the record is written: a rerun that fails leaves the previous
    record beside the log it came from, so perf-publish cannot publish an old record with a new log."""
    good = [sys.executable, "-c", "print('first run'); print('{\"x\": 1}')"]
    assert run_benchmark("b", good, bench_dir=tmp_path) == 0
    assert not (tmp_path / "b.log.partial").exists()
    bad = [sys.executable, "-c", "print('second run'); raise SystemExit(3)"]
    assert run_benchmark("b", bad, bench_dir=tmp_path) == 3
    assert "first run" in (tmp_path / "b.log").read_text()
    assert "second run" in (tmp_path / "b.log.partial").read_text()
    assert json.loads((tmp_path / "b.json").read_text())["figures"] == {"x": 1}
    assert "the previous record b.json stays" in capsys.readouterr().err
