"""The README's world-state tables: Experiment 0's recall probe (``lstm_recall``) and the world-state tasks (Game of
Life, World of Numbers), each run with its rollout curve, the training it had and, for the Game of Life, the
"all dead" floor of its own worlds (:mod:`reports.floors`)."""

from __future__ import annotations

from pathlib import Path

from reports.floors import EARLY_STEPS, FLOOR_COMMAND, dead_floor, load_floor
from reports.markdown import table as _table
from reports.papers import PaperSpec
from reports.readme_cells import mean_of, mean_sd, metric_values, minutes, run_ids
from reports.store import RunRecord, cfg_get, natural_key


def _recall_condition(run: RunRecord) -> tuple[str, str]:
    """An Experiment 0 run's condition in words, and what the paper found for it (Moskvichev & Liu 2021, §7.1
    and Appendix B, "Experiment 0"; GPU timings)."""
    mode, extractor = cfg_get(run.config, "task.mode"), cfg_get(run.config, "model.extractor")
    bptt, noise = bool(cfg_get(run.config, "stepwise.bptt")), float(cfg_get(run.config, "task.reminder_noise") or 0)
    gap = int(cfg_get(run.config, "task.first_recall_step") or 2)
    words = [f"{mode}, {extractor} extractor" if extractor else str(mode), "full BPTT" if bptt else "stop-gradient"]
    if noise:
        words.append(f"reminder noise {noise:g}")
    if gap > 2:
        words.append(f"no recall before step {gap}")
    if run.model != "stream_lstm":
        found = "– (Experiment 0 trains the LSTM only)"
    elif bptt:
        found = "converges in under 2 minutes"
    elif mode == "thorough" and extractor == "query_mlp":
        found = "ceiling in under 2 minutes"
    elif noise:
        found = "ceiling with the noise removed at test (noise 0.1: under 10 minutes; 0.05: 45 to 60 minutes)"
    else:
        found = "final RECALL at chance, no progress in an hour"
    return ", ".join(words), found


def _rollout(run: RunRecord, group: str | None = None, horizons: list[int] | None = None) -> str:
    """Accuracy at each long-rollout horizon the run measured (``rollout/step_<h>/acc``, or within one query
    group: ``rollout/step_<h>/<group>/acc``; a horizon where the group was not asked is left out); ``horizons``:
    :func:`_horizons` of the run, where the caller has them already."""
    name = f"{group}/acc" if group else "acc"
    return ", ".join(f"{step:,}: {mean_sd(metric_values([run], f'rollout/step_{step}/{name}'))}"
                     for step in (_horizons(run) if horizons is None else horizons)
                     if run.metric(f"rollout/step_{step}/{name}") is not None) or "–"


def _horizons(run: RunRecord) -> list[int]:
    """The long-rollout horizons the run measured (``rollout/step_<h>/acc``), in order."""
    return sorted(int(key.split("/")[1][len("step_"):]) for key in run.metrics
                  if key.startswith("rollout/step_") and key.endswith("/acc") and key.count("/") == 2)


def _world_rollout(run: RunRecord) -> str:
    """:func:`_rollout` preceded by the rollout's first steps and its training length (from ``rollout.csv``), where a
    model that learned a few steps of the dynamics but not to repeat them shows (Game of Life: step 2 right, step 3
    no better than answering "dead"). A step that is also a horizon is shown once, among the horizons."""
    early, horizons = "", _horizons(run)
    curve = run.rollout
    if curve is not None and "acc" in curve.columns:
        wanted = [step for step in dict.fromkeys([*EARLY_STEPS, int(cfg_get(run.config, "stepwise.steps"))])
                  if step not in horizons]
        found = {int(step): float(acc) for step, acc in zip(curve["step"], curve["acc"], strict=True)
                 if int(step) in wanted}
        early = ", ".join(f"{step:,}: {100 * found[step]:.1f}" for step in wanted if step in found)
    later = _rollout(run, horizons=horizons)
    return ", ".join(part for part in (early, later) if part and part != "–") or "–"


