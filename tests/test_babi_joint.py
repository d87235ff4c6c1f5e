"""bAbI's all-tasks mode (``task.babi_id: all``, tasks/babi/joint.py) on small generated data."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.interfaces import check_task_data
from models.tpr_rnn.model import TPRRNN
from tasks.babi.examples import describe
from tasks.babi.joint import TASK_IDS, JointBabiTask, TrimmedStories, open_babi_task, summary
from tasks.babi.task import BabiTask

N_TRAIN, N_TEST = 40, 10


def joint_cfg(**task):
    base = {"name": "babi", "babi_id": "all", "data_set": "en-10k", "source": "generator",
            "max_story_sentences": None, "val_fraction": 0.2, "split_seed": 0, "generator_seed": 0,
            "generator_train_questions": N_TRAIN, "generator_test_questions": N_TEST, "test_on": []}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


@pytest.fixture(scope="module")
def joint(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        task = open_babi_task(joint_cfg())
        yield task, task.load()


def test_the_entry_opens_one_task_or_all():
    assert isinstance(open_babi_task(joint_cfg(babi_id=3)), BabiTask)
    assert isinstance(open_babi_task(joint_cfg()), JointBabiTask)


def test_all_tasks_share_one_vocabulary_and_shape(joint):
    task, data = joint
    check_task_data("babi", "story", data)
    assert data.info["babi_id"] == "all"
    assert sorted(data.extra_test) == sorted(f"qa{i}" for i in TASK_IDS)
    assert len(data.test) == sum(len(split) for split in data.extra_test.values())
    singles = [BabiTask(OmegaConf.merge(joint_cfg(), {"task": {"babi_id": i}})).load() for i in (1, 3, 19)]
    assert data.info["vocab_size"] >= max(single.info["vocab_size"] for single in singles)
    assert data.info["max_story_len"] == max(single.info["max_story_len"] for single in singles)
    assert data.info["max_sent_len"] >= max(single.info["max_sent_len"] for single in singles)
    for single, babi_id in zip(singles, (1, 3, 19), strict=True):  # the same questions, remapped and padded
        assert len(data.extra_test[f"qa{babi_id}"]) == len(single.test)
        assert torch.equal(data.extra_test[f"qa{babi_id}"].tensors["story_len"], single.test.tensors["story_len"])


def test_batches_are_cut_to_their_longest_story(joint):
    _, data = joint
    assert isinstance(data.train, TrimmedStories)
    lengths = data.train.tensors["story_len"]
    short = [int(i) for i in torch.nonzero(lengths <= 3).flatten()[:4]]
    batch = data.train.__getitems__(short)
    assert batch["story"].shape[1] == int(lengths[short].max()) < data.info["max_story_len"]
    assert batch["story"].dtype == torch.int64


def test_cutting_the_padding_changes_nothing_for_tpr_rnn(joint):
    _, data = joint
    torch.manual_seed(0)
    cfg = OmegaConf.create({"entity_size": 12, "role_size": 4, "hidden_size": 8, "init_limit": 0.1,
                            "memory": "parallel"})
    model = TPRRNN(cfg, data.info).double()
    indices = list(range(0, len(data.train), max(len(data.train) // 16, 1)))[:16]
    cut = data.train.__getitems__(indices)
    full = {name: t[indices] for name, t in data.train.tensors.items()}
    assert cut["story"].shape[1] < full["story"].shape[1]
    inputs = ("story", "story_len", "query")
    assert torch.allclose(model(*(cut[k] for k in inputs)), model(*(full[k] for k in inputs)), atol=1e-12)


def test_the_test_on_option_is_refused():
    with pytest.raises(UserError, match="task.test_on"):
        JointBabiTask(joint_cfg(test_on=["files"]))


def test_a_run_page_describes_joint_examples(joint):
    task, data = joint
    target = data.extra_test["qa2"].tensors["target"]
    described = describe(joint_cfg(), data, "test_qa2", [0, 1], [(int(target[0]), int(target[0])),
                                                                   (int(target[1]), 0)])
    assert described[0]["said"] == described[0]["answer"]
    assert described[1]["said"] == "<pad>"
    union = describe(joint_cfg(), data, "test", [N_TEST], [(int(target[0]), int(target[0]))])
    assert union[0]["answer"] == described[0]["answer"]  # test = the 20 test files in task order


def test_data_labels_are_summarised_by_folder():
    labels = [f"files: $D/en-10k task {i}" for i in TASK_IDS]
    labels[2] += "; train file missing from en-10k; using en's"
    assert summary(labels) == ("files: $D/en-10k tasks 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, "
                               "18, 19, 20; task 3: train file missing from en-10k; using en's")


def test_cutting_batches_is_refused_as_a_setting_of_the_all_tasks_mode_which_always_cuts():
    from tasks.babi.setting_checks import check_settings

    with pytest.raises(UserError, match="task.trim_batches=true changes nothing with task.babi_id=all"):
        check_settings(joint_cfg(trim_batches=True).task)
    check_settings(joint_cfg(trim_batches=False).task)
    check_settings(OmegaConf.merge(joint_cfg(trim_batches=True), {"task": {"babi_id": 2}}).task)
