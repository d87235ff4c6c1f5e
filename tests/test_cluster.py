"""A sweep on a Ray cluster that is not the driver's own: a head and a second node started with ``ray start``
on loopback, joined by the real command line through ``RAY_ADDRESS``.

The cluster uses token authentication as Ray 2.60 sets it up by default: ``ray start --head`` turns it on
because a token exists (here a file named by ``RAY_AUTH_TOKEN_PATH``, with ``RAY_AUTH_MODE`` unset); the
second node and the driver must say ``RAY_AUTH_MODE=token`` to send it. The second node has its own
raylet and temp dir, and runs in its own mount namespace in which the driver's run store is an empty
read-only tmpfs: a trial there cannot write the store, so its run reaches the store through Ray or not at
all.

The whole scenario runs as one process in a fresh loopback-only network namespace (``unshare -n``, which
also works nested inside the one CI runs the tests in): ``python -m tests.test_cluster WORKDIR`` writes
what it saw to ``WORKDIR/observed.json`` and the tests read it. It stops the cluster by signalling the two
``ray start --block`` processes it started (each tears its node down), then checks their sessions for
leftover processes. It does not call ``ray stop``: in Ray 2.60 that stops every Ray process on the machine
by name (``python/ray/scripts/scripts.py``, ``stop``), whoever started it.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).with_name("ray")
TRIAL_LINE = re.compile(r"training on node (\w+) in the node-local run store (\S+)")
SWEEP = ("name: cluster\ntask: babi\nmodels: [lstm]\nprofile: smoke\nseeds: [0, 1]\n"
         "overrides: [train.max_epochs=1]\ncpus_per_trial: 1\n")
NODE_FLAGS = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats",
              f"--object-store-memory={150 * 1024**2}"]


# --- the cluster scenario, run inside the namespace ------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the scenario dies, so a killed test leaves no cluster."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start_node(args: list[str], env: dict[str, str], log: Path, shadow: Path | None = None) -> subprocess.Popen:
    """``ray start ... --block`` in its own session; with ``shadow``, in a mount namespace where that
    directory is an empty read-only tmpfs."""
    command = [str(RAY), "start", *args, *NODE_FLAGS]
    if shadow is not None:
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs -o ro,size=1m tmpfs "$0" && exec "$@"', str(shadow), *command]
    with log.open("w") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent)


def _alive_nodes(address: str) -> dict[str, bool]:
    """{node id: is head} of the cluster's live nodes, read from its GCS ({} while it does not answer)."""
    import ray._raylet as raylet

    try:
        nodes = raylet.InnerGcsClient.standalone(address, None, 2000).get_all_node_info(timeout=2)
    except Exception:  # noqa: BLE001  not up yet
        return {}
    return {info.node_id.hex(): info.is_head_node for info in nodes.values() if info.state == 0}  # 0: ALIVE


