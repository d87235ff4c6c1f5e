"""Run directories sent through Ray (``harness/runners/run_transfer.py``, its module docstring and those of
``run_key``, ``pack``, ``DriverStore.fetch`` and ``RunSender.home``), each checked against the documented rule
written out by hand on a tiny run directory, without starting Ray:

* a run key is ``task/model/run_id`` of plain names: none empty, ``.`` or ``..``, none holding ``/`` or NUL, none
  starting with ``.`` (the store's own folders, such as ``.incoming``);
* a packed run holds every file and link of its directory, with relative names, except the temporary files of
  writes in progress (``.NAME.XXXXXXXX.tmp``: a dot first and ``.tmp`` last); a file that merely ends in ``.tmp``
  is the run's own and travels;
* the driver sends a trial its copy of a run only when that copy has a ``results.json`` (a folder without one is
  no run);
* a trial's run is home when there is no run to send (no ``results.json``) or the driver has it as it is here.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from harness.runners.run_transfer import DriverStore, RunSender, pack, run_key


@pytest.mark.parametrize("part", ["", ".", "..", "a/b", "a\0b", ".incoming", ".hidden"])
def test_only_plain_names_make_a_run_key(part: str) -> None:
    for parts in ((part, "lstm", "r1"), ("babi", part, "r1"), ("babi", "lstm", part)):
        with pytest.raises(ValueError, match="not a run store name"):
            run_key(*parts)
    assert run_key("babi", "lstm", "babi-lstm-smoke-s0-abc") == "babi/lstm/babi-lstm-smoke-s0-abc"


def test_a_packed_run_leaves_out_only_the_temporaries_of_writes_in_progress(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    (run / "analysis").mkdir(parents=True)
    names = {"results.json": b"{}", "analysis/notes.tmp": b"the run's own", ".lock": b"",
             "analysis/.probe.csv.a1b2c3d4.tmp": b"half", ".results.json.zz99zz99.tmp": b"half", "curve.tmp.csv": b"1"}
    for name, content in names.items():
        (run / name).write_bytes(content)
    (run / "latest").symlink_to("analysis")
    with tarfile.open(fileobj=io.BytesIO(pack(run)), mode="r") as archive:
        packed = {member.name: member for member in archive.getmembers()}
    expected = {name for name in names if not (Path(name).name.startswith(".") and name.endswith(".tmp"))}
    assert set(packed) == expected | {"latest"}
    assert packed["latest"].issym() and packed["latest"].linkname == "analysis"


def test_the_driver_sends_a_folder_without_results_as_no_run(tmp_path: Path) -> None:
    store = DriverStore(str(tmp_path / "runs"))
    leftover = tmp_path / "runs" / "babi" / "lstm" / "r1"
    (leftover / "checkpoints").mkdir(parents=True)
    (leftover / "checkpoints" / "last.ckpt").write_bytes(b"x")
    assert store.fetch("babi/lstm/r1") is None
    (leftover / "results.json").write_text("{}")
    assert store.fetch("babi/lstm/r1") is not None


def test_a_trial_without_a_run_has_nothing_to_send_home(tmp_path: Path) -> None:
    local = tmp_path / "node" / "r1"
    (local / "checkpoints").mkdir(parents=True)
    (local / "checkpoints" / "last.ckpt").write_bytes(b"x")  # no results.json: no run yet

    def install(key: str, payload: bytes) -> None:
        raise AssertionError("nothing is sent")

    sender = RunSender(lambda key: None, install, "babi/lstm/r1", local)
    assert sender.home() and not sender.send()
