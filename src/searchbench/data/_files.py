"""File plumbing shared by the text readers: transparent gzip, BOM, atomic writes.

Opening (gzip detected by its magic bytes, whatever the file name) and naming sources are
:mod:`searchbench.data._text`'s; this module adds text decoding and atomic writes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import DataFormatError
from ._text import open_binary, source_name

__all__ = ["PathOrFile", "atomic_write", "decode_utf8", "describe", "open_text", "parse_json",
           "public_mode"]

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
        counter = _Counting(raw)
        text = io.TextIOWrapper(counter, encoding="utf-8-sig", newline=None)  # type: ignore[arg-type]
        try:
            yield text
        except UnicodeDecodeError as exc:
            raise DataFormatError(_decode_message(name, exc, counter)) from None
        finally:
            text.detach()


def _decode_message(name: str, exc: UnicodeDecodeError, counter: _Counting) -> str:
    data = exc.object if isinstance(exc.object, bytes | bytearray) else b""
    before = bytes(data[:exc.start])
    line = counter.lines_before + before.count(b"\n") + 1
    offset = counter.offset_before + exc.start
    found = " ".join(f"{b:02x}" for b in bytes(data[exc.start:exc.end])) or "?"
    return (f"{name}:{line}: bytes {found} (byte offset about {offset}) are not valid UTF-8 "
            f"({exc.reason}); expected UTF-8 text — re-save the file as UTF-8")


class _Counting(io.RawIOBase):
    """Pass-through that counts the newlines before the chunk last read (for messages)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.lines_before = self.offset_before = 0
        self._lines = self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(memoryview(buffer)))
        n = len(data)
        memoryview(buffer).cast("B")[:n] = data
        self.lines_before, self.offset_before = self._lines, self._offset
        self._lines += data.count(b"\n")
        self._offset += n
        return n


def decode_utf8(data: bytes, name: str) -> str:
    """Decode a whole file's bytes (BOM allowed); errors name the line and byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        found = " ".join(f"{b:02x}" for b in data[start:start + exc.end - exc.start])
        raise DataFormatError(f"{name}:{line}: bytes {found} (byte offset {start}) are not "
                              f"valid UTF-8 ({exc.reason}); expected UTF-8 text — re-save the "
                              "file as UTF-8") from None


_HUGE_NUMBER = re.compile(r"[0-9]{4300}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def number_problem(exc: ValueError) -> str:
    """The reason of a ValueError from ``json``, in the user's terms."""
    text = str(exc)
    if "Exceeds the limit" in text:
        return "found an integer of more than 4300 digits, which Python does not convert"
    return text


def parse_json(text: str, name: str, expected: str) -> Any:
    """``json.loads`` whose every failure (syntax, a number too long for Python, nesting
    too deep) is one :class:`DataFormatError` naming the source and, when known, the line."""
    import json

    try:
        value = json.loads(text)
        if _SURROGATE_ESCAPE.search(text):  # a lone "\ud800" cannot be written as UTF-8
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else "?"
        raise DataFormatError(f"{name}: the escape {bad.encode('unicode_escape').decode()!r} is "
                              "half of a surrogate pair (not a character); expected valid "
                              f"Unicode text in {expected}") from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{name}:{exc.lineno}: invalid JSON ({exc.msg} at column "
                              f"{exc.colno}); expected {expected}") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        huge = _HUGE_NUMBER.search(text)
        where = f"{name}:{text.count(chr(10), 0, huge.start()) + 1}" if huge else name
        raise DataFormatError(f"{where}: a JSON value cannot be read ({number_problem(exc)}); "
                              f"expected {expected}") from None
    except RecursionError:
        raise DataFormatError(f"{name}: JSON nested too deeply to read; expected "
                              f"{expected}") from None


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
