"""Block-wise normalisation of whitespace-separated text files.

Blocks of a file are turned into single-space-separated lines (tabs, CR, runs of spaces,
leading/trailing spaces and ``#`` comment lines removed) with C-level bytes and regex
passes, so pyarrow's CSV reader parses them without a Python loop per line.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from ..errors import DataFormatError
from ._sniff import sniff

BLOCK_SIZE = 1 << 26  # 64 MiB
BOM = b"\xef\xbb\xbf"


GZIP_MAGIC = b"\x1f\x8b"


def source_name(source: str | os.PathLike[str] | IO[Any]) -> str:
    """A printable name for a path or file object (``-`` is standard input)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        return "<stdin>" if path == "-" else path
    return str(getattr(source, "name", "<stream>"))


def open_binary(source: str | os.PathLike[str] | IO[Any]) -> IO[bytes]:
    """Open a path or wrap a file object as one binary stream; gzip is transparent.

    The source is opened exactly once and the gzip magic is sniffed from that same stream
    (never by opening the path again), so pipes, FIFOs, ``/dev/stdin`` and ``-`` read
    like files. A damaged ``.gz`` (truncated, corrupt, gzip magic without gzip data)
    raises :class:`~searchbench.errors.DataFormatError` naming the file while reading.
    A file object handed in is not closed; a seekable one is rewound to where it was,
    so it can be read again.
    """
    name = source_name(source)
    src = _Source(_raw_stream(source, name), name)
    try:
        head = src.head(10)  # read until 10 bytes or the end: a pipe may give fewer at once
        _refuse_other_encodings(head, name)
    except BaseException:
        src.close()
        raise
    raw = io.BufferedReader(src)
    if head[:2] != GZIP_MAGIC:
        return raw
    return io.BufferedReader(_Gunzip(raw, name), BUFFER)


_FOREIGN = ((b"BZh", "bzip2-compressed data"), (b"\xfd7zXZ\x00", "xz-compressed data"),
            (b"\x28\xb5\x2f\xfd", "zstd-compressed data"), (b"PK\x03\x04", "a zip archive"),
            (b"\xff\xfe", "UTF-16 text (little-endian byte-order mark)"),
            (b"\xfe\xff", "UTF-16 text (big-endian byte-order mark)"))


def _refuse_other_encodings(head: bytes, name: str) -> None:
    """Name what a file is when its first bytes say it is not text or gzip (only the
    signatures that cannot start UTF-8 text are checked, and bzip2's ``BZh`` with its block
    magic, so a run whose first query is ``BZh9`` still reads)."""
    columnar = sniff(head)
    if columnar:
        what = "a Parquet file" if columnar == "parquet" else "an Arrow IPC file"
        raise DataFormatError(f"{name}: found {what}; expected UTF-8 text here — qrels and runs "
                              "in Parquet or Arrow are read from a file path (read_qrels, "
                              "read_run, searchbench eval/convert); convert other data to text")
    for magic, what in _FOREIGN:
        if head.startswith(magic) and (magic != b"BZh" or head[4:10] == b"1AY&SY"):
            fix = "re-save it as UTF-8" if "UTF-16" in what else \
                "decompress it first, or compress it with gzip"
            raise DataFormatError(f"{name}: found {what}; expected UTF-8 text, plain or "
                                  f"gzip-compressed — {fix}")


BUFFER = 1 << 16


def _raw_stream(source: str | os.PathLike[str] | IO[Any], name: str) -> tuple[Any, bool]:
    """``(binary stream, owned)``: a path opened once, or the file object handed in."""
    if not isinstance(source, (str, os.PathLike)):
        return source, False
    path = os.fspath(source)
    if path == "-":
        return sys.stdin.buffer, False
    if os.path.isdir(path):
        raise DataFormatError(f"{path}: is a folder; expected a file")
    try:
        return open(path, "rb"), True
    except FileNotFoundError:
        raise DataFormatError(f"{path}: no such file; expected an existing file path") from None
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot be opened ({exc.strerror or exc}); expected a "
                              "readable file") from None


