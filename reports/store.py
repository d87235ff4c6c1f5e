"""Reading the run store for the report: every run directory as a :class:`RunRecord`.

Nothing here raises on a bad run: a ``results.json`` or ``metrics.csv`` that cannot be read marks the run
``unreadable`` (with the reason in ``problems``) and the build goes on. A stepwise run's extras (the long-horizon
rollout curve ``rollout.csv`` and the ``pictures/`` of Moskvichev & Liu 2021, §7) are read the same way: a damaged
one becomes a problem line and is left out.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from harness.config import NEUTRAL_ADDED_KEYS
from harness.registry import safe_load_yaml
from harness.runs import owner_state, type_damage

UNREADABLE = "unreadable"
REFERENCE = "reference"  # a run of the tracked reference store results/
YOURS = "yours"  # a run of the user's run store runs/
HELD_OUT = "held_out/acc"  # derived: the mean test accuracy over the run's held-out sets (config task.test_sets)
SINGLE = "single"
CURRICULUM = "curriculum"
ROLLOUT_FILE = "rollout.csv"  # a stepwise run's long-horizon curve (harness.runners.stepwise_eval)
PICTURES_DIR = "pictures"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MISSING = object()


@dataclass
class RunRecord:
    """One run directory: its results, config and curves, as far as they could be read."""

    path: Path
    rel_path: str
    task: str
    model: str
    run_id: str
    results: dict[str, Any]
    status: str
    gone: bool = False  # status "running", but its process on this host has ended (killed): harness.runs.owner_state
    config: dict[str, Any] = field(default_factory=dict)
    config_text: str | None = None
    curves: pd.DataFrame | None = None
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    pruning: list[dict[str, Any]] | None = None
    problems: list[str] = field(default_factory=list)
    page: str = ""
    variant: str = ""
    fingerprint: str = ""
    origin: str = YOURS
    stale: list[str] = field(default_factory=list)  # source files changed since the run (harness.provenance)
    carried: list[str] = field(default_factory=list)  # "file: what" of each edit since it is carried over
    reproduced: str | None = None  # its latest `harness reproduce --record` check (harness.reproductions.summary)
    rollout: pd.DataFrame | None = None  # stepwise runs: step, acc, <group>/acc of the long-horizon rollout
    pictures: list[str] = field(default_factory=list)  # stepwise runs: "pictures/step_<t>.png" found, in step order

    @property
    def is_stale(self) -> bool:
        return bool(self.stale)

    @property
    def stack(self) -> list[str]:
        """The run ids of the stack it trained in (``bench --seeds``: ``stack`` in its results.json, itself
        included), or [] for a run trained alone."""
        members = self.results.get("stack")
        return [str(member) for member in members] if isinstance(members, list) and len(members) > 1 else []

    @property
    def reproduces(self) -> str | None:
        """The reference run this run trained again, when ``harness reproduce`` trained it (``reproduces`` in its
        results.json): a check, not a configuration of its own, so the comparisons leave it out."""
        value = self.results.get("reproduces")
        return str(value) if value else None

    @property
    def seed(self) -> Any:
        return self.results.get("seed", self.config.get("seed"))

    @property
    def profile(self) -> Any:
        return self.results.get("profile", self.config.get("profile"))

    @property
    def metrics(self) -> dict[str, float]:
        metrics = self.results.get("metrics")
        return metrics if isinstance(metrics, dict) else {}

    @property
    def is_rl(self) -> bool:
        """A reinforcement-learning run: an ``rl`` config section, or environment steps in its results."""
        return isinstance(self.config.get("rl"), dict) or "env_steps" in self.results

    @property
    def gpu(self) -> str | None:
        """The GPU the run trained on (``NVIDIA H100 80GB HBM3``), from results.json's ``device``; None on a CPU."""
        device = str(self.results.get("device") or "")
        return device.removeprefix("cuda: ") if device.startswith("cuda") else None

    @property
    def is_stepwise(self) -> bool:
        """A stepwise (world-state) run: a ``stepwise`` config section (harness.runners.stepwise)."""
        return isinstance(self.config.get("stepwise"), dict)

    @property
    def protocol(self) -> str:
        return str(cfg_get(self.config, "protocol.name", SINGLE) or SINGLE)

    def metric(self, name: str) -> float | None:
        """A results metric, or :data:`HELD_OUT`: the mean of ``test_<set>/acc`` over the held-out sets the run's
        config names (``task.test_sets``, e.g. the Relations Game's hexominoes and stripes) that it reported."""
        if name == HELD_OUT:
            sets = cfg_get(self.config, "task.test_sets")
            found = [self.metric(f"test_{held}/acc") for held in sets] if isinstance(sets, list) else []
            values = [value for value in found if value is not None]
            return sum(values) / len(values) if values else None
        value = self.metrics.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return None  # a NaN or infinity (json.dump writes them) is no number to rank or average
        return float(value)

    def sort_key(self) -> tuple[str, str]:
        """Later runs sort last (finished, then started, then the id)."""
        return (str(self.results.get("finished_at") or self.results.get("started_at") or ""), self.run_id)


