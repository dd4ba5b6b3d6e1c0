"""File plumbing shared by the text readers: transparent gzip, BOM, atomic writes.

Opening (gzip detected by its magic bytes, whatever the file name) and naming sources are
:mod:`searchbench.data._text`'s; this module adds text decoding and atomic writes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import DataFormatError
from ._decode import Counting, decode_message
from ._text import open_binary, source_name

__all__ = ["PathOrFile", "atomic_write", "describe", "open_text", "public_mode"]

PathOrFile = str | os.PathLike[str] | IO[Any]

describe = source_name  # a printable name for a path or file object (``path:line`` messages)


def public_mode(folder: bool = False) -> int:
    """The mode ``open``/``mkdir`` would give under the current umask (``0o666``/``0o777``
    masked): ``mkstemp``/``mkdtemp`` create private (0600/0700) entries, written files
    should not stay private."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if folder else 0o666) & ~mask


@contextlib.contextmanager
def open_text(source: PathOrFile) -> Iterator[IO[str]]:
    """Open for reading text: UTF-8 with an optional BOM, universal newlines (CRLF ok).

    Paths, ``-`` (standard input), pipes and file objects (binary or text) are read once,
    as one stream; ``.gz`` is transparent. Bytes that are not UTF-8 raise one
    :class:`DataFormatError` naming the source, the line and the byte offset.
    """
    name = source_name(source)
    with open_binary(source) as raw:
        counter = Counting(raw)
        text = io.TextIOWrapper(counter, encoding="utf-8-sig", newline=None)  # type: ignore[arg-type]
        try:
            yield text
        except UnicodeDecodeError as exc:
            raise DataFormatError(decode_message(name, exc, counter)) from None
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
        os.chmod(tmp, public_mode())
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
