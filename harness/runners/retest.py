"""``harness retest RUN [task.key=value ...]``: test a trained supervised run on other data, without retraining.

The run's stored config, with the given overrides of its test settings (:data:`TEST_SETTINGS`), builds the
task again; the test splits it yields that the run has not reported yet (``test_<name>``) are evaluated with the
run's best checkpoint and added to its results.json (``metrics``), with a ``retests`` record of what was asked,
on which data (fingerprint) and with which code. A new split is scored as the run's own test pass scored its
splits (the first ``train.limit_eval_batches`` batches of each under the smoke profile; whole otherwise), so that
its numbers compare with the run's; the record keeps the limit and how many examples were scored. Examples: a
bAbI run trained on generated data, tested on the official files (``task.test_on=[files]``); a Relations Game
run tested on another held-out object set (``task.test_sets=[stripes,hexominoes]``). The run's identity (its
run id) does not change: it was trained as it was. The retest's data must give the model the shapes it was
trained with (the task's ``info``), else the retest is refused.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.config import Composed, read_config, recompose
from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError, listed
from harness.paths import check_can_create_in, data_dir, data_dir_label
from harness.provenance import code_files, fingerprint, git_info
from harness.publish import find_run
from harness.registry import REGISTRY, load_entry
from harness.runners.build import Prepared, prepare_task
from harness.runners.predictions import evaluated_count, load_trained_model
from harness.runners.supervised import intact_checkpoint
from harness.runs import Run, default_runs_dir, holding_run, now_iso
from harness.vector_math import warm_vector_math

REWRITE = " (the bench command that trained it writes it again)"  # existing_run.restore_config


def stored_config(run: Run, doing: str) -> dict[str, Any]:
    """A run's config.yaml as a plain mapping; a one-line UserError naming the file when it is missing, does not
    parse, or lacks the task and model names the run is composed again from (:func:`read_config`)."""
    stored, problem = read_config(run.config_path)
    if problem is not None:
        raise UserError(f"{problem}; the run cannot be {doing}{REWRITE}")
    return stored


# The settings a retest may change: what the task tests on, never what the run trained on (a Relations Game run
# retested with another task.tasks would report another relation's images under its own split names).
_TEST_PREFIX = "task.test_"
_TEST_KEYS = ("task.real_sets", "task.n_test", "task.generator_test_questions")
TEST_SETTINGS = (f"{_TEST_PREFIX}*", *_TEST_KEYS)


def is_test_setting(key: str) -> bool:
    """Whether the config key ``key`` is one of :data:`TEST_SETTINGS`."""
    return (key.startswith(_TEST_PREFIX) and key != _TEST_PREFIX) or key in _TEST_KEYS


class NotRetestable(UserError):
    """A run of a kind that is not retested or predicted (stepwise, RL, a curriculum)."""


def stored_run(name: str, runs_dir: Path | None, doing: str) -> tuple[Run, dict[str, Any], dict[str, Any]]:
    """A completed single-protocol supervised run of the store that this process may write into: the run, its
    results and its stored config; else a UserError naming why (``doing`` names the action)."""
    run: Run = find_run(name, runs_dir or default_runs_dir())
    results = run.completed_results(doing)
    check_can_create_in(run.path, f"{run.path} cannot be {doing}")  # both write into the run: a read-only store
    stored = stored_config(run, doing)
    kind = REGISTRY.task(str(stored["task"]["name"])).kind
    protocol = (stored.get("protocol") or {}).get("name", "single")
    if kind != "supervised" or protocol != "single":
        what = f"a {kind} run" if kind != "supervised" else f"a run of the {protocol} protocol"
        raise NotRetestable(f"only single-protocol supervised runs can be {doing}; {run.path.name} is {what}")
    return run, results, stored


def reload_run(name: str, overrides: list[str], runs_dir: Path | None, doing: str, own_data: bool = False,
               recorded_data: dict[str, Any] | None = None) -> tuple[Run, dict[str, Any], Composed, Prepared, TaskData]:
    """A completed single-protocol supervised run of the store (:func:`stored_run`): its results, its stored config
    (with ``overrides``) composed again, its task prepared and its data loaded. The data must still match, checked
    before it is loaded (:func:`check_same_data`), the run's own data record with ``own_data`` (``data`` in its
    results.json), or ``recorded_data`` (a retest's)."""
    warm_vector_math()  # as a training run does: its evaluation computes what training's did, bit for bit
    run, results, stored = stored_run(name, runs_dir, doing)
    composed = recompose(stored, overrides)
    try:
        prepared = prepare_task(composed)
    except OmegaConfBaseException as exc:  # a key today's task reads is not stored
        raise config_lacks(run, exc, doing, "the task") from None
    except UserError:  # the task's own advice is for training (e.g. another task.source), which this refuses
        missing_files = missing_data_files(results)
        if not missing_files:
            raise
        raise UserError(f"{run.path.name} read data files not found now under {data_dir()} ({data_dir_label()}): "
                        f"{listed(missing_files, 2)}; the run cannot be {doing} without them: put them back (`harness "
                        "data fetch` downloads the releases it knows) or point HARNESS_DATA_DIR at them") from None
    if own_data or recorded_data is not None:
        check_same_data(run, (results.get("data") or {}) if own_data else recorded_data or {}, prepared.data, doing)
    if composed.task.data_check:  # the data files' own checks, as bench runs them before it loads the data
        load_entry(composed.task.data_check)(composed.cfg.task)
    if not own_data and recorded_data is None:  # a retest: its split is encoded as the run's data encodes it
        check_same_files(run, results.get("data") or {}, prepared.data, doing)  # (vocabulary, padded sizes)
    return run, results, composed, prepared, prepared.task.load()


def config_lacks(run: Run, exc: OmegaConfBaseException, doing: str, reader: str) -> UserError:
    """The one-line error for a key of the stored config that ``reader`` (the task, the model, the evaluation) reads
    and the run's config.yaml lacks (damaged, or written by an older harness)."""
    missing = getattr(exc, "full_key", None) or str(exc).splitlines()[0]
    return UserError(f"{run.config_path} lacks {missing!s}, which {reader} needs (damaged, or written by an older "
                     f"harness); the run cannot be {doing}")


def missing_data_files(results: dict[str, Any]) -> list[str]:
    """The data files a run recorded (``data.files`` of its results.json, relative to the data folder) that are
    not in the data folder now."""
    files = (results.get("data") or {}).get("files") or {}
    return [name for name in files if not (data_dir() / name).is_file()]


def check_same_data(run: Run, recorded: dict[str, Any], now: dict[str, Any], doing: str) -> None:
    """A UserError unless the data found now has the fingerprint ``recorded`` when the run (or its retest) measured
    its figures: scores of other data would stand beside figures they do not explain. The files whose digests
    differ are named (a task that records none: its fingerprint only)."""
    then, found = recorded.get("fingerprint"), now.get("fingerprint")
    if not then or not found or then == found:
        return
    old, new = recorded.get("files") or {}, now.get("files") or {}
    changed = sorted(path for path in {*old, *new} if old.get(path) != new.get(path))
    what = (_files_differ(changed, "what it measured") if changed
            else f"fingerprint {found}, where it measured {then}")
    raise _data_changed(run, doing, what)


def _files_differ(changed: list[str], what: str) -> str:
    """'F differs from <what>', or 'F and N more files differ from <what>'."""
    more = f" and {len(changed) - 1} more files" if len(changed) > 1 else ""
    return f"{changed[0]}{more} {'differ' if len(changed) > 1 else 'differs'} from {what}"


def _data_changed(run: Run, doing: str, what: str) -> UserError:
    """The refusal of a run whose data changed since it was scored (``what``: how)."""
    return UserError(f"{run.path.name} cannot be {doing}: its data changed since it was scored ({what}); put back "
                     "the data it used, or train a run on this data")


def check_same_files(run: Run, recorded: dict[str, Any], now: dict[str, Any], doing: str) -> None:
    """A UserError unless every data file the run read (``files`` of its data record, ``recorded``) that the
    command reads again (``now``) holds what it held: a retest's split is encoded with the vocabulary and padded
    sizes of the run's own data, so a training file edited since would score the model on inputs it never saw
    encoded so, and store that figure beside the run's. New files (the split the retest adds) are not compared."""
    old, new = recorded.get("files") or {}, now.get("files") or {}
    changed = sorted(path for path in old if path in new and new[path] != old[path])
    if not changed:
        return
    raise _data_changed(run, doing, _files_differ(changed, "what it trained and was tested on"))


def other_test_data(stored: dict[str, Any], reported: set[str], tried: dict[str, Any] | None = None) -> str | None:
    """A ``task.*`` override that gives the stored run (its config, ``stored``) a test split it has not reported
    (``reported``: the prefixes of its metrics), or None. The candidates are the values of the task's list keys
    named ``test_*`` that each add a split ``test_<value>``: their declared item choices (Relations Game's
    ``task.test_sets``) or, for a key that declares none, the task's sources (``task.source`` without ``auto``:
    bAbI's ``task.test_on``), less what the run trained on, what it reports, and what its config or this retest's
    (``tried``: a task section) named already without a split coming of it: the task drops it for this run
    (Relations Game's colour_shape on stripes, an object set of one shape), and a retest cannot change why. The
    first whose task accepts it and whose data can be located here (the task is built and describes its data,
    nothing is loaded)."""
    from harness.config import key_types

    task = stored["task"]
    types = key_types(str(task["name"]), str(stored["model"]["name"]), str(stored.get("profile", "cpu")))
    sources = types.get("task.source")
    trained_on = {value for value in task.values() if isinstance(value, str)}  # its source, its object set, ...
    for key in sorted(k for k in task if str(k).startswith("test_")):
        kind = types.get(f"task.{key}")
        if kind is None or kind.types != ("list",):
            continue
        named = {str(v) for section in (task, tried or {}) for v in section.get(key) or []}
        values = kind.item_choices or tuple(c for c in (sources.choices if sources else None) or () if c != "auto")
        for value in values:
            if f"test_{value}" in reported or value in trained_on or value in named:
                continue
            override = f"task.{key}=[{value}]"
            try:
                prepare_task(recompose(stored, [override]))
            except Exception:  # noqa: BLE001  any refusal: not a suggestion (this is a hint, on an error's path)
                continue
            return override
    return None


def _why_no_split(tried: dict[str, Any], reported: set[str]) -> str:
    """Why the values a retest's task section (``tried``) names in its ``test_*`` lists gave no split the run does not
    report: the data it trained on (its ``test/`` metrics), or data its task drops for this run; "" for none."""
    named = {str(v) for key, values in tried.items() if str(key).startswith("test_") and isinstance(values, list)
             for v in values if f"test_{v}" not in reported}
    trained = sorted(named & {str(v) for v in tried.values() if isinstance(v, str)})
    dropped = sorted(named - set(trained))
    why = []
    if trained:
        why.append(f"{', '.join(trained)} {'is' if len(trained) == 1 else 'are'} what it trained on (its test/ "
                   "metrics)")
    if dropped:
        why.append(f"its task makes no split of {', '.join(dropped)} for this run")
    return "".join(f"; {reason}" for reason in why)


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: TensorDictDataset, batch_size: int,
             count: int | None = None) -> dict[str, float]:
    """Accuracy and mean cross-entropy over the first ``count`` examples of a split (all by default), as the
    supervised runner's test step."""
    model.eval()
    correct, loss_sum, n = 0, 0.0, len(dataset) if count is None else count
    for start in range(0, n, batch_size):
        batch = dataset.__getitems__(list(range(start, min(start + batch_size, n))))
        logits = model(**{k: v for k, v in batch.items() if k != TARGET})  # [B, C]
        loss_sum += float(F.cross_entropy(logits, batch[TARGET], reduction="sum"))
        correct += int((logits.argmax(-1) == batch[TARGET]).sum())
    return {"acc": correct / max(n, 1), "loss": loss_sum / max(n, 1)}


