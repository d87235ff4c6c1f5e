"""The Pathfinder-32 task: generator (determinism, balance, connectivity of the labelled snakes), the loader of
LRA's files (on the reference sample and on broken copies), fidelity to the reference sample, a smoke run."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from harness.errors import UserError
from tasks.pathfinder.compare import image_stats, per_batch
from tasks.pathfinder.generator import BLOCK, _Tables, generate, level_settings
from tasks.pathfinder.reader import read_level
from tasks.pathfinder.stamps import Geometry, seed_stamps
from tests.conftest import SHARED_DATA, run_cli

LEVEL_DIR = SHARED_DATA / "pathfinder" / "pathfinder32"
HARD = LEVEL_DIR / "curv_contour_length_14"
requires_sample = pytest.mark.skipif(not (HARD / "metadata").is_dir(),
                                     reason="reference Pathfinder-32 sample not found (HARNESS_DATA_DIR)")


@pytest.fixture(scope="module")
def hard() -> object:
    return generate(1000, 11, level_settings("hard"), keep_ink=True)


def test_same_seed_same_images_whatever_n() -> None:
    a = generate(BLOCK + 20, 5, level_settings("easy"))
    b = generate(30, 5, level_settings("easy"))
    assert np.array_equal(a.images[:30], b.images) and np.array_equal(a.labels[:30], b.labels)
    c = generate(30, 6, level_settings("easy"))
    assert not np.array_equal(b.images, c.images)


def test_images_shape_range_and_balance(hard: object) -> None:
    images, labels = hard.images, hard.labels
    assert images.shape == (1000, 32, 32) and images.dtype == np.uint8 and labels.dtype == np.int64
    assert (images.reshape(1000, -1).max(axis=1) == 255).all()
    assert set(np.unique(labels)) == {0, 1}
    assert abs(labels.sum() - 500) < 4 * np.sqrt(1000 * 0.25)  # 4 sigma of Binomial(1000, 1/2)
    assert (hard.target_paddles == 28).all()
    # few distractors survive: only 30 of 360 seed orientations can seed a snake (as in the reference, whose
    # distractor snakes at contour length 14 average about 1.1 per image)
    assert (hard.distractor_snakes <= 5).all() and 0.8 < hard.distractor_snakes.mean() < 1.5


def test_seed_orientations_and_stamps_as_the_reference() -> None:
    """The seeds' usable orientations (the reference's OpenCV dilation leaves pixels with no kernel offset in the
    window at the lowest float, and then finds no free pixel) and the 8-bit Lanczos strokes."""
    tables = _Tables(level_settings("hard"))
    assert np.array_equal(np.flatnonzero(tables.seed_alive) - 180, np.arange(-150, -120))
    assert not tables.first_seed_free[~tables.seed_alive].any()
    strokes, _, _ = seed_stamps(Geometry())
    assert np.allclose(strokes * 255, np.round(strokes * 255), atol=1e-3)  # 8-bit values, as the reference's
    assert round(float(strokes[180].max()) * 255) == 135  # horizontal paddle's peak, the reference's value


def test_label_is_whether_the_markers_share_a_snake(hard: object) -> None:
    origin, terminal = hard.marker_snakes[:, 0], hard.marker_snakes[:, 1]
    assert np.array_equal(hard.labels, (origin == terminal).astype(np.int64))
    n = np.arange(len(hard.labels))
    o, t = hard.markers[:, 0], hard.markers[:, 1]
    ink_o = hard.snake_ink[n, :, o[:, 0], o[:, 1]]  # [N, 2]: each snake's stroke at the origin marker
    ink_t = hard.snake_ink[n, :, t[:, 0], t[:, 1]]
    assert (ink_o[n, origin] > 0.3).all() and (ink_t[n, terminal] > 0.3).all()  # markers sit on their snake
    # whose stroke is strongest under each marker: the same snake exactly when the label is 1 (the two target
    # snakes may touch where their masks overlap by less than the reference's 1.8, so not always)
    same = ink_o.argmax(axis=1) == ink_t.argmax(axis=1)
    assert (same == (hard.labels == 1)).mean() > 0.97


def test_connectivity_of_the_drawn_path(hard: object) -> None:
    """All the marked snake's ink (its dashes bridged by one pixel) joins the two markers when label 1; for label 0
    its clearly drawn strokes (10% of its peak) do not reach the terminal marker (but for touching snakes, rare).
    The strokes are 8-bit, so a dash's faintest tail can round to 0 and leave a two-pixel gap at the 10% level."""
    eight = np.ones((3, 3), dtype=bool)

    def joined(level: float) -> np.ndarray:
        out = []
        for i in range(len(hard.labels)):
            ink = hard.snake_ink[i, hard.marker_snakes[i, 0]]
            drawn = ndimage.binary_dilation(ink > level * ink.max())
            parts, _ = ndimage.label(drawn, structure=eight)
            (oy, ox), (ty, tx) = hard.markers[i]
            out.append(parts[oy, ox] > 0 and parts[oy, ox] == parts[ty, tx])
        return np.array(out)

    assert joined(0.0)[hard.labels == 1].all()
    assert (~joined(0.1)[hard.labels == 0]).mean() > 0.9


