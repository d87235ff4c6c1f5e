"""`harness data fetch`: every download comes from a local HTTP server on 127.0.0.1 (http.server in a thread)
that can serve ranges (or the wrong one), ignore them, refuse, cut a response short or corrupt it (the `server`
fixture of tests/conftest.py); nothing touches the network."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import socket
import tarfile

import pytest

from harness.cli import main
from harness.fetch import MARKER
from harness.fetch_catalogue import CATALOGUE
from harness.fetch_http import Progress
from tests.conftest import PROXIES, run_cli


def tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


LRA = tar_gz({"lra_release/listops-1000/basic_test.tsv": b"Source\tTarget\n" + b"( MAX 1 2 )\t2\n" * 4000,
              "lra_release/pathfinder32/curv_baseline/metadata/0.npy": os.urandom(20000)})
BABI = tar_gz({"tasks_1-20_v1-2/en-10k/qa1_single-supporting-fact_test.txt": b"1 Mary went home.\n",
               "tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt": b"1 John went out.\n"})


def error_line(err: str) -> str:
    """The one line the command line printed for a failure (progress lines may precede it)."""
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert err.endswith(line + "\n")
    return line


def fetch(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The real command line, in this process: (exit code, stdout, stderr)."""
    code = main(["data", "fetch", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fetch_unpacks_into_the_layout_and_a_second_fetch_downloads_nothing(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    code, out, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)], capsys)
    assert code == 0, err
    assert (tmp_path / "lra_release/listops-1000/basic_test.tsv").read_bytes().startswith(b"Source\tTarget")
    assert (tmp_path / "lra_release/pathfinder32/curv_baseline/metadata/0.npy").stat().st_size == 20000
    digest = hashlib.sha256(LRA).hexdigest()
    assert digest in out  # no published checksum: the SHA-256 is printed and recorded
    assert (tmp_path / ".downloads/lra_release.gz.sha256").read_text() == f"{digest}  lra_release.gz\n"
    assert (tmp_path / "lra_release" / MARKER).is_file()
    assert not (tmp_path / ".downloads/lra_release.gz").exists() and not list(tmp_path.glob(".downloads/*.part"))
    requests = served.requests
    code, out, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)], capsys)
    assert code == 0 and "already present" in out and served.requests == requests
    code, out, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path), "--force"], capsys)
    assert code == 0 and served.requests == requests + 1


def test_a_forced_fetch_that_fails_leaves_the_earlier_fetch_and_its_marker(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    address = f"{base}/lra_release.gz"
    assert fetch(["lra", "--url", address, "--dest", str(tmp_path)], capsys)[0] == 0
    marker = (tmp_path / "lra_release" / MARKER).read_text()
    served.mode = "truncate"  # the forced download is cut off half way
    code, out, err = fetch(["lra", "--url", address, "--dest", str(tmp_path), "--force"], capsys)
    assert code != 0 and (tmp_path / "lra_release" / MARKER).read_text() == marker
    served.mode = "ranges"
    code, out, err = fetch(["lra", "--url", address, "--dest", str(tmp_path)], capsys)
    assert code == 0 and "already present" in out, out


def test_data_put_there_by_hand_is_left_alone_unless_forced(server, tmp_path, capsys):
    served, base = server
    served.files["babi.tar.gz"] = BABI
    mine = tmp_path / "babi" / "en" / "qa1_single-supporting-fact_train.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("1 Sandra went home.\n")
    code, out, err = fetch(["babi", "--url", f"{base}/babi.tar.gz", "--dest", str(tmp_path)], capsys)
    assert code == 0, err
    assert "already holds data this command did not fetch (en)" in out and "--force downloads babi" in out
    assert served.requests == 0 and not (tmp_path / ".downloads").exists()
    assert mine.read_text() == "1 Sandra went home.\n"
    code, out, err = fetch(["babi", "--url", f"{base}/babi.tar.gz", "--dest", str(tmp_path), "--force"], capsys)
    assert code == 0 and served.requests == 1, err
    assert mine.read_text() == "1 John went out.\n"  # the release's same-named file replaced it, as the line said


def test_babi_lands_where_the_babi_task_reads_it(server, tmp_path, capsys, monkeypatch):
    served, base = server
    served.files["babi.tar.gz"] = BABI
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))  # the destination when --dest is not given
    code, _, err = fetch(["babi", "--url", f"{base}/babi.tar.gz"], capsys)
    assert code == 0, err
    from tasks.babi.task import candidate_folders

    assert candidate_folders(tmp_path, "en-10k")[0] == tmp_path / "babi" / "en-10k"
    assert (tmp_path / "babi/en-10k/qa1_single-supporting-fact_test.txt").read_text() == "1 Mary went home.\n"
    assert (tmp_path / "babi/en/qa1_single-supporting-fact_train.txt").is_file()