def retest(name: str, overrides: list[str], runs_dir: Path | None = None) -> dict[str, float]:
    """Evaluate a completed run on the new test splits its task yields under ``overrides``; returns the metrics
    added to its results.json.

    A new split is scored as the run's own test pass scored its splits: a run trained with
    ``train.limit_eval_batches`` (the smoke profile) saw only that many batches of each, and so does its retest,
    so the new numbers are what the run would have reported had the split been there from the start. The record
    keeps the limit and the examples scored; the command's output says when a limit applied."""
    bad = [item for item in overrides if not is_test_setting(item.split("=", 1)[0].lstrip("+"))]
    if bad:
        try:
            stored_run(name, runs_dir, "retested")
        except NotRetestable:
            raise  # a run that cannot be retested at all says so first
        except UserError:
            pass  # one not found or not completed: the settings are wrong whatever it is
        raise UserError(f"retest changes the test data only: {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} "
                        f"not a test setting ({', '.join(TEST_SETTINGS)}); what the run trained on stays as it was")
    with holding_run(find_run(name, runs_dir or default_runs_dir()), "retested"):
        return _retest_held(name, overrides, runs_dir)


def _retest_held(name: str, overrides: list[str], runs_dir: Path | None) -> dict[str, float]:
    """:func:`retest` once the run's folder is held: its results are read, scored and written back while no other
    command can train it afresh or write it."""
    run, results, composed, prepared, data = reload_run(name, overrides, runs_dir, "retested")
    reported = {key.split("/")[0] for key in results.get("metrics") or {}}
    new = {f"test_{n}": split for n, split in data.extra_test.items() if f"test_{n}" not in reported}
    if not new:  # before the model is loaded: nothing to do
        stored = stored_config(run, "retested")
        # the task section as the overrides name it: preparing the task leaves out what the run trained on
        tried: dict[str, Any] = OmegaConf.to_container(recompose(stored, overrides).cfg.task)  # type: ignore[assignment]
        other = other_test_data(stored, reported, tried)
        hint = (f"name other data with task.* settings, e.g. {other}" if other else
                "its task offers no other test data that can be read here")
        raise UserError(f"no new test split: the run already reports {', '.join(sorted(reported))}"
                        f"{_why_no_split(tried, reported)}; {hint}")
    model = load_trained_model(run, composed, data)
    checkpoint = intact_checkpoint(run, ("best", "last"))
    batch_size = int(composed.cfg.train.eval_batch_size)
    limit = composed.cfg.train.get("limit_eval_batches")  # the run's own test pass saw this many batches
    added: dict[str, float] = {}
    examples: dict[str, dict[str, int]] = {}
    for prefix, split in new.items():
        count = evaluated_count(split, batch_size, limit)
        examples[prefix] = {"scored": count, "of": len(split)}
        measured = evaluate(model, split, batch_size, count)
        added.update({f"{prefix}/acc": measured["acc"], f"{prefix}/loss": measured["loss"],
                      f"{prefix}/error": 1.0 - measured["acc"]})
    if any(not math.isfinite(v) for v in added.values()):
        raise UserError("the retest produced non-finite metrics")
    files = code_files()
    record = {"at": now_iso(), "overrides": list(overrides), "splits": sorted(new), "checkpoint": checkpoint.name,
              "limit_eval_batches": limit, "examples": examples,
              "data": {"fingerprint": prepared.data.get("fingerprint"), "files": prepared.data.get("files") or {},
                       "source": data.source},
              "git": git_info(), "code": fingerprint(files)}
    results["metrics"] = {**(results.get("metrics") or {}), **added}
    results["retests"] = [*(results.get("retests") or []), record]
    run.write_results(results)
    cut = {prefix: n for prefix, n in examples.items() if n["scored"] < n["of"]}
    if cut:
        print(f"scored as the run's own test pass (train.limit_eval_batches={limit}): "
              + ", ".join(f"{prefix} {n['scored']} of {n['of']} examples" for prefix, n in sorted(cut.items())),
              flush=True)
    return added
