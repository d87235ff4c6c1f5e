"""A run's task prepared, its data loaded and its model built once as the run will build them, and checked (the
data's labels, the model's output on two examples), so that a bad setting, data file or model is refused in one
line before the run's folder exists; ``bench`` and ``harness validate`` both start here. The building itself, which
decides the run's numbers, lives in :mod:`harness.runners.build`."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from harness import config as config_lib
from harness.config import Composed
from harness.errors import UserError
from harness.interfaces import check_task_data, named_splits
from harness.registry import load_entry
from harness.runners.build import Prepared, build_before_start, prepare_task
from harness.runners.run_checks import check_run_config
from harness.vector_math import warm_vector_math


def prepare_checked(composed: Composed) -> Prepared:
    """A run's settings checked, its task prepared (it checks its own settings and pins its data source) and its
    data files checked: what ``bench`` and ``harness validate`` do first, before the data is loaded."""
    check_run_config(composed)
    warm_vector_math()  # before anything computes: two runs of one config agree bit for bit
    try:
        with refused_when_too_large(composed):  # a task may build tables of its size (Game of Life: its cells)
            prepared = prepare_task(composed)
    except (TypeError, AttributeError) as exc:  # the task's class does not take (cfg) or misreads it
        said = _exception_line(exc)
        raise UserError(f"task {composed.task.name} ({composed.task.entry}) could not be built: {said}; a task is "
                        "built as Task(cfg), cfg the run config (its settings in cfg.task), and its describe_data(), "
                        "if any, returns a dict with source, files and fingerprint (docs/contributing.md)") from None
    for note in prepared.notes:
        print(f"note: {note}", file=sys.stderr, flush=True)
    if composed.task.data_check:
        load_entry(composed.task.data_check)(composed.cfg.task)
    return prepared


def build_and_check(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model as the run will (a stepwise run: check its stream too), and check what
    the data holds, so that a bad setting or data file is refused before anything is written; ``harness
    validate`` runs the same checks."""
    with refused_when_too_large(composed):
        build_model(composed, prepared)
    if prepared.loaded is not None:  # supervised single runs
        check_task_data(composed.task.name, composed.task.interface, prepared.loaded)
        check_targets(prepared.loaded, composed.task.name)
        if prepared.model is not None:
            check_model_output(composed, prepared)


@contextmanager
def refused_when_too_large(composed: Composed) -> Iterator[None]:
    """A model (or data) that cannot be allocated is the user's setting, not a crash: one line naming the bytes
    asked for (torch's CPU allocator raises a RuntimeError that says "can't allocate memory")."""
    try:
        yield
    except (MemoryError, RuntimeError) as exc:
        said = str(exc)
        if not isinstance(exc, MemoryError) and "can't allocate memory" not in said:
            raise
        asked = re.search(r"allocate (\d+) bytes", said)
        size = f" ({int(asked.group(1)) / 2**30:,.1f} GiB in one allocation)" if asked else ""
        raise UserError(f"{composed.task.name} x {composed.model.name}: building the model and its data ran out of "
                        f"memory{size}; make its sizes smaller (model.*) or the data (task.*)") from None


