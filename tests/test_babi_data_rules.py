"""bAbI data rules the other tests leave open: reading the official format (tasks/babi/reader.py), the generator
comparison's figures (tasks/babi/compare.py), the run page's examples (tasks/babi/examples.py), the checks before
a run (tasks/babi/setting_checks.py) and the all-tasks mode (tasks/babi/joint.py).

* Tokens are words and *runs* of punctuation marks, lower-cased; the answer is lower-cased too.
* A question's first supporting fact lies k statements back (1 = the latest; questions do not count), capped at 12.
  The vocabulary counts the answers; the table lists tasks in numeric order.
* An example's story is the *last* ``limit`` statements; a target id that reads back as ``<unk>`` (an answer unseen
  in training) is accepted; the vocabulary is the training split's, validation stories held out as in training.
* With ``babi_id=all`` the checks cover all 20 tasks' cached files, task 20 included; en-valid-10k's names
  (``qa1_train.txt``) are matched as the task reads them, so a renamed copy beside one is refused.
* All tasks: each keeps its own story limit (the shape is the longest *kept* story), the answers are those of all 20
  training splits, a mix of official files and the generator is refused, the data description lists every task's
  files, and a run page reads the examples of the run it describes (not those of the run described before).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from harness.errors import UserError
from tasks.babi.compare import Question, describe, parse, table
from tasks.babi.examples import describe as describe_examples
from tasks.babi.examples import described_sample
from tasks.babi.generator import file_name
from tasks.babi.joint import JointBabiTask, describe_joint
from tasks.babi.reader import Sample, read_samples, tokenize
from tasks.babi.setting_checks import check_settings, generated_folder
from tasks.babi.task import BabiTask
from tests.test_babi_official_files import task_cfg as official_task_cfg


def task_cfg(**task: object) -> DictConfig:
    """A run's config around the official-files tests' bAbI task section (40 generated training questions)."""
    return OmegaConf.create({"seed": 0, "task": official_task_cfg(**{"generator_train_questions": 40, **task})})


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data folder and cache, as the run would use them."""
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


# --- reader ---------------------------------------------------------------------------------------------------


def test_a_run_of_punctuation_marks_is_one_token() -> None:
    assert tokenize("Yes... really?!") == ["yes", "...", "really", "?!"]


def test_the_answer_is_lower_cased(tmp_path: Path) -> None:
    path = tmp_path / "qa1_x_train.txt"
    path.write_text("1 Mary went to the Kitchen.\n2 Where is Mary? \tKitchen\t1\n")
    (sample,) = read_samples(path)
    assert sample.answer == "kitchen" and sample.story == (("mary", "went", "to", "the", "kitchen", "."),)


# --- compare ----------------------------------------------------------------------------------------------------


def test_the_first_supporting_fact_counts_statements_back_capped_at_12() -> None:
    statements = [f"{i} Mary went to the kitchen.\n" for i in range(1, 14)]
    lines = [*statements, "14 Where is Mary? \tkitchen\t2 13\n", "15 Where is Mary? \tkitchen\t1\n",
             "16 Where is Mary? \tkitchen\t3\n", "17 Where is Mary? \tkitchen\t11 12\n"]
    (story,) = parse(lines)
    backs = [q.first_support_back for q in story.questions]
    assert backs == [12, 12, 11, 3]  # 12 back, 13 back (capped), 11 back, 3 back: questions are not statements


def test_the_vocabulary_counts_the_answers() -> None:
    (story,) = parse(["1 Mary went to the kitchen.\n", "2 Where is Mary? \tnowhere\t1\n"])
    assert story.questions == (Question("nowhere", 1),)
    words = {"mary", "went", "to", "the", "kitchen", ".", "where", "is", "?", "nowhere"}
    assert describe([story])["vocabulary"] == len(words)