class _Source(io.RawIOBase):
    """The bytes of a path or file object (text objects are encoded as UTF-8).

    Read errors become DataFormatError naming the source; a borrowed seekable object is
    rewound on close.
    """

    def __init__(self, opened: tuple[Any, bool], name: str) -> None:
        self._stream, self._owned = opened
        self._name = name
        self._pending = b""
        self._text = isinstance(self._stream, io.TextIOBase) or not _is_binary(self._stream)
        self._start = _tell(self._stream) if not self._owned else None

    def readable(self) -> bool:
        return True

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at the end), kept to be read again."""
        while len(self._pending) < n:
            more = self._read(n - len(self._pending))
            if not more:
                break
            self._pending += more
        return self._pending[:n]

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if not self._pending and not self._text and hasattr(self._stream, "readinto"):
            return self._guarded(lambda: self._stream.readinto(view)) or 0
        if not self._pending:
            self._pending = self._read(max(len(view), BUFFER))
        n = min(len(view), len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _guarded(self, read: Any) -> Any:
        try:
            return read()
        except OSError as exc:
            raise DataFormatError(f"{self._name}: cannot be read ({exc.strerror or exc}); "
                                  "expected a readable file") from None

    def _read(self, size: int) -> bytes:
        try:
            data = self._guarded(
                lambda: self._stream.read(max(size // 4, 1) if self._text else size))
        except UnicodeDecodeError as exc:
            raise DataFormatError(f"{self._name}: not valid UTF-8 ({exc.reason}); expected "
                                  "UTF-8 text") from None
        if data is None:
            return b""
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if self._owned:
            self._stream.close()
        elif self._start is not None:
            with contextlib.suppress(OSError, ValueError):
                self._stream.seek(self._start)


def _is_binary(stream: Any) -> bool:
    """True unless reading gives text (a file object opened in text mode)."""
    mode = getattr(stream, "mode", "")
    if isinstance(mode, str) and mode and "b" not in mode and hasattr(stream, "encoding"):
        return False
    return not isinstance(stream, io.TextIOBase)


def _tell(stream: Any) -> int | None:
    try:
        return stream.tell() if stream.seekable() else None
    except (OSError, ValueError, AttributeError):
        return None


class _Gunzip(io.RawIOBase):
    """gzip decompression whose errors (truncated or corrupt data, gzip magic without
    gzip data) become a DataFormatError naming the file."""

    def __init__(self, raw: IO[bytes], name: str) -> None:
        self._raw = raw
        self._name = name
        import gzip  # lazy: a plain file does not need it

        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._corrupt = (zlib.error, gzip.BadGzipFile)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self._gz.readinto(buffer)
        except EOFError:
            raise DataFormatError(f"{self._name}: the compressed file is truncated or corrupt "
                                  "(the gzip data ends early; or the file starts with the "
                                  "gzip signature 1f 8b but is not gzip); expected a complete "
                                  ".gz file — copy or download it again") from None
        except self._corrupt as exc:
            raise DataFormatError(f"{self._name}: the compressed file is truncated or corrupt "
                                  f"(found the gzip signature 1f 8b, then: {exc}); expected a "
                                  "complete .gz file or plain text") from None

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        self._gz.close()
        self._raw.close()


def rewindable(source: str | os.PathLike[str] | IO[Any]) -> str | os.PathLike[str] | IO[Any]:
    """A source that can be read more than once (readers sniff, then parse, then may
    rescan to locate an error).

    A regular file path is returned as is. Anything that can be read only once - ``-``,
    ``/dev/stdin``, a pipe or a FIFO given by path, a file object that cannot seek - is
    copied once, as read (still compressed), into a temporary file (in memory up to
    64 MiB) named like the source.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path != "-" and (not os.path.exists(path) or _is_regular(path)):
            return source
    elif _tell(source) is not None:
        return source
    return _spool(source)


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # let the reader report it


def _spool(source: str | os.PathLike[str] | IO[Any]) -> IO[bytes]:
    import shutil  # lazy: only a pipe or standard input is copied
    import tempfile  # lazy: only a pipe or standard input is copied

    name = source_name(source)
    raw = _Source(_raw_stream(source, name), name)  # may fail (e.g. a folder): before copy
    copy = tempfile.SpooledTemporaryFile(max_size=BLOCK_SIZE)  # noqa: SIM115 - returned
    try:
        shutil.copyfileobj(raw, copy, BUFFER)
    except BaseException:
        copy.close()
        raise
    finally:
        raw.close()
    copy.seek(0)
    return cast(IO[bytes], _Named(copy, name))  # a BufferedIOBase: IO[bytes] at run time


