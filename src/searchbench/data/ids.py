"""Interning of string ids into sorted int32 codes (pyarrow hash encoding, numpy remap).

Codes follow byte-wise (UTF-8) order of the ids, so "docid descending" is "code descending".
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["as_arrow_strings", "intern", "lookup"]


def as_arrow_strings(values: object) -> pa.ChunkedArray:
    """Return ``values`` (list, numpy array, pyarrow array) as a chunked pyarrow string array."""
    if isinstance(values, pa.ChunkedArray):
        arr = values
    elif isinstance(values, pa.Array):
        arr = pa.chunked_array([values])
    else:
        if isinstance(values, np.ndarray) and values.dtype.kind in "US":
            values = values.astype(str).tolist() if values.dtype.kind == "S" else values.tolist()
        elif not isinstance(values, list):
            values = list(values)  # type: ignore[call-overload]
        arr = pa.chunked_array([pa.array(values, type=pa.string())])
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.string())
    return arr


def intern(values: object) -> tuple[np.ndarray, np.ndarray]:
    """Encode string ids as int32 codes into a sorted vocabulary.

    Returns ``(codes, vocab)`` with ``vocab[codes] == values`` and ``vocab`` sorted in
    byte-wise order (numpy unicode order equals UTF-8 byte order).
    """
    arr = as_arrow_strings(values)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=object)
    encoded = pc.dictionary_encode(arr).combine_chunks() if arr.num_chunks > 1 else None
    if encoded is None:
        encoded = pc.dictionary_encode(arr.chunk(0))
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    dictionary = encoded.dictionary.to_numpy(zero_copy_only=False).astype(str)
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(dictionary, kind="stable")
    remap = np.empty(len(order), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    vocab = dictionary[order].astype(object)
    return remap[indices], vocab


def lookup(vocab: np.ndarray, ids: Iterable[str] | np.ndarray) -> np.ndarray:
    """Codes of ``ids`` in the sorted ``vocab``; -1 where an id is absent."""
    ids = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=object)
    if len(vocab) == 0 or len(ids) == 0:
        return np.full(len(ids), -1, dtype=np.int32)
    sorted_vocab = vocab.astype(str)
    keys = ids.astype(str)
    pos = np.searchsorted(sorted_vocab, keys)
    pos_clipped = np.minimum(pos, len(vocab) - 1)
    found = sorted_vocab[pos_clipped] == keys
    return np.where(found, pos_clipped, -1).astype(np.int32)