def _wait(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _session_pids(sid: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _cli(args: list[str], env: dict[str, str], timeout: float = 240) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
            "seconds": round(time.monotonic() - started, 1)}


def _runs(runs: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(runs.glob("babi/*/*/results.json")):
        stat = path.stat()
        found[path.parent.name] = {"results": json.loads(path.read_text()), "dir_inode": path.parent.stat().st_ino,
                                   "mtime_ns": stat.st_mtime_ns}
    return found


def scenario(work: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="rhc-", dir="/tmp"))  # short: Ray's AF_UNIX paths hold 107 bytes
    runs, nodes = work / "runs", {}
    observed: dict[str, Any] = {"base": str(base), "runs": str(runs)}
    (base / "home").mkdir()
    runs.mkdir()
    token = base / "token"
    token.write_text(secrets.token_hex(32))
    common = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_", "HARNESS_RUNS"))}
    common.update(HOME=str(base / "home"), RAY_AUTH_TOKEN_PATH=str(token), RAY_USAGE_STATS_ENABLED="0")
    address = f"127.0.0.1:{_free_port()}"
    try:
        started = time.monotonic()
        nodes["head"] = _start_node(["--head", f"--port={address.split(':')[1]}", "--include-dashboard=false",
                                     f"--temp-dir={base / 'h'}"], common, work / "head.log")
        os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))  # for _alive_nodes
        _wait(lambda: len(_alive_nodes(address)) >= 1, 60, "the head node")
        nodes["second"] = _start_node([f"--address={address}", f"--temp-dir={base / 's'}"],
                                      {**common, "RAY_AUTH_MODE": "token"}, work / "second.log", shadow=runs)
        _wait(lambda: len(_alive_nodes(address)) >= 2, 60, "the second node")
        observed["cluster_start_s"] = round(time.monotonic() - started, 1)
        observed["node_ids"] = {("head" if head else "second"): node for node, head in _alive_nodes(address).items()}
        observed["sessions"] = {name: len(_session_pids(node.pid)) for name, node in nodes.items()}

        sweep = work / "sweep.yaml"
        sweep.write_text(SWEEP)
        driver = {**common, "RAY_ADDRESS": address, "RAY_AUTH_MODE": "token", "HARNESS_TRIAL_DIR": str(base / "trials"),
                  "HARNESS_CACHE_DIR": str(work / "cache"), "WANDB_MODE": "disabled"}
        observed["first"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)], driver)
        observed["first_runs"] = _runs(runs)
        observed["left_in_trials"] = sorted(str(p) for p in (base / "trials").rglob("results.json"))
        observed["left_in_staging"] = sorted(str(p) for p in runs.glob(".incoming/*/*"))

        ids = sorted(observed["first_runs"])  # the user's store: one run made unfinished, the other kept
        if ids:
            unfinished = runs / "babi" / "lstm" / ids[0] / "results.json"
            results = json.loads(unfinished.read_text())
            results.update(status="interrupted", error="interrupted (the same command resumes the run)")
            unfinished.write_text(json.dumps(results))
            observed["made_unfinished"] = ids[0]
        observed["second"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)], driver)
        observed["second_runs"] = _runs(runs)

        no_mode = {k: v for k, v in driver.items() if k != "RAY_AUTH_MODE"}
        observed["no_token"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)], no_mode, timeout=60)
        observed["wrong_token"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)],
                                       {**driver, "RAY_AUTH_TOKEN": secrets.token_hex(32)}, timeout=60)
        observed["token_file_missing"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)],
                                              {**driver, "RAY_AUTH_TOKEN_PATH": str(base / "no-such-token")},
                                              timeout=60)
        observed["token_mode_without_token"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)],
                                                    {k: v for k, v in driver.items() if k != "RAY_AUTH_TOKEN_PATH"},
                                                    timeout=60)  # and none in $HOME/.ray/auth_token
        observed["unreachable"] = _cli(["sweep", str(sweep), "--runs-dir", str(runs)],
                                       {**driver, "RAY_ADDRESS": f"127.0.0.1:{_free_port()}"}, timeout=60)
    finally:
        observed["leftover"] = _stop(nodes)
        shutil.rmtree(base, ignore_errors=True)  # Ray's temp dirs (`ray start`'s output is in WORKDIR)
    return observed


def _stop(nodes: dict[str, subprocess.Popen]) -> list[str]:
    """Signal each ``ray start --block`` (the second node first); it stops its node's processes. Anything still
    alive in those sessions after 30 s is killed by pid and reported."""
    sessions = {name: node.pid for name, node in nodes.items()}
    for name in ("second", "head"):
        if name in nodes:
            nodes[name].send_signal(signal.SIGTERM)
            try:
                nodes[name].wait(30)
            except subprocess.TimeoutExpired:
                nodes[name].kill()
    deadline = time.monotonic() + 30
    while any(_session_pids(sid) for sid in sessions.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    leftover = []
    for name, sid in sessions.items():
        for pid in _session_pids(sid):
            try:
                leftover.append(f"{name}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:80]!r}")
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile
                continue
    return leftover


# --- the transfer of run directories, without Ray ---------------------------------------------------------

def _make_run(path: Path, status: str = "completed") -> None:
    (path / "checkpoints").mkdir(parents=True, exist_ok=True)
    (path / "wandb" / "run-1").mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps({"run_id": path.name, "status": status}))
    (path / "checkpoints" / "last.ckpt").write_bytes(os.urandom(4096))
    (path / "wandb" / "run-1" / "run.wandb").write_text("offline")
    if not (path / "wandb" / "latest-run").is_symlink():
        (path / "wandb" / "latest-run").symlink_to("run-1")
    (path / ".metrics.csv.x1.tmp").write_text("half-written")  # a write in progress is not sent


