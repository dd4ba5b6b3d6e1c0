"""File plumbing shared by the text readers: transparent gzip, BOM.

Opening (gzip detected by its magic bytes, whatever the file name) and naming sources are
:mod:`searchbench.data._text`'s; this module adds text decoding. Writing is
:mod:`searchbench._util.files`'s (one atomic writer for the whole package).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataFormatError
from ._decode import Counting, decode_message
from ._text import open_binary, source_name

__all__ = ["PathOrFile", "describe", "open_text"]

PathOrFile = str | os.PathLike[str] | IO[Any]

describe = source_name  # a printable name for a path or file object (``path:line`` messages)


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
        # TextIOWrapper reads a raw stream fine; typeshed wants a buffered one, and a buffer
        # in between would make the counter's line numbers lag behind the decoder's.
        text = io.TextIOWrapper(counter, encoding="utf-8-sig", newline=None)  # type: ignore[type-var]
        try:
            yield text
        except UnicodeDecodeError as exc:
            raise DataFormatError(decode_message(name, exc, counter)) from None
        finally:
            text.detach()
