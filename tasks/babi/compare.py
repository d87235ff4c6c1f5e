"""Our bAbI generator beside the official files, task by task: the statistics a reader judges a generator by.

    python -m tasks.babi.compare [--tasks 1 2 ...] [--seed 0] [--json results/generators/babi.json]

For each of the 20 tasks, the official en-10k files (training and test pooled; a split missing from en-10k, such
as task 3's training file where only the 1k release has it, is taken from ``en``) and as many generated questions
(:func:`tasks.babi.generator.generate_stories`, ``--seed``) are read into stories, and compared on:

* statements per story and questions per story (means);
* the vocabulary: the distinct tokens of statements, questions and answers, punctuation included, as the
  models read them (:func:`tasks.babi.reader.tokenize`);
* the answers: the total variation distance between the two answer distributions;
* how far back each question's first supporting fact lies (1 = the latest statement, capped at 12): the total
  variation distance between the two distributions.

Beside each distance stands the files' own: training file against test file, the spread two samples of the same
generator show (none where a task has one file). The generator's tests (``tests/test_babi_generator*.py``) bound
these and many task-specific statistics; this module stores the headline figures, and the README's table is read
from ``results/generators/babi.json`` (``reports/babi_generator.py``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import DataFormatError
from harness.paths import data_dir
from tasks.babi.generator import SUPPORTED_TASKS, file_name, generate_stories
from tasks.babi.reader import read_samples, tokenize

DATA_SET, FALLBACK = "en-10k", "en"
SUPPORT_CAP = 12  # support distances at or beyond this count as one bin


@dataclass(frozen=True)
class Question:
    answer: str
    first_support_back: int  # statements back from the question to its first supporting fact (1 = the latest)


@dataclass(frozen=True)
class Story:
    statements: tuple[str, ...]
    questions: tuple[Question, ...]
    question_texts: tuple[str, ...]


def parse(lines: list[str]) -> list[Story]:
    """Stories of official-format lines (``ID text`` and ``ID question<TAB>answer<TAB>support ids``)."""
    stories: list[Story] = []
    statements: list[str] = []
    questions: list[Question] = []
    texts: list[str] = []
    position: dict[int, int] = {}  # line id -> the statement's 1-based place in its story

    def close() -> None:
        if statements or questions:
            stories.append(Story(tuple(statements), tuple(questions), tuple(texts)))

    for raw in lines:
        line_id, _, rest = raw.rstrip("\n").partition(" ")
        if int(line_id) == 1:
            close()
            statements, questions, texts, position = [], [], [], {}
        if "\t" in rest:
            text, answer, support = rest.split("\t")
            first = int(support.split()[0])
            questions.append(Question(answer, min(len(position) - position[first] + 1, SUPPORT_CAP)))
            texts.append(text)
        else:
            statements.append(rest)
            position[int(line_id)] = len(position) + 1
    close()
    return stories


def official_stories(babi_id: int, root: Path) -> tuple[dict[str, list[Story]], list[str]]:
    """The task's official stories per split, and the files read (as ``<data set>/<file>``), found under the data
    folder ``root`` in any of the layouts the bAbI task reads (:func:`tasks.babi.task.candidate_folders`). A file
    the task's reader refuses (:func:`tasks.babi.reader.read_samples`) raises its DataFormatError, naming the line."""
    from tasks.babi.task import candidate_folders  # imports torch: only when files are read

    splits, used = {}, []
    for split in ("train", "test"):
        paths = [(folder, candidate / file_name(babi_id, split)) for folder in (DATA_SET, FALLBACK)
                 for candidate in candidate_folders(root, folder)]
        for folder, path in paths:
            if path.is_file():
                read_samples(path)  # the format checks of training: :func:`parse` assumes a well-formed file
                splits[split] = parse(path.read_text(encoding="utf-8").splitlines(keepends=True))
                used.append(f"{folder}/{path.name}")
                break
    return splits, used


def distribution(values: list[Any]) -> dict[Any, float]:
    counts = Counter(values)
    return {value: count / len(values) for value, count in counts.items()}


def total_variation(p: dict[Any, float], q: dict[Any, float]) -> float:
    """Half the summed absolute difference of two distributions: 0 when equal, 1 when disjoint."""
    return 0.5 * sum(abs(p.get(key, 0.0) - q.get(key, 0.0)) for key in set(p) | set(q))


