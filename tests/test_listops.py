"""ListOps (Long Range Arena): the evaluator against the original test split's labels, the generator's LRA
semantics, the readers' format errors, the task's data against the ``sequence`` contract, and smoke runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from harness.cli import main
from harness.errors import DataFormatError, UserError
from harness.interfaces import check_task_data
from tasks.listops.evaluate import (
    END_ID,
    OPERATOR_IDS,
    TOKEN_ID,
    VOCAB,
    VOCAB_SIZE,
    MalformedExpression,
    apply,
    evaluate_ids,
    evaluate_tokens,
)
from tasks.listops.generator import (
    Settings,
    Uniforms,
    distinct_trees,
    generate,
    generate_splits,
    generate_tree,
)
from tasks.listops.reader import read_file, tokenize
from tasks.listops.task import ListOpsTask
from tests.conftest import SHARED_DATA, only_run

ORIGINAL_TEST = SHARED_DATA / "listops" / "test_d20s.tsv"
requires_original = pytest.mark.skipif(not ORIGINAL_TEST.is_file(),
                                       reason=f"the original ListOps test split is not at {ORIGINAL_TEST} "
                                              "(HARNESS_DATA_DIR or ../shared/data)")
SMALL = Settings(min_length=20, max_length=120, max_depth=10, max_args=10)


def task_cfg(**task: object):  # noqa: ANN201 - an OmegaConf node
    base = {"name": "listops", "source": "generator", "n_train": 120, "n_val": 30, "n_test": 30, "min_length": 10,
            "max_length": 60, "max_depth": 10, "max_args": 10, "generator_seed": 0, "test_on": []}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


def nesting(ids: np.ndarray | list[int]) -> int:
    """The depth of the deepest leaf (the root has depth 1)."""
    depth, deepest = 1, 1
    for token in ids:
        if token in OPERATOR_IDS:
            depth += 1
            deepest = max(deepest, depth)
        elif token == END_ID:
            depth -= 1
    return deepest


# the evaluator ------------------------------------------------------------------------------------------------
def test_vocabulary_is_fixed():
    assert VOCAB_SIZE == 16 and VOCAB[0] == "<pad>" and VOCAB[5] == "]"
    assert [TOKEN_ID[op] for op in ("[MIN", "[MAX", "[MED", "[SM")] == [1, 2, 3, 4]
    assert [TOKEN_ID[str(d)] for d in range(10)] == list(range(6, 16))


def test_operators_follow_lra():
    assert evaluate_tokens(tokenize("( ( ( [SM 6 ) 5 ) ] )")) == 1
    assert evaluate_tokens("[MED 1 2 ]".split()) == 1  # int(np.median([1, 2])) = int(1.5)
    assert evaluate_tokens("[MIN 3 [MAX 1 7 ] 4 ]".split()) == 3
    rng = np.random.default_rng(0)
    for size in range(1, 12):
        for _ in range(50):
            values = rng.integers(0, 10, size).tolist()
            assert apply("[MED", values) == int(np.median(values))
            assert apply("[SM", values) == int(np.sum(values)) % 10


@pytest.mark.parametrize("text", ["[SM 1 2", "[SM 1 ] ]", "1 2", "]", "[MAX ]", ""])
def test_malformed_expressions_are_refused(text: str):
    with pytest.raises(MalformedExpression):
        evaluate_tokens(text.split())


@requires_original
def test_evaluator_agrees_with_every_label_of_the_original_test_split():
    examples = read_file(ORIGINAL_TEST, "original")
    assert len(examples.tokens) == 10_000
    values = np.array([evaluate_ids(ids) for ids in examples.tokens])
    assert (values == examples.labels).all(), np.flatnonzero(values != examples.labels)[:10]
    assert examples.mismatched == 0
    assert examples.longest == 939  # tokens without the parentheses (2,815 with them)


# the generator ------------------------------------------------------------------------------------------------
def test_generator_is_deterministic_and_seeded():
    first = generate(200, seed=3, settings=SMALL)
    again = generate(200, seed=3, settings=SMALL)
    other = generate(200, seed=4, settings=SMALL)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert sum(np.array_equal(a, b) for a, b in zip(first, other, strict=True)) < 5


def test_generated_splits_keep_lra_rules():
    splits = generate_splits({"train": 600, "val": 100, "test": 100}, seed=0, settings=SMALL)
    seen: set[bytes] = set()
    labels = []
    for split in splits.values():
        pieces = np.split(split["tokens"], np.cumsum(split["lengths"])[:-1])
        assert len(pieces) == len(split["labels"])
        for ids, length, label in zip(pieces, split["lengths"], split["labels"], strict=True):
            assert len(ids) == length  # the length is the token count
            assert SMALL.min_length < length < SMALL.max_length  # strict bounds
            assert evaluate_ids(ids) == label
            assert nesting(ids) <= SMALL.max_depth
            seen.add(ids.tobytes())
        labels.extend(split["labels"].tolist())
    assert len(seen) == 800  # distinct, also across splits
    counts = np.bincount(labels, minlength=10)
    assert counts.min() >= 20 and counts.max() <= 0.3 * len(labels), counts  # every class, none dominant


def test_tree_shape_follows_lra():
    uniforms = Uniforms(0)
    assert all(len(generate_tree(uniforms, max_depth=1)) == 1 for _ in range(50))  # depth 1 = max_depth: a leaf
    trees = [generate_tree(uniforms, max_depth=4, max_args=3) for _ in range(3000)]
    assert 0.70 < np.mean([len(t) == 1 for t in trees]) < 0.80  # the root is a leaf with probability 0.75
    assert max(nesting(t) for t in trees) == 4
    for tree in trees:
        stack = []
        for token in tree:  # every operator has 2..max_args arguments
            if token in OPERATOR_IDS:
                stack.append(0)
                continue
            if token == END_ID:
                assert 2 <= stack.pop() <= 3
            if stack:
                stack[-1] += 1


def test_impossible_settings_are_refused():
    with pytest.raises(UserError, match="strictly between"):
        Settings(min_length=10, max_length=11).check()
    with pytest.raises(UserError, match="at most 26 tokens"):
        Settings(min_length=30, max_length=100, max_depth=3, max_args=4).check()


# the readers --------------------------------------------------------------------------------------------------
def test_windows_with_too_few_distinct_trees_are_refused_before_drawing():
    with pytest.raises(UserError, match="no tree has a length strictly between task.min_length \\(1\\)"):
        generate(10, 0, Settings(min_length=1, max_length=4))  # no tree has 2 or 3 tokens
    with pytest.raises(UserError, match="only 400 distinct trees have a length"):
        generate(401, 0, Settings(min_length=3, max_length=5, max_depth=2, max_args=2))  # [op d d]: 4 x 10 x 10
    Settings(min_length=3, max_length=5).check_count(400)  # as many as there are: drawn until found
    assert distinct_trees(3, 2, 12).tolist() == [0, 10, 0, 0, 400, 0, 0, 32_000, 0, 0, 640_000, 0]


def test_reader_reads_lra_files_with_crlf_lines(tmp_path: Path):
    path = tmp_path / "basic_test.tsv"
    path.write_bytes(b"Source\tTarget\r\n( ( ( [SM 6 ) 5 ) ] )\t1\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n")
    examples = read_file(path, "lra")
    assert examples.labels.tolist() == [1, 9] and examples.mismatched == 0
    assert examples.tokens[0].tolist() == [4, 12, 11, 5]


@pytest.mark.parametrize(
    ("layout", "text", "where"),
    [
        ("original", "1\t[SM 6 5 ]\n3\t[SM 6 [FIRST 5 ] ]\n", ":2: malformed expression: unknown token '[FIRST'"),
        ("original", "1\t[SM 6 5 ]\n1 [SM 6 5 ]\n", ":2: expected 'label<TAB>expression'"),
        ("original", "12\t[SM 6 5 ]\n", ":1: the label must be a digit"),
        ("lra", "Source\tTarget\n[SM 6 5 ]\tx\n", ":2: the label must be a digit"),
        ("original", "1\t[SM 6 5 ]\n1\t[SM 6 [MIN 5 ]\n", ":2: malformed expression: 1 operator(s) never closed"),
        ("original", "1\t[SM 6 5 ] ]\n", ":1: malformed expression: token 5 follows"),
        ("original", "1\t( ( [SM 6 ) 5 ]\n", ":1: malformed expression: 1 '(' never closed"),
        ("original", "1\t[SM 6 5 ]\n1\t[SM 6 5", ":2: the file ends in the middle of this line"),
        ("lra", "Source\tTarget\n[SM 6 5 ]\t1\t1\n", ":2: expected 'expression<TAB>label'"),
        ("lra", "label\texpression\n[SM 6 5 ]\t1\n", ":1: expected the header"),
        ("original", "", ": the file is empty"),
        ("lra", "Source\tTarget\n", ": no examples"),
        ("lra", "Source\tTarget\n[SM 6 5 ]\t1\n\t\n", ":3: a line of only spaces or tabs"),
        ("original", "1\t[SM 6 5 ]\n \n", ":2: a line of only spaces or tabs"),
    ],
)
def test_malformed_files_are_one_line_errors_naming_file_and_line(tmp_path: Path, layout: str, text: str,
                                                                  where: str):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(DataFormatError) as error:
        read_file(path, layout)
    message = str(error.value)
    assert message.startswith(f"{path}{where}"), message
    assert "\n" not in message


def test_empty_lines_between_examples_are_skipped(tmp_path: Path):
    path = tmp_path / "test.tsv"
    path.write_text("1\t[SM 6 5 ]\n\n9\t[MAX 2 9 ]\n")
    assert read_file(path, "original").labels.tolist() == [1, 9]


def test_a_wrong_label_is_kept_and_counted(tmp_path: Path):
    path = tmp_path / "test.tsv"
    path.write_text("2\t[SM 6 5 ]\n1\t[SM 6 5 ]\n")
    assert read_file(path, "original").mismatched == 1


# the task -----------------------------------------------------------------------------------------------------
def test_generated_data_meets_the_sequence_contract(env: dict[str, str]):
    task = ListOpsTask(task_cfg())
    assert task.resolve_source() == "generator"
    data = task.load()
    check_task_data("listops", "sequence", data)
    assert data.info["max_len"] == 60 and data.info["vocab_size"] == 16 and data.info["num_classes"] == 10
    assert len(data.train) == 120 and len(data.val) == 30 and len(data.test) == 30
    tokens, length = data.train.tensors["tokens"], data.train.tensors["length"]
    assert ((tokens > 0).sum(1) == length).all() and (length > 10).all() and (length < 60).all()
    assert "generator" in data.source and "written" in data.source
    assert "cached" in ListOpsTask(task_cfg()).load().source
    again = ListOpsTask(task_cfg()).load()
    assert (again.train.tensors["tokens"] == tokens).all()


def test_the_fingerprint_moves_with_the_data(env: dict[str, str]):
    base = ListOpsTask(task_cfg()).describe_data()["fingerprint"]
    assert ListOpsTask(task_cfg()).describe_data()["fingerprint"] == base
    for change in ({"generator_seed": 1}, {"max_length": 61}, {"n_train": 121}, {"max_args": 9}):
        assert ListOpsTask(task_cfg(**change)).describe_data()["fingerprint"] != base, change


@requires_original
def test_the_original_split_is_an_extra_test_set(env: dict[str, str]):
    task = ListOpsTask(task_cfg(test_on=["original"], max_length=200))
    described = task.describe_data()
    assert "listops/test_d20s.tsv" in described["files"]
    data = task.load()
    check_task_data("listops", "sequence", data)
    original = data.extra_test["original"]
    assert 5000 < len(original) < 10_000 and int(original.tensors["length"].max()) <= 200
    assert "of 10000 examples, those of at most 200 tokens" in data.source
    with pytest.raises(UserError, match="test set only"):
        ListOpsTask(task_cfg(source="files")).describe_data()


def lra_text(trees: list[np.ndarray]) -> str:
    lines = ["Source\tTarget"]
    for ids in trees:
        lines.append(f"( {' '.join(VOCAB[t] for t in ids)} )\t{evaluate_ids(ids)}")
    return "\r\n".join(lines) + "\r\n"


def test_lra_files_are_read_when_present(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "data" / "listops"
    folder.mkdir(parents=True)
    trees = generate(60, seed=5, settings=SMALL)
    for name, part in (("train", trees[:40]), ("val", trees[40:50]), ("test", trees[50:])):
        (folder / f"basic_{name}.tsv").write_text(lra_text(part))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    task = ListOpsTask(task_cfg(source="auto", test_on=["generator"]))
    assert task.resolve_source() == "files"
    data = task.load()
    check_task_data("listops", "sequence", data)
    assert data.info["max_len"] == max(len(t) for t in trees)
    assert len(data.train) == 40 and len(data.test) == 10 and "generator" in data.extra_test
    assert set(task.describe_data()["files"]) == {f"listops/basic_{n}.tsv" for n in ("train", "val", "test")}
    (folder / "basic_val.tsv").unlink()
    assert ListOpsTask(task_cfg(source="auto")).resolve_source() == "generator"


# through the command line -------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["transformer", "predinet"])
def test_listops_trains_and_tests_at_the_smoke_profile(model: str, env: dict[str, str]):
    assert main(["bench", "--task", "listops", "--model", model, "--profile", "smoke"]) == 0
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    assert results["status"] == "completed" and 0.0 <= results["metrics"]["test/acc"] <= 1.0


def test_a_folder_with_some_of_lras_files_names_the_missing_ones(tmp_path, monkeypatch):
    folder = tmp_path / "listops"
    folder.mkdir()
    for name in ("basic_train.tsv", "basic_val.tsv"):
        (folder / name).write_text("Source\tTarget\n")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError, match=r"has basic_train.tsv, basic_val.tsv but not basic_test.tsv"):
        ListOpsTask(task_cfg(source="files")).describe_data()


def test_an_original_test_split_that_is_a_folder_is_said_to_be_one_not_missing(tmp_path, monkeypatch):
    (tmp_path / "listops" / "test_d20s.tsv").mkdir(parents=True)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError, match=r"test_d20s.tsv is a folder, not the file \("):
        ListOpsTask(task_cfg(source="generator", test_on=["original"])).describe_data()


@pytest.mark.parametrize("layout", ["lra_release/listops-1000", "lra_release/lra_release/listops-1000"])
def test_the_release_is_found_unpacked_into_the_data_folder_or_into_its_lra_release(tmp_path, monkeypatch, layout):
    folder = tmp_path / layout
    folder.mkdir(parents=True)
    trees = generate(30, seed=5, settings=SMALL)
    for name, part in (("train", trees[:10]), ("val", trees[10:20]), ("test", trees[20:])):
        (folder / f"basic_{name}.tsv").write_text(lra_text(part))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    assert ListOpsTask(task_cfg(source="auto")).resolve_source() == "files"
    assert set(ListOpsTask(task_cfg(source="files")).describe_data()["files"]) == {
        f"{layout}/basic_{n}.tsv" for n in ("train", "val", "test")}


def test_no_lra_files_names_every_folder_searched(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError, match=r"in .*'s listops, listops/listops-1000, lra_release/listops-1000, "
                                        r"lra_release/lra_release/listops-1000 \(HARNESS_DATA_DIR\)"):
        ListOpsTask(task_cfg(source="files")).describe_data()
