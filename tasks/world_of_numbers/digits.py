"""The handwritten digit images of the World of Numbers (Moskvichev & Liu 2021, §7.2 and Appendix B,
Experiment 1: "a binarized version of the MNIST dataset"), read into per-split pools kept in memory.

Sources:

* ``mnist``: MNIST's IDX files under ``$HARNESS_DATA_DIR/mnist/`` (each raw or ``.gz``; the raw file is read when
  both lie there, as ``harness data fetch mnist`` leaves them). With the training files, train worlds draw
  from the 60,000 training images and val / test worlds from the first / second half of the 10,000 test images.
  With only the test files, the first 80% of them (8,000) are the train pool and the last 20% are cut into val
  (the first 1,000) and test (the last 1,000). A pixel is 1 when its grey level (0..255) is above 127.
* ``digits``: scikit-learn's bundled 8x8 digits (1,797 images, grey levels 0..16; a pixel is 1 above 8), cut
  80/10/10 in the order they are stored (1,437 / 179 / 181), for machines without MNIST.

The paper does not say how it binarised MNIST nor which images its held-out worlds used; the thresholds (half
the grey range) and the pools above are this harness's choice. Nothing is cached on disk: decoding MNIST takes
well under a second per 10,000 images.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from harness.errors import UserError
from harness.paths import data_dir, data_dir_label, shown_path
from tasks.world_of_numbers.idx import read_idx, read_idx_shape

NUM_DIGITS = 10
SPLITS = ("train", "val", "test")
MNIST_STEMS = {"train-images": "train-images-idx3-ubyte", "train-labels": "train-labels-idx1-ubyte",
               "t10k-images": "t10k-images-idx3-ubyte", "t10k-labels": "t10k-labels-idx1-ubyte"}
MNIST_THRESHOLD = 127  # grey level 0..255: above it is 1
DIGITS_THRESHOLD = 8  # scikit-learn's digits, grey level 0..16: above it is 1
DIGITS_SIZE = (8, 8)
FETCH_HINT = "`harness data fetch mnist` downloads MNIST"


@dataclass
class Pool:
    """The binarised images one split's worlds are drawn from, sorted by digit."""

    images: torch.Tensor  # bool [N, H, W]
    labels: torch.Tensor  # int64 [N], non-decreasing
    start: torch.Tensor  # int64 [10] index of the first image of each digit
    count: torch.Tensor  # int64 [10] images of each digit (all > 0)
    origin: str  # the file (or bundle) the images came from
    index: torch.Tensor  # int64 [N] each image's position in that file

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def sample(self, digits: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
        """One image of each requested digit, uniformly among the pool's images of that digit.

        digits: int64 [...] in 0..9; uniform: float [...] in [0, 1) (the caller's random draws) -> bool [..., H, W].
        """
        count = self.count[digits]  # [...]
        offset = (uniform * count).long().clamp_max(count - 1)  # [...]
        return self.images[self.start[digits] + offset]  # [..., H, W]


def make_pool(grey: np.ndarray, labels: np.ndarray, threshold: int, origin: str, index: np.ndarray,
              split: str) -> Pool:
    """A pool from grey images [N, H, W] and their labels [N]; every digit must occur (a UserError otherwise)."""
    present = np.bincount(labels, minlength=NUM_DIGITS)[:NUM_DIGITS]
    if (present == 0).any():
        missing = ", ".join(str(d) for d in np.flatnonzero(present == 0))
        raise UserError(f"World of Numbers: the {split} pool ({origin}, {len(labels)} images) has no image of "
                        f"digit(s) {missing}; every digit is needed")
    order = np.argsort(labels, kind="stable")  # [N]
    count = torch.from_numpy(present.astype(np.int64))  # [10]
    return Pool(images=torch.from_numpy(grey[order] > threshold),
                labels=torch.from_numpy(labels[order].astype(np.int64)), start=torch.cumsum(count, 0) - count,
                count=count, origin=origin,
                index=torch.from_numpy(index[order].astype(np.int64)))


# MNIST --------------------------------------------------------------------------------------------------------
def mnist_folder() -> Path:
    return data_dir() / "mnist"


def find_mnist_files(folder: Path) -> dict[str, Path]:
    """The MNIST files present in ``folder`` (role -> path), the raw file preferred over its ``.gz``."""
    found = {}
    for role, stem in MNIST_STEMS.items():
        for name in (stem, f"{stem}.gz"):
            if (folder / name).is_file():
                found[role] = folder / name
                break
    return found


def usable_mnist_files(folder: Path) -> dict[str, Path] | None:
    """The files a run reads: the test pair, plus the training pair when both of its files are there; None when
    the test pair is absent. Half a pair (images without labels) is a UserError: a broken download."""
    found = find_mnist_files(folder)
    for prefix in ("t10k", "train"):
        pair = [f"{prefix}-images", f"{prefix}-labels"]
        have = [role for role in pair if role in found]
        if len(have) == 1:
            lacking = MNIST_STEMS[pair[1] if have[0] == pair[0] else pair[0]]
            raise UserError(f"World of Numbers: {shown_path(found[have[0]])} is there but not {lacking}[.gz] "
                            f"({data_dir_label()}); {FETCH_HINT}")
    if "t10k-images" not in found:
        return None
    return found


def missing_mnist_error(folder: Path) -> UserError:
    return UserError(f"World of Numbers: task.source=mnist but no MNIST under {shown_path(folder)} "
                     f"({data_dir_label()}): looked for {MNIST_STEMS['t10k-images']}[.gz] and "
                     f"{MNIST_STEMS['t10k-labels']}[.gz]; {FETCH_HINT}")


def mnist_image_size(files: dict[str, Path]) -> tuple[int, int]:
    """(H, W) from the image files' headers (the test and, when present, the training images must agree)."""
    sizes = {role: read_idx_shape(files[role], 3)[1:] for role in ("t10k-images", "train-images") if role in files}
    if len(set(sizes.values())) > 1:
        raise UserError("World of Numbers: MNIST's image files disagree on the image size: "
                        + ", ".join(f"{shown_path(files[r])} {h}x{w}" for r, (h, w) in sizes.items()))
    (height, width), *_ = sizes.values()
    if height < 1 or width < 1:
        raise UserError(f"World of Numbers: {shown_path(files['t10k-images'])} declares {height}x{width} images")
    return int(height), int(width)


def _read_pair(files: dict[str, Path], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    images_path, labels_path = files[f"{prefix}-images"], files[f"{prefix}-labels"]
    images = read_idx(images_path, 3)  # [N, H, W] uint8
    labels = read_idx(labels_path, 1)  # [N] uint8
    if len(labels) != len(images):
        raise UserError(f"World of Numbers: {shown_path(labels_path)} has {len(labels)} labels but "
                        f"{shown_path(images_path)} has {len(images)} images")
    if len(labels) and int(labels.max()) >= NUM_DIGITS:
        raise UserError(f"World of Numbers: {shown_path(labels_path)} has label {int(labels.max())}; MNIST's are 0..9")
    return images, labels


def mnist_cuts(files: dict[str, Path], test_count: int) -> dict[str, tuple[str, int, int]]:
    """Each split's (file prefix, first, end) among the test images (or the training images for train)."""
    if "train-images" in files:
        half = test_count // 2
        return {"train": ("train", 0, -1), "val": ("t10k", 0, half), "test": ("t10k", half, test_count)}
    train_end, val_end = _cut_points(test_count)
    return {"train": ("t10k", 0, train_end), "val": ("t10k", train_end, val_end), "test": ("t10k", val_end, test_count)}


def _cut_points(total: int) -> tuple[int, int]:
    """Where an 80/10/10 cut in stored order ends its first and second parts."""
    return int(total * 0.8), int(total * 0.8) + int(total * 0.1)


def load_mnist_pools(files: dict[str, Path]) -> dict[str, Pool]:
    pairs = {prefix: _read_pair(files, prefix) for prefix in ("t10k", "train") if f"{prefix}-images" in files}
    pools = {}
    for split, (prefix, first, end) in mnist_cuts(files, len(pairs["t10k"][1])).items():
        images, labels = pairs[prefix]
        end = len(labels) if end < 0 else end
        pools[split] = make_pool(images[first:end], labels[first:end], MNIST_THRESHOLD,
                                 files[f"{prefix}-images"].name, np.arange(first, end), split)
    return pools


# scikit-learn's digits ----------------------------------------------------------------------------------------
def sklearn_available() -> bool:
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        return False
    return True


def digits_file() -> Path | None:
    """scikit-learn's bundled ``digits.csv.gz`` (for the data fingerprint), if it lies where it is expected."""
    import sklearn.datasets

    path = Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz"
    return path if path.is_file() else None


def load_digits_pools() -> dict[str, Pool]:
    if not sklearn_available():
        raise UserError("World of Numbers: the 8x8 digits need scikit-learn (pip install scikit-learn); "
                        f"or put MNIST under {shown_path(mnist_folder())} ({FETCH_HINT})")
    from sklearn.datasets import load_digits

    bundle = load_digits()
    grey = np.asarray(bundle.images).astype(np.uint8)  # [1797, 8, 8] grey levels 0..16
    labels = np.asarray(bundle.target).astype(np.int64)  # [1797]
    total = len(labels)
    train_end, val_end = _cut_points(total)
    cuts = {"train": (0, train_end), "val": (train_end, val_end), "test": (val_end, total)}
    return {split: make_pool(grey[a:b], labels[a:b], DIGITS_THRESHOLD, "scikit-learn digits", np.arange(a, b), split)
            for split, (a, b) in cuts.items()}
