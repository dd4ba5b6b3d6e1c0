"""Which columnar format, if any, a file's first bytes start (no pyarrow import: the text
readers ask before every read)."""

from __future__ import annotations

import os
from typing import IO, Any, Literal

__all__ = ["ARROW_MAGIC", "ARROW_STREAM_MAGIC", "PARQUET_MAGIC", "ColumnarFormat",
           "columnar_format", "sniff"]

ColumnarFormat = Literal["parquet", "arrow"]
PARQUET_MAGIC = b"PAR1"
ARROW_MAGIC = b"ARROW1\x00\x00"
ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"
TEXT_BYTES = frozenset(b"\t\n\r\f\v") | frozenset(range(0x20, 0x100))


def sniff(head: bytes) -> ColumnarFormat | None:
    """The columnar format these first bytes start (``None``: not Parquet, not Arrow).

    ``PAR1`` counts only when a byte that cannot follow it in text comes next (Parquet's
    next byte is a Thrift field header, 0x15), so a run whose first query id is ``PAR1``
    still reads as text.
    """
    if head.startswith(PARQUET_MAGIC) and len(head) > 4 and head[4] not in TEXT_BYTES:
        return "parquet"
    if head.startswith(ARROW_MAGIC) or head.startswith(ARROW_STREAM_MAGIC):
        return "arrow"
    return None


def columnar_format(source: str | os.PathLike[str] | IO[Any]) -> ColumnarFormat | None:
    """The format of a regular file at ``source`` by its magic bytes (``None`` for text,
    gzip, pipes, standard input and file objects: those are read as text)."""
    if not isinstance(source, (str, os.PathLike)) or os.fspath(source) == "-":
        return None
    try:
        if not os.path.isfile(source):
            return None
        with open(source, "rb") as fh:
            return sniff(fh.read(8))
    except OSError:
        return None  # the text reader reports it
