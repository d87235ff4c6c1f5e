"""``make perf`` records: a benchmark's figures with where and how they were measured, published into
results/perf/ and shown as the README's speed tables (reports/perf.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reports import perf

FIGURES = {"benchmark": "boxworld_env", "single_bridge_steps_per_s": 400000, "vector64_bridge_steps_per_s": 600000,
           "vector64_bridge_vs_single": 1.5, "vector1024_bridge_steps_per_s": 4000000,
           "vector1024_bridge_vs_single": 10.0}


def _bench(*lines: str, code: int = 0) -> list[str]:
    script = "; ".join([*(f"print({line!r})" for line in lines), f"raise SystemExit({code})"])
    return [sys.executable, "-c", script]


def test_a_run_records_the_figures_with_machine_and_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench"
    assert perf.run_benchmark("boxworld_env", _bench("warming up", json.dumps(FIGURES)), bench) == 0
    assert "warming up" in capsys.readouterr().out  # the output is streamed
    record = json.loads((bench / "boxworld_env.json").read_text())
    assert record["figures"] == FIGURES
    assert record["command"].startswith("python -c ")
    assert record["machine"]["cpus"] >= 1 and len(record["machine"]["load_average"]) == 3
    assert "commit" in record["git"] and "python" in record["versions"]
    assert "warming up" in (bench / "boxworld_env.log").read_text()


@pytest.mark.parametrize(("lines", "code", "message"), [
    (("no figures here",), 0, "last line is not a JSON object"),
    ((json.dumps(FIGURES),), 3, "exited with 3"),
])
def test_a_failed_benchmark_records_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            lines: tuple[str, ...], code: int, message: str) -> None:
    bench = tmp_path / "bench"
    assert perf.run_benchmark("boxworld_env", _bench(*lines, code=code), bench) != 0
    assert message in capsys.readouterr().err
    assert not (bench / "boxworld_env.json").exists()


def test_publish_copies_records_and_refuses_what_is_missing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    bench, results = tmp_path / "bench", tmp_path / "results"
    assert perf.publish(["start"], bench, results) == 2
    assert "no record start" in capsys.readouterr().err
    bench.mkdir()
    (bench / "old.json").write_text(json.dumps(FIGURES))  # a bare last line, as `make perf` wrote before records
    assert perf.publish(["old"], bench, results) == 2
    assert "without provenance" in capsys.readouterr().err
    assert perf.run_benchmark("boxworld_env", _bench(json.dumps(FIGURES)), bench) == 0
    assert perf.publish(["boxworld_env"], bench, results) == 0
    assert json.loads((results / "perf" / "boxworld_env.json").read_text())["figures"] == FIGURES


def test_the_speed_section_shows_each_record_with_its_provenance(tmp_path: Path) -> None:
    bench, results = tmp_path / "bench", tmp_path / "results"
    assert perf.speed_section(results) == []  # nothing published: no section
    unknown = {"benchmark": "other_generator", "n": 1000, "rates": {"examples_per_s": 2500.0}}
    for name, figures in (("boxworld_env", FIGURES), ("other_generator", unknown)):
        assert perf.run_benchmark(name, _bench(json.dumps(figures)), bench) == 0
    assert perf.publish([], bench, results) == 0
    text = "\n".join(perf.speed_section(results))
    assert "| bridge BoxWorld, paper configuration | 400,000 | 600,000 (1.50x) | 4.00 M (10.00x) |" in text
    assert "| rates.examples_per_s | 2,500.0 |" in text  # a benchmark without its own table: its figures
    assert text.index("Batched BoxWorld envs") < text.index("other_generator")
    assert text.count("`results/perf/") == 2 and "CPUs" in text and "load average" in text


@pytest.mark.parametrize(("name", "module", "argv"), [
    ("relations_models", "models.relational.bench_models", ["--models", "mlp1", "predinet", "--repeats", "2",
                                                            "--warmup", "1"]),
    ("relations_generator", "tasks.relations_game.bench_generator", ["--n", "20", "--tasks", "same"]),
    ("listops_generator", "tasks.listops.bench_generator", ["--n", "5"]),
    ("pathfinder_generator_easy", "tasks.pathfinder.bench_generator", ["--n", "10", "--difficulty", "easy"]),
])
def test_a_benchmark_with_its_own_table_renders_what_it_prints(name: str, module: str, argv: list[str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The tables of the generator and model-step records read the figures their benchmarks really print."""
    __import__(module, fromlist=["main"]).main(argv)
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    lines = perf.RENDERERS[name][1](figures)
    assert len(lines) >= 3 and all(line.startswith("|") for line in lines)
    assert "nan" not in "\n".join(lines).lower()


def test_a_record_names_the_gpu_nvidia_smi_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorder does not import torch: it asks ``nvidia-smi`` for the GPU, and says nothing without one."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert perf._gpu_name() is None and "gpu" not in perf._machine()
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200'\necho 'NVIDIA H200'\n")
    smi.chmod(0o755)
    assert perf._machine()["gpu"] == "NVIDIA H200"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")  # a driver that does not answer
    assert perf._gpu_name() is None
    record = {"name": "stepwise_gpu", "command": "python -m harness.runners.bench_stepwise", "seconds": 15.0,
              "started": "2026-11-29T23:54:36+00:00", "git": {"commit": "f273e4e3f9"},
              "machine": {"cpus": 16, "processor": "Intel(R) Xeon(R) Processor", "gpu": "NVIDIA H200",
                          "load_average": [0.6, 0.1, 0.0]}}
    assert "16 CPUs (Intel(R) Xeon(R) Processor) and a GPU (NVIDIA H200), load average" in perf._provenance(record)


def test_the_stepwise_table_projects_a_profile_where_the_record_does() -> None:
    pair = {"pair": "game_of_life/updater_extractor", "batch": 256, "steps": 5, "train_world_steps_per_s": 7543.1,
            "rollout_steps": 0, "rollout_worlds": 256, "rollout_s": None}
    gpu = perf._stepwise({"profile": "paper", "device": "cuda",
                          "pairs": [{**pair, "iterations": 60000, "projected_hours": 2.83}]})
    assert gpu[0].startswith("| task/model (`paper` profile, on cuda) |") and "they take at this rate" in gpu[0]
    assert gpu[2] == "| `game_of_life/updater_extractor` | 256 x 5 | 7,543 | 60,000 | 2.83 h | – |"
    older = perf._stepwise({"pairs": [{**pair, "rollout_steps": 10000, "rollout_worlds": 16, "rollout_s": 27.55}]})
    assert older[0] == "| task/model (`cpu` profile) | batch x steps | training world-steps/s | long rollout |"
    assert older[2] == "| `game_of_life/updater_extractor` | 256 x 5 | 7,543 | 10,000 steps x 16 worlds: 27.6 s |"
