"""Where a run's numbers came from: the code, the packages, the machine, and the data.

* :func:`git_info`, :func:`package_versions`, :func:`machine_info`: recorded for every attempt of a run.
* :func:`code_files`: the project's source files that computed the run (the task's, the model's and the
  training code the run imported), each with a hash of its syntax tree without docstrings, so a change in
  comments, docstrings or layout does not count but any change in what runs does. :func:`code_status`
  compares a run's record with the checkout: a completed run whose code has changed since is *stale*, unless
  each change is one recorded in ``results/code_changes.json`` with the evidence that it computes nothing
  differently (:mod:`harness.code_changes`).
* :func:`file_digest`: the hash of a data file, for a task's data fingerprint.

Files that organise runs but cannot change their numbers (the command line, the run store, tracking, the
registry and config composition, whose output is the stored config itself, the launcher that manages a run's
directory and statuses, sweeps, data checks that only reject malformed files before a run starts, and the
vector-math warm-up, which only settles which of two roundings a process gets) are
left out of the code record, and a recorded file that has since become one of them (the launcher, once its
data and model building moved to ``harness/runners/build.py``) no longer counts towards staleness.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import platform
import socket
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import PROJECT_ROOT

if TYPE_CHECKING:
    from harness.code_changes import Change

CODE_PACKAGES = ("harness", "tasks", "models")
NOT_COMPUTING = ("harness/cli.py", "harness/cli_parser.py", "harness/cli_runs.py", "harness/runs.py",
                 "harness/tracking.py", "harness/registry.py",
                 "harness/config.py", "harness/schema.py", "harness/errors.py", "harness/paths.py",
                 "harness/provenance.py", "harness/publish.py", "harness/__init__.py", "harness/runners/tune.py",
                 "harness/runners/sweep_file.py",
                 "harness/runners/ray_session.py", "harness/runners/run_transfer.py",
                 "harness/runners/launch.py", "harness/runners/run_checks.py", "harness/runners/build_checks.py",
                 "harness/runners/killed_attempts.py", "harness/runners/signals.py", "harness/runners/existing_run.py",
                 "harness/runners/stacked_launch.py", "harness/runners/stacked_checkpoints.py",
                 "harness/runners/retest.py",
                 "harness/rerun.py", "harness/interfaces.py", "harness/runners/predictions.py",
                 "tasks/relations_game/data_checks.py", "tasks/babi/examples.py", "tasks/babi/setting_checks.py",
                 "harness/vector_math.py", "harness/fetch_catalogue.py", "harness/fetch.py", "harness/fetch_http.py",
                 "harness/code_changes.py", "harness/code_probes.py", "harness/reproductions.py")
PACKAGES = ("torch", "lightning", "omegaconf", "numpy", "ray", "gymnasium", "wandb")


def git_info(root: Path = PROJECT_ROOT, listed: int = 40) -> dict[str, Any]:
    """The commit the code came from, whether the tree had uncommitted changes to tracked files, and which
    (the first ``listed``): a dirty tree whose changes are documentation did not change the run."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5,
                                check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=5, check=True).stdout
        changed = [line[3:] for line in status.splitlines() if line.strip()]
        return {"commit": commit, "dirty": bool(changed), "changed": changed[:listed]}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Python's version and those of the installed packages among ``names`` (only those present)."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def machine_info() -> dict[str, Any]:
    """The host, its processor and operating system, its CPUs and (when present and imported) GPU."""
    info: dict[str, Any] = {"host": socket.gethostname(), "system": platform.platform(terse=True),
                            "machine": platform.machine(), "cpus": os.cpu_count()}
    cpuinfo = _cpuinfo()
    processor = _cpu_model(cpuinfo)
    if processor:
        info["processor"] = processor
    cpu_id = _cpu_id(cpuinfo)
    if cpu_id:  # a virtual machine may name several generations of a processor alike: these tell them apart
        info["cpu_id"] = cpu_id
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
        if capability is not None:
            info["cpu_capability"] = str(capability())  # the vector kernels torch runs here: AVX2, AVX512, ...
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["gpu_tf32"] = gpu_tf32(torch)
    return info


