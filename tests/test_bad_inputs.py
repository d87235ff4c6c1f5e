"""Every user mistake ends the same way: exit code 2, one line on stderr that starts with ``error: ``, no
traceback, nothing that looks like success, and nothing stored (the runs folder is never created).

``MISTAKES`` is the table, one row per mistake: the command, what the mistake does to the user's files
(a malformed data file under a temporary ``HARNESS_DATA_DIR``, a pair file in a temporary copy of a task's
folder, a sweep file), and a fragment the error line must contain, so that a row passes only for the
right reason. Every row runs in-process through :func:`harness.cli.main` (fast); the rows named in
``THROUGH_THE_ENTRY_POINT`` also run as ``python -m harness.cli`` in a fresh interpreter.

Data formats (the readers' documented formats):

* bAbI v1.2 text (Weston et al. 2015, arXiv:1502.05698; ``tasks/babi/reader.py``): ``ID text`` lines,
  questions as ``ID question<TAB>answer<TAB>supports``, the ID back at 1 at each new story.
* the Relations Game mini test sets (Shanahan et al. 2020, arXiv:1905.10307; ``tasks/relations_game/
  real_data.py``): ``.npz`` archives with ``images`` [N, 36, 36, 3] pixel values in 0..255, ``labels``
  [N, 1] (0 or 1 for ``between``) and ``tasks`` [N, 1] (the file's task ids: 0 only, for ``between``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.registry import REGISTRY, task_spec_from_yaml
from tests.conftest import ROOT, run_cli


@dataclass(frozen=True)
class Context:
    """What a row's set-up may change: its own temporary folder and the environment (undone after the row)."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    cache: Path  # a generated-data cache shared by the module's rows (generated data is not under test here)


Setup = Callable[[Context], None]


@dataclass(frozen=True)
class Mistake:
    name: str
    args: tuple[str, ...]
    expect: str  # a fragment of the one error line
    setup: Setup | None = None


BABI = ("bench", "--task", "babi", "--model", "lstm", "--profile", "smoke")
RELATIONS = ("bench", "--task", "relations_game", "--model", "predinet", "--profile", "smoke")
BETWEEN = (*RELATIONS, "task.tasks=[between]")  # the task of the mini set mini_between_hexos.npz
CARTPOLE = ("bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke")
BOXWORLD = ("bench", "--task", "boxworld", "--model", "relational", "--profile", "smoke")
BRIDGE = ("bench", "--task", "bridge_boxworld", "--model", "relational", "--profile", "smoke")

# bAbI ------------------------------------------------------------------------------------------------
TRAIN, TEST = "qa1_single-supporting-fact_train.txt", "qa1_single-supporting-fact_test.txt"
PLACES = ("bathroom", "hallway", "garden", "office", "kitchen")


def babi_story(k: int) -> str:
    """One well-formed task-1 story: two statements and a question about the first."""
    place, other = PLACES[k % 5], PLACES[(k + 2) % 5]
    return (f"1 Mary moved to the {place}.\n2 John went to the {other}.\n"
            f"3 Where is Mary?\t{place}\t1\n")


GOOD_BABI = "".join(babi_story(k) for k in range(20))


def babi_files(train: bytes | str = GOOD_BABI, test: bytes | str = GOOD_BABI, folder: str = "en-10k",
               names: tuple[str, str] = (TRAIN, TEST)) -> Setup:
    """A data folder holding only this bAbI task-1 train and test file."""
    def setup(ctx: Context) -> None:
        where = ctx.tmp / "data" / "babi" / folder
        where.mkdir(parents=True)
        for name, content in zip(names, (train, test), strict=True):
            (where / name).write_bytes(content.encode() if isinstance(content, str) else content)
        ctx.monkeypatch.setenv("HARNESS_DATA_DIR", str(ctx.tmp / "data"))
    return setup


def valid_10k(valid: str) -> Setup:
    """The en-valid-10k layout (qa1_train / qa1_valid / qa1_test) with the given validation file."""
    def setup(ctx: Context) -> None:
        where = ctx.tmp / "data" / "babi" / "en-valid-10k"
        where.mkdir(parents=True)
        for name, content in (("qa1_train.txt", GOOD_BABI), ("qa1_valid.txt", valid), ("qa1_test.txt", GOOD_BABI)):
            (where / name).write_text(content)
        ctx.monkeypatch.setenv("HARNESS_DATA_DIR", str(ctx.tmp / "data"))
    return setup


