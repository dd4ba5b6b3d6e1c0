"""Byte-level, vectorised normalisation of whitespace-separated text files.

Blocks of a file are turned into single-space-separated lines (tabs, CR, runs of spaces,
leading/trailing spaces and ``#`` comment lines removed) with numpy on ``uint8`` arrays,
so pyarrow's CSV reader can parse them without a Python loop per line.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

BLOCK_SIZE = 1 << 26  # 64 MiB
NL, SP, TAB, CR, HASH = 10, 32, 9, 13, 35
BOM = b"\xef\xbb\xbf"


def source_name(source: str | os.PathLike[str] | IO[Any]) -> str:
    """A printable name for a path or file object."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


def open_binary(source: str | os.PathLike[str] | IO[Any]) -> IO[bytes]:
    """Open a path (``.gz`` transparent) or wrap a file object as a binary stream."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            from ..errors import DataFormatError

            raise DataFormatError(f"{path}: no such file; expected an existing file path")
        with open(path, "rb") as probe:
            magic = probe.read(2)
        return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")
    if isinstance(source, io.TextIOBase) or "b" not in getattr(source, "mode", "b"):
        return io.BytesIO(source.read().encode("utf-8"))  # type: ignore[arg-type]
    head = source.read(2)
    rest = source.read()
    data = head + rest
    return io.BytesIO(gzip.decompress(data) if head == b"\x1f\x8b" else data)


def iter_blocks(stream: IO[bytes], block_size: int = BLOCK_SIZE) -> Iterator[bytes]:
    """Yield chunks of whole lines (the last may lack a final newline); BOM stripped."""
    carry = b""
    first = True
    while True:
        chunk = stream.read(block_size)
        if first:
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
            first = False
        if not chunk:
            if carry:
                yield carry
            return
        data = carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        yield data[: cut + 1]
        carry = data[cut + 1 :]


def normalise(block: bytes) -> np.ndarray:
    """Return the block as ``uint8`` with single spaces between fields, one line per record.

    Empty lines and comment lines (``#`` at line start) become empty lines, so line
    numbering is preserved (count newlines to map back).
    """
    buf = np.frombuffer(block, dtype=np.uint8).copy()
    if len(buf) == 0 or buf[-1] != NL:
        buf = np.append(buf, np.uint8(NL))
    buf[(buf == TAB) | (buf == CR)] = SP
    _blank_comment_lines(buf)
    is_sp = buf == SP
    prev = np.empty_like(buf)
    prev[0] = NL
    prev[1:] = buf[:-1]
    drop = is_sp & ((prev == SP) | (prev == NL))
    buf = buf[~drop]
    nxt = np.empty_like(buf)
    nxt[-1] = NL
    nxt[:-1] = buf[1:]
    return buf[~((buf == SP) & (nxt == NL))]


def _blank_comment_lines(buf: np.ndarray) -> None:
    """Overwrite comment lines (``#`` first byte) with spaces, in place."""
    starts = np.flatnonzero(buf == NL) + 1
    starts = np.concatenate(([0], starts[starts < len(buf)]))
    hashes = starts[buf[starts] == HASH]
    if len(hashes) == 0:
        return
    ends = np.flatnonzero(buf == NL)
    line_end = ends[np.searchsorted(ends, hashes)]
    delta = np.zeros(len(buf) + 1, dtype=np.int32)
    np.add.at(delta, hashes, 1)
    np.add.at(delta, line_end, -1)
    buf[np.cumsum(delta[:-1]) > 0] = SP


def line_fields(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per line of a normalised buffer: (field count, byte offset of the line start)."""
    nl = np.flatnonzero(buf == NL)
    starts = np.concatenate(([0], nl[:-1] + 1))
    line_of_space = np.searchsorted(nl, np.flatnonzero(buf == SP))
    n_spaces = np.bincount(line_of_space, minlength=len(nl))
    nonempty = nl > starts
    return np.where(nonempty, n_spaces + 1, 0), starts


def keep_first_fields(buf: np.ndarray, n_fields: int) -> np.ndarray:
    """Drop everything from the ``n_fields``-th space of each line to its end."""
    is_sp = buf == SP
    nl = np.flatnonzero(buf == NL)
    sp_cum = np.cumsum(is_sp, dtype=np.int64)
    line_start = np.concatenate(([0], nl[:-1] + 1))
    base = np.concatenate(([0], sp_cum[line_start[1:] - 1]))
    line_id = np.searchsorted(nl, np.arange(len(buf)))
    field = sp_cum - base[line_id] - is_sp  # field index of each byte; spaces belong left
    keep = (field < n_fields) & ~(is_sp & (field >= n_fields - 1))
    keep[nl] = True
    return buf[keep]
