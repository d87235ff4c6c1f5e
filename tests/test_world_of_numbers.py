"""World of Numbers (Updater-Extractor, Appendix B, Experiment 1): the IDX reader and its errors, the image pools
(real MNIST test set, hand-made files, scikit-learn's digits), the world's rotation, instructions and queries
against the world's pixels, the stream contract, reconstructions, and bad settings."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.streams import check_stream_info, check_stream_step
from tasks.world_of_numbers.digits import sklearn_available
from tasks.world_of_numbers.idx import read_idx, read_idx_shape, write_idx
from tasks.world_of_numbers.task import WorldOfNumbersTask, Worlds
from tests.conftest import SHARED_DATA

MNIST = SHARED_DATA / "mnist"
requires_mnist = pytest.mark.skipif(not (MNIST / "t10k-images-idx3-ubyte.gz").is_file(),
                                    reason=f"MNIST's test set is not at {MNIST} (set HARNESS_DATA_DIR)")
requires_sklearn = pytest.mark.skipif(not sklearn_available(), reason="scikit-learn is not installed")
H, W = 4, 5  # hand-made images: not square, so x and y cannot be swapped unnoticed


def task_cfg(**task: object):  # noqa: ANN201 - an OmegaConf node
    base = {"name": "world_of_numbers", "source": "mnist", "n": 3, "first_instructions": 30, "instructions": 6,
            "queries": 9}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


def make_mnist(folder: Path, prefix: str, count: int, gz: bool = True, seed: int = 0) -> None:
    """A hand-made pair of MNIST files: ``count`` random grey images of H x W, labels cycling 0..9."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    suffix = ".gz" if gz else ""
    write_idx(folder / f"{prefix}-images-idx3-ubyte{suffix}", rng.integers(0, 256, (count, H, W), dtype=np.uint8))
    write_idx(folder / f"{prefix}-labels-idx1-ubyte{suffix}", (np.arange(count) % 10).astype(np.uint8))


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder with a hand-made MNIST test set of 200 images (no training set)."""
    make_mnist(tmp_path / "mnist", "t10k", 200)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    return tmp_path


def roll(task: WorldOfNumbersTask, steps: int, batch: int = 4, seed: int = 0, split: str = "train"):  # noqa: ANN201
    """[(worlds, step)] for steps 1..steps."""
    generator = torch.Generator().manual_seed(seed)
    worlds = task.reset(batch, generator, split)
    out = []
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, generator, split)
        out.append((worlds, step))
    return out


def pixel_values(worlds: Worlds, fields: torch.Tensor) -> torch.Tensor:
    """The world's pixel at each (x, y, r[, ...]) row of ``fields`` [B, N, >=3] -> int64 [B, N]."""
    b = torch.arange(fields.shape[0])[:, None]
    return worlds.images[b, fields[..., 2], fields[..., 1], fields[..., 0]].long()


def pixel_ids(fields: torch.Tensor, n: int) -> torch.Tensor:
    return fields[..., 2] * H * W + fields[..., 1] * W + fields[..., 0]


# the IDX format ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["images", "images.gz"])
def test_idx_round_trip(tmp_path: Path, name: str):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / name, array)
    assert read_idx_shape(tmp_path / name, 3) == (2, 3, 4)
    np.testing.assert_array_equal(read_idx(tmp_path / name, 3), array)


def test_idx_by_hand(tmp_path: Path):
    raw = bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9])  # magic 0x00000801, 3 labels
    (tmp_path / "labels").write_bytes(raw)
    (tmp_path / "labels.gz").write_bytes(gzip.compress(raw))
    for name in ("labels", "labels.gz"):
        assert read_idx(tmp_path / name, 1).tolist() == [7, 0, 9]


