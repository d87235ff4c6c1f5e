"""World of Numbers (Moskvichev & Liu 2021, "Updater-Extractor Architecture for Inductive World State
Representations", §7.2 and Appendix B, Experiment 1): rules of the data the other tests leave open, on hand-made
MNIST files.

* Binarisation: a grey level above 127 is 1 (tasks/world_of_numbers/README.md, "Sources").
* With MNIST's training files, val worlds draw from the first half of the test images, test worlds from the last.
* Every image is drawn uniformly among the pool's images of its digit, so every one of them is drawn sometimes.
* The queries are shuffled: their order tells nothing of their group (observed / unobserved).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from tasks.world_of_numbers.idx import write_idx
from tasks.world_of_numbers.task import WorldOfNumbersTask

H, W = 4, 5


def task_cfg(**task: object):  # noqa: ANN201 - an OmegaConf node
    base = {"name": "world_of_numbers", "source": "mnist", "n": 3, "first_instructions": 30, "instructions": 6,
            "queries": 9}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


def write_pair(folder: Path, prefix: str, images: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images.astype(np.uint8))
    write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", (np.arange(len(images)) % 10).astype(np.uint8))


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    return tmp_path


def test_a_pixel_is_ink_above_grey_level_127(data: Path) -> None:
    grey = np.zeros((200, H, W), dtype=np.uint8)
    grey[:, :, 0], grey[:, :, 1], grey[:, :, 2], grey[:, :, 3], grey[:, :, 4] = 0, 126, 127, 128, 255
    write_pair(data / "mnist", "t10k", grey)
    pools = WorldOfNumbersTask(task_cfg()).pools()
    for split in ("train", "val", "test"):
        assert pools[split].images[0].tolist() == [[False, False, False, True, True]] * H


def test_with_training_files_val_is_the_first_half_of_the_test_images_and_test_the_second(data: Path) -> None:
    rng = np.random.default_rng(0)
    write_pair(data / "mnist", "t10k", rng.integers(0, 256, (200, H, W)))
    write_pair(data / "mnist", "train", rng.integers(0, 256, (60, H, W)))
    pools = WorldOfNumbersTask(task_cfg()).pools()
    assert sorted(pools["val"].index.tolist()) == list(range(100))
    assert sorted(pools["test"].index.tolist()) == list(range(100, 200))


def test_every_image_of_a_digit_is_drawn(data: Path) -> None:
    rng = np.random.default_rng(1)
    write_pair(data / "mnist", "t10k", rng.integers(0, 256, (200, H, W)))  # train pool: 16 images of each digit
    task = WorldOfNumbersTask(task_cfg())
    generator = torch.Generator().manual_seed(0)
    worlds, _ = task.step(task.reset(500, generator, "train"), 1, generator, "train")  # 1,500 images drawn
    pool = task.pools()["train"]
    for digit in range(10):
        drawn = {tuple(image.flatten().tolist()) for image in worlds.images[worlds.digits == digit]}
        assert drawn == {tuple(image.flatten().tolist()) for image in pool.images[pool.labels == digit]}, digit


def test_the_query_order_does_not_give_the_group_away(data: Path) -> None:
    rng = np.random.default_rng(2)
    write_pair(data / "mnist", "t10k", rng.integers(0, 256, (200, H, W)))
    task = WorldOfNumbersTask(task_cfg())
    generator = torch.Generator().manual_seed(0)
    _, step = task.step(task.reset(400, generator, "train"), 1, generator, "train")
    full = step.query_mask.all(1) & (step.query_group == 0).any(1)  # [B]: worlds with an observed query
    observed = step.query_group[full] == 0  # [B', 9]
    assert observed.any(0).all()  # an observed query turns up at every place
    assert (~observed).any(0).all()  # and so does an unobserved one