def cfg_get(config: Any, dotted: str, default: Any = None) -> Any:
    """``config["a"]["b"]`` for ``"a.b"``; ``default`` where any part is missing."""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def flatten(config: Any, prefix: str = "") -> dict[str, str]:
    """``{"a.b": "<value as JSON>"}`` for every leaf of a nested config."""
    if isinstance(config, dict):
        out: dict[str, str] = {}
        for key in sorted(config, key=str):
            out.update(flatten(config[key], f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.dumps(config, sort_keys=True, default=str)}


IGNORED_KEYS = ("seed", "tracking.")
"""Config entries that do not make two runs different experiments (seeds are what a group averages over)."""


def is_setting(key: str) -> bool:
    """Whether a flattened config entry makes two runs different experiments (not in ``IGNORED_KEYS``)."""
    return key != IGNORED_KEYS[0] and not key.startswith(IGNORED_KEYS[1])


ALL_OPERATIONS = ("write", "move", "backlink")
"""TPR-RNN's memory operations: every run ran all three before ``model.operations`` let Table 3's ablations
leave some out. The model's order (``models/tpr_rnn/operations.py`` ``OPERATIONS``), copied so that the report need
not import torch; a test keeps the two equal."""


def canonical_operations(operations: Any) -> tuple[str, ...]:
    """TPR-RNN's memory operations in the model's own order (write, move, backlink), however they were listed: the
    model keeps the ones named whatever their order (``models/tpr_rnn/operations.py``), so ``[move, write]`` is
    Table 3's write + move."""
    chosen = {str(name) for name in operations}
    return tuple(name for name in ALL_OPERATIONS if name in chosen)


KEYS_ADDED_LATER: dict[tuple[str, str], Any] = {("tpr_rnn", "model.operations"): list(ALL_OPERATIONS)}
"""Config entries added after some stored runs were made, by (model, key), with the value every run from before had
(its code knew no other): a run without the entry is the same experiment as one that states that value."""


_NEUTRAL_FLAT = {key: json.dumps(value, sort_keys=True) for key, value in NEUTRAL_ADDED_KEYS.items()}


def flat_settings(config: Any) -> dict[str, str]:
    """:func:`flatten` without the entries of ``harness.config.NEUTRAL_ADDED_KEYS`` at their neutral value: a run
    that states such a value and one from before the key existed have the same settings."""
    return {key: value for key, value in flatten(config).items() if _NEUTRAL_FLAT.get(key) != value}


def config_fingerprint(run: RunRecord) -> str:
    """Identical for runs that differ only in the seed (and tracking settings), and for a run from before a key in
    ``KEYS_ADDED_LATER`` (or ``harness.config.NEUTRAL_ADDED_KEYS``) beside one that states the value the earlier
    run had."""
    if not run.config:
        return f"no-config:{run.rel_path}"
    items = {k: v for k, v in flat_settings(run.config).items() if is_setting(k)}
    for (model, key), value in KEYS_ADDED_LATER.items():
        if run.model == model and key not in items:
            items[key] = json.dumps(value, sort_keys=True)
    return hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:12]


def fingerprint_of(run: RunRecord) -> str:
    """The run's configuration fingerprint: the one the store set on loading, else computed now."""
    return run.fingerprint or config_fingerprint(run)


