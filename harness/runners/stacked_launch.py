"""The life of a stack of runs (``harness bench ... --seeds 0,1,2``): the K runs of one config that differ only in
``seed``, each with its own run directory, statuses and provenance exactly as :func:`harness.runners.launch.launch`
gives one run, trained together by :class:`harness.runners.stacked.StackedTrainer`. A sweep may also stack runs
that differ in their task's data keys (``task.*``, e.g. the relation of ``task.tasks``) or their optimiser settings
(``optim.*``): a *mixed* stack, trained by :class:`harness.runners.stacked_data.MixedStackedTrainer` (each member
on its own data) or :class:`harness.runners.stacked_optim.OptimStackedTrainer` (each member with its own optimiser).

* The configs are checked to differ in ``seed``, ``task.*`` and ``optim.*`` only (one line naming the first other
  difference otherwise); a mixed stack's data must have one shape
  (:func:`harness.runners.stacked_data.check_same_shapes`).
* Completed members are reported, not retrained (``force`` retrains them); each dataset is loaded once (members
  of one task config share it); each member's model is built as its solo run builds it (``seed_everything(seed)``,
  then the model).
* The models must run under ``vmap``: one forward of two training examples per member is tried first (a
  model that reads a tensor on the host, such as ``int(lengths.max())``, fails there), and a model that cannot
  is refused with one line before any run is stored (:class:`UnstackableModelError`); so is, whatever K, a model
  with state or gradient hooks of its own (:func:`unstacked_state`), which stacked parameters would lose.
* Members resume from their own checkpoints (an epoch's are every member's or none: a kill while they were written
  is settled first, :func:`harness.runners.stacked_checkpoints.settle_staged`): members checkpointed at the same
  epoch share a stack; a member whose
  checkpoint was written by the solo runner resumes alone with it; a finished member is only tested.
* Each member ends ``completed``, ``diverged`` (its loss turned non-finite: it leaves the stack, the others go
  on), ``interrupted`` or ``failed``; its ``results.json`` records the stack (``stack``: the members' run ids)
  and the stack's wall time. Every member's final status is stored before anything else is done (trackers,
  predictions): a Ctrl-C after that says what stands, exit code 130.
* Each member's epoch lines start with its seed (``[seed 1] epoch 2/10 ...``).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.config import Composed
from harness.data import EpochShuffleSampler
from harness.errors import INTERRUPTED, DivergedError, UserError
from harness.interfaces import check_task_data
from harness.paths import check_writable_folder
from harness.provenance import snapshot_code
from harness.registry import load_entry
from harness.runners.build import Prepared, _device_description, _model_error, prepare_task
from harness.runners.build_checks import check_targets, refused_when_too_large
from harness.runners.existing_run import (
    _existing,
    _predictions_missing,
    _summary_line,
    already_completed,
    refuse_mixed_code,
    remove_leftover_temporaries,
)
from harness.runners.launch import (
    _finish,
    _start,
    claim_run,
    diverged_advice,
    open_tracker,
    record_progress,
    release_claims,
)
from harness.runners.recorder import RunRecorder
from harness.runners.run_checks import check_run_config
from harness.runners.signals import (
    TERMINAL_WENT_AWAY,
    signals_deferred,
    terminal_outputs,
    terminal_went_away,
    terminate_as_interrupt,
)
from harness.runners.stacked import Member, StackedTrainer
from harness.runners.stacked_checkpoints import settle_staged
from harness.runners.stacked_model import model_mismatch
from harness.runners.sweep_file import flow
from harness.runs import Run, default_runs_dir, run_dir
from harness.schema import leaves
from harness.tracking import configure_environment
from harness.vector_math import warm_vector_math


def unstackable_reason(composed: Composed) -> str | None:
    """Why runs of this config cannot train as a stack (its kind, protocol, learning-rate policy or step limit), or
    None."""
    protocol = OmegaConf.select(composed.cfg, "protocol.name")  # only supervised configs have a protocol
    if composed.kind != "supervised":
        kind = {"rl": "an RL", "stepwise": "a stepwise"}.get(composed.kind, f"a {composed.kind}")
        return (f"--seeds stacks supervised runs only; {composed.task.name} is {kind} task: run one seed at a time "
                "with --seed")
    if protocol != "single":
        return (f"--seeds stacks single-protocol runs only; this run's protocol is {protocol}: run one seed at a "
                "time with --seed")
    if composed.cfg.optim.decay_below_val_loss is not None:
        return (f"{composed.cfg.model.name} cannot train as a stack on {composed.task.name} "
                "(optim.decay_below_val_loss would give the members different learning rates): run the seeds one by "
                "one with --seed")
    if composed.cfg.train.get("max_steps") is not None:
        return ("train.max_steps is not implemented for stacks (they stop at an epoch's end or at the time cap): "
                "run the seeds one by one with --seed")
    return None


class UnstackableModelError(UserError):
    """The model's forward cannot run as one vmapped computation (data-dependent shapes or host reads): its
    seeds must train one by one (a sweep with ``stack_seeds`` then runs them so)."""


def short_vmap_reason(text: str) -> str:
    """vmap's error, shortened to what the model does that vmap cannot batch (its first sentence, at most 80
    characters; ``.item()``, the usual case, named as such)."""
    if ".item()" in text:
        return "the model calls .item() on a tensor (reads its value on the host)"
    sentence = text.removeprefix("vmap:").strip().split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 80 else sentence[:77] + "..."


def unstacked_state(models: list[Any]) -> str | None:
    """What the members' model keeps beside its parameters and buffers that a stack would lose, or None: state of its
    own (``get_extra_state``) or hooks on its parameters' gradients. The stacked trainer trains fresh stacked
    tensors (with K = 1 too) and checkpoints parameters and buffers only, so such a model (MemN2N, whose schedule
    counts its epochs and sums and clips its own gradients) would train otherwise than its solo run under the
    same run id, and its checkpoint would not load back."""
    model = models[0]
    extra = [name for name in model.state_dict() if name == "_extra_state" or name.endswith("._extra_state")]
    if extra:
        return f"it keeps state of its own ({extra[0]}), which stacked parameters do not carry"
    hooked = [name for name, parameter in model.named_parameters()
              if getattr(parameter, "_post_accumulate_grad_hooks", None) or getattr(parameter, "_backward_hooks", None)]
    if hooked:
        return f"hooks on its parameters' gradients ({hooked[0]}) would not run on stacked parameters"
    return None


def vmap_refusal(models: list[Any], data: Any) -> str | None:
    """Why ``models`` cannot train as one vmapped stack (the first line of vmap's error), or None.

    One forward of the first two training examples, every member reading them, through the
    :class:`~harness.runners.stacked_model.StackedClassifier` the trainer uses (on copies of the models, without
    gradients), with the random state restored: the stack then trains exactly as it would without the check."""
    if len(models) < 2:
        return None
    import torch

    from harness.data import TARGET
    from harness.runners.stacked_model import StackedClassifier

    rows = data.train.__getitems__(list(range(min(2, len(data.train)))))
    inputs = {name: torch.stack([t] * len(models)) for name, t in rows.items() if name != TARGET}  # [K, 2, ...]
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        try:
            StackedClassifier(models).logits(inputs)
        except RuntimeError as exc:
            return str(exc).strip().splitlines()[0]
    return None


STACK_KEYS = ("task.", "data.", "optim.")  # what the members of a stack may differ in, besides the seed


def _member_key(key: str) -> bool:
    """Whether the members of a stack may differ in this config key: a key of the task's data (``task.*``, not
    the task's name; ``data.*``, what the launcher pins of the data it reads, such as its fingerprint) or of the
    optimiser (``optim.*``)."""
    return key.startswith(STACK_KEYS) and key != "task.name"


def data_config(composed: Composed) -> str:
    """The member's task config as text: members with the same one read the same data."""
    return OmegaConf.to_yaml(composed.cfg.task, resolve=True)


def check_stackable(stack: list[Composed]) -> None:
    """The configs must be supervised single runs that differ only in ``seed``, their task's data keys
    (``task.*``) and their optimiser settings (``optim.*``), no two members the same run, and none with a
    learning rate that moves with its validation loss (``optim.decay_below_val_loss``)."""
    if not stack:
        raise UserError("a stack needs at least one run")
    first = stack[0]
    seeds = [int(c.cfg.seed) for c in stack]
    ids = [c.run_id for c in stack]  # the same run twice: the same seed with the same data and optimiser
    repeated = sorted({seed for seed, run_id in zip(seeds, ids, strict=True) if ids.count(run_id) > 1})
    if repeated:  # the plainest mistake first: before what the config could not do as a stack
        raise UserError(f"the stack repeats a seed ({', '.join(map(str, repeated))} in seeds "
                        f"{','.join(map(str, seeds))}): give each seed once")
    refusal = unstackable_reason(first)
    if refusal:
        raise UserError(refusal)
    reference = dict(leaves(OmegaConf.to_container(first.cfg, resolve=True)))
    reference.pop("seed")
    for composed in stack[1:]:
        other = dict(leaves(OmegaConf.to_container(composed.cfg, resolve=True)))
        other.pop("seed")
        differing = sorted(key for key in set(reference) | set(other)
                           if reference.get(key) != other.get(key) and not _member_key(key))
        if differing:
            raise UserError(f"stacked runs may differ only in seed, the task's data (task.*) and the optimiser "
                            f"(optim.*); {composed.run_id} differs from {first.run_id} in {', '.join(differing)}")
        refusal = unstackable_reason(composed)
        if refusal:
            raise UserError(refusal)


class _LinePrefix(io.TextIOBase):
    """A text stream that writes each line to ``target`` with ``prefix`` in front."""

    def __init__(self, prefix: str, target: Any) -> None:
        self.prefix, self.target, self.pending = prefix, target, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.target.write(f"{self.prefix}{line}\n" if line else "\n")
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def end(self) -> None:
        """Write what is left of an unfinished last line."""
        if self.pending:
            self.target.write(f"{self.prefix}{self.pending}\n")
            self.pending = ""
        self.target.flush()


def member_names(stack: list[Composed]) -> list[str]:
    """What tells each member's lines apart: ``seed N``, and in a mixed stack the data and optimiser keys its
    members differ in (``seed 0 task.tasks=[between]``, ``seed 1 optim.lr=0.01``)."""
    configs = [{**dict(leaves(OmegaConf.to_container(c.cfg.task, resolve=True), "task.")),
                **dict(leaves(OmegaConf.to_container(c.cfg.optim, resolve=True), "optim."))} for c in stack]
    differing = sorted(key for key in configs[0] if any(config.get(key) != configs[0][key] for config in configs))
    return [" ".join([f"seed {int(c.cfg.seed)}", *(f"{key}={flow(config.get(key))}" for key in differing)])
            for c, config in zip(stack, configs, strict=True)]


def data_lines(names: list[str], sources: list[str]) -> list[str]:
    """The ``data:`` line a solo run prints (harness/runners/build.py), for a stack: one line where its members read
    the same data, else one per member, named as its epoch lines name it (:func:`member_names`)."""
    if len(set(sources)) == 1:
        return [f"data: {sources[0]}"]
    return [f"[{name}] data: {source}" for name, source in zip(names, sources, strict=True)]


@contextmanager
def seed_lines(who: int | str) -> Iterator[None]:
    """Inside the block, each line printed to stdout starts with ``[seed N]`` (or ``[who]``, a member's name from
    :func:`member_names`): whose line it is in a stack."""
    stream = _LinePrefix(f"[seed {who}] " if isinstance(who, int) else f"[{who}] ", sys.stdout)
    try:
        with redirect_stdout(stream):
            yield
    finally:
        stream.end()


class SeedRecorder(RunRecorder):
    """A member's recorder: the same curves, with its seed (or name, :func:`member_names`) in front of its epoch
    lines."""

    def __init__(self, seed: int | str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seed = seed

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        with seed_lines(self.seed):
            super().on_validation_end(trainer, pl_module)


def member_line(run: Run, record: dict[str, Any]) -> str:
    """A member's closing line: the launcher's summary of a completed run; otherwise its status, seed and time."""
    if record.get("status") == "completed":
        return _summary_line(run, record)
    return (f"{record.get('status')}: {record.get('task')}/{record.get('model')} seed {record.get('seed')} after "
            f"{float(record.get('wall_time_s') or 0.0):.0f} s\n  {run.path}")


def _resume_point(run: Run, max_epochs: int) -> str | int:
    """Where a member starts: ``"solo"`` (a checkpoint of the solo runner), ``"done"`` (only its test is left),
    or the number of epochs its checkpoint completed (0: from scratch)."""
    from harness.runners.supervised import intact_checkpoint, load_checkpoint

    path = intact_checkpoint(run)
    if path is None:
        return 0
    saved = load_checkpoint(path).get("harness", {})
    if "stacked" not in saved:
        return "solo"
    epochs = int(saved["stacked"]["epochs_done"])
    return "done" if saved.get("fit_stopped") or epochs >= max_epochs else epochs


def split_resume_line(points: list[str | int]) -> str | None:
    """The line for unfinished members that resume at different epochs (None when they resume as one stack). An
    epoch's checkpoints are every member's or none (:mod:`harness.runners.stacked_checkpoints`), but a member whose
    ``last.ckpt`` was damaged resumes from its ``best.ckpt``, and a store written before the staging may hold
    members an epoch apart. They then train as one stack per epoch, whose
    kernels add in another order than the whole stack's (a stack of one runs without ``vmap``): their figures from
    there on can differ by rounding from an uninterrupted stack's, and from a reproduction of it."""
    epochs = sorted({point for point in points if isinstance(point, int)})
    if len(epochs) < 2:
        return None
    groups = ", ".join(f"{points.count(epoch)} after epoch {epoch}" if epoch else f"{points.count(epoch)} from the "
                       "start" for epoch in epochs)
    return ("the stack's unfinished members hold checkpoints of different epochs (a damaged one set aside, or a "
            f"store written before an epoch's checkpoints were staged): they resume as {len(epochs)} stacks "
            f"({groups}), so their figures can differ by rounding from an uninterrupted stack's")


class StackLaunch:
    """The members of one stack, from their configs to their stored outcomes."""

    def __init__(self, stack: list[Composed], force: bool, runs_dir: Path | None) -> None:
        check_stackable(stack)
        for composed in stack:
            check_run_config(composed)
        self.prepared: list[Prepared] = [prepare_task(composed) for composed in stack]
        checked = {data_config(composed): composed for composed in stack}
        for composed in checked.values():
            if composed.task.data_check:
                load_entry(composed.task.data_check)(composed.cfg.task)
        self.force = force
        self.todo: list[tuple[Composed, Prepared, Run]] = []
        for composed, prepared in zip(stack, self.prepared, strict=True):
            run = run_dir(composed.cfg.task.name, composed.cfg.model.name, composed.run_id, runs_dir)
            if not already_completed(run, composed, force):
                self.todo.append((composed, prepared, run))
        if self.todo:  # a stack that completed is reported from a read-only store too
            check_writable_folder(runs_dir or default_runs_dir(), "runs folder")

    def _build(self) -> tuple[list[Any], list[Any]]:
        """Each member's data (each task config's loaded once: its members share it) and model, seeded as its
        solo run."""
        import lightning.pytorch as pl
        import torch

        from harness.runners.analysis import check_analysis_split
        from harness.runners.stacked_data import check_same_shapes

        cfg = self.todo[0][0].cfg
        if cfg.train.threads:
            torch.set_num_threads(int(cfg.train.threads))
        loaded: dict[str, Any] = {}
        datas = []
        for composed, prepared, _ in self.todo:
            key = data_config(composed)
            if key not in loaded:
                loaded[key] = data = prepared.task.load()
                check_analysis_split(composed.cfg, data)
                check_task_data(composed.task.name, composed.task.interface, data)
                check_targets(data, composed.task.name)
            datas.append(loaded[key])
        check_same_shapes(list(loaded.values()))
        entry = self.todo[0][0].model.interfaces[self.todo[0][0].task.interface]
        models = []
        for (member, _, _), data in zip(self.todo, datas, strict=True):
            pl.seed_everything(int(member.cfg.seed), workers=True, verbose=False)
            try:
                models.append(load_entry(entry)(member.cfg.model, data.info))
            except ValueError as exc:
                raise _model_error(member, exc) from None
        return datas, models

    def run(self) -> int:
        if not self.todo:
            return 0
        with refused_when_too_large(self.todo[0][0]):  # one line, as a solo run too large to allocate
            datas, models = self._build()
            refusal = model_mismatch(models) or unstacked_state(models)
            if not refusal:
                reason = vmap_refusal(models, datas[0])
                refusal = f"vmap cannot batch its forward: {short_vmap_reason(reason)}" if reason else None
        if refusal:
            first = self.todo[0][0]
            raise UnstackableModelError(f"{first.cfg.model.name} cannot train as a stack on {first.task.name} "
                                        f"({refusal}): train its seeds one by one, each with --seed")
        self._datas = datas
        mode = configure_environment()  # a WANDB_MODE W&B refuses is refused before any member's folder exists
        for composed, _, run in self.todo:  # each member's folder held, as a solo run's (launch.claim_run)
            if claim_run(run, composed, self.force):
                raise UserError(f"run {composed.run_id} completed while this stack was being built (another "
                                "command trained it); run the same command again to train the others")
        previous = [_existing(run, self.force, composed) for composed, _, run in self.todo]
        for line in settle_staged([run for _, _, run in self.todo]):  # an epoch's checkpoints a kill left half
            print(line, flush=True)                                  # committed, before the runs say how they start
        for (composed, _, _), prev in zip(self.todo, previous, strict=True):
            refuse_mixed_code(composed, prev)
        records = [_start(run, composed, prepared, prev)
                   for (composed, prepared, run), prev in zip(self.todo, previous, strict=True)]
        for _, _, run in self.todo:  # after _start, as a solo run (launch._launch)
            remove_leftover_temporaries(run)
        walls = [float(r.get("wall_time_s") or 0.0) for r in records]
        ids = [composed.run_id for composed, _, _ in self.todo]
        trackers = [open_tracker(run, composed) for composed, _, run in self.todo]
        members = []
        names = member_names([composed for composed, _, _ in self.todo])
        for (composed, _, run), record, tracker, model, data, name in zip(self.todo, records, trackers, models, datas,
                                                                          names, strict=True):
            train_cfg = composed.cfg.train
            record.update(device=_device_description(), data_source=data.source, stack=ids,
                          parameters=sum(p.numel() for p in model.parameters()))
            run.write_results(record)
            recorder = SeedRecorder(name, run, tracker, monitor=train_cfg.monitor,
                                    monitor_mode=train_cfg.monitor_mode, max_epochs=train_cfg.max_epochs)
            members.append(Member(composed.cfg, run, recorder,
                                  EpochShuffleSampler(len(data.train), seed=int(composed.cfg.seed))))
        print(f"stack of {len(members)} runs (W&B {mode}): {', '.join(ids)}", flush=True)
        print("\n".join(data_lines(names, [str(data.source) for data in datas])), flush=True)
        started = time.perf_counter()
        summaries: dict[str, dict[str, Any]] = {}
        self.deferred: list[int] = []
        self.late_interrupt = False  # Ctrl-C after every member's final status was stored
        terminals = terminal_outputs()  # those that hang up are silenced as the runs stop
        with terminate_as_interrupt():
            try:
                summaries = self._train(datas, members, models)
            except UserError as exc:
                self._close(records, "failed", str(exc))
                raise
            except (KeyboardInterrupt, SystemExit):
                self._close(records, "interrupted", "interrupted (the same command resumes the run)")
                raise KeyboardInterrupt from None
            except BrokenPipeError:  # the reader of its output went away (`| head -3`): stopped as by Ctrl-C
                self._close(records, "interrupted", "interrupted: the reader of its output went away (the same "
                                                    "command resumes the run)")
                raise
            except Exception as exc:
                if terminal_went_away(exc, terminals):  # a write failed (EIO) before a SIGHUP came: as by Ctrl-C
                    self._close(records, "interrupted", TERMINAL_WENT_AWAY)
                    raise KeyboardInterrupt from None
                self._close(records, "failed", f"{type(exc).__name__}: {exc}")
                raise
            finally:
                self._finish_all(members, records, summaries, walls, time.perf_counter() - started, trackers)
        if self.deferred or self.late_interrupt:  # Ctrl-C once the members were stored as finished: they stand
            print(self._interrupted_after(records), file=sys.stderr, flush=True)
            return INTERRUPTED  # as an interrupted command, without the line that says it resumes the runs
        return 0 if all(r["status"] == "completed" for r in records) else 1

    def _interrupted_after(self, records: list[dict[str, Any]]) -> str:
        """What a Ctrl-C after every member's final status was stored leaves: their statuses and what goes on."""
        statuses = [str(r.get("status")) for r in records]
        if all(s == "completed" for s in statuses):
            line = (f"interrupted after the stack's {len(records)} runs completed: they are stored as completed (the "
                    "same command reports them)")
        else:
            counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
            line = (f"interrupted after the stack's runs were stored ({counts}): the same command reports the "
                    "completed ones and resumes the others")
        missing = [run.path.name for (composed, _, run), record in zip(self.todo, records, strict=True)
                   if record["status"] == "completed" and _predictions_missing(run, composed)]
        if missing:
            named = missing[0] if len(missing) == 1 else "<run_id>"
            line += (f"; the predictions of {', '.join(missing)} were not written: the same command writes them (or "
                     f"`harness predict {named}`)")
        return line

    def _train(self, datas: list[Any], members: list[Member], models: list[Any]) -> dict[str, dict[str, Any]]:
        """Group the members by where they resume, train each group as one stack, then test them all (the
        members of each dataset as a stack of their own)."""
        from harness.runners.supervised import intact_checkpoint, load_checkpoint, train_and_test

        snapshot_code()  # the members record the code loaded now, also if a file is edited while they train
        cfg = members[0].cfg
        points = [_resume_point(m.run, int(cfg.train.max_epochs)) for m in members]
        apart = split_resume_line(points)
        if apart:
            print(apart, flush=True)
        summaries: dict[str, dict[str, Any]] = {}
        for point in dict.fromkeys(points):
            group = [i for i, p in enumerate(points) if p == point]
            if point == "solo":  # checkpoints of the solo runner: its own loop resumes them
                for i in group:
                    with seed_lines(members[i].recorder.seed):
                        summaries[members[i].run.path.name] = train_and_test(
                            members[i].cfg, datas[i], models[i], members[i].run, members[i].recorder.tracker)
                continue
            if point == "done":
                continue
            trainer = _trainer(cfg, [datas[i] for i in group], [members[i] for i in group],
                               [models[i] for i in group])
            snapshot_code()  # and the stacked trainer's modules, now loaded
            if point:
                trainer.resume([load_checkpoint(intact_checkpoint(members[i].run)) for i in group])  # type: ignore[arg-type]
                print(f"resuming {len(group)} member(s) after epoch {point}", flush=True)
            trainer.fit()
        tested = [i for i, p in enumerate(points) if p != "solo" and members[i].error is None]
        for data in {id(datas[i]): datas[i] for i in tested}.values():
            same = [i for i in tested if datas[i] is data]
            trainer = StackedTrainer(cfg, data, [members[i] for i in same], [models[i] for i in same])
            summaries.update(trainer.test([members[i] for i in same]))
        return summaries

    @staticmethod
    def _close(records: list[dict[str, Any]], status: str, error: str) -> None:
        for record in records:
            if record.get("status") == "running":
                record.update(status=status, error=error)

    def _finish_all(self, members: list[Member], records: list[dict[str, Any]], summaries: dict[str, dict[str, Any]],
                    walls: list[float], seconds: float, trackers: list[Any]) -> None:
        """Store every member's final status first (a second Ctrl-C waits until they are all stored), then close
        the trackers, print each member's line and write the completed ones' predictions; a Ctrl-C in that second
        part stops it, and :meth:`run` says what stands."""
        diverged = []
        with signals_deferred() as deferred:
            for (composed, _, run), member, record, wall in zip(self.todo, members, records, walls, strict=True):
                summary = summaries.get(run.path.name)
                if summary is not None:
                    record.update(summary, status="completed")
                elif isinstance(member.error, DivergedError):
                    record.update(status="diverged", error=str(member.error))
                    diverged.append((composed, run, member.error))
                record_progress(run, record)
                _finish(run, record, wall + seconds)
        self.deferred += deferred
        try:
            for composed, run, error in diverged:
                print(f"diverged: {run.path.name}: {error}. {diverged_advice(run, composed)}", file=sys.stderr,
                      flush=True)
            for record, tracker in zip(records, trackers, strict=True):
                tracker.summary(record.get("metrics") or {})
                tracker.finish(0 if record["status"] == "completed" else 1)
            for (composed, _, run), record, data in zip(self.todo, records, self._datas, strict=True):
                print(member_line(run, record), flush=True)
                if record["status"] == "completed":
                    from harness.runners.predictions import write_after_run

                    write_after_run(run, composed, data)
        except KeyboardInterrupt:
            if any(r.get("status") == "running" for r in records):
                raise  # a member left unfinished: the same command resumes it, as the command line says
            self.late_interrupt = True


def _trainer(cfg: Any, datas: list[Any], members: list[Member], models: list[Any]) -> StackedTrainer:
    """The stacked trainer for members that share one dataset and optimiser settings; the mixed one for members
    of several datasets; the one with an optimiser per member for members whose optimiser settings differ."""
    if any(member.cfg.optim != members[0].cfg.optim for member in members):
        from harness.runners.stacked_optim import OptimStackedTrainer

        return OptimStackedTrainer(cfg, datas, members, models)
    if all(data is datas[0] for data in datas):
        return StackedTrainer(cfg, datas[0], members, models)
    from harness.runners.stacked_data import MixedStackedTrainer

    return MixedStackedTrainer(cfg, datas, members, models)


def launch_stack(stack: list[Composed], force: bool = False, runs_dir: Path | None = None) -> int:
    """Run (or resume, or report) the stack's runs; returns the process exit code (0 when all completed)."""
    warm_vector_math()  # as launch() does
    try:
        return StackLaunch(stack, force, runs_dir).run()
    finally:
        release_claims()
