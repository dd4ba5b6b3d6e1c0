"""Block-wise normalisation of whitespace-separated text files.

Blocks of a file are turned into single-space-separated lines (tabs, CR, runs of spaces,
leading/trailing spaces and ``#`` comment lines removed) with C-level bytes and regex
passes, so pyarrow's CSV reader parses them without a Python loop per line.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

BLOCK_SIZE = 1 << 26  # 64 MiB
BOM = b"\xef\xbb\xbf"


def source_name(source: str | os.PathLike[str] | IO[Any]) -> str:
    """A printable name for a path or file object."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


def open_binary(source: str | os.PathLike[str] | IO[Any]) -> IO[bytes]:
    """Open a path (``.gz`` transparent) or wrap a file object as a binary stream."""
    if isinstance(source, (str, os.PathLike)):
        from ..errors import DataFormatError

        path = os.fspath(source)
        if not os.path.exists(path):
            raise DataFormatError(f"{path}: no such file; expected an existing file path")
        if os.path.isdir(path):
            raise DataFormatError(f"{path}: is a folder; expected a file")
        with open(path, "rb") as probe:
            magic = probe.read(2)
        return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")
    start = source.tell() if source.seekable() else None
    data = source.read()
    if start is not None:
        source.seek(start)  # a file object can be read again (sniffing, error location)
    if isinstance(data, str):
        data = data.encode("utf-8")
    return io.BytesIO(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def rewindable(source: str | os.PathLike[str] | IO[Any]) -> str | os.PathLike[str] | IO[Any]:
    """A path as is; a file object that cannot seek (a pipe) read into memory once."""
    if isinstance(source, (str, os.PathLike)) or source.seekable():
        return source
    data = source.read()
    stream = io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)
    stream.name = source_name(source)  # type: ignore[attr-defined]
    return stream


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


_WS = bytes.maketrans(b"\t\r", b"  ")
_RUNS = re.compile(rb" {2,}")
_EDGES = re.compile(rb"(?m)^ | $")
_COMMENTS = re.compile(rb"(?m)^#[^\n]*")


def normalise(block: bytes) -> bytes:
    """Return the block with single spaces between fields, one record per line.

    Tabs and CR become spaces, runs of spaces one space, leading and trailing spaces go,
    and comment lines (``#`` at line start) become empty lines, so line numbers are kept.
    Every step is a C-level bytes or regex pass over the whole block (no loop per line);
    a block that is already clean (the usual case) is returned as is after a numpy check.
    """
    if is_clean(block):
        return block
    data = block.translate(_WS)
    if data.startswith(b"#") or b"\n#" in data:
        data = _COMMENTS.sub(b"", data)
    if b"  " in data:
        data = _RUNS.sub(b" ", data)
    if data.startswith(b" ") or b"\n " in data or b" \n" in data or data.endswith(b" "):
        data = _EDGES.sub(b"", data)
    return data


def is_clean(block: bytes, step: int = 1 << 20) -> bool:
    """True if the block has single spaces between fields and nothing to remove: no tab,
    CR, run of spaces, space at a line's start or end, or ``#`` comment line.

    numpy compares in 1 MiB windows with reused buffers, which stay in cache and cost no
    fresh pages (whole-block temporaries made this 10× slower on a cold process).
    """
    if b"\t" in block or b"\r" in block:  # memchr: fast
        return False
    a = np.frombuffer(block, dtype=np.uint8)
    if len(a) and (a[0] in (_SPACE, _HASH) or a[-1] == _SPACE):
        return False
    space, newline = np.empty(step + 1, dtype=bool), np.empty(step + 1, dtype=bool)
    work, hashes = np.empty(step, dtype=bool), np.empty(step, dtype=bool)
    for lo in range(0, len(a) - 1, step):
        win = a[lo:lo + step + 1]  # one byte of overlap with the next window
        n = len(win) - 1
        sp = np.equal(win, _SPACE, out=space[:n + 1])
        nl = np.equal(win, _NEWLINE, out=newline[:n + 1])
        gap = np.logical_or(sp[:-1], nl[:-1], out=work[:n])
        if np.logical_and(gap, sp[1:], out=gap).any():  # run of spaces, space at line start
            return False
        if np.logical_and(sp[:-1], nl[1:], out=work[:n]).any():  # space at line end
            return False
        comment = np.equal(win[1:], _HASH, out=hashes[:n])
        if np.logical_and(comment, nl[:-1], out=comment).any():  # comment line
            return False
    return True


def has_data(block: bytes) -> bool:
    """True if the block holds a non-whitespace byte (stops at the first one)."""
    return _NON_SPACE.search(block) is not None


_SPACE, _NEWLINE, _HASH = ord(" "), ord("\n"), ord("#")
_NON_SPACE = re.compile(rb"\S")
_FIRST_FIELDS: dict[int, re.Pattern[bytes]] = {}


def keep_first_fields(data: bytes, n_fields: int) -> bytes:
    """Drop everything after the ``n_fields``-th field of each line."""
    pattern = _FIRST_FIELDS.setdefault(
        n_fields, re.compile(rb"(?m)^((?:[^ \n]+ ){%d}[^ \n]+) [^\n]*$" % (n_fields - 1))
    )
    return pattern.sub(rb"\1", data)


def read_json_mapping(source: str | os.PathLike[str] | IO[Any]) -> dict[str, dict[str, Any]]:
    """Read ``{query_id: {doc_id: value}}`` from a JSON file (pytrec_eval and ranx layout)."""
    import json

    from ..errors import DataFormatError

    name = source_name(source)
    with open_binary(source) as stream:
        try:
            data = json.loads(stream.read().decode("utf-8-sig"))
        except ValueError as exc:
            raise DataFormatError(f"{name}: not valid JSON ({exc}); expected "
                                  "{query_id: {doc_id: value}}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DataFormatError(f"{name}: expected a JSON object {{query_id: {{doc_id: value}}}}")
    return data
