"""Stacked runs after training: what `harness runs --imports/--stale` says of a stack's members (its wall time counted
once, the stack's command to rerun them), and the stacked benchmark's refusal of a bad option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.cli import main
from harness.config import compose, run_id, save
from harness.rerun import reproduce, wall_hours

SEEDS = (0, 1, 2)


def _stored_stack(store: Path, seeds: tuple[int, ...] = SEEDS, wall: float = 1800.0) -> list[Path]:
    """A completed stack of relations_game/mlp1 runs in ``store`` (one per seed), each recording the stack's run ids
    and the stack's wall time, as the stacked launcher stores them; their record says they imported an old
    harness/optim.py (stale)."""
    configs = []
    for seed in seeds:
        cfg = compose("relations_game", "mlp1", "smoke", [f"seed={seed}", "train.max_epochs=3"]).cfg
        OmegaConf.set_struct(cfg, False)
        cfg.data.fingerprint = "abc123"
        configs.append(cfg)
    ids = [run_id(cfg) for cfg in configs]
    folders = []
    for seed, cfg, identity in zip(seeds, configs, ids, strict=True):
        folder = store / "relations_game" / "mlp1" / identity
        folder.mkdir(parents=True)
        save(cfg, folder / "config.yaml")
        (folder / "results.json").write_text(
            json.dumps(
                {
                    "run_id": identity,
                    "task": "relations_game",
                    "model": "mlp1",
                    "profile": "smoke",
                    "seed": seed,
                    "status": "completed",
                    "wall_time_s": wall,
                    "metrics": {"test/acc": 0.5},
                    "stack": ids,
                    "code": {"files": {"harness/optim.py": "0" * 16}},
                }
            )
        )
        folders.append(folder)
    return folders


def test_a_stack_counts_its_wall_time_once() -> None:
    stack = ["a", "b", "c"]
    rows = [{"wall_time_s": 3600.0, "stack": stack} for _ in stack] + [{"wall_time_s": 1800.0}]
    assert wall_hours(rows) == pytest.approx(1.5)  # the stack's hour once, and the solo run's half hour
    rows[1]["wall_time_s"] = 7200.0  # a member that went on alone after the stack (resumed by the solo runner)
    assert wall_hours(rows) == pytest.approx(2.5)


def test_a_stack_member_is_rerun_with_its_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = _stored_stack(tmp_path)
    command, note = reproduce(folders[1])
    assert note == ""  # the command gives the member's own run id
    assert command == (
        "harness bench --task relations_game --model mlp1 --profile smoke --seeds 0,1,2 -- train.max_epochs=3"
    )

    assert main(["runs", "--runs-dir", str(tmp_path), "--imports", "harness/optim.py"]) == 0
    assert "3 of 3 runs imported harness/optim.py (0.5 h of wall time in all)" in capsys.readouterr().out
    assert main(["runs", "--runs-dir", str(tmp_path), "--stale"]) == 0
    out = capsys.readouterr().out
    assert "rerun (0.5 h of wall time in all)" in out and out.count("--seeds 0,1,2 --force") == 3


def test_a_member_whose_stack_is_not_in_the_store_is_rerun_alone(tmp_path: Path) -> None:
    folders = _stored_stack(tmp_path)
    (folders[2] / "results.json").unlink()  # e.g. only two members were published
    command, note = reproduce(folders[0])
    assert note == "" and " --seed 0 " in f"{command} " and "--seeds" not in str(command)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ks", "0"], "argument --ks: 0 is below 1"),
        (["--ks", "3", "x"], "argument --ks: 'x' is not an integer"),
        (["--threads", "0"], "argument --threads: 0 is below 1"),
        (["--repeats", "0"], "argument --repeats: 0 is below 1"),
        (["--warmup", "-1"], "argument --warmup: -1 is below 0"),
    ],
)
def test_the_stacked_benchmark_refuses_a_bad_option_in_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    from harness.runners.bench_stacked import main as bench_main

    with pytest.raises(SystemExit) as stopped:
        bench_main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_stacked_benchmark_on_cuda_without_a_gpu_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from harness.runners.bench_stacked import main as bench_main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        bench_main(["--device", "cuda"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--device cuda: this machine's torch sees no CUDA GPU" in err and err.count("\n") == 1


@pytest.mark.parametrize("override", ["task.tasks=[between]", "task.train_set=stripes", "task.difficulty=easy",
                                      "task.test_=x", "optim.lr=1"])
def test_retest_refuses_settings_that_change_what_the_run_trained_on(tmp_path: Path, override: str) -> None:
    from harness.errors import UserError
    from harness.runners.retest import retest

    with pytest.raises(UserError, match="not a test setting") as caught:
        retest("any-run", ["task.test_sets=[stripes]", override], tmp_path)
    assert str(caught.value).startswith(f"retest changes the test data only: {override} is not a test setting")


@pytest.mark.parametrize("key", ["task.test_on", "task.test_sets", "task.real_sets", "task.n_test",
                                 "task.generator_test_questions"])
def test_retest_accepts_its_test_settings(key: str) -> None:
    from harness.runners.retest import is_test_setting

    assert is_test_setting(key)
