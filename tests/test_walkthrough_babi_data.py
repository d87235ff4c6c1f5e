"""``harness data babi`` and ``harness data fetch``: user mistakes that must change nothing on disk, and the files
``data babi`` writes. Fast: tiny question counts, and fetch's downloads replaced by a local function (no server)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

import harness.fetch
from harness.cli import main
from harness.errors import UserError
from tasks.babi.generator import file_name

SMALL = ["--n-train", "3", "--n-test", "3"]


def refused(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> str:
    """Run ``harness <args>``: exit code 2 and one ``error:`` line on stderr containing ``fragment``."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    return err[0]


def test_data_babi_refuses_an_empty_out_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # Path("") is the working folder: the files would land there
    refused(capsys, ["data", "babi", "--out", "", "--ids", "1", *SMALL], "--out is empty")
    assert list(tmp_path.iterdir()) == []


def test_data_babi_keeps_files_already_in_out_unless_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "babi" / "en-10k"
    out.mkdir(parents=True)
    official = out / file_name(1, "train")
    official.write_text("1 Mary moved to the bathroom.\n2 Where is Mary? \tbathroom\t1\n")
    kept = official.read_bytes()
    line = refused(capsys, ["data", "babi", "--out", str(out), "--ids", "6", "1", *SMALL], file_name(1, "train"))
    assert "--force" in line
    assert official.read_bytes() == kept and sorted(p.name for p in out.iterdir()) == [official.name]
    assert main(["data", "babi", "--out", str(out), "--ids", "1", "--force", *SMALL]) == 0
    assert official.read_bytes() != kept and (out / file_name(1, "test")).is_file()


def test_data_babi_writes_files_readable_as_the_umask_allows(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        assert main(["data", "babi", "--out", str(tmp_path), "--ids", "1", *SMALL]) == 0
    finally:
        os.umask(previous)
    for split in ("train", "test"):
        assert stat.S_IMODE((tmp_path / file_name(1, split)).stat().st_mode) == 0o644


def test_a_fetch_that_fails_to_download_leaves_no_new_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(url: str, target: Path, **_: object) -> None:
        raise UserError(f"could not reach {url}: connection refused")

    monkeypatch.setattr(harness.fetch, "download", unreachable)
    dest = tmp_path / "data"
    refused(capsys, ["data", "fetch", "babi", "--dest", str(dest), "--url", "http://127.0.0.1:9/x.tgz"], "refused")
    assert not dest.exists()


@pytest.mark.parametrize(("served", "extra", "message"), [
    (b"not the archive", ["--sha256", hashlib.sha256(b"the archive").hexdigest()], "the file was deleted"),
    (b"not a tar archive at all", [], "is not a readable tar archive"),
], ids=["fails its check", "does not unpack"])
def test_a_download_that_is_deleted_takes_its_recorded_sha256_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], served: bytes,
    extra: list[str], message: str
) -> None:
    def serve(url: str, target: Path, **_: object) -> None:
        target.write_bytes(served)

    monkeypatch.setattr(harness.fetch, "download", serve)
    refused(capsys, ["data", "fetch", "babi", "--dest", str(tmp_path), *extra], message)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_data_babi_refuses_a_negative_seed_and_writes_nothing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen"
    refused(capsys, ["data", "babi", "--out", str(out), "--ids", "1", "--seed", "-1", *SMALL], "--seed -1")
    assert not out.exists()