class _Named(io.BufferedIOBase):
    """A seekable binary stream with a ``name`` for messages."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream, self.name = stream, name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._stream.read(-1 if size is None else size)

    def read1(self, size: int = -1) -> bytes:
        return self._stream.read(size if size and size > 0 else BUFFER)

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._stream.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._stream.seek(offset, whence)

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._stream.close()


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


def iter_line_views(stream: IO[bytes], block_size: int = 1 << 22) -> Iterator[memoryview]:
    """:func:`iter_blocks` for a reader that is done with each block before asking for
    the next: the blocks are views of one reused buffer (no new bytes object and no copy
    per block: at 10⁸ lines those copies and the fresh pages they faulted in cost about a
    second per GiB). A line longer than the buffer moves it to a larger one."""
    buffer = bytearray(block_size)
    filled, skip, first = 0, 0, True
    while True:
        if filled == len(buffer):  # no newline in it yet: a larger one
            bigger = bytearray(2 * len(buffer))
            bigger[:filled] = buffer[:filled]
            buffer = bigger
        n = stream.readinto(memoryview(buffer)[filled:]) or 0  # type: ignore[attr-defined]
        filled += n
        if first and n and filled < len(BOM) and BOM.startswith(bytes(buffer[:filled])):
            continue  # maybe a byte-order mark still arriving
        if first and n:
            first = False
            skip = len(BOM) if buffer.startswith(BOM) else 0
        if not n:
            if filled > skip:
                yield memoryview(buffer)[skip:filled]
            return
        cut = buffer.rfind(b"\n", skip, filled)
        if cut < 0:
            continue
        yield memoryview(buffer)[skip:cut + 1]
        tail = bytes(buffer[cut + 1:filled])
        buffer[:len(tail)] = tail
        filled, skip = len(tail), 0


_WS = bytes.maketrans(b"\t\r", b"  ")
_RUNS = re.compile(rb" {2,}")
_EDGES = re.compile(rb"(?m)^ | $")
_COMMENTS = re.compile(rb"(?m)^#[^\n]*")


def normalise(block: bytes) -> bytes:
    """Return the block with single spaces between fields, one record per line.

    Tabs and CR become spaces, runs of spaces one space, leading and trailing spaces go,
    and comment lines (``#`` as the first non-blank character, as in trec_eval 10) become
    empty lines, so line numbers are kept.
    Every step is a C-level bytes or regex pass over the whole block (no loop per line);
    a block that is already clean (the usual case) is returned as is after a numpy check.
    """
    if is_clean(block):
        return block
    data = block.translate(_WS)
    if b"  " in data:
        data = _RUNS.sub(b" ", data)
    if data.startswith(b" ") or b"\n " in data or b" \n" in data or data.endswith(b" "):
        data = _EDGES.sub(b"", data)
    if data.startswith(b"#") or b"\n#" in data:  # after the edges: indented comments too
        data = _COMMENTS.sub(b"", data)
    return data


def is_clean(block: bytes, step: int = 1 << 20) -> bool:
    """True if the block has single spaces between fields and nothing to remove: no tab,
    CR, run of spaces, space at a line's start or end, or ``#`` comment line.

    numpy compares in 1 MiB windows with reused buffers, which stay in cache and cost no
    fresh pages (whole-block temporaries made this 10× slower on a cold process).
    """
    if b"\t" in block or b"\r" in block:  # memchr: fast
        return False
    import numpy as np  # lazy: the compiled reader's scan of a run imports no numpy

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

    from ._decode import decode_utf8, parse_json  # lazy: keeps _decode out of eval

    name = source_name(source)
    with open_binary(source) as stream:
        text = decode_utf8(stream.read(), name)
    data = parse_json(text, name, "{query_id: {doc_id: value}}")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DataFormatError(f"{name}: expected a JSON object {{query_id: {{doc_id: value}}}}")
    return data