def answers(stories: list[Story]) -> dict[str, float]:
    return distribution([question.answer for story in stories for question in story.questions])


def support_backs(stories: list[Story]) -> dict[int, float]:
    return distribution([question.first_support_back for story in stories for question in story.questions])


def describe(stories: list[Story]) -> dict[str, float]:
    """Means per story and the vocabulary of a set of stories."""
    words = {word for story in stories for text in (*story.statements, *story.question_texts)
             for word in tokenize(text)}
    words |= {question.answer for story in stories for question in story.questions}
    n_questions = sum(len(story.questions) for story in stories)
    return {"stories": len(stories), "questions": n_questions,
            "statements_per_story": sum(len(story.statements) for story in stories) / len(stories),
            "questions_per_story": n_questions / len(stories), "vocabulary": len(words)}


def compare_task(babi_id: int, root: Path, seed: int) -> dict[str, Any] | None:
    """One task's figures: the files' (under the data folder ``root``), ours (as many questions as the files hold),
    and the distances; None when no official file of the task is found."""
    splits, used = official_stories(babi_id, root)
    if not splits:
        return None
    files = [story for stories in splits.values() for story in stories]
    described = describe(files)
    ours = parse(generate_stories(babi_id, int(described["questions"]), seed))
    figures: dict[str, Any] = {"files": used, "official": described, "generated": describe(ours),
                               "answers_tv": total_variation(answers(ours), answers(files)),
                               "support_tv": total_variation(support_backs(ours), support_backs(files))}
    if len(splits) == 2:
        figures["answers_tv_train_test"] = total_variation(answers(splits["train"]), answers(splits["test"]))
        figures["support_tv_train_test"] = total_variation(support_backs(splits["train"]),
                                                           support_backs(splits["test"]))
    return figures


def table(result: dict[str, dict[str, Any]]) -> list[str]:
    """A Markdown table of :func:`compare_task`'s figures, one row per task."""
    def pair(entry: dict[str, Any], key: str, form: str) -> str:
        return f"{format(entry['official'][key], form)} / {format(entry['generated'][key], form)}"

    def distance(entry: dict[str, Any], key: str) -> str:
        own = entry.get(f"{key}_train_test")
        return f"{entry[key]:.3f}" + (f" ({own:.3f})" if own is not None else " (–)")

    lines = ["| task | questions (files) | statements per story (files / ours) | questions per story | vocabulary | "
             "answers: distance (files' train vs test) | first supporting fact's distance back: distance (files') |",
             "|---|---|---|---|---|---|---|"]
    for task, entry in sorted(result.items(), key=lambda item: int(item[0])):
        lines.append(f"| {task} | {entry['official']['questions']:,} | {pair(entry, 'statements_per_story', '.2f')} | "
                     f"{pair(entry, 'questions_per_story', '.2f')} | {pair(entry, 'vocabulary', 'd')} | "
                     f"{distance(entry, 'answers_tv')} | {distance(entry, 'support_tv')} |")
    return lines


def command(tasks: list[int], seed: int, json_path: Path | None) -> str:
    """The command line that computes these figures again: ``--tasks`` where they are not all 20 tasks."""
    chosen = sorted(set(tasks))
    return ("python -m tasks.babi.compare"
            + (f" --tasks {' '.join(map(str, chosen))}" if chosen != sorted(SUPPORTED_TASKS) else "")
            + (f" --seed {seed}" if seed else "") + (f" --json {json_path}" if json_path else ""))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=sorted(SUPPORTED_TASKS), help="bAbI task ids")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.tasks) - set(SUPPORTED_TASKS))
    if unknown:
        parser.error(f"no bAbI task {', '.join(map(str, unknown))}; the tasks are 1 to 20")
    root = data_dir()
    try:
        result = {str(task): figures for task in args.tasks if (figures := compare_task(task, root, args.seed))}
    except DataFormatError as exc:
        parser.error(str(exc))
    if not result:
        parser.error(f"no official bAbI files under {root} (e.g. {root / 'babi' / DATA_SET}; set HARNESS_DATA_DIR)")
    print("\n".join(table(result)))
    stored = {"what": "bAbI: our generator beside the official files", "data_set": DATA_SET, "seed": args.seed,
              "command": command(args.tasks, args.seed, args.json), "tasks": result}
    if args.json:  # results/generators/babi.json is the README's copy (reports/babi_generator.py)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(stored, indent=2) + "\n")
    return stored


if __name__ == "__main__":
    main()