def _files(path: Path) -> dict[str, bytes | str]:
    return {p.relative_to(path).as_posix(): (os.readlink(p) if p.is_symlink() else p.read_bytes())
            for p in sorted(path.rglob("*")) if p.is_symlink() or p.is_file()}


def test_a_run_directory_is_swapped_into_the_store_whole(tmp_path):
    from harness.runners.run_transfer import STAGING, install, pack
    from harness.runs import index

    local, runs = tmp_path / "local" / "r1", tmp_path / "runs"
    _make_run(local, status="running")
    install(pack(local), runs, "babi/lstm/r1")
    first_inode = (runs / "babi/lstm/r1").stat().st_ino
    _make_run(local)  # new checkpoint, new status
    (local / "checkpoints" / "best.ckpt").write_bytes(b"best")
    install(pack(local), runs, "babi/lstm/r1")
    stored = runs / "babi" / "lstm" / "r1"
    expected = {k: v for k, v in _files(local).items() if not k.endswith(".tmp")}
    assert _files(stored) == expected and stored.stat().st_ino != first_inode  # a new directory, not edits
    assert [r["status"] for r in index(runs)] == ["completed"]
    assert list((runs / STAGING).iterdir()) == []  # nothing left beside the store


def test_only_plain_run_names_reach_the_store(tmp_path):
    import io
    import tarfile

    from harness.runners.run_transfer import install, run_key, unpack

    for bad in (("babi", "..", "r1"), ("babi", "lstm", "a/b"), ("", "lstm", "r1"), ("babi", "lstm", ".hidden")):
        with pytest.raises(ValueError, match="not a run store name"):
            run_key(*bad)
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as archive:
        info = tarfile.TarInfo("../../outside.txt")
        archive.addfile(info, io.BytesIO(b""))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack(evil.getvalue(), tmp_path / "dest")
    with pytest.raises(tarfile.OutsideDestinationError):
        install(evil.getvalue(), tmp_path / "runs", "babi/lstm/r1")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "runs" / "babi").exists()


def test_a_trial_sends_its_run_home_while_training_and_at_the_end_and_only_when_changed(tmp_path):
    from harness.runners.run_transfer import DriverStore, RunSender

    store, installs = DriverStore(str(tmp_path / "runs")), []

    def counted_install(key: str, payload: bytes) -> None:
        store.install(key, payload)
        installs.append(key)  # counted once installed: the test thread reads the driver's copy as soon as it is

    key, local = "babi/lstm/r1", tmp_path / "node" / "babi" / "lstm" / "r1"
    sender = RunSender(store.fetch, counted_install, key, local, every_s=0.05)
    assert not sender.receive()
    with sender:
        _make_run(local, status="running")
        deadline = time.monotonic() + 10
        while not installs and time.monotonic() < deadline:
            time.sleep(0.02)
        assert installs, "nothing was sent while the run was going"
        assert json.loads((tmp_path / "runs" / key / "results.json").read_text())["status"] == "running"
        (local / "results.json").write_text(json.dumps({"run_id": "r1", "status": "completed", "epochs": 3}))
    assert sender.home()
    assert json.loads((tmp_path / "runs" / key / "results.json").read_text())["status"] == "completed"

    sent = len(installs)  # a later trial of the same run receives the driver's copy and sends nothing back
    again = RunSender(store.fetch, counted_install, key, tmp_path / "other-node" / key, every_s=0.05)
    assert again.receive()
    with again:
        time.sleep(0.2)
    assert len(installs) == sent and again.home()
    assert _files(again.path) == _files(tmp_path / "runs" / key)


# --- the cluster -----------------------------------------------------------------------------------------