TABS_LOST = GOOD_BABI.replace("\t", " ", 2)  # the first question's tabs turned into spaces
CUT_SHORT = GOOD_BABI[: GOOD_BABI.index("\t") + 4]  # the file ends inside the first question line
NOT_UTF8 = GOOD_BABI.encode()[:40] + b"\xff\xfe caf\xe9.\n" + GOOD_BABI.encode()[40:]
OUT_OF_SEQUENCE = "1 Mary moved to the office.\n3 John went to the garden.\n4 Where is Mary?\toffice\t1\n"
STARTS_AT_2 = "2 Mary moved to the office.\n3 Where is Mary?\toffice\t2\n"
NO_QUESTIONS = "1 Mary moved to the office.\n2 John went to the garden.\n"
NO_ANSWER = "1 Mary moved to the office.\n2 Where is Mary?\t\t1\n"
NO_ID = "Mary moved to the office.\n"


# Relations Game mini sets ----------------------------------------------------------------------------
MINI_BETWEEN = "mini_between_hexos.npz"  # the staged file name (tasks/relations_game/real_data.py)


def mini_arrays(n: int = 20) -> dict[str, np.ndarray]:
    """A well-formed mini set: the released files' dtypes, shapes and value ranges."""
    rng = np.random.default_rng(0)
    return {"images": rng.choice(np.array([0, 64, 144, 192]), size=(n, 36, 36, 3)).astype(np.int64),
            "labels": rng.integers(0, 2, size=(n, 1)).astype(np.int64),
            "tasks": np.zeros((n, 1), dtype=np.int64)}


def mini_file(write: Callable[[Path], None]) -> Setup:
    """A data folder whose relations_game/mini_between_hexos.npz is written by ``write``; the generated
    images are cached once for the module (they are not what these rows test)."""
    def setup(ctx: Context) -> None:
        folder = ctx.tmp / "data" / "relations_game"
        folder.mkdir(parents=True)
        write(folder / MINI_BETWEEN)
        ctx.monkeypatch.setenv("HARNESS_DATA_DIR", str(ctx.tmp / "data"))
        ctx.monkeypatch.setenv("HARNESS_CACHE_DIR", str(ctx.cache))
    return setup


def npz(**changes: np.ndarray | None) -> Callable[[Path], None]:
    """Write a mini set with some arrays replaced (or left out, when None)."""
    def write(path: Path) -> None:
        arrays = {**mini_arrays(), **changes}
        with path.open("wb") as handle:
            np.savez(handle, **{k: v for k, v in arrays.items() if v is not None})
    return write


def truncated_npz(path: Path) -> None:
    npz()(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def damaged_deflate(path: Path) -> None:
    """A compressed mini set whose labels' deflate stream starts with an invalid block type (zlib's own error,
    not the zip's CRC check)."""
    with path.open("wb") as handle:
        np.savez_compressed(handle, **mini_arrays())
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("labels.npy")
    data = bytearray(path.read_bytes())
    start = member.header_offset + 30 + len(member.filename.encode()) + int.from_bytes(
        data[member.header_offset + 28:member.header_offset + 30], "little")  # past the local header and its extra
    data[start:start + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))


def single_npy(path: Path) -> None:
    with path.open("wb") as handle:
        np.save(handle, mini_arrays()["images"])


GOOD = mini_arrays()

# pair files and other files -------------------------------------------------------------------------


def pair_file(text: str, task: str = "babi", model: str = "lstm") -> Setup:
    """tasks/<task>/pairs/<model>.yaml in a temporary copy of the task's folder, registered in place of the task."""
    def setup(ctx: Context) -> None:
        folder = ctx.tmp / "tasks" / task
        (folder / "pairs").mkdir(parents=True)
        shutil.copy(ROOT / "tasks" / task / "task.yaml", folder / "task.yaml")
        (folder / "pairs" / f"{model}.yaml").write_text(text)
        ctx.monkeypatch.setitem(REGISTRY._extra_tasks, task, task_spec_from_yaml(folder / "task.yaml"))
    return setup


