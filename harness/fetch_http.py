"""A resumable HTTP download with urllib: bytes go to ``<file>.part``, which becomes ``<file>`` only when complete.

A partial ``.part`` is resumed with ``Range: bytes=N-`` (RFC 9110, section 14.2): a ``206`` answer appends, a
``200`` (a server ignoring ranges) starts again from byte 0, a ``416`` means nothing is left to send. Every
failure is a :class:`harness.errors.UserError` of one line naming the address and what to do; a download cut
short keeps its ``.part`` so the same command resumes it.
"""

from __future__ import annotations

import http.client
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TextIO

from harness.errors import UserError

TIMEOUT_S = 30.0
CHUNK = 1 << 20
USER_AGENT = "reasoning-harness-fetch/1"


def human(n: float) -> str:
    """A byte count as people read it: 7.7 GB, 512.0 kB, 42 B."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


class Progress:
    """Download progress on a stream: a redrawn bar on a terminal, a plain line every ``every_s`` otherwise."""

    def __init__(self, label: str, total: int | None, done: int, stream: TextIO | None = None,
                 every_s: float = 15.0) -> None:
        self.label, self.total, self.start_done = label, total, done
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = 0.2 if self.tty else every_s
        self.started = self.last = time.monotonic()

    def _line(self, done: int) -> str:
        rate = (done - self.start_done) / max(time.monotonic() - self.started, 1e-6)
        if self.total:
            return (f"{self.label}: {human(done)} / {human(self.total)}  {100 * done / self.total:5.1f}%  "
                    f"{human(rate)}/s")
        return f"{self.label}: {human(done)}  {human(rate)}/s"

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        if self.tty:
            self.stream.write("\r" + self._line(done).ljust(78))
        else:
            self.stream.write(self._line(done) + "\n")
        self.stream.flush()

    def finish(self, done: int) -> None:
        self.stream.write(("\r" + self._line(done).ljust(78) if self.tty else self._line(done)) + "\n")
        self.stream.flush()


def _unreachable(url: str, reason: object) -> UserError:
    if isinstance(reason, TimeoutError | socket.timeout):
        return UserError(f"no answer from {url} within {TIMEOUT_S:.0f} s; check the network and run the same "
                         "command again, or pass --url with a mirror")
    if isinstance(reason, socket.gaierror):
        return UserError(f"could not resolve the host of {url} ({reason.strerror or reason}); check the address "
                         "and the network, or pass --url with a mirror")
    if isinstance(reason, ConnectionRefusedError):
        return UserError(f"could not reach {url}: connection refused; check the address, or pass --url with a "
                         "mirror")
    return UserError(f"could not reach {url} ({reason}); check the network, or pass --url with a mirror")


def _open(url: str, offset: int, refused_hint: str) -> tuple[http.client.HTTPResponse | None, int | None]:
    """The server's answer to a GET from byte ``offset``, or for a 416 (no bytes left after it) ``None`` and the
    complete length the answer states, if any."""
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S), None
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and offset:
            return None, _content_range(exc.headers.get("Content-Range"))[1]
        if exc.code in (401, 403):
            raise UserError(f"the server refused {url} (HTTP {exc.code}): {refused_hint}") from None
        if exc.code in (404, 410):
            raise UserError(f"{url} was not found (HTTP {exc.code}); the file may have moved: pass --url with its "
                            "new address or a mirror") from None
        raise UserError(f"{url} answered HTTP {exc.code} {exc.reason}; try again later, or pass --url with a "
                        "mirror") from None
    except urllib.error.URLError as exc:
        raise _unreachable(url, exc.reason) from None
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise _unreachable(url, exc) from None
    except ValueError as exc:  # urllib: "unknown url type"
        raise UserError(f"cannot download {url}: {exc}") from None


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, complete length) of a ``Content-Range`` header such as ``bytes 100-199/200`` or ``*/200``."""
    match = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", value or "")
    if not match:
        return None, None
    first, total = match.groups()
    return (int(first) if first else None), (int(total) if total and total != "*" else None)


def _length(value: str | None) -> int | None:
    """A ``Content-Length`` header's value; ``None`` when absent or malformed."""
    return int(value) if value is not None and value.strip().isdigit() else None


def _stream(response: http.client.HTTPResponse, part: Path, offset: int, total: int | None, url: str,
            label: str) -> None:
    progress = Progress(label, total, offset)
    done = offset
    try:
        out = part.open("ab" if offset else "wb")
    except OSError as exc:
        raise UserError(f"cannot write {part} ({exc}); fix the folder, then run the same command") from None
    with out:
        while True:
            try:
                chunk = response.read(CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                reason = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
                raise UserError(_cut_short(url, part, done, total, reason)) from None
            if not chunk:
                break
            try:
                out.write(chunk)
            except OSError as exc:
                raise UserError(f"writing {part} failed ({exc}); free space or fix the folder, then run the "
                                "same command to resume") from None
            done += len(chunk)
            progress.update(done)
    progress.finish(done)


def _cut_short(url: str, part: Path, done: int, total: int | None, reason: str) -> str:
    of = f" of {total}" if total is not None else ""
    return (f"the download of {url} stopped after {done}{of} bytes ({reason}); the partial file {part} is kept: "
            "run the same command to resume it")


def download(url: str, target: Path, size: int | None = None, refused_hint: str = "",
             label: str | None = None) -> None:
    """Download ``url`` to ``target`` (through ``<target>.part``, resumed when present). ``size`` is the
    length the file must have when known; the server's ``Content-Length`` is checked too."""
    part = target.with_name(target.name + ".part")
    label = label or target.name
    for _ in range(3):  # at most: a stale .part dropped, then a restart after a bad range answer
        offset = part.stat().st_size if part.exists() else 0
        if size is not None and offset > size:
            part.unlink()
            continue
        if size is not None and offset == size:  # complete already: nothing to ask for
            break
        response, complete = _open(url, offset, refused_hint)
        if response is None:  # 416: the server has nothing after `offset`
            expected = complete if complete is not None else size
            if expected is None or offset == expected:
                break
            part.unlink()  # the .part is not a prefix of this file: start again
            continue
        with response:
            length = _length(response.headers.get("Content-Length"))
            if response.status == 206:
                first, total = _content_range(response.headers.get("Content-Range"))
                if first != offset:  # not the range asked for: start again
                    part.unlink(missing_ok=True)
                    continue
                if total is None and length is not None:
                    total = offset + length
            else:
                if offset:
                    print(f"{label}: the server ignored the resume request (HTTP {response.status}); downloading "
                          "from the start", file=sys.stderr)
                offset = 0
                total = length
            if size is not None and total is not None and total != size:
                raise UserError(f"{url} offers {total} bytes where {size} are expected; it is not the expected "
                                "file: pass --url with a mirror that serves it")
            total = total if total is not None else size
            _stream(response, part, offset, total, url, label)
        got = part.stat().st_size
        if total is not None and got != total:
            raise UserError(_cut_short(url, part, got, total, "connection closed early"))
        break
    else:
        raise UserError(f"{url} did not resume the partial download {part} consistently; delete it and run the "
                        "same command again")
    part.replace(target)