def gpu_tf32(torch: Any) -> str:
    """Where float32 arithmetic on a GPU may round its inputs to TF32 (10 bits of mantissa): PyTorch's defaults,
    which the harness leaves as they are, allow it in cuDNN's convolutions and not in matrix products."""
    conv, matmul = bool(torch.backends.cudnn.allow_tf32), bool(torch.backends.cuda.matmul.allow_tf32)
    return f"convolutions {'TF32' if conv else 'float32'}, matrix products {'TF32' if matmul else 'float32'}"


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo, keys in lower case ({} where it cannot be read)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip() and fields:
                break
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        return {}
    return fields


def _cpu_id(fields: dict[str, str]) -> str:
    """The processor's vendor, family, model and stepping (``AuthenticAMD family 25 model 1 stepping 1``), from
    :func:`_cpuinfo`'s ``fields``; '' where not all are there. Runs trained on processors that differ here (or in the
    vector kernels torch runs) round differently, so they agree only to rounding even on a deterministic CPU run."""
    if not all(key in fields for key in ("vendor_id", "cpu family", "model", "stepping")):
        return ""
    return f"{fields['vendor_id']} family {fields['cpu family']} model {fields['model']} stepping {fields['stepping']}"


def _cpu_model(fields: dict[str, str]) -> str:
    """The processor's name (``model name`` in :func:`_cpuinfo`'s ``fields``), else the platform's."""
    return fields.get("model name") or platform.processor()


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


# Fields a newer Python added to the syntax tree, left out of the digest while they hold their empty default, so
# that the same file hashes alike on every supported Python (3.12 gave every def and class `type_params=[]`).
_NEWER_EMPTY_FIELDS = frozenset({"type_params"})


def canonical_dump(node: Any) -> str:
    """The text ``ast.dump(node, annotate_fields=False, include_attributes=False)`` gives on Python 3.11, on any
    Python: :func:`ast.dump`'s layout changes between versions (3.12 added ``type_params``, 3.13 drops empty
    fields), so a run recorded on one Python would look stale on another. Like 3.11's dump: an optional field
    holding None is left out, and every field after it is written ``name=value``."""
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(item) for item in node) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    args = []
    keywords = False
    for name in node._fields:
        value = getattr(node, name, None)
        if name in _NEWER_EMPTY_FIELDS and not value:
            continue
        if value is None and not (name == "value" and isinstance(node, ast.Constant | ast.MatchSingleton)):
            keywords = True  # an optional field left empty
            continue
        text = canonical_dump(value)
        args.append(f"{name}={text}" if keywords else text)
    return f"{type(node).__name__}({', '.join(args)})"


# A file's text (its SHA-256) -> its source digest: parsing is the costly part, and a report or a listing of the
# store digests the same few dozen files once per run (a file's text, not its path, keys it: an edit misses).
_DIGESTS: dict[str, str] = {}


def source_digest(path: Path) -> str:
    """A hash of what a Python file does: its syntax tree without docstrings (comments never reach it)."""
    return text_digest(path.read_text(encoding="utf-8"))


def text_digest(text: str) -> str:
    """:func:`source_digest` of a file's text (as git has it, say)."""
    key = hashlib.sha256(text.encode()).hexdigest()
    digest = _DIGESTS.get(key)
    if digest is None:
        try:
            tree = _strip_docstrings(ast.parse(text))
            payload = canonical_dump(tree)
        except SyntaxError:
            payload = text
        digest = _DIGESTS[key] = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return digest


def _project_file(module: Any, root: Path) -> str | None:
    path = getattr(module, "__file__", None)
    return _computing_source(path, root) if path else None


@functools.cache
def _computing_source(path: str, root: Path) -> str | None:
    """``path`` (a module's ``__file__``) relative to ``root`` when it is a computing project source file, else None.
    Cached: a run asks it of every module in ``sys.modules`` (thousands, most of them torch's) several times, and
    resolving each path afresh took 0.15 s a time."""
    try:
        rel = Path(path).resolve().relative_to(root)
    except ValueError:
        return None
    if rel.suffix != ".py" or rel.parts[0] not in CODE_PACKAGES or rel.as_posix() in NOT_COMPUTING:
        return None
    return rel.as_posix()


# What each imported project file held when this process first digested it, by path: the importing module's spec
# (a reload replaces it) and the digest. A file edited on disk while a run trains keeps the digest of the code the
# process loaded, not the edit's: :func:`snapshot_code` takes it early, :func:`code_files` reuses it.
_LOADED: dict[Path, tuple[Any, str]] = {}