def environ(**values: str) -> Setup:
    """Environment variables; ``{tmp}`` in a value is the row's temporary folder."""
    def setup(ctx: Context) -> None:
        for key, value in values.items():
            ctx.monkeypatch.setenv(key, value.format(tmp=ctx.tmp))
    return setup


def a_file(relative: str, text: str = "not a folder\n") -> Setup:
    def setup(ctx: Context) -> None:
        (ctx.tmp / relative).parent.mkdir(parents=True, exist_ok=True)
        (ctx.tmp / relative).write_text(text)
    return setup


def sweep_file(text: str) -> Setup:
    def setup(ctx: Context) -> None:
        (ctx.tmp / "sweep.yaml").write_text(text)
    return setup


def sweep(*more: str) -> tuple[str, ...]:
    return ("sweep", "{tmp}/sweep.yaml", "--dry-run", *more)


SWEEP_HEAD = "name: mistaken\ntask: babi\nprofile: smoke\n"

MISTAKES: list[Mistake] = [
    # names ----------------------------------------------------------------------------------------------
    Mistake("unknown task", ("bench", "--task", "babj", "--model", "lstm"),
            "unknown task 'babj' (did you mean 'babi'?)"),
    Mistake("unknown model", ("bench", "--task", "babi", "--model", "lsmt"),
            "unknown model 'lsmt' (did you mean 'lstm'?)"),
    Mistake("unknown profile", (*BABI[:-1], "fast"), "unknown profile 'fast'"),
    Mistake("incompatible pair (an RL model on a supervised task)", ("bench", "--task", "babi", "--model", "mlp_agent"),
            "mlp_agent cannot run on babi: mlp_agent trains rl; babi is supervised; "
            "models that fit babi: "),  # the list grows with every model a contributor adds
    Mistake("incompatible pair (kind)", ("bench", "--task", "cartpole", "--model", "tpr_rnn"),
            "tpr_rnn cannot run on cartpole: tpr_rnn trains supervised; cartpole is rl"),
    Mistake("validate an incompatible pair", ("validate", "--task", "boxworld", "--model", "tpr_rnn"),
            "tpr_rnn cannot run on boxworld"),
    # the command line itself ------------------------------------------------------------------------------
    Mistake("no --model", ("bench", "--task", "babi"), "the following arguments are required: --model"),
    Mistake("--seed not a number", (*BABI, "--seed", "abc"), "invalid int value: 'abc'"),
    Mistake("unknown command", ("frobnicate",), "invalid choice: 'frobnicate'"),
    Mistake("negative seed", (*BABI, "--seed", "-1"),
            "bad value for 'seed' (command line): -1 is not an int in [0, 2147483647]"),
    # overrides ------------------------------------------------------------------------------------------
    Mistake("unknown key", (*BABI, "optim.lrr=1"), "unknown config key 'optim.lrr' (did you mean 'optim.lr'?)"),
    Mistake("unknown section", (*BABI, "nonsense.key=1"), "unknown config key 'nonsense.key'"),
    Mistake("key of the other kind (rl on a supervised run)", (*BABI, "rl.gamma=0.9"), "unknown config key 'rl.gamma'"),
    Mistake("key of the other kind (train on an RL run)", (*CARTPOLE, "train.max_epochs=3"),
            "unknown config key 'train.max_epochs'"),
    Mistake("train.stop_at=yes", (*BABI, "train.stop_at=yes"),
            "bad value for 'train.stop_at' (command line): True is not"),
    Mistake("train.max_time_s=abc", (*BABI, "train.max_time_s=abc"), "'abc' is not a float >= 0"),
    Mistake("train.batch_size=0", (*BABI, "train.batch_size=0"),
            "'train.batch_size' (command line): 0 is not an int >= 1"),
    Mistake("train.batch_size=-4", (*BABI, "train.batch_size=-4"), "-4 is not an int >= 1"),
    Mistake("train.max_epochs=-3", (*BABI, "train.max_epochs=-3"), "'train.max_epochs' (command line): -3 is not"),
    Mistake("train.max_epochs=2.5", (*BABI, "train.max_epochs=2.5"), "2.5 is not an int >= 1"),
    Mistake("optim.lr=fast", (*BABI, "optim.lr=fast"),
            "bad value for 'optim.lr' (command line): 'fast' is not a float"),
    Mistake("optim.lr=-1", (*BABI, "optim.lr=-1"), "-1 is not a float in [0, 100]"),
    Mistake("optim.betas with one value", (*BABI, "optim.betas=[0.9]"), "bad value for 'optim.betas'"),
    Mistake("optim.betas with three values", (*BABI, "--model", "tpr_rnn", "optim.betas=[0.9,0.99,0.5]"),
            "bad value for 'optim.betas'"),
    Mistake("rl.optim.betas with one value", (*CARTPOLE, "rl.optim.betas=[0.9]"), "bad value for 'rl.optim.betas'"),
    Mistake("train.monitor=val/nope", (*BABI, "train.monitor=val/nope"), "'val/nope' is not one of val/acc, val/loss"),
    Mistake("train.monitor=val/loss under monitor_mode max (the best checkpoint the worst)",
            (*BABI, "train.monitor=val/loss"), "train.monitor_mode is max: the best checkpoint would be the worst; "
            "add train.monitor_mode=min"),
    Mistake("train.max_time_s=0 (read as no cap)", (*BABI, "train.max_time_s=0"),
            "train.max_time_s=0 is a cap of no time at all"),
    Mistake("rl.max_time_s=0 (read as reached)", (*CARTPOLE, "rl.max_time_s=0"), "or rl.max_time_s=null for no cap"),
    Mistake("stepwise.max_time_s=0 (read as reached)",
            ("bench", "--task", "lstm_recall", "--model", "stream_lstm", "--profile", "smoke", "stepwise.max_time_s=0"),
            "stepwise.max_time_s=0 is a cap of no time at all"),
    Mistake("train.monitor_mode=min on val/acc", (*BABI, "train.monitor_mode=min"), "add train.monitor_mode=max"),
    Mistake("train.monitor=val/loss in a stack", (*RELATIONS, "--seeds", "0,1", "train.monitor=val/loss"),
            "add train.monitor_mode=min"),
    Mistake("optim.name=adagrad", (*BABI, "optim.name=adagrad"), "'adagrad' is not one of adam, adamw"),
    Mistake("model.memory=sparse", (*BABI, "--model", "tpr_rnn", "model.memory=sparse"),
            "'sparse' is not one of parallel, factored, dense"),
    Mistake("protocol.name=x", (*BABI, "protocol.name=x"), "'x' is not one of single, curriculum"),
    Mistake("rl.algorithm=x", (*CARTPOLE, "rl.algorithm=x"), "'x' is not one of impala, ppo"),
    Mistake("rl.eval_episodes=0 (a run with no held-out figure)", (*CARTPOLE, "rl.eval_episodes=0"),
            "'rl.eval_episodes' (command line): 0 is not an int >= 1"),
    Mistake("tracking.tags not a list", (*BABI, "tracking.tags=notalist"), "'notalist' is not a list"),
    Mistake("task.data_set=en-5k", (*BABI, "task.data_set=en-5k"), "'en-5k' is not one of en, en-10k, en-valid-10k"),
    Mistake("task.babi_id=25", (*BABI, "task.babi_id=25"), "25 is not one of 1..20, all"),
    Mistake("task.val_fraction=0", (*BABI, "task.val_fraction=0"), "bad value for 'task.val_fraction': 0"),
    Mistake("task.test_on=[nope]", (*BABI, "task.test_on=[nope]"),
            "bad value for 'task.test_on' (command line): 'nope' is not one of files, generator"),
    Mistake("override without '='", (*BABI, "train.stop_at"), "bad override 'train.stop_at': expected key=value"),
    Mistake("override of a section", (*BABI, "train=3"), "sets 'train' to 3; it is a section"),
    Mistake("data.fingerprint=...", (*BABI, "data.fingerprint=abc"), "'data.fingerprint' is set by the harness"),
    Mistake("task.name=...", (*BABI, "task.name=other"), "'task.name' is set by the harness"),
    Mistake("validate with a bad value", ("validate", *BABI[1:], "train.batch_size=0"), "0 is not an int >= 1"),
    # values the task or the model rejects ---------------------------------------------------------------
    Mistake("predinet model.heads=16 (central_output 640)", (*RELATIONS, "model.heads=16"),
            "predinet cannot be built from this config: PrediNet's output is heads * (relations + 4) = 320, "
            "but model.central_output is 640"),
    Mistake("mha heads that do not divide central_output", (*RELATIONS, "--model", "mha", "model.heads=7"),
            "model.central_output (640) must be a multiple of model.heads (7)"),
    Mistake("conv kernel larger than the image", (*RELATIONS, "model.conv_kernel=40"),
            "image 36x36 is smaller than the 40x40 conv kernel"),
    Mistake("patch size that does not divide the image", (*RELATIONS, "--model", "lstm", "model.patch_size=7"),
            "lstm cannot be built from this config: model.patch_size (7) must divide the 36x36 image"),
    Mistake("transformer heads that do not divide d_model", (*BABI, "--model", "transformer", "model.heads=5"),
            "model.d_model (64) must be a multiple of model.heads (5)"),
    Mistake("agent conv kernel larger than the board", (*BOXWORLD, "agent.conv_kernel=20"),
            "relational cannot be built from this config: observation (8, 8, 3) is too small"),
    Mistake("analysis.split=nope", (*BABI, "analysis.split=nope"),
            "bad value for 'analysis.split': 'nope'; this run's test splits are test"),
    Mistake("task.tasks=[]", (*RELATIONS, "task.tasks=[]"),
            "bad value for 'task.tasks' (command line): [] has 0 item(s)"),
    Mistake("task.tasks=[nope]", (*RELATIONS, "task.tasks=[nope]"),
            "bad value for 'task.tasks' (command line): 'nope' is not one of same"),
    Mistake("train_set that cannot draw the task", (*RELATIONS, "task.train_set=stripes", "task.tasks=[colour_shape]"),
            "task.train_set 'stripes' cannot draw colour_shape"),
    Mistake("curriculum on a single-task task", (*BABI, "protocol.name=curriculum"),
            "protocol.name=curriculum needs a multi-task task"),
    Mistake("curriculum without stages", (*RELATIONS, "protocol.name=curriculum"),
            "protocol.name=curriculum needs protocol.target and protocol.pretrain"),
    # RL settings ----------------------------------------------------------------------------------------
    Mistake("rl.total_env_steps=0", (*CARTPOLE, "rl.total_env_steps=0"),
            "'rl.total_env_steps' (command line): 0 is not"),
    Mistake("rl.stop_at_win_rate=2", (*CARTPOLE, "rl.stop_at_win_rate=2"), "2 is not a float in [0, 1]"),
    Mistake("boxworld board too small", (*BOXWORLD, "task.env.n=5"), "bad 'task.env' for boxworld: n must be >= 6"),
    Mistake("boxworld range min > max", (*BOXWORLD, "task.env.solution_length=[3,1]"),
            "solution_length: min 3 > max 1"),
    Mistake("bridge board with no room for the gem box", (*BRIDGE, "task.env.num_rows=3", "task.env.num_cols=4"),
            "bad 'task.env' for bridge_boxworld: no box slot leaves room for a two-row gem box"),
    # where data and runs live ---------------------------------------------------------------------------
    Mistake("HARNESS_DATA_DIR names no folder", BABI, "HARNESS_DATA_DIR={tmp}/nowhere is not a folder",
            environ(HARNESS_DATA_DIR="{tmp}/nowhere")),
    Mistake("task.source=files with no files", (*BABI, "task.source=files"), "bAbI task 1: no en-10k folder under",
            environ(HARNESS_DATA_DIR="{tmp}")),
    Mistake("a bAbI task that does not exist, no files", (*BABI, "task.babi_id=21"),
            "bad value for 'task.babi_id' (command line): 21 is not one of 1..20, all",
            environ(HARNESS_DATA_DIR="{tmp}")),
    Mistake("--runs-dir is a file", (*BABI, "--runs-dir", "{tmp}/runs"), "is a file, not a folder", a_file("runs")),
    Mistake("--runs-dir '' (an unset shell variable) is not the default store", (*BABI, "--runs-dir", ""),
            "argument --runs-dir: an empty path; leave the option out for the default"),
    Mistake("report --out '' is not the current folder", ("report", "--out", " "),
            "argument --out: an empty path; leave the option out for the default"),
    Mistake("runs --runs-dir that does not exist (a typo must not read as an empty store)",
            ("runs", "--runs-dir", "{tmp}/no-such-store"), "no-such-store: no such folder"),
    Mistake("HARNESS_CACHE_DIR is a file", (*BABI, "task.source=generator"), "is a file, not a folder",
            lambda ctx: (a_file("cache")(ctx), ctx.monkeypatch.setenv("HARNESS_CACHE_DIR", str(ctx.tmp / "cache")))),
    Mistake("WANDB_MODE misspelt (W&B would fail only after the run started, and it would train on unmirrored)",
            BABI, "WANDB_MODE='ofline' is not a W&B mode; use offline (the default), disabled or online",
            lambda ctx: ctx.monkeypatch.setenv("WANDB_MODE", "ofline")),
    # malformed bAbI files -------------------------------------------------------------------------------
    Mistake("bAbI question whose tabs were lost", BABI, f"{TRAIN}:3: a question without its tab-separated answer",
            babi_files(train=TABS_LOST)),
    Mistake("bAbI file cut mid-line", BABI, f"{TRAIN}: the file ends in the middle of line 3",
            babi_files(train=CUT_SHORT)),
    Mistake("bAbI file not UTF-8", BABI, f"{TRAIN}: not UTF-8 text", babi_files(train=NOT_UTF8)),
    Mistake("bAbI ids out of sequence", BABI, f"{TRAIN}:2: line id 3 out of sequence",
            babi_files(train=OUT_OF_SEQUENCE)),
    Mistake("bAbI story that does not start at 1", BABI, f"{TRAIN}:1: line id 2 out of sequence",
            babi_files(train=STARTS_AT_2)),
    Mistake("bAbI empty file", BABI, f"{TRAIN}: no question lines found", babi_files(train="")),
    Mistake("bAbI file with no questions", BABI, f"{TRAIN}: no question lines found", babi_files(train=NO_QUESTIONS)),
    Mistake("bAbI question without an answer", BABI, f"{TRAIN}:2: a question line needs", babi_files(train=NO_ANSWER)),
    Mistake("bAbI line without an id", BABI, f"{TRAIN}:1: expected 'ID text'", babi_files(train=NO_ID)),
    Mistake("bAbI malformed test file", BABI, f"{TEST}: the file ends in the middle", babi_files(test=CUT_SHORT)),
    Mistake("a model too large to allocate (a 10^7-wide Transformer: petabytes in one weight)",
            ("bench", "--task", "babi", "--model", "transformer", "--profile", "smoke", "model.d_model=10000000",
             "model.heads=1"), "babi x transformer: building the model and its data ran out of memory ("),
    Mistake("a stack of models too large to allocate (two seeds of a 10^11-wide MLP1 head)",
            ("bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "--seeds", "0,1",
             "model.output_hidden=100000000000"),
            "relations_game x mlp1: building the model and its data ran out of memory ("),
    Mistake("bAbI training file of one story (held out for validation: nothing left to train on)", BABI,
            "task babi: the train split holds no examples (examples per split: train 0, val 1, test 20)",
            babi_files(train=babi_story(0))),
    Mistake("bAbI generated training set of one question", (*BABI, "task.source=generator",
                                                            "task.generator_train_questions=1"),
            "task babi: the train split holds no examples"),
    Mistake("bAbI malformed validation file (en-valid-10k)", (*BABI, "task.data_set=en-valid-10k"),
            "qa1_valid.txt:2: line id 3 out of sequence", valid_10k(OUT_OF_SEQUENCE)),
    # malformed Relations Game mini sets -----------------------------------------------------------------
    Mistake("npz that is not a zip", BETWEEN, f"{MINI_BETWEEN}: not an .npz archive (a zip of .npy arrays)",
            mini_file(lambda path: path.write_text("hello\n"))),
    Mistake("npz cut short", BETWEEN, f"{MINI_BETWEEN}: not a readable .npz archive", mini_file(truncated_npz)),
    Mistake("npz with a damaged compressed array", BETWEEN, f"{MINI_BETWEEN}: unreadable array in the archive",
            mini_file(damaged_deflate)),
    Mistake("npz with a single array (.npy)", BETWEEN, "a single .npy array, expected an .npz archive",
            mini_file(single_npy)),
    Mistake("npz missing a key", BETWEEN, "missing key(s) tasks (found: images, labels)", mini_file(npz(tasks=None))),
    Mistake("npz images of the wrong shape", BETWEEN, "'images' should have shape (N, 36, 36, 3), got (20, 30, 36, 3)",
            mini_file(npz(images=GOOD["images"][:, :30]))),
    Mistake("npz images of a float dtype", BETWEEN, "'images' should hold integer pixel values, got dtype float32",
            mini_file(npz(images=GOOD["images"].astype(np.float32)))),
    Mistake("npz pixel values out of range", BETWEEN, "'images' values should be in 0..255, got 0..384",
            mini_file(npz(images=GOOD["images"] * 2))),
    Mistake("npz labels of the wrong length", BETWEEN, "'labels' should have shape (20, 1) or (20,)",
            mini_file(npz(labels=GOOD["labels"][:10]))),
    Mistake("npz labels of a float dtype", BETWEEN, "'labels' should hold integers, got dtype float64",
            mini_file(npz(labels=GOOD["labels"].astype(np.float64)))),
    Mistake("npz negative labels", BETWEEN, "'labels' has negative values", mini_file(npz(labels=GOOD["labels"] - 1))),
    Mistake("npz labels beyond the classes (named by its file, not only by the split it feeds)", BETWEEN,
            f"{MINI_BETWEEN}: 'labels' holds [5, 6]; a mini set's labels are 0 (no) and 1 (yes)",
            mini_file(npz(labels=GOOD["labels"] + 5))),
    Mistake("npz task ids the file does not define", BETWEEN, "tasks", mini_file(npz(tasks=GOOD["tasks"] + 3))),
    Mistake("npz with no examples", BETWEEN, MINI_BETWEEN,
            mini_file(npz(images=GOOD["images"][:0], labels=GOOD["labels"][:0], tasks=GOOD["tasks"][:0]))),
    Mistake("npz that is a folder", BETWEEN, MINI_BETWEEN, mini_file(lambda path: path.mkdir())),
    # malformed pair files (tasks/<task>/pairs/<model>.yaml) ---------------------------------------------
    Mistake("pair file not YAML", BABI, "pairs/lstm.yaml: not valid YAML", pair_file("config: [unclosed\n")),
    Mistake("pair file a list", BABI, "pairs/lstm.yaml: expected a mapping at the top level", pair_file("- a\n- b\n")),
    Mistake("pair file unknown section", BABI, "pairs/lstm.yaml: unknown section(s) confg",
            pair_file("confg:\n  train:\n    batch_size: 4\n")),
    Mistake("pair file unknown key", BABI, "pairs/lstm.yaml sets unknown config key 'model.hiden'",
            pair_file("config:\n  model:\n    hiden: 3\n")),
    Mistake("pair file section of the other kind", BABI, "section 'rl' configures rl runs",
            pair_file("config:\n  rl:\n    gamma: 0.9\n")),
    Mistake("pair file bad value in a profile", BABI, "bad value for 'train.batch_size' (babi / lstm, profile smoke)",
            pair_file("profiles:\n  smoke:\n    train:\n      batch_size: 0\n")),
    Mistake("pair file sets the task's name", BABI, "task.name", pair_file("config:\n  task:\n    name: other\n")),
    Mistake("pair file sets the data fingerprint", BABI, "data.fingerprint",
            pair_file("config:\n  data:\n    fingerprint: abc\n")),
    Mistake("pair file for a pair that cannot run", ("list",),
            "tpr_rnn cannot run on boxworld, so this pair file is never used",
            pair_file("config: {}\n", task="boxworld", model="tpr_rnn")),
    # sweep files (harness sweep FILE --dry-run) ---------------------------------------------------------
    Mistake("sweep file missing", ("sweep", "{tmp}/nowhere.yaml", "--dry-run"), "no sweep file"),
    Mistake("sweep file unknown key", sweep(), "unknown key(s) model",
            sweep_file(SWEEP_HEAD + "models: [lstm]\nmodel: [lstm]\n")),
    Mistake("sweep file unknown model", sweep(), "unknown model 'lsmt'", sweep_file(SWEEP_HEAD + "models: [lsmt]\n")),
    Mistake("sweep space value the key rejects", sweep(), "space 'train.batch_size' with lstm: bad value",
            sweep_file(SWEEP_HEAD + "models: [lstm]\nspace:\n  train.batch_size: {type: grid, values: [0, 4]}\n")),
    Mistake("sweep --only value the grid lacks", sweep("--only", "task.babi_id=3"),
            "3 not among the sweep's values (1, 2)",
            sweep_file(SWEEP_HEAD + "models: [lstm]\nspace:\n  task.babi_id: {type: grid, values: [1, 2]}\n")),
    Mistake("sweep --only key that is no grid", sweep("--only", "optim.lr=1"), "not a grid of sweep mistaken",
            sweep_file(SWEEP_HEAD + "models: [lstm]\n")),
    Mistake("sweep --seeds negative", sweep("--seeds", "-1,2"), "a seed is an integer >= 0, got -1",
            sweep_file(SWEEP_HEAD + "models: [lstm]\n")),
    Mistake("sweep --seeds repeated", sweep("--seeds", "0,0"), "repeats 0: give each seed once",
            sweep_file(SWEEP_HEAD + "models: [lstm]\n")),
    Mistake("sweep --seeds not integers", sweep("--seeds", "a"), "--seeds takes comma-separated integers",
            sweep_file(SWEEP_HEAD + "models: [lstm]\n")),
]

