"""The options of ``harness sweep`` as a user types them: a mistake is one line, exit code 2, before Ray starts or
the run store is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from tests.conftest import ROOT


def no_ray(*args, **kwargs):
    raise AssertionError("Ray was started")


@pytest.fixture
def no_ray_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)


def test_an_empty_profile_is_refused_not_taken_for_the_files(env, tmp_path, capsys, no_ray_session):
    runs = tmp_path / "store"
    code = cli.main(["sweep", str(ROOT / "sweeps" / "babi_smoke.yaml"), "--profile", "", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "unknown profile ''" in err and "smoke, cpu, paper" in err
    assert not Path(runs).exists()
