"""``harness data fetch NAME``: download a catalogued dataset (harness/fetch_catalogue.py), check it, unpack it.

Steps, each leaving nothing half-written where the loaders look:

1. Downloads go to ``<dest>/.downloads/<file>.part`` and are renamed to ``<file>`` only when complete
   (harness/fetch_http.py); a cut-short download keeps its ``.part`` and the same command resumes it.
2. The complete file is checked: its SHA-256 against ``--sha256`` or the catalogue's value, its MD5 where the
   catalogue has one (MNIST: torchvision's values). Where no value is known the SHA-256 is printed and
   recorded in ``<file>.sha256`` (``sha256sum`` format). A file that fails a check is deleted, never unpacked
   (resuming it would only append to wrong bytes); the error gives both values.
3. Archives unpack into ``<dest>/.downloads/<name>.unpacking/`` (tarfile's ``data`` filter refuses absolute
   paths, links out of the folder and device files; https://docs.python.org/3/library/tarfile.html#tarfile-extraction-filter),
   whose entries then move into ``<dest>/<folder>/``, replacing same-named ones. A corrupt archive is deleted.
4. A marker ``<dest>/<folder>/.fetched.json`` (addresses, SHA-256s, time) is written last: with it a second
   fetch answers "already present" without downloading, unless ``--force``; a folder that holds data without the
   marker (put there by hand) is likewise left alone unless ``--force``. A ``--force`` fetch that fails before its
   files move into the folder (refused, truncated, a wrong checksum, Ctrl-C) leaves the folder and its marker as
   they were, so the data fetched before still answers "already present". Unpacked tar archives are then
   deleted (LRA's is 7.7 GB); gzip files stay beside what they decompress to.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit

from harness.errors import UserError, listed
from harness.fetch_catalogue import Dataset, Resource, lookup
from harness.fetch_http import download, human
from harness.paths import check_writable_folder
from harness.runs import atomic_write_text

MARKER = ".fetched.json"
DOWNLOADS = ".downloads"

# Tasks whose files come inside a catalogued dataset: task name -> (what the task reads, the dataset to fetch).
PART_OF: dict[str, tuple[str, str]] = {
    "listops": ("ListOps (basic_{train,val,test}.tsv in listops-1000/)", "lra"),
    "pathfinder": ("Pathfinder-32 (pathfinder32/)", "lra"),
}


def dataset_of(name: str) -> Dataset:
    """The catalogue's entry for ``name``; for a task whose files come inside a dataset, a one-line error naming
    that dataset and where it unpacks."""
    if name in PART_OF:
        what, dataset = PART_OF[name]
        raise UserError(f"{what} is part of the dataset '{dataset}': `harness data fetch {dataset}` unpacks it into "
                        f"{lookup(dataset).folder}/; without it the {name} task generates its data "
                        "(task.source=generator)")
    return lookup(name)


def destination(dest: str | None) -> tuple[Path, str]:
    """The data folder to fetch into (``--dest``, else ``$HARNESS_DATA_DIR``) and how the user named it."""
    if dest:
        root, what = Path(dest), "--dest"
    elif os.environ.get("HARNESS_DATA_DIR"):
        root, what = Path(os.environ["HARNESS_DATA_DIR"]), "HARNESS_DATA_DIR"
    else:
        raise UserError("no destination: pass --dest DIR or set HARNESS_DATA_DIR to the folder holding the datasets")
    check_writable_folder(root, what)
    return root, what


def addresses(dataset: Dataset, url: str | None) -> list[str]:
    """Each resource's address: the catalogue's, or ``--url`` (for a dataset of several files, the folder
    address their names are appended to)."""
    if url is None:
        return [r.url for r in dataset.resources]
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise UserError(f"--url {url}: give an http:// or https:// address")
    if len(dataset.resources) == 1:
        return [url]
    return [url.rstrip("/") + "/" + r.filename for r in dataset.resources]


def hashes(path: Path, md5: bool) -> tuple[str, str | None]:
    """(SHA-256, MD5 when asked for) of a file, read once."""
    sha, other = hashlib.sha256(), hashlib.md5(usedforsecurity=False) if md5 else None
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            sha.update(block)
            if other is not None:
                other.update(block)
    return sha.hexdigest(), other.hexdigest() if other is not None else None


def verify(file: Path, resource: Resource, url: str, sha256: str | None, no_value_note: str) -> str:
    """Check a complete download; return its SHA-256 (also written to ``<file>.sha256``). A mismatch deletes
    the file and is an error."""
    print(f"checking {file.name} ({human(file.stat().st_size)})")
    sha, md5 = hashes(file, resource.md5 is not None)
    (file.parent / f"{file.name}.sha256").write_text(f"{sha}  {file.name}\n")
    expected = sha256 or resource.sha256
    for kind, want, got in (("SHA-256", expected, sha), ("MD5", resource.md5, md5)):
        if want is not None and want != got:
            _delete_download(file)
            raise UserError(f"{file.name} from {url} has {kind} {got}, expected {want}; the file was deleted: run "
                            "the same command to download it again, or pass --url with a mirror")
    if expected is None:
        checked = f"MD5 matches {resource.md5}; " if resource.md5 else ""
        print(f"SHA-256 {sha}  {file.name} ({checked}{no_value_note}; recorded in {file.name}.sha256; "
              "--sha256 checks a value you trust)")
    return sha


def _delete_download(file: Path) -> None:
    """Delete a download that failed its check or would not unpack, with the ``.sha256`` recorded for it."""
    file.unlink(missing_ok=True)
    file.with_name(f"{file.name}.sha256").unlink(missing_ok=True)


def _remove_if_empty(*folders: Path) -> None:
    """Remove each of ``folders`` (innermost first) that exists and is empty: what a fetch created before it failed
    leaves nothing behind."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # absent, or it holds something: kept
            pass


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (tarfile's may span several)."""
    return " ".join(str(exc).split())


def _strip(name: str, top: str | None) -> str | None:
    """A member's path without the archive's top folder ``top``; ``None`` for the top folder itself."""
    name = re.sub(r"^(\./)+", "", name)
    if top is None:
        return name or None
    if name.rstrip("/") == top:
        return None
    return name[len(top) + 1:] if name.startswith(top + "/") else name


def _unpack_tar(archive: Path, resource: Resource, staging: Path) -> None:
    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        name = _strip(member.name, resource.strip)
        if name is None:
            return None
        changes: dict[str, str] = {"name": name}
        if member.islnk():
            changes["linkname"] = _strip(member.linkname, resource.strip) or member.linkname
        return tarfile.data_filter(member.replace(**changes, deep=False), path)

    if not hasattr(tarfile, "data_filter"):  # added in Python 3.11.4
        raise UserError("unpacking archives safely needs Python 3.11.4 or later (tarfile's data filter)")
    with tarfile.open(archive, "r:*") as tar:
        tar.extractall(staging, filter=keep)
        while tar.fileobj.read(1 << 20):  # read to the compressed stream's end, where gzip checks its CRC
            pass


def _unpack_gz(archive: Path, staging: Path) -> None:
    with gzip.open(archive, "rb") as packed, (staging / archive.name.removesuffix(".gz")).open("wb") as out:
        shutil.copyfileobj(packed, out, 1 << 20)
    shutil.copy2(archive, staging / archive.name)


def unpack(archive: Path, resource: Resource, staging: Path, url: str) -> None:
    """Unpack one verified download into ``staging``; a corrupt archive is deleted and reported."""
    print(f"unpacking {archive.name}")
    try:
        if resource.kind == "tar":
            _unpack_tar(archive, resource, staging)
        else:
            _unpack_gz(archive, staging)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        _delete_download(archive)
        raise UserError(f"{archive.name} from {url} is not a readable {resource.kind} archive ({one_line(exc)}); the "
                        "file was deleted: run the same command to download it again, or pass --url with a mirror"
                        ) from None
    except OSError as exc:
        raise UserError(f"unpacking {archive} failed ({one_line(exc)}); the download is kept: free space or fix the "
                        "folder, then run the same command") from None


def check_layout(dataset: Dataset, staging: Path, files: list[Path], urls: list[str]) -> None:
    """A UserError, the downloads deleted, unless what unpacked into ``staging`` holds one of the entries where the
    dataset's loaders look (``Dataset.layout``): an archive of something else (a wrong mirror) is not installed and
    never marked fetched, so the loaders do not quietly fall back to generated data."""
    if not dataset.layout or any((staging / entry).exists() for entry in dataset.layout):
        return
    held = sorted(entry.name for entry in staging.iterdir())
    shown = listed(held, 4) if held else "nothing"
    for file in files:
        _delete_download(file)
    raise UserError(f"{dataset.name}: {', '.join(urls)} unpacked to {shown}, without {' or '.join(dataset.layout)}, "
                    f"where the {dataset.name} loaders look; nothing was installed and the download was deleted: "
                    "pass --url with the official release")


def install(staging: Path, target: Path) -> int:
    """Move what ``staging`` holds into ``target`` (same-named entries are replaced); return the file count.
    ``fetch`` has checked that ``target`` is not a file."""
    target.mkdir(parents=True, exist_ok=True)
    count = sum(1 for p in staging.rglob("*") if p.is_file())
    for entry in sorted(staging.iterdir()):
        there = target / entry.name
        if there.is_dir() and not there.is_symlink():
            shutil.rmtree(there)
        elif there.exists() or there.is_symlink():
            there.unlink()
        entry.rename(there)
    staging.rmdir()
    return count


def _fetched_at(marker: Path) -> str:
    try:
        return str(json.loads(marker.read_text()).get("fetched", "at an unknown time"))
    except (OSError, ValueError, AttributeError):
        return "at an unknown time"


def fetch(name: str, dest: str | None = None, url: str | None = None, sha256: str | None = None,
          force: bool = False) -> Path:
    """Download, check and unpack the dataset ``name``; return the folder it is in."""
    dataset = dataset_of(name)
    if sha256 is not None:
        sha256 = sha256.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise UserError(f"--sha256 {sha256}: give the 64 hexadecimal digits of a SHA-256")
        if len(dataset.resources) != 1:
            raise UserError(f"--sha256 checks a dataset of one file; {name} has {len(dataset.resources)}")
    urls = addresses(dataset, url)
    root, _ = destination(dest)
    target = root / dataset.folder
    marker = target / MARKER
    if target.exists() and not target.is_dir():
        raise UserError(f"{target} is a file, not a folder {name} can unpack into; move it away, then run the same "
                        "command")
    if marker.is_file() and not force:
        print(f"{name}: already present in {target} (fetched {_fetched_at(marker)}); --force downloads it again")
        return target
    held = sorted(entry.name for entry in target.iterdir() if not entry.name.startswith(".")) if target.is_dir() else []
    if held and not force:  # data put there by hand (or by another tool): never replaced unasked
        shown = listed(held, 4)
        print(f"{name}: {target} already holds data this command did not fetch ({shown}); the loaders read it as it "
              f"is. --force downloads {name} and replaces same-named entries")
        return target
    print(f"{name}: {dataset.description}\n  licence: {dataset.licence}\n  into {target}")
    downloads = root / DOWNLOADS
    created = [folder for folder in (downloads, root) if not folder.exists()]
    downloads.mkdir(parents=True, exist_ok=True)
    hint = dataset.refused_hint.format(target=target)
    note = f"{name}'s source publishes no SHA-256"
    files, digests = [], []
    try:
        for resource, address in zip(dataset.resources, urls, strict=True):
            file = downloads / resource.filename
            if force:
                file.unlink(missing_ok=True)
                file.with_name(file.name + ".part").unlink(missing_ok=True)
            if file.is_file() and (resource.size is None or file.stat().st_size == resource.size):
                print(f"{file.name}: using the complete download in {downloads}")
            else:
                print(f"downloading {address}")
                download(address, file, size=resource.size, refused_hint=hint)
            digests.append(verify(file, resource, address, sha256, note))
            files.append(file)
    except BaseException:  # a wrong --url or --sha256, Ctrl-C: folders made for nothing go again (a .part is kept)
        _remove_if_empty(*created)
        raise
    staging = downloads / f"{name}.unpacking"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        for file, resource, address in zip(files, dataset.resources, urls, strict=True):
            unpack(file, resource, staging, address)
        check_layout(dataset, staging, files, urls)
        marker.unlink(missing_ok=True)  # (--force) the folder changes from here: its record of the earlier fetch goes
        count = install(staging, target)  # which removes the emptied staging folder
    except BaseException:  # a refused archive, Ctrl-C: folders made for nothing go again
        shutil.rmtree(staging, ignore_errors=True)
        _remove_if_empty(*created)
        raise
    record = {"name": name, "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "files": [{"url": a, "file": r.filename, "sha256": d}
                        for r, a, d in zip(dataset.resources, urls, digests, strict=True)]}
    atomic_write_text(marker, json.dumps(record, indent=2) + "\n")
    for file, resource in zip(files, dataset.resources, strict=True):
        if resource.kind == "tar":
            file.unlink()
    print(f"{name}: {count} file{'' if count == 1 else 's'} in {target}")
    return target
