"""Shared test set-up: W&B disabled, every run and cache under a temporary folder, and the real
command line run as a subprocess the way a user runs it."""

from __future__ import annotations

import atexit
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HARNESS_DATA_DIR", ROOT.parent / "shared" / "data")).resolve()
if "HARNESS_DATA_DIR" not in os.environ and not SHARED_DATA.is_dir():
    # a clone without the real data staged beside it: an empty data folder, in which the tasks generate their data
    # and the tests that need real files skip (requires_real_babi)
    SHARED_DATA = Path(tempfile.mkdtemp(prefix="harness-tests-no-data-"))
    atexit.register(shutil.rmtree, SHARED_DATA, True)

os.environ["WANDB_MODE"] = "disabled"


def has_real_babi() -> bool:
    return (SHARED_DATA / "babi" / "en-10k").is_dir()


requires_real_babi = pytest.mark.skipif(not has_real_babi(), reason="real bAbI files not found (HARNESS_DATA_DIR)")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment of a user's shell for one test: its own runs and cache folders."""
    values = {
        "HARNESS_RUNS_DIR": str(tmp_path / "runs"),
        "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
        "HARNESS_DATA_DIR": str(SHARED_DATA),
        "WANDB_MODE": "disabled",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **values}


@pytest.fixture
def foreground_ctrl_c() -> Iterator[None]:
    """Ctrl-C as in a terminal's foreground job (Python's KeyboardInterrupt) for a test that sends one to its own
    process, whatever the suite was started with: under a background job (CI's) SIGINT is ignored, and an ignored
    Ctrl-C must stay ignored."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def command_environ(base: Path) -> dict[str, str]:
    """The environment of commands run in a subprocess by a module's fixture: a cache under ``base``, the staged data,
    W&B off, and a default run store that no command uses (each names its own ``--runs-dir``)."""
    return {**os.environ, "HARNESS_DATA_DIR": str(SHARED_DATA), "HARNESS_CACHE_DIR": str(base / "cache"),
            "HARNESS_RUNS_DIR": str(base / "unused"), "WANDB_MODE": "disabled"}


def run_cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``harness <args>`` in a fresh interpreter, from the project root."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def loopback_only_ok() -> bool:
    """Whether this machine lets us make a loopback-only network namespace (``unshare -n``)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up && true"], capture_output=True)
    return probe.returncode == 0


requires_loopback_only = pytest.mark.skipif(not loopback_only_ok(),
                                            reason="cannot make a loopback-only network namespace (unshare -n)")


def run_cli_loopback(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``harness <args>`` inside a loopback-only network namespace: how anything that starts Ray runs here
    (Ray's dashboard probes cloud metadata addresses otherwise)."""
    command = " ".join([sys.executable, "-m", "harness.cli", *args])
    return subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {command}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def only_run(runs: Path) -> Path:
    """The one run directory in a run store."""
    (found,) = list(runs.glob("*/*/*/results.json"))
    return found.parent


def curves(run: Path) -> list[dict[str, str]]:
    """A run's metrics.csv without its wall-clock column."""
    with (run / "metrics.csv").open() as handle:
        return [{k: v for k, v in row.items() if k != "train/examples_per_s"} for row in csv.DictReader(handle)]


PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@dataclass
class Served:
    """What the server answers and what it saw."""

    files: dict[str, bytes] = field(default_factory=dict)
    mode: str = "ranges"  # ranges | wrong_range (a 206 from byte 0, whatever was asked) | ignore_ranges | refuse
    #   | truncate
    ranges: list[str] = field(default_factory=list)
    requests: int = 0


def make_handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            served.requests += 1
            if served.mode == "refuse":
                self.send_error(403)
                return
            body = served.files.get(self.path.lstrip("/"))
            if body is None:
                self.send_error(404)
                return
            wanted = self.headers.get("Range")
            if wanted:
                served.ranges.append(wanted)
            if wanted and served.mode in ("ranges", "wrong_range"):
                start = int(wanted.removeprefix("bytes=").split("-")[0])
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(body)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0 if served.mode == "wrong_range" else start
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                chunk = body[start:]
            else:
                self.send_response(200)
                chunk = body
            self.send_header("Content-Length", str(len(chunk)))
            self.end_headers()
            if served.mode == "truncate":
                self.wfile.write(chunk[: len(chunk) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(chunk)

    return Handler


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, str]]:
    """A loopback HTTP server (http.server on 127.0.0.1, in a thread; the proxies unset, so nothing touches the
    network) serving ``Served.files`` as ``Served.mode`` says: a served-files record and the server's base address."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    served = Served()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(served))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
