"""A run's settings checked before anything is loaded or written: settings that depend on each other
(:func:`check_run_config`), the task lists a config names, and where an RL run's Ray comes from
(:func:`check_ray_address`). Each mistake is refused in one line naming its key."""

from __future__ import annotations

import os
import sys
from typing import Any

from omegaconf import OmegaConf

from harness.config import Composed
from harness.errors import UserError


def check_run_config(composed: Composed) -> None:
    """Settings that depend on each other, checked before anything is loaded or written."""
    cfg = composed.cfg
    check_betas(cfg)
    check_time_cap(cfg, TIME_CAPS[composed.task.kind])
    if composed.task.kind == "rl":
        from harness.runners.rl import check_rl_config

        check_rl_config(cfg)
        check_ppo_minibatch(cfg)
        return
    if composed.task.kind == "stepwise":
        if not cfg.stepwise.horizons:
            raise UserError("stepwise.horizons is empty; give at least one rollout length, e.g. [10, 100]")
        if cfg.stepwise.curriculum.enabled and cfg.stepwise.curriculum.start > cfg.stepwise.steps:
            raise UserError(f"stepwise.curriculum.start ({cfg.stepwise.curriculum.start}) is longer than "
                            f"stepwise.steps ({cfg.stepwise.steps}), the length it grows to")
        check_first_recall_step(cfg)
        check_update_freq(cfg)
        return
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import check_protocol_config

        check_protocol_config(cfg)
    else:
        unread = [f"protocol.{key}" for key in ("target", "pretrain") if cfg.protocol.get(key)]
        if unread:
            raise UserError(f"{' and '.join(unread)} {'is' if len(unread) == 1 else 'are'} read by "
                            f"protocol.name=curriculum only, and this run's protocol is {cfg.protocol.name}: add "
                            "protocol.name=curriculum, or name the tasks to train on with task.tasks")
    check_protocol_tasks(composed)
    check_monitor_mode(cfg)


TIME_CAPS = {"supervised": "train.max_time_s", "stepwise": "stepwise.max_time_s", "rl": "rl.max_time_s"}


def check_time_cap(cfg: Any, key: str) -> None:
    """A time cap of 0 seconds is refused: the supervised runners read it as no cap (and trained to the end), the
    RL and stepwise runners as one already reached; null is the way to turn the cap off."""
    cap = OmegaConf.select(cfg, key)
    if cap is not None and float(cap) == 0:
        raise UserError(f"{key}=0 is a cap of no time at all: give the seconds training may take, or {key}=null "
                        "for no cap")


MONITOR_MODES = {"val/acc": "max", "val/loss": "min"}  # the way each monitored metric improves (train.monitor)


def check_monitor_mode(cfg: Any) -> None:
    """``train.monitor_mode`` agrees with ``train.monitor``: ``train.monitor=val/loss`` under the default mode
    (max) kept the checkpoint of the highest validation loss and stopped early once the loss fell for a while."""
    monitor, mode = str(cfg.train.monitor), str(cfg.train.monitor_mode)
    wanted = MONITOR_MODES.get(monitor)
    if wanted is not None and mode != wanted:
        raise UserError(f"train.monitor={monitor} improves as it {'falls' if wanted == 'min' else 'rises'}, but "
                        f"train.monitor_mode is {mode}: the best checkpoint would be the worst; add "
                        f"train.monitor_mode={wanted}")


BETA_OPTIMISERS = ("adam", "adamw", "tf1_nadam")  # harness/optim.py: the optimisers that read ``betas``


def check_betas(cfg: Any) -> None:
    """The schema keeps each of ``optim.betas`` (``rl.optim.betas``) in [0, 1]; a beta of 1, which an optimiser that
    reads them refuses with a ValueError once training has started (a moment average that never leaves its
    start), is refused here, naming the key."""
    for section in ("optim", "rl.optim"):
        optim = OmegaConf.select(cfg, section)
        if optim is None or optim.get("name") not in BETA_OPTIMISERS or optim.get("betas") is None:
            continue
        if any(float(beta) >= 1 for beta in optim.betas):
            raise UserError(f"bad value for '{section}.betas': {list(optim.betas)}; {optim.name} needs each beta "
                            "below 1 (e.g. [0.9, 0.999])")


def check_first_recall_step(cfg: Any) -> None:
    """LSTM recall's ``task.first_recall_step`` (no recall or reminder noise before it; the forced recall at
    ``task.length`` excepted) past every step the run trains and tests on (``stepwise.steps``,
    ``stepwise.eval_steps``) changes nothing but the long rollouts: no trajectory would recall but the forced
    recall, where it is reached. A mistake the task's own checks (its frozen code) do not catch, refused here in
    one line."""
    first = OmegaConf.select(cfg, "task.first_recall_step")
    length = OmegaConf.select(cfg, "task.length")
    if first is None or length is None:
        return
    last = max(int(cfg.stepwise.steps), int(cfg.stepwise.eval_steps or cfg.stepwise.steps))
    if int(first) > last:
        asked = (f"only the forced recall at step {length} would be asked" if int(length) <= last else
                 f"no recall would be asked at all (the forced one, at step {length}, is past them too)")
        raise UserError(f"task.first_recall_step ({first}) is past the last step the run trains and tests on "
                        f"(stepwise.steps and eval_steps: {last}): {asked}; give at most {last}")