def base_label(run: RunRecord) -> str:
    """The short name of a run's configuration: task variant, protocol, RL algorithm and profile."""
    parts = []
    babi_id = cfg_get(run.config, "task.babi_id")
    if babi_id is not None:
        parts.append(f"task {babi_id}")
    if run.protocol == CURRICULUM:
        target = ", ".join(str(t) for t in cfg_get(run.config, "protocol.target", []) or [])
        pretrain = ", ".join(str(t) for t in cfg_get(run.config, "protocol.pretrain", []) or [])
        parts.append(f"curriculum (target {target or '?'}; pretrain {pretrain or '?'})")
    else:
        tasks = cfg_get(run.config, "task.tasks")
        if isinstance(tasks, list) and tasks:
            parts.append("+".join(str(t) for t in tasks))
    algorithm = cfg_get(run.config, "rl.algorithm") if run.is_rl else None
    if algorithm:
        parts.append(str(algorithm))
    if run.profile:
        parts.append(f"[{run.profile}]")
    return " ".join(parts) or "default"


def variant_label(run: RunRecord) -> str:
    return run.variant or base_label(run)


def assign_variants(runs: list[RunRecord], max_keys: int = 3) -> None:
    """Set each run's ``fingerprint`` and ``variant``: its base label, plus the config entries that tell it
    apart from other configurations of the same task, model and base label."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for run in runs:
        run.fingerprint = config_fingerprint(run)
        run.variant = base_label(run)
        groups.setdefault((run.task, run.model, run.variant), []).append(run)
    for group in groups.values():
        if len({run.fingerprint for run in group}) < 2:
            continue
        configurations = {run.fingerprint: flat_settings(run.config) for run in group}  # seeds of one count once
        names = dict(zip(configurations, telling_keys(list(configurations.values())), strict=True))
        for run in group:
            values, keys = configurations[run.fingerprint], names[run.fingerprint]
            shown = [f"{key}={shown_value(values.get(key))}" for key in keys[:max_keys]]
            more = " …" if len(keys) > max_keys else ""
            run.variant = f"{run.variant} {{{', '.join(shown)}{more}}}" if shown else run.variant


def differing_keys(flat_configs: list[dict[str, str]]) -> list[str]:
    """The config entries (dotted, sorted) whose values differ among these flattened configs, seeds and tracking
    settings left out: what tells their configurations apart."""
    keys = sorted({key for values in flat_configs for key in values})
    return [key for key in keys if is_setting(key) and len({values.get(key) for values in flat_configs}) > 1]


def telling_keys(flat_configs: list[dict[str, str]]) -> list[list[str]]:
    """For each of these flattened configs, the differing entries (:func:`differing_keys`) that name it: an entry
    on which most of them agree (one value held by more of them than any other) only where it departs from that
    usual value, any other always. Five configurations that each change one setting of a sixth are named by
    that setting alone, the sixth by none; two configurations never end up with the same names and values. The
    usual value of a key in ``harness.config.NEUTRAL_ADDED_KEYS`` is its neutral one (unset, in configs flattened
    by :func:`flat_settings`), whatever most of them hold: what every run before the key computed. The data
    fingerprint names a config only where its other names do not tell it apart (:func:`_without_fingerprint`)."""
    keys = differing_keys(flat_configs)
    usual = {key: None if key in NEUTRAL_ADDED_KEYS else _usual_value([values.get(key) for values in flat_configs])
             for key in keys}
    names = [[key for key in keys if usual[key] is _NO_USUAL_VALUE or values.get(key) != usual[key]]
             for values in flat_configs]
    return [_without_fingerprint(named, values, flat_configs)
            for named, values in zip(names, flat_configs, strict=True)]


DATA_FINGERPRINT = "data.fingerprint"  # a digest of the data read, set by the launcher: no reader's setting


def _without_fingerprint(named: list[str], values: dict[str, str], flat_configs: list[dict[str, str]]) -> list[str]:
    """``named`` without the data fingerprint where the other names already tell ``values`` apart from every other
    config (runs on MNIST and on scikit-learn's digits: ``task.source`` says it); kept where it alone does."""
    rest = [key for key in named if key != DATA_FINGERPRINT]
    if len(rest) == len(named) or not rest:
        return named
    others = [other for other in flat_configs if other is not values]
    return rest if all(any(other.get(key) != values.get(key) for key in rest) for other in others) else named


_NO_USUAL_VALUE = object()  # where two values tie for the most; None is a value here (the entry unset)


def _usual_value(values: list[str | None]) -> object:
    """The value more of ``values`` hold than any other (None: unset), or ``_NO_USUAL_VALUE`` where two tie."""
    counts = Counter(values).most_common()
    return counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else _NO_USUAL_VALUE


def shown_value(encoded: str | None) -> str:
    """A flattened config value as a reader writes it: strings bare, anything else as JSON, a missing one 'unset'."""
    if encoded is None:
        return "unset"
    value = json.loads(encoded)
    return value if isinstance(value, str) else encoded


def main_group(runs: list[RunRecord]) -> tuple[list[RunRecord], list[list[RunRecord]]]:
    """Split ``runs`` by configuration; the main one is the configuration with the most seeds (completed
    first), then the most steps, then the latest. Returns (main group, the other groups)."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        groups.setdefault(fingerprint_of(run), []).append(run)

    def rank(group: list[RunRecord]) -> tuple[Any, ...]:
        completed = {str(r.seed) for r in group if r.status == "completed"}
        steps = [float(r.results["steps"]) for r in group if isinstance(r.results.get("steps"), int | float)]
        return (len(completed), len({str(r.seed) for r in group}), sum(steps) / max(len(steps), 1),
                max(r.sort_key() for r in group))

    ordered = sorted(groups.values(), key=rank, reverse=True)
    return (ordered[0], ordered[1:]) if ordered else ([], [])


def per_seed(runs: list[RunRecord]) -> list[RunRecord]:
    """One run per seed: a completed one if any, else the latest; among completed ones the latest."""
    chosen: dict[str, RunRecord] = {}
    for run in sorted(runs, key=lambda r: (r.status == "completed", *r.sort_key())):
        chosen[str(run.seed)] = run
    return [chosen[key] for key in sorted(chosen, key=natural_key)]


def natural_key(text: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def puzzle_types(run: RunRecord) -> list[str]:
    """The puzzle types the run reports win rates for (``*/win_rate/<type>``), in natural order."""
    names = list(run.metrics)
    if run.curves is not None:
        names.extend(str(column) for column in run.curves.columns)
    found = {name.split("/", 2)[2] for name in names
             if name.startswith(("train/win_rate/", "eval/win_rate/")) and name.count("/") >= 2}
    return sorted(found, key=natural_key)


def _read_json_dict(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} holds a {type(data).__name__}, not an object")
    return data


def curves_file(directory: Path) -> Path:
    """A run's (or stage's) curve file: ``metrics.csv`` as the run store writes it, else ``metrics.csv.gz`` as
    ``harness publish`` keeps it in the reference store; the plain name when there is neither."""
    plain = directory / "metrics.csv"
    packed = directory / "metrics.csv.gz"
    return packed if packed.exists() and not plain.exists() else plain


def read_curves(path: Path) -> pd.DataFrame | None:
    """``metrics.csv`` (or ``metrics.csv.gz``) as a frame with a numeric ``step`` column; None when the file
    does not exist.

    Raises ``ValueError`` (or ``OSError``) when it exists but cannot be read as a curve file, a gzip cut
    short included."""
    if not path.exists():
        return None
    try:
        frame = pd.read_csv(path)  # gzipped where the name ends in .gz (pandas infers it)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        raise ValueError(f"{path.name}: {exc}") from exc
    if "step" not in frame.columns:
        raise ValueError(f"{path.name}: no step column")
    frame = frame.apply(pd.to_numeric, errors="coerce")
    if frame["step"].isna().all() and len(frame):
        raise ValueError(f"{path.name}: the step column holds no numbers")
    return frame


def read_rollout(path: Path) -> pd.DataFrame | None:
    """``rollout.csv`` as a frame (``step``, then the accuracy columns ``acc`` and ``<group>/acc``) sorted by
    step; None when the file does not exist. An empty cell (a group not asked at that step) is NaN.

    Raises ``ValueError`` (or ``OSError``) when it exists but is not a whole rollout curve as
    ``harness.runners.stepwise_eval.write_rollout_csv`` writes it: not UTF-8 text, a last line without its
    newline (cut short), a row whose field count differs from the header's, no ``step`` or no accuracy column,
    no rows, a cell that is not a number, a step that is not a positive whole number, an accuracy outside
    [0, 1]."""
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if not text.strip():
        raise ValueError(f"{path.name}: empty")
    if not text.endswith("\n"):
        raise ValueError(f"{path.name}: the last line is cut short (no newline at the end)")
    try:
        header, *rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as exc:
        raise ValueError(f"{path.name}: {exc}") from exc
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path.name}: line {number} has {len(row)} fields, the header {len(header)}")
    columns = [name.strip() for name in header]
    if "step" not in columns:
        raise ValueError(f"{path.name}: no step column")
    accuracy = [column for column in columns if column == "acc" or column.endswith("/acc")]
    if not accuracy:
        raise ValueError(f"{path.name}: no accuracy column (acc, <group>/acc)")
    if not rows:
        raise ValueError(f"{path.name}: no rows")
    cells = pd.DataFrame([[cell.strip() for cell in row] for row in rows], columns=columns)[["step", *accuracy]]
    numbers = cells.apply(pd.to_numeric, errors="coerce")
    bad = int((numbers.isna() & (cells != "")).to_numpy().sum())
    if bad:
        raise ValueError(f"{path.name}: {bad} cell(s) are not numbers")
    steps = numbers["step"]
    if steps.isna().any() or (steps < 1).any() or (steps != steps.round()).any():
        raise ValueError(f"{path.name}: a step is missing or not a positive whole number")
    values = numbers[accuracy].to_numpy(dtype=float)
    if ((values < 0) | (values > 1)).any():  # NaN compares false: empty cells pass
        raise ValueError(f"{path.name}: an accuracy lies outside [0, 1]")
    return numbers.astype(float).sort_values("step", kind="stable").reset_index(drop=True)


def find_pictures(directory: Path, listed: Any) -> tuple[list[str], list[str]]:
    """The PNG files of ``<run>/pictures/`` (as ``pictures/<name>``, in natural order: step_2 before step_10)
    and the problems: a file that is not a PNG, a picture ``results.json`` lists (``listed``) that is absent."""
    folder = directory / PICTURES_DIR
    found, problems = [], []
    names = sorted((p.name for p in folder.glob("*.png") if p.is_file()), key=natural_key) if folder.is_dir() else []
    for name in names:
        try:
            with (folder / name).open("rb") as handle:
                head = handle.read(len(PNG_SIGNATURE))
        except OSError as exc:
            problems.append(f"{PICTURES_DIR}/{name} unreadable: {exc}")
            continue
        if head != PNG_SIGNATURE:
            problems.append(f"{PICTURES_DIR}/{name} is not a PNG image; left out")
            continue
        found.append(f"{PICTURES_DIR}/{name}")
    present = set(found) | {f"{PICTURES_DIR}/{name}" for name in names}
    missing = [str(item) for item in listed if str(item) not in present] if isinstance(listed, list) else []
    if missing:
        problems.append(f"results.json lists picture(s) that are absent: {', '.join(missing)}")
    return found, problems


def _read_pruning(path: Path) -> list[dict[str, Any]] | None:
    if not path.exists():
        return None
    data = _read_json_dict(path)
    curve = data.get("curve")
    if not isinstance(curve, list):
        raise ValueError("head_pruning.json has no curve list")
    return [point for point in curve if isinstance(point, dict) and "heads" in point]


def load_run(results_path: Path, runs_dir: Path) -> RunRecord:
    """Everything the report needs from one run directory; never raises for a damaged run."""
    directory = results_path.parent
    rel = directory.relative_to(runs_dir)
    task, model, run_id = rel.parts[0], rel.parts[1], rel.parts[2]
    problems: list[str] = []
    try:
        results = _read_json_dict(results_path)
        damage = type_damage(results)
        if damage:  # a record edited into another shape: read as unreadable, not misread further on
            raise ValueError(damage.removeprefix("results.json "))
        status = str(results.get("status") or "unknown")
    except (OSError, ValueError) as exc:  # JSONDecodeError is a ValueError
        results, status = {}, UNREADABLE
        problems.append(f"results.json unreadable: {exc}")
    run = RunRecord(path=directory, rel_path=rel.as_posix(), task=str(results.get("task") or task),
                    model=str(results.get("model") or model), run_id=str(results.get("run_id") or run_id),
                    results=results, status=status, gone=owner_state(results) == "gone")
    config_path = directory / "config.yaml"
    if config_path.exists():
        try:
            run.config_text = config_path.read_text(encoding="utf-8")
            config = safe_load_yaml(run.config_text)
            run.config = config if isinstance(config, dict) else {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            problems.append(f"config.yaml unreadable: {exc}")
    curves = curves_file(directory)
    try:
        run.curves = read_curves(curves)
    except (OSError, ValueError) as exc:
        problems.append(f"{curves.name} unreadable: {exc}")
        run.status = UNREADABLE
    try:
        run.pruning = _read_pruning(directory / "analysis" / "head_pruning.json")
    except (OSError, ValueError) as exc:
        problems.append(f"analysis/head_pruning.json unreadable: {exc}")
    rollout_path = directory / ROLLOUT_FILE
    try:
        run.rollout = read_rollout(rollout_path)
    except (OSError, ValueError) as exc:
        problems.append(f"{ROLLOUT_FILE} unreadable: {exc}")
    if not rollout_path.exists() and isinstance(results.get("rollout"), dict):
        problems.append(f"results.json names a long-horizon rollout but {ROLLOUT_FILE} is missing")
    run.pictures, picture_problems = find_pictures(directory, results.get("pictures"))
    problems.extend(picture_problems)
    stages_dir = directory / "stages"
    if stages_dir.is_dir():
        for stage_dir in sorted(p for p in stages_dir.iterdir() if p.is_dir()):
            stage: dict[str, Any] = {"results": {}, "curves": None, "status": "missing"}
            try:
                if (stage_dir / "results.json").exists():
                    stage["results"] = _read_json_dict(stage_dir / "results.json")
                    stage["status"] = str(stage["results"].get("status") or "unknown")
                stage["curves"] = read_curves(curves_file(stage_dir))
            except (OSError, ValueError) as exc:
                stage["status"] = UNREADABLE
                problems.append(f"stages/{stage_dir.name} unreadable: {exc}")
            run.stages[stage_dir.name] = stage
    run.problems = problems
    if run.status == UNREADABLE and not run.results.get("error"):
        run.results = {**run.results, "error": "; ".join(problems)}
    return run


def load_store(runs_dir: Path, origin: str = YOURS) -> list[RunRecord]:
    """Every ``<task>/<model>/<run_id>/results.json`` under ``runs_dir`` (sorted by path), each with a unique
    page name; an empty list when the folder does not exist."""
    return load_stores([(runs_dir, origin)])


def load_stores(stores: list[tuple[Path, str]]) -> list[RunRecord]:
    """The runs of several stores (the reference store ``results/`` and the user's ``runs/``), each marked with
    its origin, whether its code is stale and its latest reproduction check, with page names unique across the
    stores."""
    from harness.provenance import run_code_status
    from harness.reproductions import summaries

    runs: list[RunRecord] = []
    for root, origin in stores:
        if not root.is_dir():
            continue
        reproduced = summaries(root)  # from the reference store's reproductions.json
        for path in sorted(root.glob("*/*/*/results.json")):
            run = load_run(path, root)
            run.origin = origin
            run.reproduced = reproduced.get(run.run_id)
            try:
                status = run_code_status(run.results)
                run.stale = status.stale
                run.carried = [f"{rel} ({change.what})" for rel, change in status.carried]
            except (OSError, ValueError, TypeError):
                run.stale, run.carried = [], []
            runs.append(run)
    used: set[str] = set()
    for run in runs:
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", run.run_id).strip("._") or "run"
        if run.origin == REFERENCE:
            base = f"reference-{base}"
        name, counter = base, 2
        while name.lower() in used:
            name, counter = f"{base}-{counter}", counter + 1
        used.add(name.lower())
        run.page = f"runs/{name}.html"
    assign_variants(runs)
    return runs