@requires_sample
def test_reader_on_reference_sample() -> None:
    level = read_level(HARD)
    assert level.images.shape == (1000, 32, 32) and level.empty == 0
    assert int(level.labels.sum()) == 504 and int((level.labels == 0).sum()) == 496
    first = (HARD / "metadata" / "0.npy").read_text().splitlines()[0].split()
    assert level.labels[0] == int(first[3])
    png = np.asarray(Image.open(HARD / first[0] / first[1]))
    assert np.array_equal(level.images[0], png)


def _copy_level(tmp_path: Path) -> Path:
    root = tmp_path / "pathfinder" / "pathfinder32" / "curv_contour_length_14"
    (root / "metadata").mkdir(parents=True)
    (root / "imgs" / "0").mkdir(parents=True)
    rows = (HARD / "metadata" / "0.npy").read_text().splitlines()[:10]
    (root / "metadata" / "0.npy").write_text("\n".join(rows) + "\n")
    for row in rows:
        sub, name = row.split()[:2]
        shutil.copy(HARD / sub / name, root / sub / name)
    return root


@requires_sample
def test_reader_split_and_source_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from tasks.pathfinder.task import PathfinderTask
    root = _copy_level(tmp_path)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    cfg = SimpleNamespace(task=_Cfg(source="auto", difficulty="hard", n_train=5, n_val=5, n_test=5,
                                    generator_seed=0, test_on=[]))
    data = PathfinderTask(cfg).load()
    assert (len(data.train), len(data.val), len(data.test)) == (8, 1, 1)
    assert "files" in data.source and "0 empty images" in data.source
    assert tuple(data.train.tensors["image"].shape[1:]) == (32, 32, 1)
    assert root.is_dir()


class _Cfg(dict):
    """A dict with attribute access, as the harness's config nodes."""

    __getattr__ = dict.__getitem__


@requires_sample
@pytest.mark.parametrize("damage", ["bad row", "missing png", "wrong size", "not a png"])
def test_reader_rejects_broken_files(tmp_path: Path, damage: str) -> None:
    root = _copy_level(tmp_path)
    meta = root / "metadata" / "0.npy"
    rows = meta.read_text().splitlines()
    first = root / rows[0].split()[0] / rows[0].split()[1]
    if damage == "bad row":
        meta.write_text("\n".join([rows[0], "imgs/0 sample_1.png 1"] + rows[2:]) + "\n")
    elif damage == "missing png":
        first.unlink()
    elif damage == "wrong size":
        Image.new("L", (28, 28)).save(first)
    else:
        first.write_bytes(b"not a png at all")
    with pytest.raises(UserError, match=r"0\.npy|sample_0\.png"):
        read_level(root)


IMAGE_STATS = ("px=0", "px 1-63", "px 64-127", "px 128-191", "px 192-255", "nonzero", "bright comps", "peaks",
               "blobs")


@pytest.fixture(scope="module")
def fidelity() -> tuple[dict[str, float], list[dict[str, float]], dict[str, float]]:
    """The reference's hard level (whole, and in 250-image batches) and 1,000 of our hard images."""
    level = read_level(HARD)
    ours = generate(1000, 21, level_settings("hard"))
    return (image_stats(level.images, level.labels), per_batch(level.images, level.labels, 250),
            image_stats(ours.images, ours.labels))


def _close(fidelity: tuple, stat: str) -> None:
    reference, batches, mine = fidelity
    spread = max(abs(b[stat] - reference[stat]) for b in batches)
    tolerance = 4 * np.sqrt(0.25 / 1000) if stat == "label" else 4 * spread
    assert abs(mine[stat] - reference[stat]) <= tolerance, (stat, mine[stat], reference[stat], tolerance)


@requires_sample
def test_fidelity_label_balance(fidelity: tuple) -> None:
    _close(fidelity, "label")


@requires_sample
@pytest.mark.parametrize("stat", IMAGE_STATS)
def test_fidelity_to_reference_sample(fidelity: tuple, stat: str) -> None:
    """Ours against the reference's 1,000 hard images: the tolerance is four times the largest distance of a
    250-image batch of the reference from the whole sample (label: 4 sigma of a binomial mean)."""
    _close(fidelity, stat)


@pytest.mark.slow
def test_smoke_run(env: dict[str, str]) -> None:
    result = run_cli(["bench", "--task", "pathfinder", "--model", "mlp1", "--profile", "smoke"], env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "test/acc" in result.stdout + result.stderr


def test_missing_files_say_what_helps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No level folder: training on files is told to use the generator; testing on them to drop them."""
    from types import SimpleNamespace

    from tasks.pathfinder.task import PathfinderTask

    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))

    def task(source: str, test_on: list[str]) -> PathfinderTask:
        return PathfinderTask(SimpleNamespace(task=_Cfg(source=source, difficulty="hard", n_train=5, n_val=5,
                                                        n_test=5, generator_seed=0, test_on=test_on)))

    with pytest.raises(UserError, match="use task.source=generator or get LRA's release"):
        task("files", []).describe_data()
    with pytest.raises(UserError, match="drop files from task.test_on or get LRA's release"):
        task("generator", ["files"]).describe_data()
