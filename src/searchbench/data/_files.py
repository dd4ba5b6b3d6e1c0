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

from ._text import open_binary, source_name

__all__ = ["PathOrFile", "describe", "open_text"]

PathOrFile = str | os.PathLike[str] | IO[Any]

describe = source_name  # a printable name for a path or file object (``path:line`` messages)


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
