"""Start-up time of ``harness bench``: seconds from process start to the end of the first training step.

    python -m harness.bench_start [--runs 5] [--task babi] [--model tpr_rnn] [--profile smoke] [--wandb offline]

Each run launches the real command (``harness bench --task T --model M --profile P --force``) in a fresh Python
process, on a fresh temporary run store, with W&B in its default offline mode writing into that temporary
folder (its cache and config folders too), so every start is a real start and nothing is left behind.

How the first step is seen without touching the code that computes a run: the child process is the command's
own entry point (:func:`harness.cli.main`) with one wrapper installed first, around
:meth:`harness.tracking.Tracker.log`. The run recorder mirrors each logged training step to the tracker right
after the step (``on_train_batch_end``), so the first call marks the end of the first optimisation step
(the smoke profile logs every step; other profiles log every ``train.log_every_n_steps``). The wrapper prints
a marker line and the parent notes the time it arrives. The whole command's time is reported too, so that
work moved from before the first step to after it shows.

Beside each run, two fresh processes are timed to the marker, the parts of the start that no change to the
harness can remove:

* one that imports torch and builds a torch optimiser (``torch_optimizer_s``, its median). Every
  ``torch.optim.Optimizer`` (the project's TF1 Nadam and RMSProp too) imports ``torch._dynamo`` when it is built,
  through the ``torch._disable_dynamo`` decorators on its methods (torch 2.13, ``torch/optim/optimizer.py``), so
  this is the floor of any training step taken with a torch optimiser, with or without Lightning;
* one that imports torch and ``lightning.pytorch`` (``imports_s``): the floor while training goes through
  Lightning, which also imports torchmetrics and, through it, ``scipy.signal`` and matplotlib when they are
  installed.

Prints one line per run, then the medians as one JSON object (``make perf`` keeps it in ``bench/start.json``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import PROJECT_ROOT
from harness.bench_args import at_least, bench_parser
from harness.config import PROFILES, compose
from harness.errors import UserError

MARKER = "@@harness-bench-start: first step"
# The child: the console script's ``main``, with the first ``Tracker.log`` call announced on stdout.
CHILD = f"""
import sys
from harness import tracking
_log = tracking.Tracker.log
def _first_log(self, metrics, step):
    print("{MARKER}", step, flush=True)
    tracking.Tracker.log = _log
    _log(self, metrics, step)
tracking.Tracker.log = _first_log
from harness.cli import main
sys.exit(main(sys.argv[1:]))
"""
# The floor: what every supervised run imports before its first step, and nothing else.
IMPORTS_CHILD = f"import torch, lightning.pytorch; print({MARKER!r}, flush=True)"
# The floor under it: torch and one optimiser, whose construction imports torch._dynamo.
OPTIMIZER_CHILD = ("import torch; torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1); "
                   f"print({MARKER!r}, flush=True)")


def child_environment(scratch: Path, wandb_mode: str) -> dict[str, str]:
    """The command's environment: a temporary run store, and W&B's folders inside ``scratch``."""
    env = dict(os.environ)
    env.pop("FORCE", None)
    env.update(HARNESS_RUNS_DIR=str(scratch / "runs"), WANDB_MODE=wandb_mode,
               WANDB_CACHE_DIR=str(scratch / "wandb-cache"), WANDB_CONFIG_DIR=str(scratch / "wandb-config"),
               WANDB_DATA_DIR=str(scratch / "wandb-data"), WANDB_ARTIFACT_DIR=str(scratch / "wandb-artifacts"))
    return env


def time_command(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the marker line, seconds to exit) of one run of ``command``; an error if it fails or never
    prints the marker."""
    started = time.perf_counter()
    first_step = None
    lines: list[str] = []
    with subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if first_step is None and line.startswith(MARKER):
                first_step = time.perf_counter() - started
            lines.append(line)
        code = process.wait()
    finished = time.perf_counter() - started
    if code != 0 or first_step is None:
        tail = "".join(lines[-20:])
        why = f"exited with code {code}" if code != 0 else "never reached a training step"
        raise RuntimeError(f"{' '.join(command)} {why}:\n{tail}")
    return first_step, finished


def measure(task: str, model: str, profile: str, runs: int, wandb_mode: str) -> dict[str, Any]:
    command = [sys.executable, "-c", CHILD, "bench", "--task", task, "--model", model, "--profile", profile,
               "--force"]
    first_steps, totals, imports, optimizers = [], [], [], []
    for number in range(1, runs + 1):
        with tempfile.TemporaryDirectory(prefix="harness-bench-start-") as scratch:
            env = child_environment(Path(scratch), wandb_mode)
            first_step, total = time_command(command, env)
            imported, _ = time_command([sys.executable, "-c", IMPORTS_CHILD], env)
            optimizer, _ = time_command([sys.executable, "-c", OPTIMIZER_CHILD], env)
        first_steps.append(round(first_step, 3))
        totals.append(round(total, 3))
        imports.append(round(imported, 3))
        optimizers.append(round(optimizer, 3))
        print(f"run {number}/{runs}: first step at {first_step:.2f} s, command done at {total:.2f} s; "
              f"importing torch and Lightning alone: {imported:.2f} s; torch and an optimiser alone: "
              f"{optimizer:.2f} s", flush=True)
    return {"benchmark": "start", "task": task, "model": model, "profile": profile, "wandb": wandb_mode,
            "runs": runs, "first_step_s": round(statistics.median(first_steps), 3),
            "command_s": round(statistics.median(totals), 3), "first_step_s_each": first_steps,
            "command_s_each": totals, "imports_s": round(statistics.median(imports), 3), "imports_s_each": imports,
            "torch_optimizer_s": round(statistics.median(optimizers), 3), "torch_optimizer_s_each": optimizers}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = bench_parser("harness.bench_start", __doc__.splitlines()[0])
    parser.add_argument("--runs", type=at_least(1), default=5, help="fresh starts; the medians are reported")
    parser.add_argument("--task", default="babi")
    parser.add_argument("--model", default="tpr_rnn")
    parser.add_argument("--profile", default="smoke", choices=PROFILES)
    parser.add_argument("--wandb", default="offline", choices=("offline", "disabled"),
                        help="W&B mode of the runs (default: offline, the harness's default)")
    args = parser.parse_args(argv)
    try:  # before any child starts: a misspelt name is one line here, not a child's failure in a traceback
        compose(args.task, args.model, args.profile, [])
    except UserError as exc:
        parser.error(str(exc))
    figures = measure(args.task, args.model, args.profile, args.runs, args.wandb)
    print(f"median of {args.runs}: first step at {figures['first_step_s']:.2f} s, command done at "
          f"{figures['command_s']:.2f} s; importing torch and Lightning alone: {figures['imports_s']:.2f} s; "
          f"torch and an optimiser alone: {figures['torch_optimizer_s']:.2f} s")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
