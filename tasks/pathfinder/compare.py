"""Image statistics of our generator next to the reference-generated sample, per level.

    python -m tasks.pathfinder.compare [--n 1000] [--json PATH] [--root DIR]

``--root`` is the folder holding ``pathfinder32/`` (default: the first of the task's search roots under
``$HARNESS_DATA_DIR`` that has it). Levels without reference files are shown for our generator only. Prints a
markdown table (and writes the numbers as JSON with ``--json``). Statistics, per image then averaged:

* label: the fraction of label 1;
* px=0, px 1-63, ..., px 192-255: the fraction of pixels in each intensity bin; nonzero: pixels above 0;
* bright comps: 8-connected components of pixels >= 128;
* peaks: pixels >= 64 that are the maximum of their 3x3 neighbourhood (about one per visible paddle);
* blobs: 8-connected groups of 2x2 squares whose four pixels are all >= 200 (the markers, and where paddles
  cross or touch);
* path px: pixels where a target snake's own strokes reach 10% of their peak (generator only: the reference's
  files do not say which pixels are the target snakes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import ndimage

from harness.bench_args import at_least, bench_parser
from harness.errors import UserError
from harness.paths import data_dir
from tasks.pathfinder.generator import GENERATOR_VERSION, LEVELS, generate, level_settings
from tasks.pathfinder.reader import LEVEL_FOLDERS, read_level
from tasks.pathfinder.task import candidate_roots

BINS = (0, 1, 64, 128, 192, 256)
BIN_NAMES = ("px=0", "px 1-63", "px 64-127", "px 128-191", "px 192-255")
EIGHT = np.ones((3, 3), dtype=bool)


def _components(masks: np.ndarray) -> np.ndarray:
    return np.array([ndimage.label(m, structure=EIGHT)[1] for m in masks], dtype=np.float64)


def image_stats(images: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Mean statistics of uint8 [N, H, W] images and their labels int64 [N]."""
    stats = {"n": float(len(images)), "label": float(labels.mean())}
    counts = np.stack([np.histogram(im, bins=BINS)[0] for im in images]) / images[0].size  # [N, 5]
    stats.update({name: float(v) for name, v in zip(BIN_NAMES, counts.mean(axis=0), strict=True)})
    stats["nonzero"] = float((images > 0).sum(axis=(1, 2)).mean())
    stats["bright comps"] = float(_components(images >= 128).mean())
    local_max = ndimage.maximum_filter(images, size=(1, 3, 3))
    stats["peaks"] = float(((images == local_max) & (images >= 64)).sum(axis=(1, 2)).mean())
    squares = (images[:, :-1, :-1] >= 200) & (images[:, 1:, :-1] >= 200) & (images[:, :-1, 1:] >= 200) & (
        images[:, 1:, 1:] >= 200)
    stats["blobs"] = float(_components(squares).mean())
    return stats


def per_batch(images: np.ndarray, labels: np.ndarray, size: int) -> list[dict[str, float]]:
    """The statistics of consecutive groups of ``size`` images (their spread sets the test's tolerances)."""
    return [image_stats(images[i:i + size], labels[i:i + size]) for i in range(0, len(images) - size + 1, size)]


def ours(difficulty: str, n: int, seed: int = 0) -> dict[str, float]:
    batch = generate(n, seed, level_settings(difficulty), keep_ink=True)
    stats = image_stats(batch.images, batch.labels)
    ink = batch.snake_ink  # [N, 2, H, W]
    peak = ink.max(axis=(2, 3), keepdims=True)
    stats["path px"] = float((ink >= 0.1 * peak).any(axis=1).sum(axis=(1, 2)).mean())
    stats["distractors"] = float(batch.distractor_snakes.mean())
    stats["paddles"] = float((batch.target_paddles + batch.distractor_paddles).mean())
    return stats


def find_root() -> Path | None:
    for root in candidate_roots(data_dir()):
        if (root / "pathfinder32").is_dir():
            return root
    return None


def compare(n: int, root: Path | None) -> dict[str, dict[str, dict[str, float]]]:
    """{level: {"ours": stats, "reference": stats (when its files are there)}}."""
    result: dict[str, dict[str, dict[str, float]]] = {}
    for difficulty in LEVELS:
        entry = {"ours": ours(difficulty, n)}
        folder = root / "pathfinder32" / LEVEL_FOLDERS[difficulty] if root else None
        if folder is not None and (folder / "metadata").is_dir():
            level = read_level(folder)
            entry["reference"] = image_stats(level.images[:n], level.labels[:n])
        result[difficulty] = entry
    return result


def table(result: dict[str, dict[str, dict[str, float]]]) -> str:
    keys = ["n", "label", *BIN_NAMES, "nonzero", "bright comps", "peaks", "blobs", "path px", "distractors",
            "paddles"]
    columns = [(level, who) for level, entry in result.items() for who in entry]
    lines = ["| statistic | " + " | ".join(f"{level} {who}" for level, who in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for key in keys:
        cells = []
        for level, who in columns:
            value = result[level][who].get(key)
            cells.append("-" if value is None else (f"{value:.0f}" if key == "n" else f"{value:.3f}"))
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser("tasks.pathfinder.compare", __doc__.splitlines()[0])
    parser.add_argument("--n", type=at_least(1), default=1000, help="images per level and source")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--root", type=Path, default=None, help="the folder holding pathfinder32/")
    args = parser.parse_args(argv)
    if args.root is not None and not (args.root / "pathfinder32").is_dir():
        parser.error(f"--root {args.root}: no pathfinder32/ folder there (the folder that holds it, e.g. "
                     "$HARNESS_DATA_DIR/pathfinder)")
    if args.json is not None and args.json.is_dir():
        parser.error(f"--json {args.json}: a folder; name the file to write")
    try:
        result = compare(args.n, args.root or find_root())
    except UserError as exc:  # a malformed reference level (tasks/pathfinder/reader.py names the file)
        parser.error(str(exc))
    print(table(result))
    if args.json:  # results/generators/pathfinder.json is the README's copy (reports/readme.py)
        stored = {"what": "Pathfinder-32 image statistics: our generator beside the reference generator's sample",
                  "command": f"python -m tasks.pathfinder.compare --n {args.n} --json {args.json}",
                  "generator_version": GENERATOR_VERSION, "n": args.n, "levels": result}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(stored, indent=2) + "\n")


if __name__ == "__main__":
    main()