# Rows that also run as `python -m harness.cli`: one of each kind of check, through the real entry point.
THROUGH_THE_ENTRY_POINT = ("unknown task", "no --model", "train.stop_at=yes", "optim.betas with one value",
                           "predinet model.heads=16 (central_output 640)", "bAbI question whose tabs were lost",
                           "npz cut short", "HARNESS_DATA_DIR names no folder", "boxworld board too small",
                           "sweep file unknown key")
assert len({m.name for m in MISTAKES}) == len(MISTAKES) >= 40, "every row names a distinct mistake"
assert set(THROUGH_THE_ENTRY_POINT) <= {m.name for m in MISTAKES}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated-cache")


def _prepare(mistake: Mistake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> tuple[list[str], Path]:
    runs = tmp_path / "runs-store"
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(runs))
    if mistake.setup is not None:
        mistake.setup(Context(tmp_path, monkeypatch, cache))
    return [arg.format(tmp=tmp_path) for arg in mistake.args], runs


def _check(mistake: Mistake, tmp_path: Path, code: object, out: str, err: str, runs: Path) -> None:
    shown = f"exit {code}\nstdout: {out[-600:]}\nstderr: {err[-1500:]}"
    assert "Traceback" not in out + err, shown
    assert code == 2, shown
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert mistake.expect.format(tmp=tmp_path) in lines[0], shown
    assert out == "", shown  # nothing that reads like progress or success
    assert not runs.exists(), "a run directory was created for a command that never ran"


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_mistake_is_exit_2_and_one_line(mistake: Mistake, env: dict[str, str], tmp_path: Path, shared_cache: Path,
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    args, runs = _prepare(mistake, tmp_path, monkeypatch, shared_cache)
    try:
        code: object = main(args)
    except SystemExit as exc:  # argparse leaves this way
        code = exc.code
    except Exception as exc:  # noqa: BLE001 - a user would see a traceback: name it in the failure
        out, err = capsys.readouterr()
        pytest.fail(f"{type(exc).__name__}: {exc} (the user sees a traceback; a run directory "
                    f"{'was' if runs.exists() else 'was not'} created)\nstdout: {out[-600:]}")
    out, err = capsys.readouterr()
    _check(mistake, tmp_path, code, out, err, runs)


@pytest.mark.parametrize("name", THROUGH_THE_ENTRY_POINT)
@pytest.mark.slow
def test_mistake_through_the_real_entry_point(name: str, env: dict[str, str], tmp_path: Path, shared_cache: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    mistake = next(m for m in MISTAKES if m.name == name)
    args, runs = _prepare(mistake, tmp_path, monkeypatch, shared_cache)
    done = run_cli(args, dict(os.environ), timeout=120)
    _check(mistake, tmp_path, done.returncode, done.stdout, done.stderr, runs)


@pytest.mark.slow
def test_a_reader_that_goes_away_stops_the_command_quietly(env: dict[str, str]) -> None:
    """``harness validate ... | head -1``: once the reader has closed the pipe, the command stops without a
    traceback (and without Python's 'Exception ignored' line when it flushes at exit)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "harness.cli", "validate", "--task", "babi", "--model", "lstm",
                               "--profile", "smoke"], cwd=ROOT, env={**os.environ, **env}, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and done.stderr == "", done.stderr
