"""Relations Game generator: labels against independent rules, balance, rendering, and the real minis."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from harness.errors import DataFormatError
from tasks.relations_game.generator import OBJECT_SETS, TASKS, Scenes, generate, generate_scenes, render
from tasks.relations_game.palette import PALETTE
from tasks.relations_game.real_data import MINI_SETS, MissingDataError, load_mini, mini_path
from tasks.relations_game.shapes import object_table, polyominoes

DATA_DIR = Path(os.environ.get("HARNESS_DATA_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
LINE_SETS = [{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6}, {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}]
ROWS = [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
COLS = [(0, 3, 6), (1, 4, 7), (2, 5, 8)]
PIXELS_PER_OBJECT = {"pentominoes": 45, "hexominoes": 54, "stripes": 81}
PAIRS = [(t, o) for t in TASKS for o in OBJECT_SETS if not (t == "colour_shape" and o == "stripes")]


# ---------------------------------------------------------------- independent rules on scene descriptions


def pattern_of(x: int, y: int, z: int) -> str:
    if x == y == z:
        return "aaa"
    if x == y:
        return "aab"
    if x == z:
        return "aba"
    if y == z:
        return "abb"
    return "abc"


def relation(object_set: str, a: int, b: int) -> str:
    """'SC' identical, 'Sc' same shape only, 'sC' same colour only, 'sc' both differ (from the table's arrays)."""
    t = object_table(object_set)
    sa, ca = divmod(a, t.n_colourings)
    sb, cb = divmod(b, t.n_colourings)
    same_shape = bool((t.masks[sa] == t.masks[sb]).all())
    same_colour = bool((t.colourings[ca] == t.colourings[cb]).all())
    return ("S" if same_shape else "s") + ("C" if same_colour else "c")


def rule(task: str, object_set: str, cells: np.ndarray) -> int:
    """The label of one scene [9] by the task's definition."""
    occ = [i for i in range(9) if cells[i] >= 0]
    if task in ("same", "colour_shape"):
        assert len(occ) == 2
        rel = relation(object_set, cells[occ[0]], cells[occ[1]])
        return int(rel == "SC") if task == "same" else ["SC", "Sc", "sC", "sc"].index(rel)
    if task == "between":
        assert len(occ) == 3
        return int(set(occ) in LINE_SETS and cells[occ[0]] == cells[occ[2]])
    if task in ("occurs", "xoccurs"):
        top = [i for i in occ if i < 3]
        assert len(top) == 1 and occ[1:] == [6, 7, 8]
        bottom = [int(cells[i]) for i in (6, 7, 8)]
        present = int(cells[top[0]]) in bottom
        return int(present) if task == "occurs" else int(present and len(set(bottom)) == 3)
    if task == "match_rows":
        assert occ == [0, 1, 2, 6, 7, 8]
        return int(pattern_of(*cells[[0, 1, 2]]) == pattern_of(*cells[[6, 7, 8]]))
    axis, pattern = task.split("_")
    lines = ROWS if axis == "row" else COLS
    assert tuple(occ) in lines, occ
    return int(pattern_of(*cells[occ]) == pattern)


@pytest.mark.parametrize(("task", "object_set"), PAIRS)
def test_labels_follow_the_rules_and_are_balanced(task: str, object_set: str) -> None:
    out = generate(task, 1200, object_set, seed=3)
    cells, labels = out["cells"], out["labels"]
    assert cells.shape == (1200, 9) and labels.dtype == np.int64
    expected = np.array([rule(task, object_set, c) for c in cells])
    np.testing.assert_array_equal(labels, expected)
    counts = np.bincount(labels, minlength=TASKS[task])
    assert len(counts) == TASKS[task] and (counts == 1200 // TASKS[task]).all()


def _negative_pair_relations(task: str, object_set: str, n: int = 6000) -> Counter[str]:
    scenes = generate_scenes(task, n, object_set, np.random.default_rng(11))
    rels: Counter[str] = Counter()
    for cells in scenes.cells[scenes.labels == 0]:
        occ = [i for i in range(9) if cells[i] >= 0]
        if task == "same":
            rels[relation(object_set, cells[occ[0]], cells[occ[1]])] += 1
        elif task == "between" and set(occ) in LINE_SETS:
            rels[relation(object_set, cells[occ[0]], cells[occ[2]])] += 1
        elif task == "occurs":
            for i in (6, 7, 8):
                rels[relation(object_set, cells[occ[0]], cells[i])] += 1
    return rels


@pytest.mark.parametrize("object_set", ["pentominoes", "hexominoes"])
@pytest.mark.parametrize("task", ["same", "between", "occurs"])
def test_tricky_negatives_as_frequent_as_fully_different(task: str, object_set: str) -> None:
    rels = _negative_pair_relations(task, object_set)
    total = rels["Sc"] + rels["sC"] + rels["sc"]
    assert rels["SC"] <= 0.03 * total  # only from the random-placement category of 'between'
    for kind in ("Sc", "sC"):
        assert abs(rels[kind] / rels["sc"] - 1) < 0.15, rels


def test_stripes_negatives_differ_in_colouring_only() -> None:
    rels = _negative_pair_relations("same", "stripes")
    assert set(rels) == {"Sc"}  # one shape: every different pair differs in its colouring


def test_xoccurs_negatives_include_absent_and_repeated() -> None:
    scenes = generate_scenes("xoccurs", 4000, "hexominoes", np.random.default_rng(5))
    kinds = Counter()
    for cells in scenes.cells[scenes.labels == 0]:
        top = cells[:3][cells[:3] >= 0][0]
        bottom = list(cells[6:])
        kinds[(bottom.count(top), len(set(bottom)))] += 1
    assert kinds[(0, 3)] + kinds[(0, 2)] + kinds[(0, 1)] > 0.4 * sum(kinds.values())
    assert kinds[(2, 2)] > 0.2 * sum(kinds.values()) and kinds[(1, 2)] > 0.2 * sum(kinds.values())


# ---------------------------------------------------------------- objects, rendering, determinism


def test_shape_counts_match_the_paper() -> None:
    pent, hexo = polyominoes(5), polyominoes(6)
    assert (pent.n_free, pent.n_fixed, len(pent.masks)) == (8, 37, 49)  # paper: 8 pentominoes, 37 shapes
    assert (hexo.n_free, hexo.n_fixed, len(hexo.masks)) == (8, 46, 48)  # paper: 8 hexominoes, 46 shapes
    for poly in (pent, hexo):
        assert np.isclose(poly.probs.sum(), 1)
        np.testing.assert_allclose(np.bincount(poly.free_id, weights=poly.probs), 1 / 8)


def test_object_sets_are_disjoint_and_use_the_palette() -> None:
    sprites = {o: object_table(o).sprites()[:-1] for o in OBJECT_SETS}
    keys = {o: {s.tobytes() for s in sp} for o, sp in sprites.items()}
    for o, sp in sprites.items():
        assert len(keys[o]) == len(sp)  # distinct ids draw distinct objects
        assert ((sp != 0).any(-1).sum(axis=(1, 2)) == PIXELS_PER_OBJECT[o]).all()
        colours = np.unique(sp.reshape(-1, 3), axis=0)
        colours = colours[colours.any(axis=1)]  # without black
        np.testing.assert_array_equal(colours, np.unique(PALETTE, axis=0))  # all 25 colours, the same for every set
    assert not keys["pentominoes"] & keys["hexominoes"]
    assert not keys["stripes"] & (keys["pentominoes"] | keys["hexominoes"])
    assert len(sprites["pentominoes"]) == 49 * 25 and len(sprites["hexominoes"]) == 48 * 25
    assert len(sprites["stripes"]) == 625


def test_render_places_sprites_in_cells() -> None:
    rng = np.random.default_rng(0)
    for object_set in OBJECT_SETS:
        table = object_table(object_set)
        cells = rng.integers(-1, table.n_objects, size=(50, 9))
        images = render(Scenes(cells=cells, labels=np.zeros(50, np.int64)), object_set)
        assert images.shape == (50, 36, 36, 3) and images.dtype == np.uint8
        sprites = table.sprites()
        for i in range(50):
            for k in range(9):
                r, c = divmod(k, 3)
                cell = images[i, 12 * r : 12 * r + 12, 12 * c : 12 * c + 12]
                np.testing.assert_array_equal(cell[1:10, 1:10], sprites[cells[i, k]])
                assert not cell[0].any() and not cell[10:].any() and not cell[:, 0].any() and not cell[:, 10:].any()


def test_deterministic_from_the_seed() -> None:
    a = generate("between", 500, "hexominoes", seed=7)
    b = generate("between", 500, "hexominoes", seed=7)
    c = generate("between", 500, "hexominoes", seed=8)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["images"], c["images"])


def test_unknown_names_raise() -> None:
    with pytest.raises(ValueError, match="valid tasks: same"):
        generate("nope", 4, "stripes", 0)
    with pytest.raises(ValueError, match="valid object sets: pentominoes, hexominoes, stripes"):
        generate("same", 4, "squares", 0)
    with pytest.raises(ValueError, match="colour_shape"):
        generate("colour_shape", 4, "stripes", 0)


# ---------------------------------------------------------------- the released mini files

requires_minis = pytest.mark.skipif(
    not (DATA_DIR / "relations_game").is_dir(), reason=f"no Relations Game minis under {DATA_DIR}"
)


def decode(images: np.ndarray, object_set: str) -> np.ndarray:
    """int64 [N, 9]: object id of each cell of released-format images (-1 empty), via the sprite table."""
    sprites = object_table(object_set).sprites()
    lookup = {s.tobytes(): i for i, s in enumerate(sprites[:-1])}
    lookup[sprites[-1].tobytes()] = -1
    crops = images.reshape(-1, 3, 12, 3, 12, 3)[:, :, 1:10, :, 1:10].transpose(0, 1, 3, 2, 4, 5)
    crops = np.ascontiguousarray(crops).reshape(len(images), 9, -1)
    return np.array([[lookup[c.tobytes()] for c in img] for img in crops], dtype=np.int64)


def colour_codes(pixels: np.ndarray) -> set[int]:
    """The distinct RGB colours in ``pixels`` [..., 3], packed as 0xRRGGBB."""
    flat = pixels.reshape(-1, 3).astype(np.int64)
    return set(np.unique((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]).tolist())


def cell_mask() -> np.ndarray:
    mask = np.zeros((36, 36), bool)
    for r in range(3):
        for c in range(3):
            mask[12 * r + 1 : 12 * r + 10, 12 * c + 1 : 12 * c + 10] = True
    return mask


@requires_minis
@pytest.mark.parametrize("name", list(MINI_SETS))
def test_real_minis_match_our_format_objects_and_rules(name: str) -> None:
    mini = MINI_SETS[name]
    real = load_mini(mini_path(name, DATA_DIR))
    assert real["images"].shape == (5000, 36, 36, 3) and real["images"].dtype == np.uint8
    assert set(np.unique(real["tasks"])) == set(range(len(mini.task_names)))
    assert set(np.unique(real["labels"])) == {0, 1}
    ours = generate(mini.task_names[0], 2000, mini.object_set, seed=0)
    for images in (real["images"], ours["images"]):
        assert set(np.unique(images)) == {0, 64, 144, 192}
        assert not images[:, ~cell_mask()].any()
        assert colour_codes(images) == {0} | colour_codes(PALETTE)  # black + the 25 palette colours
    # every real object is one of ours (decode raises KeyError otherwise) and the labels follow our rules
    cells = decode(real["images"], mini.object_set)
    for c, label, task in zip(cells, real["labels"], real["tasks"], strict=True):
        assert rule(mini.task_names[task], mini.object_set, c) == label
    counts = np.bincount((cells >= 0).sum(axis=1), minlength=10)
    assert counts[3] == 5000  # 3 objects per image, in the real files and in ours
    assert ((ours["cells"] >= 0).sum(axis=1) == 3).all()
    px = (real["images"] != 0).any(-1).reshape(5000, 3, 12, 3, 12).sum(axis=(2, 4)).ravel()
    assert set(px[px > 0]) == {PIXELS_PER_OBJECT[mini.object_set]}
    if mini.object_set == "hexominoes":  # real shape frequencies follow our sampling probabilities
        table = object_table("hexominoes")
        shapes = table.shape_of(cells[cells >= 0])
        freq = np.bincount(shapes, minlength=table.n_shapes) / len(shapes)
        assert (freq > 0).all()
        assert np.abs(freq / table.shape_probs - 1).max() < 0.3


@requires_minis
@pytest.mark.parametrize("object_set", ["hexominoes", "stripes"])
def test_between_layout_statistics_match_real(object_set: str) -> None:
    name = f"between_{object_set}"
    real = load_mini(mini_path(name, DATA_DIR))
    real_cells, real_labels = decode(real["images"], object_set), real["labels"]
    ours = generate_scenes("between", 5000, object_set, np.random.default_rng(1))

    def stats(cells: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
        on_line = np.array([set(np.flatnonzero(c >= 0)) in LINE_SETS for c in cells])
        middle_row = np.array([set(np.flatnonzero(c >= 0)) == {3, 4, 5} for c in cells])
        return on_line[labels == 0].mean(), middle_row[on_line].mean()

    real_line, real_mid = stats(real_cells, real_labels)
    our_line, our_mid = stats(ours.cells, ours.labels)
    assert abs(real_line - our_line) < 0.05, (real_line, our_line)
    assert abs(real_mid - our_mid) < 0.04 and our_mid > 0.18  # the middle row twice as frequent


@requires_minis
def test_col_pattern_negatives_spread_like_real() -> None:
    real = load_mini(mini_path("col_patterns_hexominoes", DATA_DIR))
    cells = decode(real["images"], "hexominoes")
    for task_id, task in enumerate(MINI_SETS["col_patterns_hexominoes"].task_names):
        sel = (real["tasks"] == task_id) & (real["labels"] == 0)
        real_patterns = Counter(pattern_of(*c[c >= 0]) for c in cells[sel])
        ours = generate_scenes(task, 4000, "hexominoes", np.random.default_rng(2))
        our_patterns = Counter(pattern_of(*c[c >= 0]) for c in ours.cells[ours.labels == 0])
        assert set(real_patterns) == set(our_patterns) == {"aaa", "aab", "aba", "abb", "abc"} - {task[4:]}
        for p in our_patterns:
            assert abs(real_patterns[p] / sel.sum() - our_patterns[p] / 2000) < 0.06


# ---------------------------------------------------------------- load_mini errors


def test_load_mini_errors(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError, match="absent.npz: Relations Game data file not found"):
        load_mini(tmp_path / "absent.npz")
    good = {
        "images": np.zeros((4, 36, 36, 3), np.int64),
        "labels": np.zeros((4, 1), np.int64),
        "tasks": np.zeros((4, 1), np.int64),
    }
    np.savez(tmp_path / "ok.npz", **good)
    out = load_mini(tmp_path / "ok.npz")
    assert out["images"].dtype == np.uint8 and out["labels"].shape == (4,) and out["tasks"].dtype == np.int64
    np.savez(tmp_path / "nokey.npz", images=good["images"], labels=good["labels"])
    with pytest.raises(DataFormatError, match=r"nokey.npz: missing key\(s\) tasks"):
        load_mini(tmp_path / "nokey.npz")
    np.savez(tmp_path / "shape.npz", **{**good, "images": np.zeros((4, 32, 32, 3), np.int64)})
    with pytest.raises(DataFormatError, match=r"shape.npz: 'images' should have shape \(N, 36, 36, 3\)"):
        load_mini(tmp_path / "shape.npz")
    np.savez(tmp_path / "dtype.npz", **{**good, "labels": np.zeros((4, 1), np.float32)})
    with pytest.raises(DataFormatError, match="dtype.npz: 'labels' should hold integers"):
        load_mini(tmp_path / "dtype.npz")
    np.savez(tmp_path / "count.npz", **{**good, "tasks": np.zeros((3, 1), np.int64)})
    with pytest.raises(DataFormatError, match=r"count.npz: 'tasks' should have shape \(4, 1\)"):
        load_mini(tmp_path / "count.npz")
    (tmp_path / "junk.npz").write_bytes(b"not an archive")
    with pytest.raises(DataFormatError, match="junk.npz: not an .npz archive .*; it starts with b'not an'") as info:
        load_mini(tmp_path / "junk.npz")
    assert "allow_pickle" not in str(info.value)  # numpy's hint, which would not help
    (tmp_path / "cut.npz").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(DataFormatError, match="cut.npz: not a readable .npz archive"):
        load_mini(tmp_path / "cut.npz")
