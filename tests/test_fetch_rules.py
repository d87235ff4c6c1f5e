"""Rules of ``harness data fetch`` checked one function at a time, against hand-written transcriptions.

Sources of the rules:

* tarfile's ``data`` extraction filter (https://docs.python.org/3/library/tarfile.html#tarfile-extraction-filter):
  a member that would land outside the destination is refused.
* gzip's trailer (RFC 1952, section 2.3.1): CRC32 and ISIZE of the uncompressed data follow the compressed blocks;
  a reader that stops before them never checks them.
* ``Content-Range`` (RFC 9110, section 14.4): ``bytes first-last/complete`` or ``bytes */complete``.
* SHA-256 (FIPS 180-4): a digest is 64 hexadecimal digits, all of which must match.

No test here touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.fetch import _strip, addresses, check_layout, install, unpack, verify
from harness.fetch_catalogue import Dataset, Resource
from harness.fetch_http import _content_range, human
from tests.conftest import Served
from tests.test_fetch import tar_gz


def _last_digit_changed(digest: str) -> str:
    """The same 64 hexadecimal digits but the last one: a check on a prefix cannot tell them apart."""
    return digest[:-1] + ("0" if digest[-1] != "0" else "1")


def test_a_sha256_differing_only_in_its_last_digit_is_refused_and_the_file_deleted(tmp_path: Path) -> None:
    file = tmp_path / "data.tar.gz"
    file.write_bytes(b"some bytes of a release" * 100)
    right = hashlib.sha256(file.read_bytes()).hexdigest()
    resource = Resource(url="http://127.0.0.1/data.tar.gz", filename=file.name, kind="tar")
    assert verify(file, resource, resource.url, right, "no value") == right
    assert (tmp_path / "data.tar.gz.sha256").read_text() == f"{right}  data.tar.gz\n"  # sha256sum's format
    with pytest.raises(UserError, match="has SHA-256"):
        verify(file, resource, resource.url, _last_digit_changed(right), "no value")
    assert not file.exists() and not (tmp_path / "data.tar.gz.sha256").exists()


def test_the_sha256_given_on_the_command_line_is_checked_when_the_catalogue_has_none(tmp_path: Path) -> None:
    file = tmp_path / "f.gz"
    file.write_bytes(b"x" * 10)
    resource = Resource(url="http://127.0.0.1/f.gz", filename=file.name, kind="gz")  # no sha256, no md5
    with pytest.raises(UserError, match="expected"):
        verify(file, resource, resource.url, "0" * 64, "no value")


def test_an_md5_differing_only_in_its_last_digit_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "f.gz"
    file.write_bytes(b"y" * 10)
    md5 = hashlib.md5(file.read_bytes(), usedforsecurity=False).hexdigest()
    resource = Resource(url="http://127.0.0.1/f.gz", filename=file.name, kind="gz", md5=_last_digit_changed(md5))
    with pytest.raises(UserError, match="has MD5"):
        verify(file, resource, resource.url, None, "no value")
    assert not file.exists()


@pytest.mark.parametrize(("name", "top", "want"), [
    ("lra_release/listops-1000/basic_test.tsv", "lra_release", "listops-1000/basic_test.tsv"),
    ("./lra_release/pathfinder32/a.npy", "lra_release", "pathfinder32/a.npy"),
    ("././lra_release/x", "lra_release", "x"),
    ("lra_release", "lra_release", None),
    ("lra_release/", "lra_release", None),
    ("lra_release_extra/x", "lra_release", "lra_release_extra/x"),  # another folder that only starts alike
    ("other/x", "lra_release", "other/x"),
    ("./a/b", None, "a/b"),
    ("./", None, None),
])
def test_strip_removes_exactly_the_top_folder(name: str, top: str | None, want: str | None) -> None:
    assert _strip(name, top) == want


def test_a_member_that_climbs_out_of_the_folder_is_refused_and_the_archive_deleted(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(tar_gz({"top/en/ok.txt": b"fine", "top/../../escaped.txt": b"bad"}))
    staging = tmp_path / "deep" / "staging"
    staging.mkdir(parents=True)
    resource = Resource(url="http://127.0.0.1/evil.tar.gz", filename=archive.name, kind="tar", strip="top")
    with pytest.raises(UserError, match="not a readable tar archive"):
        unpack(archive, resource, staging, resource.url)
    assert not archive.exists()
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "deep" / "escaped.txt").exists()


def test_a_tar_gz_whose_crc_is_wrong_is_refused(tmp_path: Path) -> None:
    body = bytearray(tar_gz({"top/en/a.txt": b"a" * 5000}))
    body[-8] ^= 0xFF  # the first byte of the CRC32 in gzip's trailer (RFC 1952, 2.3.1)
    with pytest.raises(gzip.BadGzipFile):  # what a reader that reaches the trailer says
        gzip.decompress(bytes(body))
    archive = tmp_path / "crc.tar.gz"
    archive.write_bytes(bytes(body))
    staging = tmp_path / "staging"
    staging.mkdir()
    resource = Resource(url="http://127.0.0.1/crc.tar.gz", filename=archive.name, kind="tar", strip="top")
    with pytest.raises(UserError, match="not a readable tar archive"):
        unpack(archive, resource, staging, resource.url)
    assert not archive.exists()


def test_the_layout_needs_one_of_its_entries_not_all(tmp_path: Path) -> None:
    dataset = Dataset(name="d", folder="d", description="", licence="",
                      resources=(Resource(url="http://127.0.0.1/d.tgz", filename="d.tgz", kind="tar"),),
                      layout=("en-10k", "en"))
    staging = tmp_path / "staging"
    (staging / "en").mkdir(parents=True)  # only one of the two
    download = tmp_path / "d.tgz"
    download.write_bytes(b"kept")
    check_layout(dataset, staging, [download], ["http://127.0.0.1/d.tgz"])
    assert download.exists()
    (staging / "en").rmdir()
    (staging / "something_else").mkdir()
    with pytest.raises(UserError, match="without en-10k or en"):
        check_layout(dataset, staging, [download], ["http://127.0.0.1/d.tgz"])
    assert not download.exists()


def test_a_folder_url_gets_each_file_name_after_one_slash() -> None:
    dataset = Dataset(name="d", folder="d", description="", licence="",
                      resources=(Resource(url="http://a/1.gz", filename="1.gz", kind="gz"),
                                 Resource(url="http://a/2.gz", filename="2.gz", kind="gz")))
    want = ["http://m.example/mnist/1.gz", "http://m.example/mnist/2.gz"]
    assert addresses(dataset, "http://m.example/mnist") == want
    assert addresses(dataset, "http://m.example/mnist/") == want
    assert addresses(dataset, None) == ["http://a/1.gz", "http://a/2.gz"]


def test_install_replaces_a_same_named_folder_rather_than_merging_into_it(tmp_path: Path) -> None:
    target = tmp_path / "babi"
    (target / "en").mkdir(parents=True)
    (target / "en" / "stale.txt").write_text("old")
    (target / "kept.txt").write_text("mine")
    staging = tmp_path / "staging"
    (staging / "en").mkdir(parents=True)
    (staging / "en" / "qa1.txt").write_text("new")
    assert install(staging, target) == 1
    assert sorted(p.name for p in (target / "en").iterdir()) == ["qa1.txt"]
    assert (target / "kept.txt").read_text() == "mine" and not staging.exists()


@pytest.mark.parametrize(("value", "want"), [
    ("bytes 100-199/200", (100, 200)),
    ("bytes 0-0/1", (0, 1)),
    ("bytes */200", (None, 200)),
    ("bytes 5-9/*", (5, None)),
    ("bytes=5-9/10", (None, None)),
    (None, (None, None)),
])
def test_content_range_as_rfc_9110_writes_it(value: str | None, want: tuple[int | None, int | None]) -> None:
    assert _content_range(value) == want


@pytest.mark.parametrize(("n", "want"), [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (999_999, "1000.0 kB"),
                                         (1_000_000, "1.0 MB"), (7.7e9, "7.7 GB"), (5e15, "5000.0 TB")])
def test_human_sizes_change_unit_at_1000(n: float, want: str) -> None:
    assert human(n) == want


def test_a_download_of_the_wrong_size_is_fetched_again_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import harness.fetch as fetch_module
    from harness.fetch_catalogue import CATALOGUE

    right = gzip.compress(b"\x00\x00\x08\x01" + b"\x07" * 60)
    resource = Resource(url="http://127.0.0.1/t.gz", filename="t.gz", kind="gz", size=len(right),
                        md5=hashlib.md5(right, usedforsecurity=False).hexdigest())
    monkeypatch.setitem(CATALOGUE, "tiny", Dataset(name="tiny", folder="tiny", description="", licence="",
                                                   resources=(resource,)))
    calls: list[str] = []

    def fake_download(url: str, target: Path, size: int | None = None, refused_hint: str = "") -> None:
        calls.append(url)
        target.write_bytes(right)

    monkeypatch.setattr(fetch_module, "download", fake_download)
    (tmp_path / ".downloads").mkdir()
    (tmp_path / ".downloads" / "t.gz").write_bytes(right[: len(right) // 2])  # cut short, under the final name
    folder = fetch_module.fetch("tiny", dest=str(tmp_path))
    capsys.readouterr()
    assert calls == ["http://127.0.0.1/t.gz"]
    assert (folder / "t").read_bytes() == gzip.decompress(right)


# ---------------------------------------------------------------- harness/fetch_http.download, on a loopback server

BODY = bytes(range(256)) * 40  # 10,240 bytes


def _download(server: tuple[Served, str], target: Path, size: int | None = None, mode: str = "ranges") -> Served:
    """``download`` of BODY from the loopback server of ``tests/conftest.py`` answering in ``mode``; returns what
    the server saw."""
    from harness.fetch_http import download

    served, base = server
    served.files["file.bin"], served.mode = BODY, mode
    download(f"{base}/file.bin", target, size=size)
    return served


def test_a_206_for_another_range_than_asked_restarts_from_byte_0(tmp_path: Path, server: tuple[Served, str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.bin"
    (tmp_path / "file.bin.part").write_bytes(BODY[:1000])
    _download(server, target, mode="wrong_range")
    assert target.read_bytes() == BODY and not (tmp_path / "file.bin.part").exists()


def test_a_server_offering_another_length_than_the_catalogues_is_refused(tmp_path: Path, server: tuple[Served, str],
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.bin"
    with pytest.raises(UserError, match=f"offers {len(BODY)} bytes where {len(BODY) + 1} are expected"):
        _download(server, target, size=len(BODY) + 1)
    assert not target.exists()


def test_a_part_longer_than_the_file_a_416_states_is_started_again(tmp_path: Path, server: tuple[Served, str],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.bin"
    (tmp_path / "file.bin.part").write_bytes(BODY + b"tail")  # not a prefix of what the server holds
    _download(server, target)
    assert target.read_bytes() == BODY


def test_a_complete_part_of_the_catalogued_size_is_finished_without_a_request(
        tmp_path: Path, server: tuple[Served, str], capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file.bin"
    (tmp_path / "file.bin.part").write_bytes(BODY)
    served = _download(server, target, size=len(BODY))
    assert target.read_bytes() == BODY and served.requests == 0