def _imported_files(root: Path) -> dict[str, Any]:
    """``{relative path: module}`` of the computing project files this process has imported."""
    return {rel: module for module in list(sys.modules.values()) if (rel := _project_file(module, root))}


def code_files(root: Path = PROJECT_ROOT) -> dict[str, str]:
    """``{relative path: digest}`` of every project source file this process has imported that can change a
    run's numbers (see the module docstring), each as it was when first digested here (:func:`snapshot_code`)."""
    files = {}
    for rel, module in sorted(_imported_files(root).items()):
        path, spec = (root / rel).resolve(), getattr(module, "__spec__", None)
        seen = _LOADED.get(path)
        if seen is None or seen[0] is not spec:
            seen = _LOADED[path] = (spec, source_digest(path))
        files[rel] = seen[1]
    return files


def snapshot_code(root: Path = PROJECT_ROOT) -> dict[str, str]:
    """Digest the project files imported so far, as they are now (a run calls it before training): an edit made
    while the run trains then does not pass for the code it ran. Returns them, as :func:`code_files`."""
    return code_files(root)


def edited_since_loaded(loaded: dict[str, str], root: Path = PROJECT_ROOT) -> list[str]:
    """The files of ``loaded`` (:func:`code_files`' record) whose text on disk no longer computes what this process
    loaded from them."""
    return [rel for rel, digest in loaded.items() if not (root / rel).is_file() or source_digest(root / rel) != digest]


def fingerprint(items: dict[str, str]) -> str:
    """One short hash of a ``{name: digest}`` mapping."""
    text = "\n".join(f"{name} {digest}" for name, digest in sorted(items.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def recorded_files(results: dict[str, Any]) -> dict[str, str]:
    """The source files a run (its results.json as ``results``) recorded as imported, with their digests."""
    code = results.get("code")
    files = code.get("files") if isinstance(code, dict) else None
    return files if isinstance(files, dict) else {}


@dataclass(frozen=True)
class CodeStatus:
    """How a run's recorded source files stand against the checkout (:func:`code_status`)."""

    stale: list[str]  # files changed since (``path (removed)`` for one gone) that no recorded change carries
    carried: list[tuple[str, Change]]  # (file, change): the recorded edits that carry a file to the checkout's


def code_status(recorded: dict[str, str] | None, root: Path = PROJECT_ROOT) -> CodeStatus:
    """The recorded files that are stale (changed since, or gone) and the recorded changes that carry the others to the
    checkout's digests (:mod:`harness.code_changes`), in one pass that reads each file once (a report or a listing
    asks both of every run)."""
    from harness.code_changes import carried

    stale: list[str] = []
    carried_pairs: list[tuple[str, Change]] = []
    for rel, digest in sorted((recorded or {}).items()):
        if rel in NOT_COMPUTING:
            continue
        path = root / rel
        if not path.is_file():
            stale.append(f"{rel} (removed)")
            continue
        current = source_digest(path)
        if current == digest:
            continue
        reached, through = carried(rel, digest, root)
        if reached == current:
            carried_pairs += [(rel, change) for change in through]
        else:
            stale.append(rel)
    return CodeStatus(stale=stale, carried=carried_pairs)


def run_code_status(results: dict[str, Any]) -> CodeStatus:
    """:func:`code_status` of a run (its results.json as ``results``): only a completed run's numbers can be stale
    or carried over an edit, so a run that did not complete is neither."""
    if results.get("status") != "completed":
        return CodeStatus(stale=[], carried=[])
    return code_status(recorded_files(results))


def file_digest(path: Path) -> str:
    """The SHA-256 of a data file's bytes (first 16 hex digits); a data path that is not a file (a folder of the
    file's name, say) is the user's mistake."""
    if not path.is_file():
        from harness.errors import UserError

        raise UserError(f"{path}: expected a data file, found {'a folder' if path.is_dir() else 'no file'}")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def attempt_record(started_at: str) -> dict[str, Any]:
    """What one attempt of a run records when it starts: code commit, dirty flag, packages, machine."""
    return {"started_at": started_at, "finished_at": None, "status": "running", "git": git_info(),
            "versions": package_versions(), "machine": machine_info()}
