"""The IDX file format of MNIST (LeCun et al. 1998, the dataset the World of Numbers draws its digits from;
Moskvichev & Liu 2021, Appendix B, Experiment 1), raw or gzipped.

An IDX file is a 4-byte magic number ``00 00 TT DD`` (TT the element type, 0x08 = unsigned byte for both of
MNIST's files; DD the number of dimensions: 3 for images, 1 for labels), then DD big-endian uint32 sizes,
then the elements in row-major order. A file that breaks this (a bad magic number, fewer or more bytes than
the header promises, a truncated or corrupt gzip stream) is a :class:`harness.errors.UserError` naming it.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from harness.errors import UserError
from harness.paths import shown_path

UNSIGNED_BYTE = 0x08


def _open_bytes(path: Path, limit: int | None = None) -> bytes:
    """The file's (decompressed, for ``.gz``) bytes; only the first ``limit`` when given."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read() if limit is None else handle.read(limit)
        with path.open("rb") as handle:
            return handle.read() if limit is None else handle.read(limit)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise UserError(f"{shown_path(path)}: not a readable gzip file ({exc or type(exc).__name__}); "
                        "fetch it again (harness data fetch mnist)") from None
    except OSError as exc:
        raise UserError(f"{shown_path(path)}: cannot be read ({exc.strerror or exc})") from None


def _parse_header(path: Path, data: bytes, ndim: int) -> tuple[int, ...]:
    """The sizes the header declares, after checking the magic number (unsigned bytes, ``ndim`` dimensions)."""
    if len(data) < 4 + 4 * ndim:
        raise UserError(f"{shown_path(path)}: {len(data)} bytes, too short for an IDX header of {ndim} dimension(s)")
    magic = int.from_bytes(data[:4], "big")
    expected = (UNSIGNED_BYTE << 8) | ndim
    if magic != expected:
        raise UserError(f"{shown_path(path)}: bad IDX magic number 0x{magic:08x}; expected 0x{expected:08x} "
                        f"(unsigned bytes, {ndim} dimension(s))")
    return tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))


def read_idx_shape(path: Path, ndim: int) -> tuple[int, ...]:
    """The sizes an IDX file declares (reads only its header)."""
    return _parse_header(path, _open_bytes(path, 4 + 4 * ndim), ndim)


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """The whole IDX file of unsigned bytes with ``ndim`` dimensions, as a uint8 array of the declared shape."""
    data = _open_bytes(path)
    shape = _parse_header(path, data, ndim)
    body = memoryview(data)[4 + 4 * ndim:]
    expected = int(np.prod(shape, dtype=np.int64))
    if len(body) != expected:
        raise UserError(f"{shown_path(path)}: {len(body)} bytes of data, but its IDX header promises {expected} "
                        f"({' x '.join(map(str, shape))}); the file is truncated or not what it claims")
    return np.frombuffer(body, dtype=np.uint8).reshape(shape).copy()


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (gzipped when the name ends in ``.gz``); used to make test files."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = ((UNSIGNED_BYTE << 8) | array.ndim).to_bytes(4, "big")
    header += b"".join(int(size).to_bytes(4, "big") for size in array.shape)
    payload = header + array.tobytes()
    if path.name.endswith(".gz"):
        payload = gzip.compress(payload)
    path.write_bytes(payload)