def test_a_dataset_of_gzip_files_with_md5s(server, tmp_path, capsys, monkeypatch):
    """MNIST's shape (four .gz files, torchvision's MD5s and sizes), with small files of known MD5."""
    served, base = server
    mnist = CATALOGUE["mnist"]
    idx = {r.filename: gzip.compress(r.filename.encode() * 100) for r in mnist.resources}
    served.files.update({f"mirror/{name}": body for name, body in idx.items()})
    resources = tuple(dataclasses.replace(r, md5=hashlib.md5(idx[r.filename]).hexdigest(), size=len(idx[r.filename]))
                      for r in mnist.resources)
    monkeypatch.setitem(CATALOGUE, "mnist", dataclasses.replace(mnist, resources=resources))
    code, _, err = fetch(["mnist", "--url", f"{base}/mirror/", "--dest", str(tmp_path)], capsys)
    assert code == 0, err
    assert (tmp_path / "mnist/t10k-labels-idx1-ubyte").read_bytes() == b"t10k-labels-idx1-ubyte.gz" * 100
    assert (tmp_path / "mnist/t10k-labels-idx1-ubyte.gz").read_bytes() == idx["t10k-labels-idx1-ubyte.gz"]
    wrong = dataclasses.replace(resources[0], md5="0" * 32)
    monkeypatch.setitem(CATALOGUE, "mnist", dataclasses.replace(mnist, resources=(wrong, *resources[1:])))
    code, _, err = fetch(["mnist", "--url", f"{base}/mirror", "--dest", str(tmp_path / "b")], capsys)
    assert code == 2 and "has MD5" in error_line(err) and "expected " + "0" * 32 in error_line(err)
    assert not (tmp_path / "b/mnist").exists()


def test_sha256_right_and_wrong(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    url = f"{base}/lra_release.gz"
    code, _, err = fetch(["lra", "--url", url, "--dest", str(tmp_path / "a"), "--sha256", "0" * 64], capsys)
    line = error_line(err)
    assert code == 2 and "expected " + "0" * 64 in line and url in line
    downloads = tmp_path / "a/.downloads"
    assert not (tmp_path / "a/lra_release").exists()
    assert not (downloads / "lra_release.gz").exists() and not (downloads / "lra_release.gz.part").exists()
    good = hashlib.sha256(LRA).hexdigest().upper()
    code, _, err = fetch(["lra", "--url", url, "--dest", str(tmp_path / "b"), "--sha256", good], capsys)
    assert code == 0, err
    assert (tmp_path / "b/lra_release/listops-1000/basic_test.tsv").is_file()
    code, _, err = fetch(["lra", "--url", url, "--dest", str(tmp_path / "c"), "--sha256", "abc"], capsys)
    line = error_line(err)
    assert code == 2 and "64 hexadecimal digits" in line


def test_refusal_is_one_line_through_the_real_command_line(server, tmp_path, env):
    served, base = server
    served.mode = "refuse"
    url = f"{base}/lra_release.gz"
    environment = {k: v for k, v in env.items() if k not in PROXIES}
    done = run_cli(["data", "fetch", "lra", "--url", url, "--dest", str(tmp_path)], environment, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: the server refused " + url)
    assert "HTTP 403" in done.stderr and "refuse anonymous downloads" in done.stderr
    assert str(tmp_path / "lra_release") in done.stderr
    assert not (tmp_path / "lra_release").exists()


def test_not_found(server, tmp_path, capsys):
    _, base = server
    code, _, err = fetch(["babi", "--url", f"{base}/nothing.tar.gz", "--dest", str(tmp_path)], capsys)
    line = error_line(err)
    assert code == 2 and "HTTP 404" in line and f"{base}/nothing.tar.gz" in line


def test_truncated_download_keeps_the_part_and_the_same_command_resumes(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    served.mode = "truncate"
    args = ["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)]
    code, _, err = fetch(args, capsys)
    part = tmp_path / ".downloads/lra_release.gz.part"
    line = error_line(err)
    assert code == 2 and "run the same command to resume" in line
    assert part.read_bytes() == LRA[: len(LRA) // 2]
    served.mode = "ranges"
    code, _, err = fetch(args, capsys)
    assert code == 0, err
    assert served.ranges == [f"bytes={len(LRA) // 2}-"]
    assert hashlib.sha256(LRA).hexdigest() in (tmp_path / ".downloads/lra_release.gz.sha256").read_text()
    assert (tmp_path / "lra_release/listops-1000/basic_test.tsv").is_file() and not part.exists()


def test_a_server_ignoring_ranges_still_gives_the_right_file(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    part = tmp_path / ".downloads/lra_release.gz.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes that are not the file's start")
    served.mode = "ignore_ranges"
    code, _, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)], capsys)
    assert code == 0, err
    assert served.ranges and "ignored the resume request" in err
    assert hashlib.sha256(LRA).hexdigest() in (tmp_path / ".downloads/lra_release.gz.sha256").read_text()


def test_a_complete_part_is_finished_by_a_416(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = LRA
    part = tmp_path / ".downloads/lra_release.gz.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(LRA)
    code, _, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)], capsys)
    assert code == 0, err
    assert served.ranges == [f"bytes={len(LRA)}-"] and (tmp_path / "lra_release/listops-1000").is_dir()