def _world_training(run: RunRecord, gradient: bool = True) -> str:
    """Cycles, worlds and steps of a stepwise run (with its curriculum's start, the training accuracy that lengthens
    its trajectories and the length it reached), how the gradient crosses steps (``gradient``: where the table's
    setting column does not say), and its training throughput."""
    rate = (run.results.get("throughput") or {}).get("train/world_steps_per_s")
    steps = f"{cfg_get(run.config, 'stepwise.steps')} steps"
    if cfg_get(run.config, "stepwise.curriculum.enabled"):
        reached = "?"
        if run.curves is not None and "trajectory_length" in run.curves.columns:
            reached = str(int(run.curves["trajectory_length"].dropna().iloc[-1]))
        threshold = float(cfg_get(run.config, "stepwise.curriculum.threshold"))
        steps = (f"{cfg_get(run.config, 'stepwise.curriculum.start')} to {steps} (curriculum at {100 * threshold:g}% "
                 f"training accuracy; reached {reached})")
    if gradient:
        steps += ", full BPTT" if cfg_get(run.config, "stepwise.bptt") else ", stop-gradient"
    return f"{mean_of([run], 'steps')} cycles of {cfg_get(run.config, 'stepwise.batch_size')} worlds x {steps}" \
        + (f", {rate:,.0f} world-steps/s" if rate else "")


def _rollout_time(run: RunRecord) -> str:
    """How long the run's longest rollout took (``results.json``'s ``rollout``), on how many torch threads."""
    rollout = run.results.get("rollout") or {}
    seconds, steps, worlds = rollout.get("seconds"), rollout.get("longest"), rollout.get("worlds")
    if not isinstance(seconds, int | float) or not steps or not worlds:
        return "–"
    threads = cfg_get(run.config, "stepwise.threads")
    return f"{int(steps):,} steps x {int(worlds)} worlds in {seconds:.0f} s" \
        + (f" ({threads} thread{'s' if threads != 1 else ''})" if threads else "")


WORLD_TASKS = ("game_of_life", "world_of_numbers")
STREAM_TASKS = ("lstm_recall", *WORLD_TASKS)  # every run of these goes in the world-state tables


def _world_setting(run: RunRecord) -> str:
    if run.task == "game_of_life":
        size, flips = cfg_get(run.config, "task.size"), cfg_get(run.config, "task.interventions")
        return f"{size}x{size} {cfg_get(run.config, 'task.boundary')}, 0..{flips} interventions a step"
    return f"{cfg_get(run.config, 'task.n')} digits ({cfg_get(run.config, 'task.source')}), " \
           f"0..{cfg_get(run.config, 'task.first_instructions')} pixels told at step 1, " \
           f"0..{cfg_get(run.config, 'task.instructions')} after, {cfg_get(run.config, 'task.queries')} asked"


def world_setting(run: RunRecord) -> str:
    """What the world-state tables say a run of a stream task ran on: an LSTM recall run's condition, a Game of
    Life or World of Numbers run's setting."""
    return _recall_condition(run)[0] if run.task == "lstm_recall" else _world_setting(run)


def _groups_at_test(run: RunRecord) -> str:
    """Test accuracy per query group at the training length (e.g. observed / unobserved pixels)."""
    names = sorted({key.split("/")[1] for key in run.metrics
                    if key.startswith("test/") and key.endswith("/acc") and key.count("/") == 2} - {"final"})
    return ", ".join(f"{name} {mean_sd(metric_values([run], f'test/{name}/acc'))}" for name in names) or "–"


def _model_size(run: RunRecord) -> str:
    """The Updater-Extractor's sizes (Appendix B's terms), so that runs of one task at other sizes are told apart."""
    if run.model != "updater_extractor":
        return run.model
    size = {key: cfg_get(run.config, f"model.{key}")
            for key in ("d_model", "tokens", "updater_layers", "extractor_layers", "ff_size")}
    return f"{run.model} (width {size['d_model']}, {size['tokens']} tokens, {size['updater_layers']} + " \
           f"{size['extractor_layers']} layers, feed-forward {size['ff_size']})"


