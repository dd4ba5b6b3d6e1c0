"""Decoding of untrusted text and JSON with messages that name the file, line and offset.

UTF-8 errors say which bytes, on which line, at which offset; JSON failures of every kind
(syntax, an integer longer than Python converts, nesting deeper than the recursion limit, a
lone surrogate escape) are one :class:`~searchbench.errors.DataFormatError`.
"""

from __future__ import annotations

import io
import json
import re
from typing import IO, Any

from ..errors import DataFormatError

__all__ = ["Counting", "decode_message", "decode_utf8", "number_problem", "parse_json"]


def decode_message(name: str, exc: UnicodeDecodeError, counter: Counting) -> str:
    """``path:line: bytes … are not valid UTF-8`` for an error met while reading ``counter``."""
    data = exc.object if isinstance(exc.object, bytes | bytearray) else b""
    before = bytes(data[:exc.start])
    line = counter.lines_before + before.count(b"\n") + 1
    offset = counter.offset_before + exc.start
    found = " ".join(f"{b:02x}" for b in bytes(data[exc.start:exc.end])) or "?"
    return (f"{name}:{line}: bytes {found} (byte offset about {offset}) are not valid UTF-8 "
            f"({exc.reason}); expected UTF-8 text — re-save the file as UTF-8")


class Counting(io.RawIOBase):
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
