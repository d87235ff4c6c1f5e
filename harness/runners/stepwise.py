"""The stepwise runner: world-state models trained one step at a time (Moskvichev & Liu 2021, §6, Algorithm 1).

    for N outer cycles (stepwise.iterations):
        sample K worlds (stepwise.batch_size), w_0 = model.initial_state(K)
        for t in 1..T (stepwise.steps):
            I_t, Q_t, Y_t = the task's step t
            w_t = Updater(STOP_GRADIENT(w_{t-1}), I_t)                 model.update
            loss_t = CE(Extractor(w_t, Q_t), Y_t)                      model.extract; mean over real queries
            loss_t.backward()                                          gradients accumulate
            if t % update_freq == 0: optimiser step, zero gradients
        (a trajectory whose T is not a multiple of update_freq also steps at t = T, so no gradient is carried
         into the next cycle's worlds; the paper does not say. w_0 is not detached: it has no history, and a
         model may learn it)

``stepwise.bptt: true`` is the comparison the paper draws in Experiment 0: no stop-gradient, the mean of the
T step losses backpropagated through the whole trajectory, one optimiser step per trajectory.

The trajectory-length curriculum of Appendix B (``stepwise.curriculum``): T starts at ``start`` and grows by one
once the training accuracy of the monitored query group (``stepwise.monitor_group``) at the last step has stayed
at or above ``threshold`` for ``patience`` consecutive cycles, up to ``stepwise.steps``.

Every ``eval_every`` cycles the model is validated on fixed held-out worlds (:mod:`harness.runners.stepwise_eval`),
a row goes to ``metrics.csv`` and ``checkpoints/last.ckpt`` is written (``best.ckpt`` when ``val/acc`` improves).
The worlds of cycle i are a pure function of (seed, i), and the checkpoint holds the optimiser, the curriculum,
the RNG and the training numbers of a curve row not yet written, so a killed run resumes where its last checkpoint
left it, to the same curve. At the end the best checkpoint is tested
on held-out worlds and rolled to the longest of ``stepwise.horizons`` (``rollout.csv``, ``pictures/``).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from harness.errors import DivergedError, UserError
from harness.optim import LearningRatePolicy, build_optimizer
from harness.registry import load_entry
from harness.runners.stepwise_eval import (
    TEST_SEED,
    VAL_SEED,
    PictureSaver,
    Tally,
    evaluate,
    long_rollout,
    picture_steps,
    step_loss,
    write_rollout_csv,
)
from harness.runs import CurveWriter, Run, atomic_write
from harness.streams import check_stream_info, check_stream_step, detach_state


def build_stepwise(task: Any, model_entry: str, cfg: DictConfig, task_name: str) -> Any:
    """Check the task's stream (its info and a first step) and build the model, seeded; errors are one line and
    come before the run's directory exists."""
    if cfg.stepwise.threads:
        torch.set_num_threads(int(cfg.stepwise.threads))
    check_stream_info(task_name, task.info)
    generator = torch.Generator().manual_seed(0)
    worlds = task.reset(2, generator, "train")
    for t in (1, 2):
        worlds, step = task.step(worlds, t, generator, "train")
        check_stream_step(task_name, step, task.info, 2)
    group = cfg.stepwise.monitor_group
    if group is not None and group not in task.info["query_groups"]:
        raise UserError(f"stepwise.monitor_group={group!r} is not a query group of {task_name}; its groups: "
                        f"{', '.join(task.info['query_groups'])}")
    check_curriculum_monitor(task, cfg.stepwise)
    torch.manual_seed(int(cfg.seed))
    try:
        return load_entry(model_entry)(cfg.model, task.info)
    except ValueError as exc:
        raise UserError(f"{cfg.model.name} cannot be built from this config: {exc}") from None


PROBE_WORLDS = 64  # worlds a probe draws to see which query groups a step asks