@pytest.mark.parametrize("payload, words", [
    (bytes([0, 0, 8, 2, 0, 0, 0, 1, 5]), "magic"),  # 2 dimensions where 1 is expected
    (bytes([0, 0, 13, 1, 0, 0, 0, 1, 5]), "magic"),  # floats, not unsigned bytes
    (bytes([0, 0, 8, 1, 0, 0, 0, 4, 5, 6]), "promises 4"),  # truncated data
    (bytes([0, 0, 8, 1, 0, 0, 0, 1, 5, 6]), "promises 1"),  # trailing bytes
    (bytes([0, 0, 8]), "too short"),
])
def test_malformed_idx_is_a_user_error(tmp_path: Path, payload: bytes, words: str):
    path = tmp_path / "bad-labels"
    path.write_bytes(payload)
    with pytest.raises(UserError, match=words) as caught:
        read_idx(path, 1)
    assert "bad-labels" in str(caught.value)


def test_truncated_gzip_is_a_user_error(tmp_path: Path):
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 50]) + bytes(50))[:-12])
    with pytest.raises(UserError, match="t10k-labels-idx1-ubyte.gz.*gzip"):
        read_idx(path, 1)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(UserError, match="gzip"):
        read_idx(path, 1)


def test_malformed_mnist_file_stops_the_task(tiny: Path):
    (tiny / "mnist" / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes([0, 0, 8, 3, 0, 0, 0, 200])))
    with pytest.raises(UserError, match="t10k-images-idx3-ubyte.gz"):
        WorldOfNumbersTask(task_cfg()).describe_data()


# the real MNIST test set ------------------------------------------------------------------------------------
@requires_mnist
def test_real_t10k(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    images = read_idx(MNIST / "t10k-images-idx3-ubyte.gz", 3)
    labels = read_idx(MNIST / "t10k-labels-idx1-ubyte.gz", 1)
    assert images.shape == (10000, 28, 28) and labels.shape == (10000,)
    counts = np.bincount(labels, minlength=10)
    assert len(counts) == 10 and counts.min() > 800 and counts.max() < 1200
    task = WorldOfNumbersTask(task_cfg(source="auto", first_instructions=500, instructions=75, queries=75))
    assert task.resolve_source() == "mnist" and task.pixels == 2352
    pools = task.pools()
    assert [len(pools[s]) for s in ("train", "val", "test")] == [8000, 1000, 1000]
    ink = pools["train"].images.float().mean()
    assert 0.05 < float(ink) < 0.3  # binarised strokes on a black background
    described = task.describe_data()
    assert "t10k" in described["source"] and "8000/1000/1000" in described["source"]
    assert set(described["files"]) == {"mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"}
    for worlds, step in roll(task, 3, batch=2):
        check_stream_step("world_of_numbers", step, task.info, 2)
        assert torch.equal(step.answers[step.query_mask], pixel_values(worlds, step.queries)[step.query_mask])


# pools ------------------------------------------------------------------------------------------------------
def test_test_set_only_pools_are_disjoint(tiny: Path):
    pools = WorldOfNumbersTask(task_cfg()).pools()
    assert [len(pools[s]) for s in ("train", "val", "test")] == [160, 20, 20]
    seen = [set(pools[s].index.tolist()) for s in ("train", "val", "test")]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])
    assert seen[0] == set(range(160)) and seen[1] == set(range(160, 180))


def test_training_files_give_the_train_pool(tiny: Path):
    make_mnist(tiny / "mnist", "train", 60, gz=False, seed=1)
    task = WorldOfNumbersTask(task_cfg())
    pools = task.pools()
    assert pools["train"].origin == "train-images-idx3-ubyte" and len(pools["train"]) == 60
    assert {pools[s].origin for s in ("val", "test")} == {"t10k-images-idx3-ubyte.gz"}
    assert [len(pools[s]) for s in ("val", "test")] == [100, 100]
    assert not set(pools["val"].index.tolist()) & set(pools["test"].index.tolist())
    assert "training images" in task.describe_data()["source"]


def test_raw_files_are_read_before_their_gz(tiny: Path):
    make_mnist(tiny / "mnist", "t10k", 300, gz=False, seed=3)
    task = WorldOfNumbersTask(task_cfg())
    assert [len(task.pools()[s]) for s in ("train", "val", "test")] == [240, 30, 30]
    assert set(task.describe_data()["files"]) == {"mnist/t10k-images-idx3-ubyte", "mnist/t10k-labels-idx1-ubyte"}


