"""Pathfinder-32 (Linsley et al., NeurIPS 2018; Long Range Arena, Tay et al., ICLR 2021): rules of the generator
and of the splits the other tests leave open.

* The two target snakes start ``seed_distance`` = 7 pixels apart (drewlinsley/pathfinder, ``snakes2.py``,
  ``initialize_two_seeds``; LRA's ``lra_benchmarks/data/pathfinder.py``, ``Pathfinder32``: seed distance 7).
* A level of LRA's release is cut in order at 80% / 90% into train / val / test
  (``lra_benchmarks/image/input_pipeline.py``, ``get_pathfinder_base_datasets``).
* Generated splits are drawn from different seeds, and each block of images from its own seed: no split and no
  block repeats another.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from tasks.pathfinder.generator import BLOCK, Generator, generate, level_settings
from tasks.pathfinder.reader import lra_split
from tasks.pathfinder.task import PathfinderTask


def test_the_two_target_snakes_start_seven_pixels_apart() -> None:
    ok, _, _, _, snakes = Generator(level_settings("easy"))._targets(np.random.default_rng(0), 4000)
    rows = np.flatnonzero(ok)
    assert len(rows) > 20
    first, second = snakes.tip[2 * rows], snakes.tip[2 * rows + 1]  # [n, 2] (y, x)
    distance = np.hypot(*(first - second).T.astype(float))
    assert (np.abs(distance - 7) <= 0.75).all(), distance  # each coordinate rounded to a pixel


@pytest.mark.parametrize("n", [10, 1000, 1234])
def test_a_level_is_cut_80_10_10_in_order(n: int) -> None:
    cut = lra_split(n)
    assert (cut["train"].start, cut["train"].stop) == (0, int(n * 0.8))
    assert (cut["val"].start, cut["val"].stop) == (int(n * 0.8), int(n * 0.9))
    assert (cut["test"].start, cut["test"].stop) == (int(n * 0.9), n)


def test_generated_blocks_differ() -> None:
    images = generate(BLOCK + 30, 3, level_settings("easy")).images
    same = (images[:30] == images[BLOCK:BLOCK + 30]).all(axis=(1, 2))
    assert not same.any()


def test_generated_splits_share_no_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    cfg = OmegaConf.create({"task": {"name": "pathfinder", "source": "generator", "difficulty": "easy",
                                     "n_train": 30, "n_val": 30, "n_test": 30, "generator_seed": 0,
                                     "test_on": []}})
    data = PathfinderTask(cfg).load()
    seen = [{bytes(image) for image in split.tensors["image"].numpy()} for split in (data.train, data.val, data.test)]
    assert [len(s) for s in seen] == [30, 30, 30]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])
