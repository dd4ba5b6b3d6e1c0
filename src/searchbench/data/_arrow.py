"""numpy ⇄ pyarrow conversions that never import pandas.

pyarrow imports pandas (about 0.15 s when it is installed) the first time a Python object
becomes an Arrow value: ``pa.array(...)``, ``Array.to_numpy()``, a Python scalar passed to
a compute function. Evaluation pays that on every call from a fresh process, so the hot
paths convert through buffers instead: numeric arrays are viewed or wrapped without a copy
where Arrow's layout allows, and string arrays are built from one joined UTF-8 buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ._utf8 import utf8_column

__all__ = ["from_numpy", "int_or", "strings", "to_numpy"]


def to_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A numeric (fixed-width, null-free) array as numpy; chunks are concatenated.

    Falls back to pyarrow's own conversion for nulls or non-primitive types.
    """
    if isinstance(arr, pa.ChunkedArray):
        chunks = [to_numpy(c) for c in arr.chunks]
        if not chunks:
            return np.zeros(0, dtype=arr.type.to_pandas_dtype())
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
    if arr.null_count or not _is_number(arr.type):
        return arr.to_numpy(zero_copy_only=False)
    if len(arr) == 0:
        return np.zeros(0, dtype=bool if pa.types.is_boolean(arr.type) else
                        arr.type.to_pandas_dtype())
    if pa.types.is_boolean(arr.type):  # bit-packed
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")
        return bits[arr.offset:arr.offset + len(arr)].astype(bool)
    dtype = np.dtype(arr.type.to_pandas_dtype())
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _is_number(kind: pa.DataType) -> bool:
    """Booleans, integers and floats: the types whose buffer numpy reads as is (dates, times
    and timestamps are fixed-width too, but ``to_pandas_dtype`` does not describe their
    buffers)."""
    return pa.types.is_boolean(kind) or pa.types.is_integer(kind) or \
        pa.types.is_floating(kind)


def int_or(arr: pa.Array | pa.ChunkedArray, fill: int) -> np.ndarray:
    """An integer array as int64 numpy with ``fill`` where Arrow holds nulls."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count == 0:
        return to_numpy(arr).astype(np.int64)
    dtype = np.dtype(arr.type.to_pandas_dtype())
    validity, data = arr.buffers()[:2]
    values = np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    valid = bits[arr.offset:arr.offset + len(arr)].astype(bool)
    return np.where(valid, values, fill).astype(np.int64)


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-D integer or float numpy array as an Arrow array sharing its memory."""
    if values.dtype.kind not in "iuf":  # Arrow packs booleans in bits, numpy in bytes
        raise TypeError(f"from_numpy takes integers or floats, not {values.dtype}")
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def strings(values: Sequence[str] | np.ndarray) -> pa.Array:
    """Python strings (a list or an object/unicode array) as an Arrow string array, built
    from :func:`~._utf8.utf8_column` (no Python object per id with the compiled reader).
    Non-strings raise TypeError."""
    offsets, data = utf8_column(values)
    wide = len(data) >= 2**31 - 1
    kind = pa.large_string() if wide else pa.string()
    return pa.Array.from_buffers(kind, len(offsets) - 1, [
        None, pa.py_buffer(offsets if wide else offsets.astype(np.int32)), pa.py_buffer(data)])
