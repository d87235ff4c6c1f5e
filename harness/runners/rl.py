"""Reinforcement-learning runs on RLlib (new API stack): IMPALA as in the 2-simplicial Transformer
paper, PPO as a control, both around the same harness agent (:mod:`harness.runners.rl_module`).

A run's ``rl`` config section holds the algorithm's settings; the task supplies the environment
(``task.env_creator`` and ``task.env_config()``), the registry the agent class. The loop calls
``algo.train()`` until ``rl.total_env_steps`` environment steps, ``rl.max_time_s`` seconds of training
(summed over resumes) or a training win rate of ``rl.stop_at_win_rate`` (the mean of the last five
iterations' values: one iteration's is too noisy to stop on), whichever comes first. Each
iteration appends one row to ``metrics.csv`` (step = environment steps) and mirrors it to W&B; every
``rl.checkpoint_every`` iterations (and at the end, and on Ctrl-C) the algorithm is saved to
``<run>/checkpoints/algorithm`` by write-then-rename, which is where a resumed run continues from.
Every ``rl.select_every`` iterations, and once more when training stops, the current policy plays a
selection round on boards of its own (:mod:`harness.runners.rl_select`); at the end the best policy of those
rounds plays ``rl.eval_episodes`` fresh episodes in the driver (actions sampled, as in training;
:mod:`harness.runners.rl_eval`): ``eval/win_rate``, ``eval/win_rate/<puzzle type>``, ``eval/episode_return``.

Settings for 2 cores: one EnvRunner stepping a batch of boards, the learner in the driver
(``num_learners=0``; ``IMPALAConfig`` in RLlib's ``ray/rllib/algorithms/impala/impala.py`` defaults to one remote
learner, which would need a third CPU, and updates synchronously when ``num_learners`` is 0), a 50 ms sampler
timeout instead of IMPALA's busy poll (``timeout_s_sampler_manager`` defaults to 0.0 there), workers at
niceness 0 (:mod:`harness.runners.ray_session`). A learner trains on a GPU only when ``rl.num_gpus_per_learner``
asks for one (the BoxWorld ``paper`` profiles: one remote learner on one GPU, as the reference notebook's cluster,
dmurfet/2simplicialtransformer ``notebooks/training.ipynb``); the env runners always step on CPUs.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.errors import DivergedError, UserError
from harness.runners.rl_eval import evaluate
from harness.runners.rl_select import PolicySelector
from harness.runs import CurveWriter, Run

ALGORITHMS = ("impala", "ppo")
LOSS_REDUCTIONS = ("sum", "mean")  # see harness.runners.rl_learner
ENV_NAME = "harness-rl-env"
STOP_WINDOW = 5  # rl.stop_at_win_rate applies to the mean win rate of this many iterations in a row


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def check_rl_config(cfg: Any) -> None:
    """User mistakes in the ``rl`` section, caught before Ray starts."""
    rl = cfg.rl
    if rl.algorithm not in ALGORITHMS:
        raise UserError(f"bad value for 'rl.algorithm': {rl.algorithm!r}; one of {', '.join(ALGORITHMS)}")
    if rl.loss_reduction not in LOSS_REDUCTIONS:
        raise UserError(f"bad value for 'rl.loss_reduction': {rl.loss_reduction!r}; "
                        f"one of {', '.join(LOSS_REDUCTIONS)}")
    for key in ("total_env_steps", "train_batch_size", "unroll", "envs_per_runner"):
        if int(rl[key]) <= 0:
            raise UserError(f"'rl.{key}' must be positive, got {rl[key]}")


def gpus_per_learner(rl: Any) -> int | float:
    """``rl.num_gpus_per_learner`` as RLlib takes it (a whole number as an int; 0 in a config stored before the key
    existed): with ``num_learners`` 0 the driver's local learner trains on that GPU (RLlib's
    ``AlgorithmConfig.learners``)."""
    gpus = float(rl.get("num_gpus_per_learner", 0) or 0)
    return int(gpus) if gpus.is_integer() else gpus


def build_algorithm_config(cfg: Any, task: Any, agent_entry: str) -> Any:
    """The RLlib AlgorithmConfig of a run: environment, agent, algorithm settings, 2-core resources."""
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.tune.registry import register_env

    from harness.runners.rl_learner import HarnessIMPALALearner, HarnessPPOLearner
    from harness.runners.rl_metrics import EpisodeOutcomes
    from harness.runners.rl_module import AgentRLModule

    rl = cfg.rl
    register_env(ENV_NAME, task.env_creator)
    batched = bool(rl.batched_env) and getattr(task, "has_vector_env", False)
    module_config = {"entry": agent_entry, "model": _plain(cfg.model), "agent": _plain(cfg.agent)}
    learner_settings = {"optim": _plain(rl.optim), "loss_reduction": str(rl.loss_reduction)}
    common = dict(lr=float(rl.optim.lr), gamma=float(rl.gamma), grad_clip=float(rl.grad_clip) or None,
                  train_batch_size_per_learner=int(rl.train_batch_size), entropy_coeff=float(rl.entropy_coeff),
                  vf_loss_coeff=float(rl.vf_loss_coeff))
    if rl.algorithm == "impala":
        algo = IMPALAConfig().training(
            **common, grad_clip_by="global_norm",
            vtrace_clip_rho_threshold=float(rl.vtrace_clip_rho),
            vtrace_clip_pg_rho_threshold=float(rl.vtrace_clip_pg_rho),
            timeout_s_sampler_manager=float(rl.sampler_timeout_s))
    else:
        algo = PPOConfig().training(
            **common, num_epochs=int(rl.ppo.num_epochs),
            minibatch_size=int(rl.ppo.minibatch_size), clip_param=float(rl.ppo.clip_param),
            lambda_=float(rl.ppo.gae_lambda))
    return (
        algo.environment(ENV_NAME, env_config=task.env_config())
        .env_runners(num_env_runners=int(rl.num_env_runners), num_envs_per_env_runner=int(rl.envs_per_runner),
                     rollout_fragment_length=int(rl.unroll),
                     gym_env_vectorize_mode="vector_entry_point" if batched else "sync")
        .learners(num_learners=int(rl.num_learners), num_gpus_per_learner=gpus_per_learner(rl),
                  learner_config_dict=learner_settings,
                  learner_class=HarnessIMPALALearner if rl.algorithm == "impala" else HarnessPPOLearner)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=AgentRLModule, model_config=module_config))
        .reporting(min_sample_timesteps_per_iteration=int(rl.min_steps_per_iteration),
                   min_time_s_per_iteration=float(rl.min_time_per_iteration_s),
                   metrics_num_episodes_for_smoothing=int(rl.smoothing_episodes))
        .callbacks(EpisodeOutcomes)
        .debugging(seed=int(cfg.seed))
    )


def _checkpoint_path(run: Run) -> Path:
    return run.checkpoint_dir / "algorithm"


def _save(algo: Any, run: Run) -> None:
    """Write the algorithm's state next to the last one, then swap: a kill never leaves half a checkpoint."""
    final = _checkpoint_path(run)
    fresh, stale = final.with_name("algorithm.tmp"), final.with_name("algorithm.old")
    for leftover in (fresh, stale):
        shutil.rmtree(leftover, ignore_errors=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    algo.save_to_path(str(fresh.resolve()))
    if final.exists():
        final.rename(stale)
    fresh.rename(final)
    shutil.rmtree(stale, ignore_errors=True)


def _restore(algo: Any, run: Run) -> bool:
    """Restore the last checkpoint; a damaged one is set aside (renamed, not deleted) and training starts over."""
    path = _checkpoint_path(run)
    stale = path.with_name("algorithm.old")
    if not path.exists() and stale.exists():  # killed between the two renames of _save
        stale.rename(path)
    if not path.exists():
        return False
    try:
        algo.restore_from_path(str(path.resolve()))
    except Exception as exc:  # a truncated or foreign checkpoint: RLlib raises several kinds
        aside = run.set_aside(path)
        print(f"{path} is damaged ({type(exc).__name__}: {str(exc)[:120]}); kept as {aside.name}; "
              "training from the start", flush=True)
        return False
    return True


def _weights_finite(algo: Any) -> bool:
    """Whether every weight of the learner's module is finite (a diverged update must not be checkpointed)."""
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID

    weights = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    return all(np.isfinite(np.asarray(value)).all() for value in weights.values())


def _median_rate(curves: CurveWriter) -> dict[str, float]:
    """Median env steps/s over every iteration in the curve, earlier attempts of a resumed run included."""
    rates = sorted(row["perf/env_steps_per_s"] for row in curves.rows if "perf/env_steps_per_s" in row)
    return {"env_steps_per_s": rates[len(rates) // 2]} if rates else {}


def _record(run: Run, results: dict[str, Any], **fields: Any) -> None:
    """Progress into results.json now and into the launcher's copy, which it writes last."""
    results.update(fields)
    run.update_results(**fields)


def _resume_position(algo: Any, results: dict[str, Any], curves: CurveWriter) -> tuple[int, int]:
    """Environment steps and iterations of the checkpoint just restored, read from the algorithm's own state (its
    metrics logger and ``training_iteration`` are saved with it). results.json cannot say: it is written after the
    checkpoint, so a kill between the two leaves it one checkpoint behind, and resuming at its position would drop
    and train again the iterations the checkpoint already holds. It (else the curve's last row) is read only for a
    checkpoint whose state has no position."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    steps = int(algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0) or 0)
    iteration = int(algo.training_iteration or 0)
    if steps and iteration:
        return steps, iteration
    last = curves.rows[-1] if curves.rows else {}
    return int(results.get("env_steps") or last.get("step", 0)), int(results.get("iterations") or last.get("epoch", 0))


def _resume_curve(curves: CurveWriter, steps: int) -> None:
    """Keep the curve's training rows up to the restored checkpoint's ``steps``: rows past it are retrained, and
    an earlier attempt's evaluation row (``eval/*``, appended when training ended, at the last iteration's step)
    is played again when this attempt ends."""
    curves.rows = [row for row in curves.rows if not any(key.startswith("eval/") for key in row)]
    curves.truncate_after(steps)


def _learner_weights(algo: Any) -> dict[str, Any]:
    """The learner's RLModule state: the policy as trained so far."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    return algo.learner_group.get_weights()[DEFAULT_MODULE_ID]


def _module_with(algo: Any, weights: dict[str, Any]) -> Any:
    """The driver's RLModule holding ``weights`` (IMPALA syncs the learner's only to the remote EnvRunners)."""
    module = algo.get_module()
    module.set_state(weights)
    return module


def _selection_round(selector: PolicySelector, algo: Any, run: Run, results: dict[str, Any], iteration: int,
                     steps: int) -> dict[str, float]:
    """Play a selection round with the learner's current policy; the round's ``select/*`` curve values."""
    weights = _learner_weights(algo)
    row = selector.play(_module_with(algo, weights), weights, iteration, steps)
    _record(run, results, selection=selector.best)
    return row


def _progress(iteration: int, steps: int, total: int, row: dict[str, float], rate: float) -> str:
    win = row.get("train/win_rate")
    ret = row.get("train/episode_return")
    parts = [f"iter {iteration:4d}", f"env steps {steps:,}/{total:,} ({100 * steps / max(total, 1):.0f}%)"]
    if win is not None:
        parts.append(f"win {win:.3f}")
    if ret is not None:
        parts.append(f"return {ret:.2f}")
    parts.append(f"{rate:,.0f} steps/s")
    return "  ".join(parts)


def train_rl(cfg: Any, task: Any, agent_entry: str, run: Run, tracker: Any, results: dict[str, Any]) -> dict[str, Any]:
    """Train (or resume) one RL run; returns the summary merged into results.json."""
    from harness.runners.ray_session import ray_session
    from harness.runners.rl_metrics import env_steps, iteration_row, loss_is_finite

    check_rl_config(cfg)
    rl = cfg.rl
    if str(results.get("device", "")).startswith("cuda") and not gpus_per_learner(rl):
        import torch  # the machine has a GPU, but the learner trains on the CPU: the run's device says so

        results["device"] = f"cpu, {torch.get_num_threads()} threads (rl.num_gpus_per_learner=0)"
    total = int(rl.total_env_steps)
    curves = CurveWriter(run.metrics_path)
    trained_before = float(results.get("train_time_s") or 0.0)
    with ray_session(num_cpus=rl.num_cpus):
        algo = build_algorithm_config(cfg, task, agent_entry).build_algo()
        try:
            resumed = _restore(algo, run)
            steps, iteration = _resume_position(algo, results, curves) if resumed else (0, 0)
            _resume_curve(curves, steps)
            if resumed:
                print(f"resumed from {_checkpoint_path(run)} at {steps:,} env steps", flush=True)
            selector = PolicySelector(cfg, task, run, results)
            if not resumed:
                selector.forget()
            results["parameters"] = sum(p.numel() for p in algo.get_module().parameters())  # the learner's shapes
            started = time.perf_counter()
            last_row: dict[str, float] = {}
            recent_wins: list[float] = []  # the last STOP_WINDOW iterations' training win rates
            stop_reason = "env steps"
            finite = True  # False once an iteration diverged: nothing after it is checkpointed
            saved = 0  # the iteration last saved
            try:
                while steps < total:
                    tick = time.perf_counter()
                    result = algo.train()
                    elapsed = time.perf_counter() - tick
                    if not loss_is_finite(result):
                        finite = False
                        raise DivergedError(f"non-finite loss at iteration {iteration + 1} ({steps:,} env steps)")
                    new_steps = env_steps(result)
                    rate = (new_steps - steps) / elapsed if elapsed > 0 else 0.0
                    steps, iteration = new_steps, iteration + 1
                    last_row = {**iteration_row(result), "perf/env_steps_per_s": rate}
                    if selector.due(iteration):
                        last_row.update(_selection_round(selector, algo, run, results, iteration, steps))
                    curves.append(steps, iteration, last_row)
                    tracker.log(last_row, step=steps)
                    print(_progress(iteration, steps, total, last_row, rate), flush=True)
                    if iteration % int(rl.checkpoint_every) == 0:
                        if not _weights_finite(algo):
                            finite = False
                            raise DivergedError(f"non-finite weights after iteration {iteration} ({steps:,} env steps)")
                        curves.flush()
                        _save(algo, run)
                        saved = iteration
                        _record(run, results, env_steps=steps, iterations=iteration,
                                train_time_s=trained_before + time.perf_counter() - started)
                    train_time = trained_before + time.perf_counter() - started
                    if rl.max_time_s is not None and train_time >= float(rl.max_time_s):
                        stop_reason = "time limit"
                        break
                    if "train/win_rate" in last_row:
                        recent_wins = [*recent_wins, last_row["train/win_rate"]][-STOP_WINDOW:]
                    if (rl.stop_at_win_rate is not None and len(recent_wins) == STOP_WINDOW
                            and sum(recent_wins) / STOP_WINDOW >= float(rl.stop_at_win_rate)):
                        stop_reason = "win rate reached"
                        break
            finally:  # keep what was learned, even on Ctrl-C or an error, but never a diverged state
                curves.flush()  # rows past the last checkpoint are dropped when the run resumes
                if finite and iteration and _weights_finite(algo):
                    if saved != iteration:  # not saved already, by a checkpoint_every iteration that ended training
                        _save(algo, run)
                    _record(run, results, env_steps=steps, iterations=iteration,
                            train_time_s=trained_before + time.perf_counter() - started)
            print(f"training stopped ({stop_reason}) after {steps:,} env steps", flush=True)
            final_row: dict[str, float] = {}
            if selector.enabled and iteration and selector.last_round != iteration:  # the last policy is a candidate
                final_row = _selection_round(selector, algo, run, results, iteration, steps)
            weights = selector.best_weights() or _learner_weights(algo)
            if selector.best is not None:
                print(f"evaluating the policy of iteration {selector.best['iteration']} "
                      f"({selector.best['env_steps']:,} env steps), the best of the selection rounds", flush=True)
            evaluation = evaluate(_module_with(algo, weights), task, int(rl.eval_episodes), int(rl.eval_max_steps),
                                  int(cfg.seed))
        finally:
            algo.stop()
    metrics = {**{k: v for k, v in last_row.items() if k.startswith("train/")}, **evaluation}
    curves.append(steps, iteration, {**final_row, **evaluation})
    curves.flush()
    tracker.log(evaluation, step=steps)
    return {
        "metrics": metrics,
        "steps": steps,
        "env_steps": steps,
        "iterations": iteration,
        "stop_reason": stop_reason,
        "selection": selector.best,
        "throughput": _median_rate(curves),
        "train_time_s": trained_before + time.perf_counter() - started,
    }
