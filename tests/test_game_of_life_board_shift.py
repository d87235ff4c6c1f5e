"""The board-shift probe (tasks/game_of_life/board_shift.py): the floors it prints beside a trained model are
right on known patterns, it reads a run folder as the runner writes it, and a folder it cannot use is one line
and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness.config import compose
from harness.registry import load_entry
from tasks.game_of_life import board_shift
from tasks.game_of_life.task import GameOfLifeTask


def trained_run(tmp_path: Path) -> Path:
    """A run folder with a smoke-profile Updater-Extractor's config and an (untrained) checkpoint."""
    composed = compose("game_of_life", "updater_extractor", "smoke")
    task = GameOfLifeTask(composed.cfg)
    model = load_entry(composed.model.interfaces["stream"])(composed.cfg.model, task.info)
    run = tmp_path / composed.run_id
    (run / "checkpoints").mkdir(parents=True)
    OmegaConf.save(composed.cfg, run / "config.yaml")
    torch.save({"model": model.state_dict()}, run / "checkpoints" / "best.ckpt")
    return run


def test_the_floors_on_a_still_life_and_a_blinker(tmp_path: Path) -> None:
    model, task, _ = board_shift.load_model(trained_run(tmp_path), "best")
    size = task.settings.size  # 5 at the smoke profile
    block = torch.zeros(1, size, size, dtype=torch.bool)
    block[0, 1:3, 1:3] = True  # a still life: 4 of 25 cells alive at every step
    curves = board_shift.roll(model, task, block, steps=4)
    assert curves["unchanged"] == [100.0] * 4
    assert curves["dead"] == pytest.approx([84.0] * 4)
    assert all(0 <= value <= 100 for value in curves["model"])
    blinker = torch.zeros(1, size, size, dtype=torch.bool)
    blinker[0, 2, 1:4] = True  # period 2: 4 of 25 cells differ from the told board at even steps
    curves = board_shift.roll(model, task, blinker, steps=3)
    assert curves["unchanged"] == pytest.approx([100.0, 84.0, 100.0])


def test_evolved_boards_that_died_out_are_dropped_and_counted(tmp_path: Path) -> None:
    _, _, cfg = board_shift.load_model(trained_run(tmp_path), "best")
    kinds = dict(board_shift.board_kinds(cfg, boards=32, evolved=[0, 50], densities=[0.2], seed=0))
    names = list(kinds)
    assert names[0] == "fresh 0.5" and names[-1] == "fresh 0.2"
    evolved = [name for name in names if name.startswith("evolved 50 ")]
    assert len(evolved) == 1
    kept = kinds[evolved[0]]
    assert f"({kept.shape[0]} of 32 alive)" in evolved[0]
    assert bool(kept.flatten(1).any(dim=1).all())


def test_main_prints_every_kind_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = trained_run(tmp_path)
    out = tmp_path / "shift.json"
    code = board_shift.main([str(run), "--boards", "8", "--steps", "3", "--evolved", "10", "--densities", "0.3",
                             "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "fresh 0.5" in printed and "evolved 10 " in printed and "fresh 0.3" in printed
    stored = out.read_text()
    assert '"unchanged"' in stored and run.name in stored


def test_a_folder_it_cannot_use_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert board_shift.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    run = trained_run(tmp_path)
    (run / "checkpoints" / "best.ckpt").unlink()
    assert board_shift.main([str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no checkpoints/best.ckpt" in err and err.count("\n") == 0
    (run / "checkpoints" / "best.ckpt").write_bytes(b"not a checkpoint")
    assert board_shift.main([str(run)]) == 2
    assert "does not load" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--densities", "0.3", "2"], "--densities 0.3 2.0: each is a probability in [0, 1]"),
    (["--evolved", "5", "-3"], "--evolved 5 -3: generations are at least 0"),
])
def test_densities_and_generations_out_of_range_are_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    """A density of 2 drew boards all alive and a negative generation count boards never advanced, both printed
    as if asked for."""
    assert board_shift.main([str(tmp_path / "nowhere"), *argv]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_the_json_goes_into_a_folder_made_for_it(tmp_path: Path) -> None:
    run = trained_run(tmp_path)
    out = tmp_path / "new" / "folder" / "shift.json"
    assert board_shift.main([str(run), "--boards", "4", "--steps", "2", "--evolved", "--densities",
                             "--json", str(out)]) == 0
    assert '"unchanged"' in out.read_text()
