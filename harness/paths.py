"""Where data is read from and generated data is cached (environment variables, light to import)."""

from __future__ import annotations

import os
from pathlib import Path


def environment_folder(variable: str, default: str) -> Path:
    """The folder an environment variable names, or ``default`` when it is unset. A variable set to an empty value
    (``HARNESS_RUNS_DIR=$STORE`` with ``STORE`` unset) is the user's mistake, not the current folder: a one-line
    UserError, as ``--runs-dir ""`` is."""
    value = os.environ.get(variable)
    if value is None:
        return Path(default)
    if not value.strip():
        from harness.errors import UserError

        raise UserError(f"{variable} is set but empty; unset it for the default ./{default}, or name a folder")
    return Path(value)


def data_dir() -> Path:
    """Official dataset files, in each dataset's official layout: ``$HARNESS_DATA_DIR`` or ``./data``."""
    return environment_folder("HARNESS_DATA_DIR", "data")


def data_dir_label() -> str:
    return "HARNESS_DATA_DIR" if "HARNESS_DATA_DIR" in os.environ else "default ./data"


def cache_dir() -> Path:
    """Generated datasets, cached on disk: ``$HARNESS_CACHE_DIR`` or ``./.cache/harness``."""
    return environment_folder("HARNESS_CACHE_DIR", ".cache/harness")


def shown_path(path: Path) -> str:
    """A data or cache path as a run records it: relative to ``$HARNESS_DATA_DIR`` or ``$HARNESS_CACHE_DIR``
    when it lies inside one (so a run's record does not depend on where the data sits on a machine), else as
    given."""
    resolved = Path(path).resolve()
    for variable, root in (("HARNESS_DATA_DIR", data_dir()), ("HARNESS_CACHE_DIR", cache_dir())):
        try:
            rel = resolved.relative_to(root.resolve())
        except ValueError:
            continue
        prefix = f"${variable}" if variable in os.environ else str(root)
        return f"{prefix}/{rel.as_posix()}" if rel.parts else prefix
    return str(path)


def data_relative(path: Path) -> str:
    """A data file's path relative to the data folder (its key in a run's data record)."""
    try:
        return Path(path).resolve().relative_to(data_dir().resolve()).as_posix()
    except ValueError:
        return Path(path).name


def check_data_dir() -> None:
    """A ``HARNESS_DATA_DIR`` that names no folder is the user's mistake, not a reason to fall back silently;
    so is a cache folder that cannot be one."""
    from harness.errors import UserError

    value, folder = os.environ.get("HARNESS_DATA_DIR"), data_dir()  # an empty value is refused by data_dir
    if value is not None and not folder.is_dir():
        raise UserError(f"HARNESS_DATA_DIR={value} is not a folder; point it at the folder holding the datasets "
                        "or unset it to use ./data and the generators")
    check_writable_folder(cache_dir(), "HARNESS_CACHE_DIR" if "HARNESS_CACHE_DIR" in os.environ else "cache folder")
    remove_cache_leftovers()


def remove_cache_leftovers() -> None:
    """Delete what killed writes of generated data left in the cache folder (its atomic writes' temporary files,
    as large as the data: nothing else ever removes them), with one line saying so."""
    from harness.runs import remove_stale_temporaries

    removed = remove_stale_temporaries(cache_dir())
    if removed:
        print(f"{shown_path(cache_dir())}: removed {len(removed)} temporary file(s) left by killed writes of "
              f"generated data ({', '.join(sorted(path.name for path in removed))})", flush=True)


def _creation_refused(start: Path) -> str | None:
    """Why this process cannot create a folder at ``start`` (None when it can): the nearest of ``start`` and its
    parents that exists must be a folder in which a folder can be created, probed with an empty one that is
    removed again. A probe, not ``os.access``: as root a folder such as ``/proc`` passes ``os.access`` and still
    refuses a new folder."""
    import tempfile

    existing = next(p for p in (start, *start.absolute().parents) if p.exists())
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        Path(tempfile.mkdtemp(prefix=".write-probe-", dir=existing)).rmdir()
    except OSError as exc:
        return f"cannot write into {existing} ({exc.strerror or type(exc).__name__})"
    return None


def check_can_create_in(start: Path, refused: str) -> None:
    """A one-line UserError beginning ``refused`` unless a folder can be created at ``start`` (its nearest existing
    part probed: :func:`_creation_refused`)."""
    from harness.errors import UserError

    reason = _creation_refused(start)
    if reason is not None:
        raise UserError(f"{refused}: {reason}")


def check_writable_folder(path: Path, what: str) -> None:
    """A folder the harness will write into may not exist yet, but the part of it that exists must be a folder this
    process can create folders in: otherwise a one-line error naming ``what`` (e.g. ``HARNESS_RUNS_DIR``)."""
    check_can_create_in(path, f"{what} {path} cannot be used")