def check_curriculum_monitor(task: Any, spec: DictConfig) -> None:
    """Appendix B's curriculum lengthens trajectories once the monitored group's accuracy at their last step is good
    enough; a group never asked at step ``curriculum.start`` (LSTM recall's ``recall`` at step 1, Game of Life's
    ``intervened`` at step 1 or without interventions) would keep every trajectory at that length. Probed on
    ``PROBE_WORLDS`` training worlds and refused in one line, naming the first step that asks it."""
    group = spec.monitor_group
    start, steps = int(spec.curriculum.start), int(spec.steps)
    if not spec.curriculum.enabled or group is None or start >= steps:
        return
    index = list(task.info["query_groups"]).index(group)
    generator = torch.Generator().manual_seed(0)
    worlds = task.reset(PROBE_WORLDS, generator, "train")
    asked_at = None
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, generator, "train")
        if t >= start and bool((step.query_group[step.query_mask] == index).any()):
            asked_at = t
            break
    if asked_at == start:
        return
    fix = (f"start them there (stepwise.curriculum.start={asked_at}) or monitor another group" if asked_at else
           f"no step up to stepwise.steps ({steps}) asks one: monitor another group, or all "
           "(stepwise.monitor_group=null)")
    raise UserError(f"stepwise.curriculum reads the accuracy of the group stepwise.monitor_group={group!r} at the last "
                    f"step of each trajectory, and no {group} query is asked at step {start} "
                    f"(stepwise.curriculum.start), so trajectories would never grow: {fix}")


def cycle_generator(seed: int, cycle: int) -> torch.Generator:
    """The random stream of outer cycle ``cycle`` of a run with ``seed``: the same on a resumed run."""
    return torch.Generator().manual_seed((int(seed) + 1) * 1_000_000_007 + int(cycle))


@dataclass
class Curriculum:
    """Appendix B's trajectory-length curriculum (disabled: always the full length)."""

    length: int
    target: int
    threshold: float
    patience: int
    enabled: bool
    streak: int = 0

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Curriculum:
        spec = cfg.curriculum
        steps = int(cfg.steps)
        start = min(int(spec.start), steps) if spec.enabled else steps
        return cls(length=start, target=steps, threshold=float(spec.threshold), patience=int(spec.patience),
                   enabled=bool(spec.enabled))

    def observe(self, accuracy: float | None) -> bool:
        """Record one cycle's last-step accuracy; True when the trajectory grew."""
        if not self.enabled or self.length >= self.target or accuracy is None:
            return False
        self.streak = self.streak + 1 if accuracy >= self.threshold else 0
        if self.streak >= self.patience:
            self.length, self.streak = self.length + 1, 0
            return True
        return False


def train_cycle(model: Any, task: Any, optimizer: torch.optim.Optimizer, cfg: DictConfig, length: int,
                generator: torch.Generator, monitor_group: int | None) -> dict[str, float]:
    """One outer cycle of Algorithm 1 (or of full BPTT); returns the cycle's training numbers."""
    batch = int(cfg.stepwise.batch_size)
    update_freq, bptt, clip = int(cfg.stepwise.update_freq), bool(cfg.stepwise.bptt), float(cfg.optim.grad_clip)
    groups = list(task.info["query_groups"])
    overall, final = Tally(groups), Tally(groups)
    worlds = task.reset(batch, generator, "train")
    state = model.initial_state(batch)
    optimizer.zero_grad(set_to_none=True)
    total: torch.Tensor | None = None

    def optimiser_step() -> None:
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for t in range(1, length + 1):
        worlds, step = task.step(worlds, t, generator, "train")
        state = model.update(state if bptt or t == 1 else detach_state(state), step)  # w_0 may be learned
        loss, correct = step_loss(model.extract(state, step), step)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise DivergedError(f"non-finite training loss ({value}) at step {t} of a trajectory")
        overall.add(step, correct.detach(), value)
        if t == length:
            final.add(step, correct.detach())
        if bptt:
            total = loss if total is None else total + loss
            continue
        loss.backward()
        if t % update_freq == 0 or t == length:
            optimiser_step()
    if bptt and total is not None:
        (total / length).backward()
        optimiser_step()
    numbers = {**{f"train/{k}": v for k, v in overall.metrics("").items()},
               **{f"train/final/{k}": v for k, v in final.metrics("").items()}}
    if monitor_group is not None:
        asked = float(final.asked[monitor_group])
        numbers["monitor"] = float(final.correct[monitor_group]) / asked if asked else float("nan")
    else:
        numbers["monitor"] = numbers.get("train/final/acc", float("nan"))
    return numbers


def save_checkpoint(path: Path, model: Any, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "harness": state}
    atomic_write(path, lambda handle: torch.save(payload, handle))