def check_update_freq(cfg: Any) -> None:
    """``stepwise.update_freq`` where it would change nothing but the run id: full BPTT takes one optimiser step a
    trajectory whatever it says, and a trajectory never longer than ``stepwise.steps`` steps at its end anyway."""
    freq, steps = int(cfg.stepwise.update_freq), int(cfg.stepwise.steps)
    if cfg.stepwise.bptt and freq != 1:
        raise UserError(f"stepwise.update_freq ({freq}) is read without stepwise.bptt only: full backpropagation "
                        "takes one optimiser step a trajectory; leave update_freq at 1")
    if freq > steps:
        raise UserError(f"stepwise.update_freq ({freq}) is longer than stepwise.steps ({steps}): every trajectory "
                        f"would take its one optimiser step at its end, as update_freq={steps} does")


def check_ppo_minibatch(cfg: Any) -> None:
    """PPO splits each training batch into minibatches of ``rl.ppo.minibatch_size``; one larger than the batch
    (``rl.train_batch_size``, e.g. 200 at CartPole's ``smoke`` profile against the default 256) stops RLlib with a
    ``ValueError`` once Ray has started, so it is refused here."""
    rl = cfg.rl
    if rl.algorithm != "ppo":
        return
    minibatch, batch = int(rl.ppo.minibatch_size), int(rl.train_batch_size)
    if minibatch > batch:
        raise UserError(f"rl.ppo.minibatch_size ({minibatch}) is larger than rl.train_batch_size ({batch}), the batch "
                        f"PPO splits into minibatches: give e.g. rl.ppo.minibatch_size={max(1, batch // 2)}")


def check_protocol_tasks(composed: Composed) -> None:
    """The lists that name tasks as ``task.tasks`` does: ``task.task_vocabulary`` (when given) and a curriculum's
    ``protocol.pretrain`` and ``protocol.target``. Each item is checked against what the task declares for
    ``task.tasks`` (its choices, no repeats), so a misspelt task is refused before anything trains, naming the
    key it was given in."""
    from harness.schema import check_value, key_type

    cfg = composed.cfg
    if "tasks" not in cfg.task:
        return
    kind = key_type("task.tasks", list(cfg.task.tasks), composed.task.schema.get("task.tasks"))
    if kind is None:
        return
    keys = ["task.task_vocabulary"] if cfg.task.get("task_vocabulary") is not None else []
    if cfg.protocol.name == "curriculum":
        keys += ["protocol.pretrain", "protocol.target"]
    for key in keys:
        check_value(key, list(OmegaConf.select(cfg, key) or []), kind)


def check_ray_address(cfg: Any) -> None:
    """Where an RL run's Ray comes from, checked before the run directory exists, as any other mistake: the cluster
    ``RAY_ADDRESS`` names must answer and accept the token; a local Ray must have a CPU for each EnvRunner and
    remote learner, and the GPUs ``rl.num_gpus_per_learner`` asks for (RLlib would otherwise wait for them for
    ever, printing nothing). Skipped inside a sweep's trial (Ray is up, and the
    sweep reserved the trial's CPUs)."""
    address = os.environ.get("RAY_ADDRESS")
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return
    from harness.runners.ray_session import check_cluster, learner_gpus, local_cpus, local_gpus

    if address:
        check_cluster(address)
        return
    runners, learners, cpus = int(cfg.rl.num_env_runners), int(cfg.rl.num_learners), local_cpus(cfg.rl.num_cpus)
    if runners + learners > cpus:
        asked = " and ".join(f"rl.{key}={n}" for key, n in (("num_env_runners", runners), ("num_learners", learners))
                             if n)
        raise UserError(f"{asked} needs a CPU for each EnvRunner and each remote learner ({runners + learners}) but "
                        f"the local Ray has {cpus} (rl.num_cpus, default this machine's CPUs), so the run would wait "
                        f"for ever; lower them (0 runs each in the run's own process) or run it on a cluster "
                        f"(RAY_ADDRESS)")
    asked, gpus = learner_gpus(cfg.rl), local_gpus()
    if asked > gpus:
        raise UserError(f"rl.num_gpus_per_learner={cfg.rl.num_gpus_per_learner} asks for {asked:g} GPU for the "
                        f"learners but this machine has {gpus}, so the run would wait for ever; set "
                        f"rl.num_gpus_per_learner=0 to train the learner on the CPU, or run it on a cluster "
                        f"(RAY_ADDRESS)")