def world_state_section(runs: list[RunRecord], papers: list[PaperSpec], results_dir: Path) -> list[str]:
    """The two tables, from the completed runs of the stream tasks; ``results_dir`` holds the floor's file."""
    recall = sorted((run for run in runs if run.task == "lstm_recall" and run.status == "completed"),
                    key=lambda run: (_recall_condition(run)[0], natural_key(run.run_id)))
    recall_rows = [[*_recall_condition(run)[:1], _model_size(run),
                    mean_sd(metric_values([run], "test/final/recall/acc")),
                    mean_sd(metric_values([run], "test/acc")), _rollout(run, "recall"), _recall_condition(run)[1],
                    _world_training(run, gradient=False), minutes([run]), run_ids([run])] for run in recall]
    recall_header = ["condition", "model", "final RECALL acc %", "all queries acc %", "rollout recall acc % at step",
                     "the paper (§7.1, Appendix B)", "training", "wall time", "run"]
    world = sorted((run for run in runs if run.task in WORLD_TASKS and run.status == "completed"),
                   key=lambda run: (run.task, _world_setting(run), natural_key(run.run_id)))
    floor = load_floor(results_dir)
    world_rows = [[run.task, _world_setting(run), _model_size(run), str(run.profile),
                   mean_sd(metric_values([run], "test/acc")), mean_sd(metric_values([run], "test/final/acc")),
                   _groups_at_test(run), _world_rollout(run), dead_floor(run, floor), _rollout_time(run),
                   _world_training(run), minutes([run]), run_ids([run])]
                  for run in world]
    world_header = ["task", "setting", "model", "profile", "test acc % (all steps)", "at the last training step",
                    "per query group", "rollout acc % at step", "'all dead' answers % on the same worlds",
                    "longest rollout took", "training",
                    "wall time", "run"]
    return ["### World-state tracking: Experiment 0, LSTM recall (Moskvichev & Liu 2021, §7.1)", "",
            "Single-layer LSTM (hidden 64), trained step by step (Algorithm 1: the state enters each step without "
            "its gradient) or with full backpropagation through the 10-step sequence. Final RECALL: the forced "
            "recall at step 10 on held-out worlds (chance 1/9 = 11.1%). Rollouts go past the training length "
            "with the same stream (no forced recall after step 10; 256 worlds, so a horizon's recall accuracy "
            "rests on about 77 recall queries). The paper's column is its finding on a GPU at "
            "lr 1e-4; ours run at lr 1e-3 on 2 CPU cores (tasks/lstm_recall/pairs/stream_lstm.yaml). A row of "
            "another model is its cell of the matrix (sweeps/matrix_cpu.yaml).", "",
            *_table(recall_header, recall_rows), "",
            "### World-state tracking: Game of Life and World of Numbers (Moskvichev & Liu 2021, §7.2)", "",
            "The Updater-Extractor trained on trajectories of `stepwise.steps` steps, then rolled forward on "
            "held-out worlds. The paper reports no observable drop up to 10,000 steps after training on length 5 "
            "(Game of Life: 60,000 iterations at batch 256, about 3 days on a GPU; World of Numbers: 50,000 at "
            "batch 128, about 5 hours), without a number per step. Random Game of Life boards mostly die out "
            "or settle, so answering \"dead\" everywhere scores well and better with time: that floor stands "
            "beside each Game of Life run, measured on the very boards its figures come from (its 256 test "
            "worlds at the training length, the 16 or 64 worlds of its rollout; "
            "`results/generators/game_of_life.json`, from "
            f"`{floor.get('command', FLOOR_COMMAND)}`). A rollout figure equal to its "
            "floor means the model answers \"dead\" on every cell of those worlds, or as good as.", "",
            *_table(world_header, world_rows)]