def test_the_table_lists_tasks_in_numeric_order() -> None:
    entry = {"official": {"questions": 1, "statements_per_story": 1.0, "questions_per_story": 1.0, "vocabulary": 5},
             "answers_tv": 0.0, "support_tv": 0.0}
    entry["generated"] = entry["official"]
    rows = table({"10": entry, "2": entry, "1": entry})[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| 1", "| 2", "| 10"]


# --- examples ---------------------------------------------------------------------------------------------------


def test_an_example_shows_the_last_statements_and_accepts_an_unknown_answer() -> None:
    sample = Sample(story=(("a", "."), ("b", "."), ("c", ".")), question=("where", "?"), answer="zebra", story_id=0)
    words = {0: "<pad>", 1: "<unk>", 2: "kitchen"}
    shown = described_sample(sample, words, target=1, prediction=2, limit=2, split="test", example=0)
    assert shown == {"story": "b .\nc .", "question": "where ?", "answer": "zebra", "said": "kitchen"}


def test_examples_read_ids_with_the_vocabulary_of_training_without_its_held_out_stories(data: Path) -> None:
    folder = data / "babi" / "en-10k"
    folder.mkdir(parents=True)
    # ten stories, each with a name of its own that sorts before every answer: held out, a name leaves the
    # vocabulary and moves the ids of the answers
    train = "".join(f"1 Ab{i} went to the {room}.\n2 Where is Ab{i}? \t{room}\t1\n"
                    for i, room in enumerate(["kitchen", "garden"] * 5))
    (folder / file_name(1, "train")).write_text(train)
    (folder / file_name(1, "test")).write_text("1 Ab0 went to the garden.\n2 Where is Ab0? \tgarden\t1\n")
    cfg = task_cfg(val_fraction=0.3)
    loaded = BabiTask(cfg).load()
    target = int(loaded.test.tensors["target"][0])
    (shown,) = describe_examples(cfg, loaded, "test", [0], [(target, target)])
    assert shown["answer"] == shown["said"] == "garden"


# --- setting checks ---------------------------------------------------------------------------------------------


def test_the_all_tasks_checks_cover_task_20s_cached_files(data: Path) -> None:
    cfg = task_cfg(babi_id="all", source="generator")
    folder = generated_folder(cfg.task)
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        (folder / file_name(20, split)).write_text("1 Mary is hungry.\n2 Where will Mary go? \tkitchen\t1\n")
    with pytest.raises(UserError, match=r"qa20_agents-motivations_train.txt: this cached generated file holds 1 "):
        check_settings(cfg.task)


def test_a_renamed_copy_beside_an_en_valid_10k_file_is_refused(data: Path) -> None:
    folder = data / "babi" / "en-valid-10k"
    folder.mkdir(parents=True)
    story = "1 Mary went to the kitchen.\n2 Where is Mary? \tkitchen\t1\n"
    for split in ("train", "valid", "test"):
        (folder / f"qa1_{split}.txt").write_text(story)
    check_settings(task_cfg(data_set="en-valid-10k").task)
    (folder / "qa1_old_train.txt").write_text(story)
    with pytest.raises(UserError, match=r"holds 2 files that could be task 1's train split \(qa1_old_train.txt, "
                                        r"qa1_train.txt\)"):
        check_settings(task_cfg(data_set="en-valid-10k").task)


# --- all tasks --------------------------------------------------------------------------------------------------


def test_all_tasks_list_every_file_and_refuse_a_mix_of_files_and_generator(data: Path) -> None:
    folder = data / "babi" / "en-10k"
    folder.mkdir(parents=True)
    story = "1 Mary went to the kitchen.\n2 Where is Mary? \tkitchen\t1\n"
    for babi_id in range(1, 21):
        for split in ("train", "test"):
            (folder / file_name(babi_id, split)).write_text(story)
    described = JointBabiTask(task_cfg(babi_id="all")).describe_data()
    assert len(described["files"]) == 40
    assert any(name.endswith(file_name(20, "test")) for name in described["files"])
    for split in ("train", "test"):
        (folder / file_name(20, split)).unlink()
    with pytest.raises(UserError, match=r"official files were found for tasks 1, 2, .*, 19 only"):
        JointBabiTask(task_cfg(babi_id="all")).resolve_source()


def test_all_tasks_keep_their_limits_answers_and_examples(data: Path) -> None:
    long_stories = task_cfg(babi_id="all", source="generator", generator_seed=2)
    cut = task_cfg(babi_id="all", source="generator", generator_seed=1, max_story_sentences=2)
    # task 3 keeps 130 statements, the others 70: with generator seed 2 task 3's fourth test question follows 92
    (shown,) = describe_joint(long_stories, "test_qa3", [3], [(1, 1)])
    assert len(shown["story"].splitlines()) == 92
    loaded = JointBabiTask(cut).load()
    assert loaded.info["max_story_len"] == 2  # the longest kept story
    answers = set(loaded.info["answers"])
    assert {"yes", "no", "kitchen"} <= answers and any("," in answer for answer in answers)  # tasks 6, 1 and 19
    (first,) = describe_joint(cut, "test_qa1", [0], [(1, 1)])  # a second run's page: its own examples
    path = BabiTask(OmegaConf.merge(cut, {"task": {"babi_id": 1}})).locate()[0]["test"]
    sample = read_samples(path)[0]
    assert first["story"] == "\n".join(" ".join(sentence) for sentence in sample.story[-2:])
    assert first["question"] == " ".join(sample.question) and first["answer"] == sample.answer
