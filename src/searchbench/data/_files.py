"""File plumbing shared by the text readers: transparent ``.gz``, BOM, atomic writes."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["PathOrFile", "atomic_write", "describe", "open_binary", "open_text"]

PathOrFile = str | os.PathLike[str] | IO[Any]


def describe(source: PathOrFile) -> str:
    """A printable name for a path or file object (used in ``path:line`` messages)."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


@contextlib.contextmanager
def open_binary(source: PathOrFile) -> Iterator[IO[bytes]]:
    """Open a path (``.gz`` transparent) or pass a binary file object through (not closed)."""
    if not isinstance(source, str | os.PathLike):
        buf = getattr(source, "buffer", source)  # text object -> its bytes
        yield buf
        return
    path = os.fspath(source)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        yield fh


@contextlib.contextmanager
def open_text(source: PathOrFile) -> Iterator[IO[str]]:
    """Open for reading text: UTF-8 with an optional BOM, universal newlines (CRLF ok).

    A text file object is passed through unchanged; a path is never read as content.
    """
    if not isinstance(source, str | os.PathLike) and isinstance(source, io.TextIOBase):
        yield source
        return
    with open_binary(source) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline=None)
        try:
            yield text
        finally:
            text.detach()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """Write ``path`` through a temp file in the same folder, then ``os.replace``.

    A name ending in ``.gz`` is gzip-compressed. On error the temp file is removed and
    the old file (if any) is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            sink: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) \
                if target.name.endswith(".gz") else raw
            if binary:
                yield sink
            else:
                text = io.TextIOWrapper(sink, encoding="utf-8", newline="\n")
                yield text
                text.flush()
                text.detach()
            if sink is not raw:
                sink.close()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
