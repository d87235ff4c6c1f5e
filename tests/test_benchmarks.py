"""The model benchmarks behind `make perf` run and report every figure they promise (tiny settings)."""

from __future__ import annotations

import pytest

from models.agents import bench_agents
from models.relational import bench_models


def test_relations_game_model_benchmark_reports_each_model():
    figures = bench_models.main(["--models", "mlp1", "predinet", "--repeats", "2", "--warmup", "1"])
    assert set(figures["ms_per_step"]) == {"mlp1", "predinet"}
    assert all(ms > 0 for ms in figures["ms_per_step"].values())
    for name, ms in figures["ms_per_step"].items():
        assert abs(figures["minutes_per_100k_batches"][name] - ms * 100_000 / 60_000) < 0.06


def test_agent_benchmark_reports_both_agents_and_their_ratio():
    figures = bench_agents.main(["--batch-sizes", "4", "--repeats", "1", "--warmup", "0", "--threads", "1"])
    assert set(figures["ms"]["4"]) == {"relational", "simplicial"}
    assert figures["ratio"]["4"] > 0
    gflop = figures["matmul_gflop"]["4"]  # the 2-simplicial block multiplies more than the relational one
    assert 0 < gflop["relational"] < gflop["simplicial"]
    assert figures["matmul_gflop_ratio"]["4"] == pytest.approx(gflop["simplicial"] / gflop["relational"], rel=1e-2)


def test_stepwise_benchmark_prints_one_json_line_per_run(capsys):
    import json

    from harness.runners import bench_stepwise

    bench_stepwise.main(["--pairs", "lstm_recall/stream_lstm", "--cycles", "1", "--rollout", "20", "--threads", "1"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    pair = result["pairs"][0]
    assert result["benchmark"] == "stepwise" and pair["pair"] == "lstm_recall/stream_lstm"
    assert pair["train_world_steps_per_s"] > 0 and pair["rollout_steps"] == 20 and pair["rollout_s"] > 0


def test_stepwise_benchmark_projects_a_profiles_iterations_and_can_skip_the_rollout(capsys):
    """At another profile (smoke here; paper on a GPU) the benchmark projects the profile's stepwise.iterations
    cycles at the measured rate; --rollout 0 leaves the rollout out."""
    import json

    from harness.runners import bench_stepwise

    bench_stepwise.main(["--pairs", "game_of_life/updater_extractor", "--profile", "smoke", "--cycles", "1",
                         "--rollout", "0", "--threads", "1"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    pair = result["pairs"][0]
    assert result["profile"] == "smoke" and pair["profile"] == "smoke" and pair["device"] == "cpu"
    assert pair["rollout_s"] is None and pair["iterations"] > 0
    expected = pair["iterations"] * pair["batch"] * pair["steps"] / pair["train_world_steps_per_s"] / 3600
    assert pair["projected_hours"] == pytest.approx(expected, abs=0.01)


def test_babi_task_throughput_benchmark_compares_each_task_with_task_1():
    from models.tpr_rnn import bench_tasks

    figures = bench_tasks.main(["--tasks", "4", "--repeats", "1", "--warmup", "0"])
    assert set(figures["tasks"]) == {"1", "4"}  # task 1, the reference, is always measured
    assert figures["tasks"]["1"]["vs_task_1"] == 1.0
    assert all(task["examples_per_s"] > 0 and task["statements"] >= 1 for task in figures["tasks"].values())
    for task in figures["tasks"].values():  # statements read per second: the real ones, padding left out
        assert 1 <= task["mean_statements"] <= task["statements"]
        assert task["statements_per_s"] == pytest.approx(task["examples_per_s"] * task["mean_statements"], rel=1e-2)
    assert figures["tasks"]["1"]["statements_vs_task_1"] == 1.0
    assert figures["tasks"]["4"]["mean_statements"] == 2.0  # every task 4 story states two facts
    trimmed = bench_tasks.main(["--tasks", "4", "--repeats", "1", "--warmup", "0", "--trim"])  # the same statements
    assert trimmed["trim"] and not figures["trim"]
    assert {k: t["mean_statements"] for k, t in trimmed["tasks"].items()} == \
        {k: t["mean_statements"] for k, t in figures["tasks"].items()}
