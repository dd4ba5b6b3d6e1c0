"""Interning of string ids into sorted int32 codes (pyarrow hash encoding, numpy remap).

Codes follow byte-wise (UTF-8) order of the ids, so "docid descending" is "code descending".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataFormatError
from ._utf8 import utf8_column

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["as_arrow_strings", "intern", "lookup", "lookup_sorted", "utf8_column"]


def as_arrow_strings(values: Iterable[Any]) -> pa.ChunkedArray:
    """Return ``values`` (list, numpy array, pyarrow array) as a chunked pyarrow string array."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    if isinstance(values, pa.ChunkedArray):
        arr = values
    elif isinstance(values, pa.Array):
        arr = pa.chunked_array([values])
    elif isinstance(values, np.ndarray):
        if values.dtype.kind == "S":
            values = np.char.decode(values, "utf-8")
        arr = pa.chunked_array([_strings(values.tolist())])
    else:
        arr = pa.chunked_array([_strings(values if isinstance(values, list) else list(values))])
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.string())
    if arr.null_count:
        raise DataFormatError(f"{arr.null_count} ids are missing (None or null); expected a "
                              "string id for every entry")
    return arr


def _strings(values: list) -> pa.Array:
    """Strings without pandas; anything else (numbers, None) through ``pa.array``."""
    import pyarrow as pa  # lazy: loads pyarrow on first use

    from ._arrow import strings  # lazy: loads _arrow, pyarrow on first use
    try:
        return strings(values)
    except TypeError:
        return pa.array(values, type=pa.string())
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from JSON "\ud800"
        bad = next(v for v in values if isinstance(v, str) and not v.isascii()
                   and _unencodable(v))
        raise DataFormatError(f"id {bad!r} is not valid Unicode ({exc.reason}); expected "
                              "ids encodable as UTF-8") from None


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class Interner:
    """Intern string ids arriving in blocks, holding codes, not strings, between blocks.

    Each block is hash-encoded on its own; block dictionaries are merged into one
    dictionary (earlier entries keep their codes, since ``dictionary_encode`` numbers
    values by first appearance) once the pending ones hold ``GROWTH`` times as many ids as
    the merged one. Each merge re-hashes the merged dictionary, so merging at geometric
    sizes keeps the total re-hashing within 1.5 times the final vocabulary, and pending
    dictionaries within twice the merged one. ``finish()`` sorts the vocabulary byte-wise
    and remaps the codes.
    """

    GROWTH = 2

    def __init__(self) -> None:
        import pyarrow as pa  # lazy: loads pyarrow on first use
        self._dictionary = pa.nulls(0, type=pa.string())  # pa.array([]) would import pandas
        self._pending: list[tuple[np.ndarray, pa.Array]] = []
        self._n_pending = 0
        self._codes: list[np.ndarray] = []

    def add(self, values: Iterable[Any]) -> None:
        """Encode one block of ids."""
        import pyarrow.compute as pc  # lazy: loads pyarrow on first use

        from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use
        arr = as_arrow_strings(values)
        if len(arr) == 0:
            return
        encoded = pc.dictionary_encode(arr).combine_chunks()
        indices = to_numpy(encoded.indices).astype(np.int32, copy=False)
        self._pending.append((indices, encoded.dictionary))
        self._n_pending += len(encoded.dictionary)
        if self._n_pending >= self.GROWTH * len(self._dictionary):
            self._merge()

    def _merge(self) -> None:
        import pyarrow as pa  # lazy: loads pyarrow on first use
        import pyarrow.compute as pc  # lazy: loads pyarrow on first use

        from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use
        if not self._pending:
            return
        if len(self._dictionary) == 0 and len(self._pending) == 1:  # one block: no re-hash
            indices, self._dictionary = self._pending.pop()
            self._codes.append(indices)
            self._n_pending = 0
            return
        merged = pc.dictionary_encode(
            pa.concat_arrays([self._dictionary, *[d for _, d in self._pending]]))
        positions = to_numpy(merged.indices)
        start = len(self._dictionary)
        for indices, dictionary in self._pending:
            stop = start + len(dictionary)
            self._codes.append(positions[start:stop].astype(np.int32)[indices])
            start = stop
        self._dictionary = merged.dictionary
        self._pending, self._n_pending = [], 0

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, vocab)``: int32 codes into the byte-wise sorted vocabulary."""
        import pyarrow.compute as pc  # lazy: loads pyarrow on first use

        from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use
        codes, dictionary = self.finish_unsorted()
        order = pc.sort_indices(dictionary)  # byte-wise order of UTF-8 strings
        vocab = np.array(dictionary.take(order).to_pylist(), dtype=object)
        remap = np.empty(len(order), dtype=np.int32)
        remap[to_numpy(order)] = np.arange(len(order), dtype=np.int32)
        return remap[codes], vocab

    def finish_unsorted(self) -> tuple[np.ndarray, pa.Array]:
        """``(codes, dictionary)``: codes into the ids in order of first appearance."""
        self._merge()
        codes = np.concatenate(self._codes) if self._codes else np.zeros(0, dtype=np.int32)
        self._codes = []
        return codes, self._dictionary


def intern(values: Iterable[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Encode string ids as int32 codes into a sorted vocabulary.

    Returns ``(codes, vocab)`` with ``vocab[codes] == values`` and ``vocab`` sorted in
    byte-wise order (numpy unicode order equals UTF-8 byte order).
    """
    interner = Interner()
    interner.add(values)
    return interner.finish()


def lookup(vocab: np.ndarray | pa.Array, ids: Iterable[str] | np.ndarray) -> np.ndarray:
    """Codes of ``ids`` in the sorted, unique ``vocab`` (hash lookup); -1 where absent."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    from ._arrow import int_or  # lazy: loads _arrow, pyarrow on first use
    values = as_arrow_strings(ids if isinstance(ids, (np.ndarray, pa.Array)) else list(ids))
    if len(vocab) == 0 or len(values) == 0:
        return np.full(len(values), -1, dtype=np.int32)
    value_set = vocab if isinstance(vocab, pa.Array) else as_arrow_strings(vocab).chunk(0)
    return int_or(pc.index_in(values, value_set=value_set), -1).astype(np.int32)


def lookup_sorted(vocab: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Codes of ``ids`` (str, numpy) in the byte-wise sorted, unique ``vocab`` (str, numpy),
    -1 where absent: a binary search, no pyarrow (query ids: few, both sides sorted)."""
    if len(vocab) == 0 or len(ids) == 0:
        return np.full(len(ids), -1, dtype=np.int32)
    if len(vocab) == len(ids) and bool((np.asarray(vocab) == np.asarray(ids)).all()):
        return np.arange(len(ids), dtype=np.int32)  # the same ids: a run of every qrels query
    keys, values = np.asarray(vocab).astype(str), np.asarray(ids).astype(str)
    at = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return np.where(keys[at] == values, at, -1).astype(np.int32)