def test_connection_refused(tmp_path, capsys, monkeypatch):
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/lra_release.gz"
    code, _, err = fetch(["lra", "--url", url, "--dest", str(tmp_path)], capsys)
    line = error_line(err)
    assert code == 2 and "connection refused" in line and url in line


def test_a_silent_server_times_out(tmp_path, capsys, monkeypatch):
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("harness.fetch_http.TIMEOUT_S", 0.5)
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/lra_release.gz"
        code, _, err = fetch(["lra", "--url", url, "--dest", str(tmp_path)], capsys)
    line = error_line(err)
    assert code == 2 and "no answer from" in line and url in line


@pytest.mark.parametrize("body", [LRA[: len(LRA) // 2] + bytes(len(LRA) - len(LRA) // 2),  # CRC fails at the end
                                  b"<html><body>Sign in to continue</body></html>"],  # a portal's page
                         ids=["crc", "html"])
def test_a_corrupt_archive_is_deleted_and_never_unpacked(server, tmp_path, capsys, body):
    served, base = server
    served.files["lra_release.gz"] = body
    code, _, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path)], capsys)
    assert code == 2 and "not a readable tar archive" in error_line(err)
    assert not (tmp_path / "lra_release").exists() and not (tmp_path / ".downloads/lra_release.gz").exists()
    assert not (tmp_path / ".downloads/lra.unpacking").exists()


def test_an_archive_without_the_datasets_layout_is_refused_and_nothing_is_left(server, tmp_path, capsys):
    """A wrong mirror's archive (not the bAbI release) marked as fetched would leave the bAbI task falling back to
    generated data without a word; it is refused, and the folders the fetch made go again."""
    served, base = server
    served.files["other.tar.gz"] = tar_gz({"other/qa1_single-supporting-fact_test.txt": b"1 Mary went home.\n"})
    dest = tmp_path / "d"
    code, _, err = fetch(["babi", "--url", f"{base}/other.tar.gz", "--dest", str(dest)], capsys)
    assert code == 2 and error_line(err) == (
        f"error: babi: {base}/other.tar.gz unpacked to other, without en-10k or en, where the babi loaders look; "
        "nothing was installed and the download was deleted: pass --url with the official release")
    assert not dest.exists()


def test_an_unsafe_archive_is_refused(server, tmp_path, capsys):
    served, base = server
    served.files["lra_release.gz"] = tar_gz({"lra_release/ok.txt": b"ok", "../escaped.txt": b"no"})
    code, _, err = fetch(["lra", "--url", f"{base}/lra_release.gz", "--dest", str(tmp_path / "d")], capsys)
    line = error_line(err)
    assert code == 2 and "not a readable tar archive" in line
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "d/lra_release").exists()


def test_user_mistakes(tmp_path, capsys, monkeypatch):
    code, _, err = fetch(["mnsit", "--dest", str(tmp_path)], capsys)
    line = error_line(err)
    assert code == 2 and "unknown dataset 'mnsit' (did you mean 'mnist'?)" in line and "babi, lra, mnist" in line
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    code, _, err = fetch(["lra"], capsys)
    line = error_line(err)
    assert code == 2 and "--dest DIR or set HARNESS_DATA_DIR" in line
    (tmp_path / "file").write_text("x")
    code, _, err = fetch(["lra", "--dest", str(tmp_path / "file")], capsys)
    line = error_line(err)
    assert code == 2 and "is a file" in line
    code, _, err = fetch(["lra", "--dest", str(tmp_path), "--url", "ftp://example.org/x"], capsys)
    line = error_line(err)
    assert code == 2 and "http:// or https://" in line
    code, _, err = fetch(["mnist", "--dest", str(tmp_path), "--sha256", "a" * 64], capsys)
    line = error_line(err)
    assert code == 2 and "mnist has 4" in line


def test_progress_is_a_redrawn_bar_on_a_terminal_and_plain_lines_otherwise():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream in (io.StringIO(), Terminal()):
        progress = Progress("lra_release.gz", 8_000_000_000, 0, stream, every_s=0)
        progress.every_s = 0
        progress.update(2_000_000_000)
        progress.finish(8_000_000_000)
        text = stream.getvalue()
        assert "2.0 GB / 8.0 GB   25.0%" in text and "100.0%" in text and "/s" in text
        assert ("\r" in text) == isinstance(stream, Terminal) and text.endswith("\n")