def test_half_a_pair_is_a_user_error(tiny: Path):
    (tiny / "mnist" / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(UserError, match="t10k-labels-idx1-ubyte"):
        WorldOfNumbersTask(task_cfg(source="auto"))


def test_pool_missing_a_digit_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    make_mnist(tmp_path / "mnist", "t10k", 50)  # val / test pools of 5 images: not every digit
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError, match="val pool .* no image of digit"):
        WorldOfNumbersTask(task_cfg()).pools()


def test_images_come_from_the_split_pool(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    for split in ("train", "val", "test"):
        pool = task.pools()[split]
        worlds, _ = roll(task, 2, batch=6, split=split)[-1]
        for b in range(6):
            for r in range(3):
                digit = int(worlds.digits[b, r])
                candidates = pool.images[pool.labels == digit]  # [N_d, H, W]
                assert (candidates == worlds.images[b, r]).flatten(1).all(1).any()


# the world --------------------------------------------------------------------------------------------------
def test_worlds_rotate(tiny: Path):
    task = WorldOfNumbersTask(task_cfg(n=4))
    rolled = roll(task, 12, batch=8)
    first = rolled[0][0].digits
    assert torch.equal((first - first[:, :1]) % 10, torch.arange(4).expand(8, -1))  # consecutive at t = 1
    for (before, _), (after, _) in zip(rolled, rolled[1:], strict=False):
        assert torch.equal(after.digits, (before.digits + 1) % 10)
        assert not torch.equal(after.images, before.images)
    starts = torch.cat([w.digits[:, 0] for w, _ in roll(task, 1, batch=200)])
    assert set(starts.tolist()) == set(range(10))


def test_instructions_and_answers_match_the_world(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    for worlds, step in roll(task, 4, batch=5):
        check_stream_step("world_of_numbers", step, task.info, 5)
        mask = step.instruction_mask
        assert torch.equal(step.instructions[..., 3][mask], pixel_values(worlds, step.instructions)[mask])
        assert torch.equal(step.answers[step.query_mask], pixel_values(worlds, step.queries)[step.query_mask])
        for b in range(5):
            told = pixel_ids(step.instructions[b][mask[b]], 3)
            assert len(set(told.tolist())) == len(told)  # without replacement
            asked = pixel_ids(step.queries[b][step.query_mask[b]], 3)
            assert len(set(asked.tolist())) == len(asked)
            group = step.query_group[b][step.query_mask[b]]
            inside = torch.isin(asked, told)
            assert torch.equal(inside, group == 0)  # observed = told at this step, unobserved = not
            assert int((group == 0).sum()) == min(len(told), 9 // 3)


def test_instruction_counts_stay_in_bounds(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    counts = {1: [], 2: []}
    for seed in range(4):
        for t, (_, step) in enumerate(roll(task, 2, batch=64, seed=seed), start=1):
            counts[t].append(step.instruction_mask.sum(1))
    first, later = torch.cat(counts[1]), torch.cat(counts[2])
    assert int(first.min()) >= 0 and int(first.max()) <= 30 and int(first.max()) > 6
    assert int(later.min()) == 0 and int(later.max()) == 6
    assert task.info["max_instructions"] == 30 and task.info["max_queries"] == 9


def test_small_worlds_cap_instructions_and_queries(tiny: Path):
    task = WorldOfNumbersTask(task_cfg(n=1, first_instructions=100, instructions=25, queries=40))
    assert task.pixels == 20 and task.info["max_instructions"] == 20 and task.info["max_queries"] == 20
    for worlds, step in roll(task, 3, batch=6):
        check_stream_step("world_of_numbers", step, task.info, 6)
        assert bool(step.query_mask.all())  # every pixel asked; observed ones fill in for missing unobserved ones
        assert torch.equal(step.answers, pixel_values(worlds, step.queries))


def test_same_generator_same_worlds(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    one, two = roll(task, 3, seed=7), roll(task, 3, seed=7)
    for (w1, s1), (w2, s2) in zip(one, two, strict=True):
        assert torch.equal(w1.images, w2.images) and torch.equal(w1.digits, w2.digits)
        for name in ("instructions", "instruction_mask", "queries", "query_mask", "answers", "query_group"):
            assert torch.equal(getattr(s1, name), getattr(s2, name))
    assert not torch.equal(roll(task, 1, seed=8)[0][1].queries, one[0][1].queries)


def test_contract(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    check_stream_info("world_of_numbers", task.info)
    assert task.info["instruction_fields"] == [W, H, 3, 2] and task.info["query_fields"] == [W, H, 3]
    assert task.info["num_answers"] == 2 and task.info["query_groups"] == ["observed", "unobserved"]
    for split in ("train", "val", "test"):
        for _, step in roll(task, 2, batch=3, split=split):
            check_stream_step("world_of_numbers", step, task.info, 3)


def test_full_step_and_render(tiny: Path):
    task = WorldOfNumbersTask(task_cfg())
    worlds, _ = roll(task, 2, batch=3)[-1]
    full = task.full_step(worlds)
    check_stream_step("world_of_numbers", full, {**task.info, "max_queries": task.pixels}, 3)
    assert not bool(full.instruction_mask.any()) and bool(full.query_mask.all())
    ids = pixel_ids(full.queries, 3)  # [B, P]
    assert torch.equal(ids.sort(1).values, torch.arange(task.pixels).expand(3, -1))
    assert torch.equal(full.answers, pixel_values(worlds, full.queries))
    picture = task.render(full.answers)
    assert picture.dtype == torch.uint8 and tuple(picture.shape) == (3, H, 3 * W)
    for r in range(3):
        assert torch.equal(picture[:, :, r * W:(r + 1) * W], worlds.images[:, r].to(torch.uint8) * 255)
    assert int(task.render(torch.full((1, task.pixels), 0.5)).max()) == 128
    with pytest.raises(ValueError):
        task.render(torch.zeros(1, task.pixels + 1))


def test_describe_data(tiny: Path):
    described = WorldOfNumbersTask(task_cfg()).describe_data()
    assert set(described) == {"source", "files", "fingerprint"}
    assert described["source"].startswith("mnist:") and "160/20/20" in described["source"]
    assert set(described["files"]) == {"mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"}
    other = WorldOfNumbersTask(task_cfg(instructions=7)).describe_data()
    assert other["fingerprint"] != described["fingerprint"]
    make_mnist(tiny / "mnist", "t10k", 200, seed=5)
    assert WorldOfNumbersTask(task_cfg()).describe_data()["fingerprint"] != described["fingerprint"]


# the 8x8 digits and bad settings ----------------------------------------------------------------------------
@requires_sklearn
def test_digits_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    task = WorldOfNumbersTask(task_cfg(source="auto", first_instructions=500, instructions=75, queries=75))
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "MNIST was not found" in lines[0] and "harness data fetch mnist" in lines[0]
    assert task.resolve_source() == "digits" and task.pixels == 3 * 8 * 8
    assert task.info["instruction_fields"] == [8, 8, 3, 2] and task.info["max_instructions"] == 192
    pools = task.pools()
    assert [len(pools[s]) for s in ("train", "val", "test")] == [1437, 179, 181]
    for worlds, step in roll(task, 3, batch=4):
        check_stream_step("world_of_numbers", step, task.info, 4)
        assert torch.equal(step.answers[step.query_mask], pixel_values(worlds, step.queries)[step.query_mask])
    described = task.describe_data()
    assert described["source"].startswith("digits:") and described["files"]
    WorldOfNumbersTask(task_cfg(source="digits"))
    assert capsys.readouterr().out == ""  # asked for by name: nothing to say


def test_mnist_without_files_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError, match=r"no MNIST under .*mnist.*harness data fetch mnist"):
        WorldOfNumbersTask(task_cfg(source="mnist"))


@pytest.mark.parametrize("key, value", [("n", 0), ("queries", 0), ("instructions", -1), ("first_instructions", 2.5),
                                        ("n", "3"), ("n", True), ("source", "emnist"), ("n", None)])
def test_bad_settings_are_user_errors(tiny: Path, key: str, value: object):
    with pytest.raises(UserError, match=f"task.{key}"):
        WorldOfNumbersTask(task_cfg(**{key: value}))