def _loopback_and_mounts_ok() -> bool:
    probe = subprocess.run(["unshare", "-n", "-m", "--propagation", "private", "sh", "-c", "ip link set lo up"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _loopback_and_mounts_ok():
        pytest.skip("cannot make loopback-only network and private mount namespaces (unshare -n -m)")
    work = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "WANDB_MODE": "disabled", "HARNESS_DATA_DIR": str(SHARED_DATA)}
    done = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {sys.executable} -m "
                           f"tests.test_cluster {work}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((work / "observed.json").read_text())


def _trials(output: str) -> list[tuple[str, Path]]:
    """(node id, node-local run store) of each trial, from the lines the trials print."""
    return [(node, Path(store)) for node, store in TRIAL_LINE.findall(output)]


@pytest.mark.slow
def test_sweep_on_a_two_node_cluster_lands_every_run_in_the_drivers_store(observed):
    first = observed["first"]
    assert first["rc"] == 0, first["stdout"][-3000:] + first["stderr"][-3000:]
    runs = observed["first_runs"]
    assert len(runs) == 2 and all(r["results"]["status"] == "completed" for r in runs.values())
    assert {r["results"]["seed"] for r in runs.values()} == {0, 1}
    trials = _trials(first["stdout"] + first["stderr"])
    assert len(trials) == 2, first["stdout"][-3000:]
    # one trial on each node, each in the node-local store, never in the driver's; the second node could not
    # even see the driver's store (a read-only empty tmpfs there), so its run came through Ray
    assert {node for node, _ in trials} == set(observed["node_ids"].values())
    assert all(store == Path(observed["base"]) / "trials" for _, store in trials)
    assert not any(store.is_relative_to(observed["runs"]) for _, store in trials)
    assert observed["left_in_trials"] == []  # a run's node-local copy is removed once the driver has it
    assert observed["left_in_staging"] == []
    assert "completed" in first["stdout"]


@pytest.mark.slow
def test_rerun_reports_a_completed_trial_and_resumes_an_unfinished_one_from_the_drivers_copy(observed):
    second = observed["second"]
    assert second["rc"] == 0, second["stdout"][-3000:] + second["stderr"][-3000:]
    unfinished = observed["made_unfinished"]
    for run_id, before in observed["first_runs"].items():
        after = observed["second_runs"][run_id]
        if run_id == unfinished:  # resumed from the checkpoint it received: a second attempt of the same run
            assert after["results"]["status"] == "completed"
            assert len(after["results"]["attempts"]) == 2
            assert after["results"]["attempts"][0] == before["results"]["attempts"][0]
        else:  # reported without retraining: the driver's copy was not even rewritten
            assert after == before
    output = second["stdout"] + second["stderr"]
    assert output.count("received the driver's copy") == 2
    assert "dirpath has changed" not in output  # resumed where it trained before: Lightning keeps its best score


@pytest.mark.parametrize("case", ["no_token", "wrong_token", "token_file_missing", "token_mode_without_token"])
@pytest.mark.slow
def test_a_token_the_cluster_refuses_or_cannot_get_is_a_one_line_user_error(observed, case):
    done = observed[case]
    assert done["rc"] == 2, done["stderr"][-3000:]
    lines = done["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: RAY_"), done["stderr"][-3000:]
    assert "RAY_AUTH_MODE=token" in lines[0] or case == "token_file_missing"
    assert "the cluster's token in RAY_AUTH_TOKEN" in lines[0]  # what to set
    assert done["seconds"] < 30


@pytest.mark.parametrize("address", ["ray://127.0.0.1:10001", "127.0.0.1:abc", ":6379"])
def test_an_address_that_is_not_a_gcs_address_is_refused_before_any_connection(address):
    from harness.errors import UserError
    from harness.runners.ray_session import check_cluster

    with pytest.raises(UserError, match=f"RAY_ADDRESS={re.escape(address)}"):
        check_cluster(address)


def test_gcs_addresses_are_split_into_host_and_port():
    from harness.runners.ray_session import split_address

    assert split_address("127.0.0.1:6380") == ("127.0.0.1", 6380)
    assert split_address("head.example") == ("head.example", 6379)
    assert split_address("[::1]:6379") == ("::1", 6379)


@pytest.mark.slow
def test_an_unreachable_address_is_a_one_line_user_error(observed):
    done = observed["unreachable"]
    assert done["rc"] == 2, done["stderr"][-3000:]
    lines = done["stderr"].strip().splitlines()
    assert len(lines) == 1 and "no Ray cluster answers there" in lines[0], done["stderr"][-3000:]
    assert done["seconds"] < 30


@pytest.mark.slow
def test_the_cluster_stops_without_leftover_processes(observed):
    assert all(count > 0 for count in observed["sessions"].values())  # the check below looks at real sessions
    assert observed["leftover"] == []


if __name__ == "__main__":
    out = Path(sys.argv[1])
    (out / "observed.json").write_text(json.dumps(scenario(out), indent=1))