def load_intact(run: Run, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The first checkpoint among ``names`` that loads; a damaged one is set aside (renamed) with a message."""
    for name in names:
        path = run.checkpoint_dir / f"{name}.ckpt"
        if not path.exists():
            continue
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # truncated or foreign file: torch raises several kinds
            aside = run.set_aside(path)
            print(f"{path} is damaged ({type(exc).__name__}); kept as {aside.name}", flush=True)
    return None


def _progress(total: int, done: int) -> Any:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="cycle", dynamic_ncols=True, leave=False)


def train_stepwise(cfg: DictConfig, task: Any, model: Any, run: Run, tracker: Any) -> dict[str, Any]:
    """Train by Algorithm 1, validate and checkpoint, then test the best checkpoint and roll it out. Returns the
    run's summary (best, metrics, steps, throughput, rollout)."""
    spec = cfg.stepwise
    policy = LearningRatePolicy(cfg.optim)
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    curriculum = Curriculum.from_config(spec)
    groups = list(task.info["query_groups"])
    monitor_group = groups.index(spec.monitor_group) if spec.monitor_group is not None else None
    eval_steps = int(spec.eval_steps or spec.steps)
    curves = CurveWriter(run.metrics_path)
    done, elapsed, best, finished, rates = 0, 0.0, None, False, []
    sums: dict[str, float] = {}  # the training numbers of the cycles since the last curve row, and their count:
    count = 0  # checkpointed, so a run resumed between two rows writes the next one over the same cycles
    any_checkpoint = run.has_epoch_checkpoint
    checkpoint = load_intact(run, ("last", "best"))
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        saved = checkpoint["harness"]
        done, elapsed, best, finished = int(saved["cycle"]), float(saved["elapsed"]), saved["best"], saved["finished"]
        rates = list(saved.get("rates", []))
        policy.load_state_dict(saved.get("lr_policy", {}))
        curriculum.length, curriculum.streak = int(saved["length"]), int(saved["streak"])
        sums, count = dict(saved.get("log_sums", {})), int(saved.get("log_count", 0))
        torch.set_rng_state(saved["torch_rng"])
        print(f"resuming after cycle {done} ({elapsed:.0f} s of training)", flush=True)
    elif any_checkpoint:  # each was damaged (said above); where none was saved, the run's header said so
        print("no intact checkpoint: training from the start", flush=True)
    curves.truncate_after(done)

    def state_record() -> dict[str, Any]:
        return {"cycle": done, "elapsed": elapsed, "best": best, "finished": finished, "rates": rates,
                "lr_policy": policy.state_dict(), "length": curriculum.length, "streak": curriculum.streak,
                "log_sums": dict(sums), "log_count": count, "torch_rng": torch.get_rng_state()}

    iterations, max_time = int(spec.iterations), spec.max_time_s
    bar = _progress(iterations, done) if not finished else None
    window_start, window_examples = time.perf_counter(), 0
    while not finished and done < iterations:
        lr = policy.lr_at(done)
        for group_ in optimizer.param_groups:
            group_["lr"] = lr
        started = time.perf_counter()
        numbers = train_cycle(model, task, optimizer, cfg, curriculum.length, cycle_generator(cfg.seed, done),
                              monitor_group)
        elapsed += time.perf_counter() - started
        done += 1
        window_examples += curriculum.length * int(spec.batch_size)
        monitor = numbers.pop("monitor")
        for key, value in numbers.items():
            sums[key] = sums.get(key, 0.0) + value
        count += 1
        if curriculum.observe(None if math.isnan(monitor) else monitor):
            print(f"cycle {done}: curriculum lengthens trajectories to {curriculum.length} steps", flush=True)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{numbers.get('train/loss', float('nan')):.3f}", T=curriculum.length)
        if done % int(spec.log_every) == 0 or done == iterations:
            row = {key: total / count for key, total in sums.items()}
            row.update(lr=lr, trajectory_length=float(curriculum.length))
            curves.append(done, done // int(spec.eval_every), row)
            tracker.log(row, step=done)
            sums, count = {}, 0
        out_of_time = max_time is not None and elapsed >= float(max_time)
        if done % int(spec.eval_every) == 0 or done == iterations or out_of_time:
            rates.append(window_examples / max(time.perf_counter() - window_start, 1e-9))
            val = {f"val/{k}": v for k, v in evaluate(model, task, "val", int(spec.eval_batch), eval_steps,
                                                       VAL_SEED).items()}
            val["train/world_steps_per_s"] = rates[-1]
            curves.append(done, done // int(spec.eval_every), val)
            curves.flush()
            tracker.log(val, step=done)
            shown = "  ".join(f"{k}={v:.4f}" for k, v in val.items() if k.endswith("acc") or k == "val/loss")
            print(f"cycle {done}/{iterations} T={curriculum.length}: {shown}  {rates[-1]:.0f} world-steps/s",
                  flush=True)
            improved = best is None or val["val/acc"] > best["value"]
            if improved:
                best = {"metric": "val/acc", "value": val["val/acc"], "step": done}
            reached = spec.stop_at is not None and val["val/acc"] >= float(spec.stop_at)
            if reached:
                print(f"val/acc={val['val/acc']:.4f} reached stepwise.stop_at={spec.stop_at}: stopping", flush=True)
            finished = reached or out_of_time or done >= iterations
            if out_of_time and not reached:
                print(f"stepwise.max_time_s={max_time} reached after {done} cycles: stopping", flush=True)
            if improved:
                save_checkpoint(run.best_checkpoint, model, optimizer, state_record())
            save_checkpoint(run.last_checkpoint, model, optimizer, state_record())
            window_start, window_examples = time.perf_counter(), 0
    if bar is not None:
        bar.close()
    return finish(cfg, task, model, run, tracker, curves, best, done, rates)


def finish(cfg: DictConfig, task: Any, model: Any, run: Run, tracker: Any, curves: CurveWriter,
           best: dict[str, Any] | None, done: int, rates: list[float]) -> dict[str, Any]:
    """Test the best checkpoint on held-out worlds, roll it to the longest horizon, save the curve and pictures."""
    spec = cfg.stepwise
    best_state = load_intact(run, ("best", "last"))
    if best_state is not None:
        model.load_state_dict(best_state["model"])
    val_metrics = {}
    if best is not None:
        val_metrics = {k: v for row in curves.rows if row.get("step") == best["step"]
                       for k, v in row.items() if k.startswith("val/")}
    test = {f"test/{k}": v for k, v in evaluate(model, task, "test", int(spec.eval_batch),
                                                 int(spec.eval_steps or spec.steps), TEST_SEED).items()}
    if any(math.isnan(v) for v in test.values()):
        raise DivergedError("test metrics are NaN")
    test["test/error"] = 1.0 - test["test/acc"]
    horizons = sorted(int(h) for h in spec.horizons)
    pictures = None
    if PictureSaver.supported(task) and int(spec.pictures) > 0:
        pictures = PictureSaver(model, task, run.path / "pictures", int(spec.pictures), picture_steps(max(horizons)))
    print(f"rolling {int(spec.horizon_batch)} test worlds {max(horizons):,} steps", flush=True)
    rollout = long_rollout(model, task, horizons, int(spec.horizon_batch), pictures)
    write_rollout_csv(run.path / "rollout.csv", rollout.rows)
    print(f"rollout: {rollout.seconds:.1f} s ({rollout.steps_per_s:.0f} world-steps/s); "
          + "  ".join(f"{k}={v:.4f}" for k, v in rollout.metrics.items() if k.count("/") == 2), flush=True)
    metrics = {**val_metrics, **test, **rollout.metrics}
    curves.rows = [row for row in curves.rows if not set(row) & set(test)]
    curves.append(done, done // int(spec.eval_every), test)
    curves.flush()
    tracker.log({**test, **rollout.metrics}, step=done)
    summary: dict[str, Any] = {
        "best": best,
        "metrics": metrics,
        "steps": done,
        "epochs": done // int(spec.eval_every),  # validations
        "throughput": {"train/world_steps_per_s": statistics.median(rates)} if rates else {},
        "rollout": {"file": "rollout.csv", "longest": max(horizons), "worlds": int(spec.horizon_batch),
                    "seconds": rollout.seconds, "world_steps_per_s": rollout.steps_per_s},
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    if pictures is not None and pictures.saved:
        summary["pictures"] = [f"pictures/{name}" for name in pictures.saved]
    return summary
