"""The speed benchmarks (``bench_*.py``, ``make perf``) refuse a bad command-line value before measuring anything:
exit code 2, one line on stderr (``error: ...``), no traceback, nothing printed or written."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from harness.bench_args import at_least, device_name

REFUSED = [
    ("tasks.listops.bench_generator", ["--n", "-1"], "argument --n: -1 is below 1"),
    ("tasks.listops.bench_generator", ["--n", "0"], "argument --n: 0 is below 1"),
    ("tasks.listops.bench_generator", ["--seed", "-1"], "argument --seed: -1 is below 0"),
    ("tasks.relations_game.bench_generator", ["--n", "0"], "argument --n: 0 is below 1"),
    ("tasks.relations_game.bench_generator", ["--tasks", "sme"], "--tasks: unknown task: sme (did you mean 'same'?)"),
    ("tasks.relations_game.bench_generator", ["--object-sets", "bogus"], "--object-sets: unknown object set: bogus"),
    ("tasks.relations_game.bench_generator", ["--tasks", "colour_shape", "--object-sets", "stripes"],
     "no pair to measure"),
    ("tasks.pathfinder.bench_generator", ["--n", "0"], "argument --n: 0 is below 1"),
    ("tasks.pathfinder.bench_generator", ["--n", "x"], "argument --n: 'x' is not an integer"),
    ("tasks.pathfinder.compare", ["--n", "0"], "argument --n: 0 is below 1"),
    ("tasks.pathfinder.compare", ["--n", "-5"], "argument --n: -5 is below 1"),
    ("tasks.pathfinder.compare", ["--root", "nowhere"], "--root nowhere: no pathfinder32/ folder there"),
    ("tasks.pathfinder.compare", ["--json", "."], "--json .: a folder; name the file to write"),
    ("tasks.boxworld.bench_env", ["--steps", "0"], "argument --steps: 0 is below 1"),
    ("tasks.boxworld.bench_env", ["--repeats", "0"], "argument --repeats: 0 is below 1"),
    ("tasks.boxworld.bench_env", ["--boards", "0"], "argument --boards: 0 is below 1"),
    ("tasks.boxworld.bench_env", ["--boards", "-4"], "argument --boards: -4 is below 1"),
    ("models.agents.bench_agents", ["--batch-sizes", "0"], "argument --batch-sizes: 0 is below 1"),
    ("models.agents.bench_agents", ["--repeats", "0"], "argument --repeats: 0 is below 1"),
    ("models.agents.bench_agents", ["--threads", "0"], "argument --threads: 0 is below 1"),
    ("models.agents.bench_agents", ["--device", "cuda"], "--device cuda: this machine's torch sees no CUDA GPU"),
    ("models.agents.bench_agents", ["--device", "gpu"], "argument --device: 'gpu' is not a device"),
    ("models.relational.bench_models", ["--batch-size", "0"], "argument --batch-size: 0 is below 1"),
    ("models.relational.bench_models", ["--repeats", "0"], "argument --repeats: 0 is below 1"),
    ("models.relational.bench_models", ["--threads", "0"], "argument --threads: 0 is below 1"),
    ("models.relational.bench_models", ["--device", "cuda"], "--device cuda: this machine's torch sees no CUDA GPU"),
    ("models.tpr_rnn.bench_tasks", ["--tasks", "0"], "argument --tasks: 0 is below 1"),
    ("models.tpr_rnn.bench_tasks", ["--tasks", "3", "21"], "argument --tasks: 21 is above 20"),
    ("models.tpr_rnn.bench_tasks", ["--threads", "0"], "argument --threads: 0 is below 1"),
    ("harness.runners.bench_stepwise", ["--cycles", "0"], "argument --cycles: 0 is below 1"),
    ("harness.runners.bench_stepwise", ["--rollout", "-1"], "argument --rollout: -1 is below 0"),
    ("harness.runners.bench_stepwise", ["--pairs", "bogus/x"], "--pairs bogus/x: unknown task 'bogus'"),
    ("harness.runners.bench_stepwise", ["--pairs", "lstm_recall"], "--pairs: 'lstm_recall' is not task/model"),
    ("harness.runners.bench_stepwise", ["--pairs", "babi/tpr_rnn"], "babi is a supervised task, not a stepwise one"),
    ("harness.runners.bench_stepwise", ["--profile", "bogus"], "argument --profile: invalid choice: 'bogus'"),
    ("harness.runners.bench_stepwise", ["--device", "cuda"], "--device cuda: this machine's torch sees no CUDA GPU"),
    ("harness.runners.bench_stacked", ["--device", "cuda"], "--device cuda: this machine's torch sees no CUDA GPU"),
    ("harness.bench_start", ["--task", "bogus"], "unknown task 'bogus'"),
    ("harness.bench_start", ["--model", "bogus"], "unknown model 'bogus'"),
    ("harness.bench_start", ["--profile", "bogus"], "argument --profile: invalid choice: 'bogus'"),
    ("harness.bench_start", ["--runs", "0"], "argument --runs: 0 is below 1"),
    ("harness.bench_start", ["--task", "lstm_recall"], "tpr_rnn cannot run on lstm_recall"),
]


def in_scratch(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``scratch`` (empty) as the working folder, the temporary folder and the run store; torch sees no GPU."""
    import tempfile

    import torch

    monkeypatch.chdir(scratch)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(scratch / "runs"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize(("module", "argv", "message"), REFUSED, ids=[f"{m.split('.', 1)[1]} {' '.join(a)}"
                                                                      for m, a, _ in REFUSED])
def test_a_bad_value_is_one_line_and_exit_code_2(module: str, argv: list[str], message: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(module).main  # first: importing torch may leave its own files in the temp folder
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    in_scratch(scratch, monkeypatch)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert message in err and f"python -m {module} --help" in err
    assert out == "" and list(scratch.iterdir()) == []  # nothing measured, printed or written


def test_a_cuda_index_the_machine_lacks_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from models.relational import bench_models

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(SystemExit) as stopped:
        bench_models.main(["--device", "cuda:3"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--device cuda:3: this machine's torch sees 1 CUDA GPU (cuda:0 to cuda:0)" in err and err.count("\n") == 1


def test_the_types_take_what_they_took_before() -> None:
    assert at_least(1)("3") == 3 and at_least(0)("0") == 0 and at_least(1, 20)("20") == 20
    assert [device_name(d) for d in ("cpu", "cuda", "cuda:1")] == ["cpu", "cuda", "cuda:1"]


def test_the_start_benchmark_measures_the_names_it_checked(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from harness import bench_start

    seen: list[tuple[object, ...]] = []
    figures = {"first_step_s": 1.0, "command_s": 2.0, "imports_s": 0.5, "torch_optimizer_s": 0.4}
    monkeypatch.setattr(bench_start, "measure", lambda *args: seen.append(args) or figures)
    assert bench_start.main([]) == figures
    assert bench_start.main(["--task", "relations_game", "--model", "predinet", "--profile", "cpu", "--runs", "1"])
    assert seen == [("babi", "tpr_rnn", "smoke", 5, "offline"), ("relations_game", "predinet", "cpu", 1, "offline")]


def test_the_stepwise_benchmark_measures_the_pairs_it_checked(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from harness.runners import bench_stepwise

    seen: list[tuple[object, ...]] = []

    def measure(pair: str, *args: object) -> dict[str, object]:
        seen.append((pair, *args))
        return {"train_world_steps_per_s": 1.0, "projected_hours": 1.0, "rollout_s": None}

    monkeypatch.setattr(bench_stepwise, "measure", measure)
    bench_stepwise.main(["--rollout", "0"])
    assert seen == [(pair, 20, 0, 2, "cpu", "cpu") for pair in bench_stepwise.PAIRS]
