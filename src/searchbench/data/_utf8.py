"""Str ids as an Arrow-like string column (int64 offsets and UTF-8 bytes), without
pyarrow: how the evaluator hands the qrels' ids to the compiled reader's ``judge`` and how
``_arrow.strings`` builds an Arrow string array. Built in C when the compiled reader is
there (no Python object per id), else by one join and one encode."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._native import scanner

__all__ = ["utf8_column"]


def utf8_column(ids: Sequence[str] | np.ndarray, at: np.ndarray | None = None
                ) -> tuple[np.ndarray, bytes]:
    """The str ids ``ids[at]`` (``at`` None: all) as int64 offsets (``len + 1``) and the
    ids' UTF-8 bytes back to back. A non-str raises TypeError, a lone surrogate
    UnicodeEncodeError."""
    values = ids.tolist() if isinstance(ids, np.ndarray) else ids
    module = scanner()
    if module is not None:
        where = None if at is None else np.ascontiguousarray(at, dtype=np.int32)
        offsets, data = module.utf8_column(values, where)
        return np.frombuffer(offsets, dtype=np.int64), bytes(data)
    if at is not None:
        values = [values[i] for i in at.tolist()]
    text = "".join(values)
    data = text.encode("utf-8")
    if len(data) == len(text):  # ASCII: a character per byte
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    else:
        lengths = np.fromiter((len(v.encode("utf-8")) for v in values), dtype=np.int64,
                              count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, data
