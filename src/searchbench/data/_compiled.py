"""The compiled TREC scanner (``data/_scan.c``) over a file (ARCHITECTURE §2.4): blocks of
the file fed to one scanner, or a large run file cut in two parts scanned at once.
``trec.parse_run``/``parse_qrels`` try it first and fall back to the pure reader when it
returns None. Nothing here imports numpy (:class:`RunsReadAhead <._ahead.RunsReadAhead>`
scans while the caller imports it); the scan's columns become arrays in ``_columns``.
"""

from __future__ import annotations

import os
import re
import stat
from typing import IO, Any, cast

from ._native import scanner
from ._sniff import columnar_format
from ._text import GZIP_MAGIC, iter_line_views, open_binary

NUMBER_LIKE = re.compile(rb"[-+]?[0-9._eExX]+")  # a BEIR grade, not a header's name

# A run file at least this large is scanned in two parts at once, one per core. Below it,
# one thread scans while ``eval``'s main thread imports numpy and the measures and reads
# the qrels; a second scanning thread there only took the main thread's core (at 32 MiB
# the whole command was slower cut in two: benchmarks/README.md, issue 26, fourth round).
SPLIT_BYTES = 64 << 20
_SIMPLE_RUN_LINE = re.compile(rb"[!-~]+(?: [!-~]+){5}")


def scan_compiled(source: str | os.PathLike[str] | IO[Any], what: str
                  ) -> dict[str, Any] | None:
    """The file read by the compiled scanner (``data/_scan.c``): its columns, vocabularies
    and flags; None when the scanner is not built or is switched off, or when the file
    holds anything it does not take (then the pure reader reads it, and accepts it or names
    the bad line: both paths accept the same files and give the same values).

    A large run file (:data:`SPLIT_BYTES`) is cut at a query boundary near its middle
    (:func:`_split_point`): a second thread scans the second part with its own scanner,
    which the first then absorbs (the scanner parses without the GIL)."""
    module = scanner()
    if module is None:
        return None
    split = _split_point(source) if what == "run" else None
    with open_binary(source) as stream:
        if split is None:
            fed = _feed_all(module, stream, what)
        else:
            fed = _feed_in_two(module, stream, cast("str | os.PathLike[str]", source), split)
    if fed is None:
        return None
    scan, header = fed
    found: dict[str, Any] = scan.finish()
    if not found["rows"]:
        return None
    found["header"] = header
    return found


class NotScanned:
    """What :func:`scan_run_file` gives for a file it leaves to ``trec.parse_run``."""


NOT_SCANNED = NotScanned()


def scan_run_file(path: str | os.PathLike[str]) -> dict[str, Any] | NotScanned | None:
    """:func:`scan_compiled` of the TREC run file at ``path``, as ``trec.parse_run`` would
    take it; :data:`NOT_SCANNED` for a path that is not a regular file (a pipe, a missing
    file: ``parse_run`` opens it and names the problem) or holds a Parquet or Arrow run."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return NOT_SCANNED
    if not regular or columnar_format(path):
        return NOT_SCANNED
    return scan_compiled(path, "run")


def _feed_all(module: Any, stream: Any, what: str) -> tuple[Any, bool] | None:
    """A scanner fed every block of ``stream`` and whether it skips a header line; None
    when the stream holds no data line, an odd layout or a line the scanner does not
    take."""
    scan = None
    header = False
    for block in iter_line_views(stream):
        if scan is None:
            first = _first_fields(bytes(block))
            if first is None or (what == "run" and len(first) != 6) or \
                    (what == "qrels" and len(first) not in (3, 4)):
                return None  # no data line in the first block, or an odd layout
            kind = "run" if what == "run" else "trec" if len(first) == 4 else "beir"
            header = kind == "beir" and NUMBER_LIKE.fullmatch(first[-1]) is None
            scan = module.Scanner(kind, skip_first=header)
        if not scan.feed(block):
            return None
        del block  # the view: the buffer is reused for the next block
    return None if scan is None else (scan, header)


def _feed_in_two(module: Any, stream: IO[bytes], path: str | os.PathLike[str], split: int
                 ) -> tuple[Any, bool] | None:
    """The first ``split`` bytes of ``stream`` fed here, the rest of the file at ``path``
    by a second thread, and its rows appended to the first part's scanner."""
    from .._util.threads import map_in_threads  # lazy: only a large run file starts a thread

    def scan_rest() -> tuple[Any, bool] | None:
        with open(path, "rb") as tail:
            tail.seek(split)
            return _feed_all(module, tail, "run")

    first, second = map_in_threads(lambda part: part(), [
        lambda: _feed_all(module, _Prefix(stream, split), "run"), scan_rest], 2)
    if first is None or second is None:
        return None
    first[0].absorb(second[0])
    return first


class _Prefix:
    """The first ``size`` bytes of a binary stream (what :func:`iter_line_views` reads)."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream, self._left = stream, size

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)[:self._left]
        got = self._stream.readinto(view) if len(view) else 0  # type: ignore[attr-defined]
        self._left -= got or 0
        return got or 0


def _split_point(source: Any) -> int | None:
    """Where a run file can be cut in two: the start of the first line after its middle
    whose query differs from the line before. None for a source that is not a regular,
    uncompressed file of at least :data:`SPLIT_BYTES`, or when a line near the middle is
    not six fields separated by single spaces (the one-thread scan then decides)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        info = os.stat(source)
        if not stat.S_ISREG(info.st_mode) or info.st_size < SPLIT_BYTES:
            return None
        with open(source, "rb") as file:
            if file.read(2) == GZIP_MAGIC:
                return None
            middle = info.st_size // 2
            file.seek(middle)
            window = file.read(1 << 20)
    except OSError:
        return None
    at = window.find(b"\n") + 1
    previous = None
    while at:
        end = window.find(b"\n", at)
        if end < 0 or not _SIMPLE_RUN_LINE.fullmatch(window, at, end):
            return None
        query = window[at:window.index(b" ", at)]
        if previous is not None and query != previous:
            return middle + at
        previous, at = query, end + 1
    return None


def _first_fields(block: bytes) -> list[bytes] | None:
    """The fields of the block's first data line (not blank, not a ``#`` comment)."""
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        fields = block[start:end].split()
        if fields and not fields[0].startswith(b"#"):
            return fields
        start = end + 1
    return None