def build_model(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model (for a stepwise run: its stream model)."""
    if composed.kind == "stepwise":
        from harness.runners.stepwise import build_stepwise

        model_entry = composed.model.interfaces[composed.task.interface]
        prepared.model = build_stepwise(prepared.task, model_entry, composed.cfg, composed.task.name)
    else:
        try:
            build_before_start(composed, prepared)
        except UserError as exc:
            raise _with_pair_file_hint(composed, exc) from None
        except Exception as exc:
            if prepared.loaded is None:
                if composed.kind == "supervised" and isinstance(exc, (ConfigAttributeError, ConfigKeyError)):
                    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise UserError(f"task {composed.task.name} ({composed.task.entry}): load() reads a config key "
                                    f"that no file defines: {said}") from None
                raise
            # data that breaks its interface's contract is named as such, not as the error of the reader it broke
            check_task_data(composed.task.name, composed.task.interface, prepared.loaded)
            if isinstance(exc, (TypeError, AttributeError)) and prepared.model is None:
                raise _construction_error(composed, exc) from None
            if not isinstance(exc, KeyError):
                raise
            # a reader looked up a size its task's info does not give
            info = getattr(prepared.loaded, "info", None)
            key = exc.args[0] if exc.args else None
            if not isinstance(info, dict) or not isinstance(key, str) or key in info:
                raise
            entry = composed.model.interfaces[composed.task.interface]
            raise UserError(f"{composed.model.name} ({entry}) needs info['{key}'] from task {composed.task.name}, "
                            f"whose load() gives info keys {', '.join(sorted(info)) or 'none'} "
                            f"({composed.task.entry}; harness/interfaces.py)") from None


def _exception_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _adapted_core(composed: Composed) -> str:
    """The sequence core (``module:Class``) through which the model reads the task's interface, or "" where it
    reads it with a reader of its own."""
    return composed.model.core if composed.task.interface in composed.model.adapted else ""


def _with_pair_file_hint(composed: Composed, exc: UserError) -> UserError:
    """A model setting that does not suit the task (the image adapter's ``model.patch_size`` on Pathfinder's 32x32
    images) says where to set it for this pair alone when the pair has no pair file yet."""
    said = str(exc)
    task, model = composed.task, composed.model
    if not said.startswith(f"{model.name} cannot be built from this config: model.") or task.source is None:
        return exc
    pair = task.source.parent / "pairs" / f"{model.name}.yaml"
    if pair.exists():
        return exc
    others = sorted(pair.parent.glob("*.yaml"))
    like = f", as {config_lib.project_path(others[0])} does" if others else ""
    return UserError(f"{said}; set it for this pair in {config_lib.project_path(pair)} (config: {{model: ...}}{like}) "
                     "or on the command line")


def _construction_error(composed: Composed, exc: Exception) -> UserError:
    """A model (or its sequence core) whose constructor does not take what the harness hands it, reads a config key
    that no file defines (OmegaConf's error is an AttributeError), or lacks an attribute the adapter reads
    (``in_dim``, ``out_dim``): one line naming the class and what it is built from."""
    entry = composed.model.interfaces[composed.task.interface]
    said = _exception_line(exc)
    core = _adapted_core(composed)
    built = (f"it reads {composed.task.interface} through models/adapters.yaml, which builds its core "
             f"({core}) as Core(cfg.model), with int attributes in_dim and out_dim" if core
             else "a supervised reader is built as Class(cfg.model, info)")
    if isinstance(exc, (ConfigAttributeError, ConfigKeyError)):
        where = config_lib.project_path(composed.model.source) if composed.model.source else "its model file"
        built = f"it reads a config key that no file defines (a model's keys are under `model` in {where}); {built}"
    return UserError(f"{composed.model.name} ({entry}) on task {composed.task.name} could not be built: {said}; "
                     f"{built} (docs/contributing.md)")


def check_model_output(composed: Composed, prepared: Prepared) -> None:
    """Two validation examples through the built model, as the runner will call it (``model(**batch)``), before
    anything is written: a forward that fails, returns other than float logits [B, num_classes] or returns NaN is
    one line naming the model's class. No gradient, in eval mode, on a forked RNG and on a copy of the model (a
    model may keep state that its forward passes change: MemN2N's schedule counts an evaluation followed by
    training as an epoch), so the run computes what it would have."""
    import copy

    import torch

    from harness.data import TARGET

    data, model = prepared.loaded, prepared.model
    split = data.val if len(data.val) else data.train
    indices = narrowest_examples(split)
    batch = split.__getitems__(indices)
    inputs = {name: tensor for name, tensor in batch.items() if name != TARGET}
    stored = getattr(split, "tensors", None)
    padded = {name: stored[name][indices] for name in inputs} if isinstance(stored, dict) else inputs
    cut = any(padded[name].shape != tensor.shape for name, tensor in inputs.items())
    entry = composed.model.interfaces[composed.task.interface]
    where = f"{composed.model.name} ({entry}) on task {composed.task.name}"
    call = f"model({', '.join(inputs)})"
    core = _adapted_core(composed)
    through = (f"; it reads {composed.task.interface} through models/adapters.yaml, so check its core "
               f"({core}): core(x [B, T, in_dim], mask [B, T]) -> [B, out_dim] float") if core else ""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        checked = copy.deepcopy(model).eval()
        try:
            out = checked(**inputs)
        except Exception as exc:  # noqa: BLE001  the model's own error, reported as one line
            said = _exception_line(exc)
            if cut and _runs(checked, padded):
                raise UserError(f"{where}: {call} raised {said} on a batch cut to its longest story, where the padded "
                                f"batch runs: the model reads a fixed number of statements, so it trains on padded "
                                f"batches only ({CUT_BATCHES})") from None
            raise UserError(f"{where}: {call} raised {said}{through}") from None
        if cut and not torch.allclose(out, checked(**padded), rtol=1e-4, atol=1e-5):
            print(f"note: {composed.model.name}'s output on a batch cut to its longest story differs from its output "
                  f"on the padded batch: it reads padding as input, so with cut batches ({CUT_BATCHES}) it sees as "
                  "much as each batch leaves", flush=True)
    classes = data.info.get("num_classes")
    want = [len(next(iter(inputs.values()))), int(classes) if classes is not None else "num_classes"]
    shape = list(out.shape) if isinstance(out, torch.Tensor) else None
    floating = shape is not None and out.is_floating_point()
    if not floating or len(shape) != 2 or shape[0] != want[0] or (classes is not None and shape[1] != want[1]):
        got = (type(out).__name__ if shape is None else f"{list(shape)}" if floating
               else f"{str(out.dtype).removeprefix('torch.')} {list(shape)}")
        raise UserError(f"{where}: {call} returned {got}; a supervised model returns float logits [B, num_classes] "
                        f"= {want} (harness/interfaces.py){through}")
    if bool(torch.isnan(out).any()):
        raise UserError(f"{where}: {call} returned NaN logits on two validation examples, before any training "
                        f"(a division by zero, or a log or sqrt of a non-positive number, in its forward){through}")


CUT_BATCHES = "bAbI's task.trim_batches=true; its all-tasks mode always cuts"


def narrowest_examples(split: Any, count: int = 2, looked_at: int = 64) -> list[int]:
    """``count`` of the first ``looked_at`` examples whose batches, as ``split`` hands them out, hold the fewest
    numbers: the first ``count`` where every example has one shape; where the dataset cuts each batch to its
    content (bAbI's stories), the shortest, whose batch it cuts most."""
    sizes = [(sum(tensor.numel() for tensor in split.__getitems__([index]).values()), index)
             for index in range(min(looked_at, len(split)))]
    return sorted(index for _, index in sorted(sizes)[:count])


def _runs(model: Any, inputs: dict[str, Any]) -> bool:
    """Whether ``model(**inputs)`` returns without raising."""
    try:
        model(**inputs)
    except Exception:  # noqa: BLE001  only whether it runs
        return False
    return True


def check_targets(data: Any, task: str = "") -> None:
    """Every split's labels are among the task's classes (``info["num_classes"]``): a label out of range (a
    malformed data file, or a task whose targets or num_classes are wrong) would otherwise stop the run with a
    traceback, after its directory exists."""
    from harness.data import TARGET

    if "num_classes" not in data.info:
        return
    classes = int(data.info["num_classes"])
    for name, split in named_splits(data).items():
        target = split.tensors[TARGET]  # [N]
        if len(target) and (int(target.min()) < 0 or int(target.max()) >= classes):
            raise UserError(f"{f'task {task}: ' if task else ''}the {name} split has labels {int(target.min())}.."
                            f"{int(target.max())}, outside the task's {classes} classes (0..{classes - 1}, "
                            "info['num_classes']): its data file is malformed, or its load() gives wrong targets "
                            "or num_classes")
