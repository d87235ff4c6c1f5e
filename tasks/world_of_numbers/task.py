"""The World of Numbers (Moskvichev & Liu 2021, §7.2 and Appendix B, Experiment 1; Figures 2 and 3): a
``stream`` task (harness/streams.py) whose world is an n-tuple of binarised handwritten digit images,
"semantically rotated" every step.

Dynamics: at step 1 the tuple shows the digits d, d + 1, ..., d + n - 1 (mod 10), d uniform in 0..9 (the
paper's examples, (1, 2, 3, 4, 5) and (5, 6, 7), are consecutive; it does not say how the first tuple is drawn).
Every step each digit becomes digit + 1 (mod 10) and every image is drawn afresh, uniformly among the images of
its new digit in the split's pool (tasks/world_of_numbers/digits.py: train worlds and held-out worlds use
disjoint images). ``reset`` returns the worlds before step 1 (the digits d - 1, ...; no images yet), so every
``step`` rotates and re-samples, and the first one shows d, ..., d + n - 1.

What is told and asked (tasks/world_of_numbers/sampling.py): instructions (x, y, r, value), fields
[W, H, n, 2]; 0..``first_instructions`` of them at t = 1 and 0..``instructions`` after (the paper's 0-500 and
0-75), capped at the n * H * W pixels; ``queries`` pixels (x, y, r), fields [W, H, n], answered by the pixel's
value (2 classes), in the groups "observed" (told at this step) and "unobserved". With MNIST and n = 3 a world
has 28 * 28 * 3 = 2,352 pixels, as the paper.

Two extra methods serve reconstructions (Figures 2 and 3): ``full_step(worlds)`` asks every pixel once, and
``render(values)`` lays per-pixel values or probabilities out as the n images side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from harness.errors import UserError
from harness.paths import data_relative, shown_path
from harness.provenance import file_digest, fingerprint
from harness.streams import SPLITS, StreamStep
from tasks.world_of_numbers.digits import (
    DIGITS_SIZE,
    DIGITS_THRESHOLD,
    FETCH_HINT,
    MNIST_THRESHOLD,
    NUM_DIGITS,
    Pool,
    digits_file,
    load_digits_pools,
    load_mnist_pools,
    missing_mnist_error,
    mnist_folder,
    mnist_image_size,
    sklearn_available,
    usable_mnist_files,
)
from tasks.world_of_numbers.sampling import ask_everything, render, tell_and_ask, uniform

WORLD_VERSION = 1  # bump when the worlds, instructions or queries drawn from the same settings change
SOURCES = ("auto", "mnist", "digits")
QUERY_GROUPS = ["observed", "unobserved"]
SETTINGS = {"n": 1, "first_instructions": 0, "instructions": 0, "queries": 1}  # int keys and their minimum


@dataclass
class Worlds:
    """A batch of worlds: the digit each image shows and the images."""

    digits: torch.Tensor  # int64 [B, n] in 0..9
    images: torch.Tensor  # bool [B, n, H, W]


class WorldOfNumbersTask:
    """World of Numbers (``stream`` interface): n binarised digit images, each advanced to the next digit and
    re-sampled every step; pixels told and asked."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        for key, minimum in SETTINGS.items():
            value = self.cfg.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise UserError(f"bad value for 'task.{key}': {value!r}; an int >= {minimum}")
        if self.cfg.get("source") not in SOURCES:
            raise UserError(f"bad value for 'task.source': {self.cfg.get('source')!r}; one of {', '.join(SOURCES)}")
        self.n = int(self.cfg.n)
        self.first_instructions = int(self.cfg.first_instructions)
        self.instructions = int(self.cfg.instructions)
        self.mnist_files: dict[str, Path] = {}
        self.source = self._resolve()
        self.height, self.width = mnist_image_size(self.mnist_files) if self.source == "mnist" else DIGITS_SIZE
        self.pixels = self.n * self.height * self.width
        most = max(self.first_instructions, self.instructions)
        self.info: dict[str, Any] = {
            "instruction_fields": [self.width, self.height, self.n, 2],
            "query_fields": [self.width, self.height, self.n],
            "num_answers": 2,
            "query_groups": list(QUERY_GROUPS),
            "max_instructions": max(1, min(most, self.pixels)),
            "max_queries": min(int(self.cfg.queries), self.pixels),
        }
        self._pools: dict[str, Pool] | None = None

    # the source ------------------------------------------------------------------------------------------------
    def _resolve(self) -> str:
        """``mnist`` or ``digits``; ``auto`` falls back to the digits with one line saying so."""
        files = usable_mnist_files(mnist_folder()) if self.cfg.source != "digits" else None
        if files is not None:
            self.mnist_files = files
            return "mnist"
        if self.cfg.source == "mnist":
            raise missing_mnist_error(mnist_folder())
        if not sklearn_available():
            lacking = "task.source=digits needs" if self.cfg.source == "digits" else (
                f"no MNIST under {shown_path(mnist_folder())} and no")
            raise UserError(f"World of Numbers: {lacking} scikit-learn for its bundled 8x8 digits (pip install "
                            f"scikit-learn); {FETCH_HINT}")
        if self.cfg.source == "auto":
            print(f"World of Numbers: MNIST was not found under {shown_path(mnist_folder())}; using scikit-learn's "
                  f"bundled 8x8 digits instead ({FETCH_HINT})", flush=True)
        return "digits"

    def resolve_source(self) -> str:
        """What ``source: auto`` means on this machine (written into the run's config)."""
        return self.source

    def pools(self) -> dict[str, Pool]:
        """The image pools of the three splits, read on first use and kept in memory."""
        if self._pools is None:
            self._pools = load_mnist_pools(self.mnist_files) if self.source == "mnist" else load_digits_pools()
        return self._pools

    def _pool(self, split: str) -> Pool:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
        return self.pools()[split]

    def describe_data(self) -> dict[str, Any]:
        """The image files' digests and the settings (the fingerprint); reads the pools, so a malformed file
        fails before a run starts."""
        pools = self.pools()
        sizes = "/".join(str(len(pools[s])) for s in SPLITS)
        if self.source == "mnist":
            paths = list(self.mnist_files.values())
            files = {data_relative(p): file_digest(p) for p in paths}
            if "train-images" in self.mnist_files:
                pools_text = f"train: the training images; val/test: the halves of the test images ({sizes})"
            else:
                pools_text = f"test images only, cut 80/10/10 in file order into train/val/test ({sizes})"
            label = (f"mnist: MNIST {shown_path(mnist_folder())} ({', '.join(sorted(p.name for p in paths))}); "
                     f"{pools_text}; pixel > {MNIST_THRESHOLD} is 1")
        else:
            bundled = digits_file()
            files = {"sklearn/datasets/data/digits.csv.gz": file_digest(bundled)} if bundled else {}
            label = (f"digits: scikit-learn's bundled 8x8 digits, cut 80/10/10 in stored order into train/val/test "
                     f"({sizes}); pixel > {DIGITS_THRESHOLD} (of 16) is 1")
        settings = {"world_of_numbers": f"v{WORLD_VERSION}", "source": self.source, "n": str(self.n),
                    "first_instructions": str(self.first_instructions), "instructions": str(self.instructions),
                    "queries": str(self.info["max_queries"])}
        label += (f"; {self.n} images of {self.height}x{self.width}, 0..{self.first_instructions} instructions at "
                  f"t=1 then 0..{self.instructions}, {self.info['max_queries']} queries a step")
        return {"source": label, "files": files, "fingerprint": fingerprint({**files, **settings})}

    # the stream ------------------------------------------------------------------------------------------------
    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> Worlds:
        """New worlds, as they stand before step 1: digits d - 1, ..., d + n - 2 (mod 10), d uniform."""
        self._pool(split)  # reads the images now, and checks the split
        first = (uniform((batch_size,), generator) * NUM_DIGITS).long().clamp_max(NUM_DIGITS - 1)  # [B]
        digits = (first[:, None] - 1 + torch.arange(self.n)[None, :]) % NUM_DIGITS  # [B, n]
        return Worlds(digits=digits, images=torch.zeros(batch_size, self.n, self.height, self.width, dtype=torch.bool))

    def step(self, worlds: Worlds, t: int, generator: torch.Generator, split: str) -> tuple[Worlds, StreamStep]:
        """The worlds at step t (each digit advanced by one, every image re-sampled) and what is told and asked."""
        if t < 1:
            raise ValueError(f"steps are numbered from 1, not {t}")
        pool = self._pool(split)
        digits = (worlds.digits + 1) % NUM_DIGITS  # [B, n]
        images = pool.sample(digits, uniform(tuple(digits.shape), generator))  # [B, n, H, W]
        limit = min(self.first_instructions if t == 1 else self.instructions, self.pixels)
        step = tell_and_ask(images, limit, int(self.info["max_instructions"]), int(self.info["max_queries"]),
                            generator)
        return Worlds(digits=digits, images=images), step

    def full_step(self, worlds: Worlds) -> StreamStep:
        """A step that tells nothing and asks every pixel once (Q = n * H * W, in pixel order) with its answer."""
        return ask_everything(worlds.images, int(self.info["max_instructions"]))

    def render(self, values: torch.Tensor) -> torch.Tensor:
        """Per-pixel answers or probabilities [B, n * H * W] -> uint8 [B, H, n * W], the images side by side."""
        return render(values, self.n, self.height, self.width)
