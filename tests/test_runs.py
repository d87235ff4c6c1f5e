import os

from harness.runs import CurveWriter, Run, atomic_write_text, new_results


def test_atomic_write_leaves_only_the_file(tmp_path):
    target = tmp_path / "a" / "results.json"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]


def test_curves_grow_columns_and_truncate_on_resume(tmp_path):
    path = tmp_path / "metrics.csv"
    curves = CurveWriter(path)
    curves.append(1, 0, {"train/loss": 2.0})
    curves.append(2, 0, {"train/loss": 1.5, "val/acc": 0.5})
    curves.append(3, 1, {"train/loss": 1.0})
    curves.flush()
    assert path.read_text().splitlines()[0] == "step,epoch,train/loss,val/acc"
    reread = CurveWriter(path)
    assert reread.rows[1] == {"step": 2, "epoch": 0, "train/loss": 1.5, "val/acc": 0.5}
    reread.truncate_after(2)
    assert [row["step"] for row in CurveWriter(path).rows] == [1, 2]


def test_results_round_trip_and_owner(tmp_path):
    run = Run(tmp_path / "r")
    run.write_results(new_results("r", {"task": "t", "model": "m"}, "now"))
    assert run.status == "running"
    assert not run.owner_alive()  # this process is the owner: not "another" live writer
    results = run.read_results()
    results["owner"]["pid"] = 2**22 + 12345  # a pid that does not exist
    run.write_results(results)
    assert not run.owner_alive()
    assert run.update_results(status="failed", error="x")["status"] == "failed"
    assert os.listdir(run.path) == ["results.json"]
