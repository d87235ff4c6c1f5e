"""bAbI examples as text, for the run page's sample of wrong answers (:mod:`harness.runners.predictions`).

The run's test split is read again from the files its config names (the run records their fingerprint), and
the answer vocabulary is rebuilt from its training split exactly as :meth:`tasks.babi.task.BabiTask.load`
builds it, so a class id reads back as the word the model said. A target id that does not read back as the
example's answer means the data differs from the run's, and is an error.
"""

from __future__ import annotations

from typing import Any

from tasks.babi.reader import Sample, read_samples
from tasks.babi.task import UNK, BabiTask, build_vocab, story_limit


def _test_samples(task: BabiTask, split: str) -> list[Sample]:
    """The samples of ``test`` (the run's own source) or ``test_<source>`` (``task.test_on``), in file order."""
    if split == "test":
        files, _ = task.locate()
    else:
        source = split.removeprefix("test_")
        found = task._official_files() if source == "files" else task._generated_files()
        if found is None:
            raise FileNotFoundError(f"bAbI task {task.babi_id}: the {source} test split is not on this machine")
        files, _ = found
    return read_samples(files["test"])


def describe(cfg: Any, data: Any, split: str, examples: list[int],
             said: list[tuple[int, int]]) -> list[dict[str, str]]:
    """Story (the statements the model read), question, answer and what the model said, per example;
    ``said`` holds each example's (target id, predicted id)."""
    if str(cfg.task.babi_id) == "all":
        from tasks.babi.joint import describe_joint

        return describe_joint(cfg, split, examples, said)
    task = BabiTask(cfg)
    files, _ = task.locate()
    train = read_samples(files["train"])
    if "valid" not in files:
        train, _ = task._split_train(train)
    words = {index: word for word, index in build_vocab(train).items()}
    samples = _test_samples(task, split)
    limit = story_limit(task.babi_id, cfg.task.max_story_sentences)
    return [described_sample(samples[example], words, target, prediction, limit, split, example)
            for example, (target, prediction) in zip(examples, said, strict=True)]


def described_sample(sample: Sample, words: dict[int, str], target: int, prediction: int, limit: int, split: str,
                     example: int) -> dict[str, str]:
    """One example as text; a target id that does not read back as the file's answer is an error."""
    if words.get(target) not in (sample.answer, UNK):
        raise ValueError(f"bAbI {split} example {example}: target id {target} reads '{words.get(target)}', "
                         f"not the file's answer '{sample.answer}': the data differs from the run's")
    return {"story": "\n".join(" ".join(sentence) for sentence in sample.story[-limit:]),
            "question": " ".join(sample.question), "answer": sample.answer,
            "said": words.get(prediction, f"<id {prediction}>")}
