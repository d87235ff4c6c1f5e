"""The datasets ``harness data fetch NAME`` can download: where each file lies, how to check it, how it unpacks.

Sources of the entries:

* ``lra``: the release named in https://github.com/google-research/long-range-arena/blob/main/README.md
  ("lra_release.gz", a gzipped tar that unpacks to ``lra_release/``). LRA publishes no checksum.
* ``babi``: the v1.2 release linked from https://research.facebook.com/downloads/babi/ (the address most
  bAbI code downloads, e.g. https://github.com/seominjoon/qrn/blob/master/download.sh). No published checksum.
* ``mnist``: torchvision's mirror and the MD5s of
  https://github.com/pytorch/vision/blob/main/torchvision/datasets/mnist.py (``MNIST.mirrors``,
  ``MNIST.resources``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.errors import UserError, did_you_mean

ArchiveKind = Literal["tar", "gz"]


@dataclass(frozen=True)
class Resource:
    """One downloaded file.

    ``kind`` says how it unpacks: ``tar`` (any compression tarfile reads) into the dataset's folder, with the
    archive's top folder ``strip`` removed; ``gz`` a single gzip file, kept and also decompressed beside it.
    """

    url: str
    filename: str
    kind: ArchiveKind
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    strip: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A fetchable dataset: its files and the folder (under the data folder) they unpack to."""

    name: str
    folder: str
    description: str
    licence: str
    resources: tuple[Resource, ...]
    refused_hint: str = "download it by other means and unpack it into {target}, or pass --url with a mirror"
    layout: tuple[str, ...] = ()
    """Entries of its folder, one of which the unpacked data must hold: where its loaders look (empty: any)."""


_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist/"

CATALOGUE: dict[str, Dataset] = {d.name: d for d in (
    Dataset(
        name="lra",
        folder="lra_release",
        description="Long Range Arena's release (Tay et al. 2021): listops-1000/, pathfinder32/, ...; "
                    "a gzipped tar of about 7.7 GB",
        licence="Apache-2.0 (google-research/long-range-arena); the sets inside keep their sources' terms",
        resources=(Resource(url="https://storage.googleapis.com/long-range-arena/lra_release.gz",
                            filename="lra_release.gz", kind="tar", strip="lra_release"),),
        layout=("listops-1000", "pathfinder32"),
        refused_hint="LRA's bucket is known to refuse anonymous downloads at times; download it by other means "
                     "and unpack it into {target}, or pass --url with a mirror",
    ),
    Dataset(
        name="babi",
        folder="babi",
        description="bAbI tasks v1.2 (Weston et al. 2015): en/, en-10k/, en-valid/, ... as the bAbI task reads them",
        licence="CC BY 3.0 (the LICENSE file in the archive)",
        resources=(Resource(url="http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz",
                            filename="tasks_1-20_v1-2.tar.gz", kind="tar", strip="tasks_1-20_v1-2"),),
        layout=("en-10k", "en"),
    ),
    Dataset(
        name="mnist",
        folder="mnist",
        description="MNIST (LeCun et al. 1998): the four IDX files, gzipped and decompressed",
        licence="CC BY-SA 3.0 (Yann LeCun and Corinna Cortes)",
        resources=tuple(Resource(url=_MNIST + filename, filename=filename, kind="gz", md5=md5, size=size)
                        for filename, md5, size in (
                            ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", 9912422),
                            ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432", 28881),
                            ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3", 1648877),
                            ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c", 4542))),
    ),
)}


def lookup(name: str) -> Dataset:
    """The catalogue's entry for ``name``, or a one-line error with the closest name and every name."""
    if name not in CATALOGUE:
        raise UserError(f"unknown dataset '{name}'{did_you_mean(name, CATALOGUE)}; "
                        f"fetchable: {', '.join(sorted(CATALOGUE))}")
    return CATALOGUE[name]
