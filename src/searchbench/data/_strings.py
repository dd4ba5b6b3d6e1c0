"""Doc id columns kept as Arrow strings: duplicate (query, doc) detection without interning.

A run read from a file does not need a run-wide doc vocabulary to be evaluated, and
building one (hashing every id into a growing dictionary) is most of the reading time.
Duplicates are found instead from one 64-bit key per entry, computed with numpy from the
Arrow buffers (the id's bytes as little-endian words, its length and its query code,
mixed by multiply-xorshift steps), and one ``np.sort``. Keys are not ids: entries whose
key collides are then checked exactly on their strings, so a collision costs time, never
a wrong answer. :class:`IdIndex` looks (query, doc id) pairs up among the qrels' the same
way, for the evaluator.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import from_numpy, to_numpy
from .ids import Interner

__all__ = ["IdIndex", "concat_strings", "doc_keys", "encode_strings", "has_duplicates",
           "string_keys"]

CHUNK = 1 << 15  # entries hashed per step: small temporaries stay in cache and are reused

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_C3 = np.uint64(0x94D049BB133111EB)
_S = np.uint64(31)
_LIMIT = 2**31 - 1  # bytes a 32-bit-offset string array can hold


def concat_strings(chunks: list[pa.Array]) -> pa.Array:
    """One string array from the chunks, which are taken out of the list and freed one by
    one as they are copied; ``large_string`` from 2 GiB of ids on."""
    n = sum(len(c) for c in chunks)
    total = sum(_data_bytes(c) for c in chunks)
    wide = total >= _LIMIT
    kind = np.dtype(np.int64 if wide else np.int32)
    # from Arrow's pool, not numpy's: fresh numpy pages made this copy 3 s at 10⁸ ids
    offsets_buf = pa.allocate_buffer((n + 1) * kind.itemsize)
    data_buf = pa.allocate_buffer(max(total, 1))
    offsets = np.frombuffer(offsets_buf, dtype=kind)
    data = np.frombuffer(data_buf, dtype=np.uint8)
    offsets[0] = 0
    row = at = 0
    chunks.reverse()
    while chunks:
        chunk = chunks.pop()
        own = _offsets(chunk)
        size = int(own[-1]) - int(own[0])
        data[at:at + size] = _data(chunk)[int(own[0]):int(own[-1])]
        offsets[row + 1:row + len(chunk) + 1] = own[1:].astype(offsets.dtype) - own[0] + at
        row, at = row + len(chunk), at + size
        del chunk, own
    del offsets, data
    pa.default_memory_pool().release_unused()  # the chunks' memory, back to the system
    return pa.Array.from_buffers(pa.large_string() if wide else pa.string(), n,
                                 [None, offsets_buf, data_buf])


def _offsets(arr: pa.Array) -> np.ndarray:
    kind = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    buf = arr.buffers()[1]
    if buf is None or len(arr) == 0:
        return np.zeros(len(arr) + 1, dtype=kind)
    return np.frombuffer(buf, dtype=kind, count=len(arr) + 1,
                         offset=arr.offset * np.dtype(kind).itemsize)


def _data_bytes(arr: pa.Array) -> int:
    offsets = _offsets(arr)
    return int(offsets[-1]) - int(offsets[0])


def _data(arr: pa.Array) -> np.ndarray:
    """The data buffer as uint8 (empty when the array has none)."""
    buf = arr.buffers()[2]
    return np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)


def doc_keys(arr: pa.Array, query_codes: np.ndarray) -> np.ndarray:
    """A uint64 key per entry from its doc id's bytes and its query code.

    Equal (query, doc) pairs have equal keys; unequal pairs rarely do (64-bit mixing).
    """
    offsets, data = _offsets(arr), _data(arr)
    out = np.empty(len(arr), dtype=np.uint64)
    for lo in range(0, len(arr), CHUNK):
        hi = min(lo + CHUNK, len(arr))
        h = _string_hash(offsets[lo:hi + 1], data)
        h ^= query_codes[lo:hi].astype(np.uint64) * _C3
        h *= _C2
        h ^= h >> _S
        out[lo:hi] = h
    return out


def _string_hash(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Mix each string's length and 8-byte little-endian words into one uint64.

    The strings' bytes are copied into a zero-padded, 8-byte aligned buffer; the word at
    byte ``p`` is then put together from the two aligned words it straddles, and masked
    to the string's own bytes.
    """
    base, end = int(offsets[0]), int(offsets[-1])
    padded = np.zeros((end - base) // 8 + 2, dtype="<u8")
    padded.view(np.uint8)[:end - base] = data[base:end]
    start = offsets[:-1].astype(np.int64)
    left = offsets[1:].astype(np.int64)
    left -= start
    start -= base
    h = left.astype(np.uint64)
    h *= _C1
    if len(left) and left.min() > 0:
        active = None  # every string: no gather or scatter in the first pass
    else:
        active = np.flatnonzero(left > 0)
        start, left = start[active], left[active]
    while len(left):
        word = _word_at(padded, start)
        word &= _MASKS[np.minimum(left, 8)]
        step = h if active is None else h[active]
        step ^= word
        step *= _C2
        step ^= step >> _S
        if active is not None:
            h[active] = step
        more = left > 8
        if more.any():
            active = np.flatnonzero(more) if active is None else active[more]
            start, left = start[more] + 8, left[more] - 8
        else:
            break
    return h


_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _word_at(words: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 8 bytes from byte ``pos`` of ``words`` as little-endian uint64."""
    index = pos >> 3
    shift = ((pos & 7) << 3).astype(np.uint64)
    low = words[index]
    low >>= shift
    high = words[index + 1]
    high <<= np.uint64(1)
    high <<= np.uint64(63) - shift  # shift < 64 even when pos is aligned (then high = 0)
    low |= high
    return low


def has_duplicates(query_codes: np.ndarray, arr: pa.Array) -> bool:
    """Whether some (query code, doc id) pair occurs twice; exact.

    Keys are sorted in place; only entries whose key occurs more than once (true
    duplicates, or rare collisions) are compared on their strings.
    """
    if len(arr) < 2:
        return False
    keys = doc_keys(arr, query_codes)
    keys.sort()
    same = keys[1:] == keys[:-1]
    if not same.any():
        return False
    colliding = np.unique(keys[1:][same])
    del keys, same
    candidates = np.flatnonzero(np.isin(doc_keys(arr, query_codes), colliding))
    codes, vocab = encode_strings(arr.take(from_numpy(candidates)))
    pairs = query_codes[candidates].astype(np.int64) * max(len(vocab), 1) + codes
    return len(np.unique(pairs)) < len(pairs)


class IdIndex:
    """Positions of (tag, id) pairs in a fixed list of unique pairs, found by 64-bit keys.

    The evaluator's list is the qrels: (query code, doc id) per judgement. ``pc.index_in``
    would rebuild its hash table on every call and look up ids only; here the pairs' keys
    are sorted once. An entry is first tested against a bit table (about 32 bits per
    pair, so about 3 % of absent pairs pass), then its key is searched among the sorted
    keys (in buckets by their top bits), and a match is confirmed on the tag and the
    string themselves: exact, whatever collides. Should two listed pairs share a key,
    lookups go through an exact dictionary encoding instead.
    """

    def __init__(self, ids: pa.Array, tags: np.ndarray | None = None) -> None:
        self._ids = ids
        self._tags = np.zeros(len(ids), dtype=np.int64) if tags is None else \
            tags.astype(np.int64)
        bits = min(max(len(ids).bit_length() + 5, 16), 30)
        self._shift = np.uint64(64 - bits)
        self._table = np.zeros(1 << (bits - 3), dtype=np.uint8)
        keys = _tagged(string_keys(ids), self._tags)
        slots = keys >> self._shift
        np.bitwise_or.at(self._table, slots >> np.uint64(3),
                         np.left_shift(1, slots & np.uint64(7)).astype(np.uint8))
        del slots
        order = np.argsort(keys)
        self._keys, self._codes = keys[order], order.astype(np.int64)
        self._unique = not bool((self._keys[1:] == self._keys[:-1]).any())
        # sorted keys in about as many buckets as pairs (by their top bits): bucket b holds
        # self._keys[start[b]:start[b + 1]], so a search is a bucket lookup and a short scan
        width = max(len(ids).bit_length(), 1)
        self._bucket_shift = np.uint64(64 - width)
        counts = np.bincount((self._keys >> self._bucket_shift).astype(np.int64),
                             minlength=1 << width)
        self._start = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._start[1:])

    def candidates(self, arr: pa.Array, tags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(index, key)`` of the entries of ``arr`` that may be listed."""
        offsets, data = _offsets(arr), _data(arr)
        found, found_keys = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.uint64)]
        for lo in range(0, len(arr), CHUNK):
            hi = min(lo + CHUNK, len(arr))
            keys = _string_hash(offsets[lo:hi + 1], data)
            keys *= _C3
            keys = _tagged(keys, tags[lo:hi])
            slots = keys >> self._shift
            byte = self._table[slots >> np.uint64(3)]
            hit = np.flatnonzero((byte >> (slots & np.uint64(7)).astype(np.uint8)) & 1)
            found.append(hit + lo)
            found_keys.append(keys[hit])
        return np.concatenate(found), np.concatenate(found_keys)

    def find(self, arr: pa.Array, tags: np.ndarray | None = None) -> np.ndarray:
        """Position in the list of each (tag, id) entry of ``arr`` (int64), -1 where absent."""
        tags = np.zeros(len(arr), dtype=np.int64) if tags is None else tags.astype(np.int64)
        out = np.full(len(arr), -1, dtype=np.int64)
        if len(self._ids) == 0 or len(arr) == 0:
            return out
        index, keys = self.candidates(arr, tags)
        if not self._unique:
            out[index] = self._exact(arr.take(from_numpy(index)), tags[index])
            return out
        at = self._search(keys)
        match = at >= 0
        index, code = index[match], self._codes[at[match]]
        same = self._tags[code] == tags[index]
        index, code = index[same], code[same]
        ids = self._ids if self._ids.type == arr.type else self._ids.cast(arr.type)
        same = to_numpy(pc.equal(arr.take(from_numpy(index)), ids.take(from_numpy(code))))
        out[index[same]] = code[same]
        return out

    def _search(self, keys: np.ndarray) -> np.ndarray:
        """Position of each key among the sorted keys, -1 where absent."""
        bucket = (keys >> self._bucket_shift).astype(np.int64)
        lo, hi = self._start[bucket], self._start[bucket + 1]
        at = np.full(len(keys), -1, dtype=np.int64)
        todo = np.flatnonzero(hi > lo)
        pos = lo[todo]
        while len(todo):  # as many rounds as the fullest bucket holds keys
            hit = self._keys[pos] == keys[todo]
            at[todo[hit]] = pos[hit]
            more = ~hit & (pos + 1 < hi[todo])
            todo, pos = todo[more], pos[more] + 1
        return at

    def _exact(self, arr: pa.Array, tags: np.ndarray) -> np.ndarray:
        """:meth:`find` by one dictionary encoding of the listed ids and ``arr`` together."""
        both = pa.chunked_array([self._ids.cast(pa.large_string()),
                                 arr.cast(pa.large_string())])
        codes, vocab = encode_strings(both)
        width = max(len(vocab), 1)
        listed = self._tags * width + codes[:len(self._ids)]
        order = np.argsort(listed)
        listed = listed[order]
        probe = tags * width + codes[len(self._ids):]
        at = np.minimum(np.searchsorted(listed, probe), len(listed) - 1)
        return np.where(listed[at] == probe, order[at], -1)


def _tagged(keys: np.ndarray, tags: np.ndarray) -> np.ndarray:
    """Keys mixed with an integer tag per key (a new array)."""
    mixed = tags.astype(np.uint64) * _C1
    mixed ^= keys
    mixed *= _C2
    mixed ^= mixed >> _S
    return mixed


def string_keys(arr: pa.Array) -> np.ndarray:
    """A uint64 key per string from its bytes alone (as :class:`IdIndex` uses them)."""
    offsets, data = _offsets(arr), _data(arr)
    out = np.empty(len(arr), dtype=np.uint64)
    for lo in range(0, len(arr), CHUNK):
        hi = min(lo + CHUNK, len(arr))
        out[lo:hi] = _string_hash(offsets[lo:hi + 1], data)
    out *= _C3
    return out


def encode_strings(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """``(codes, dictionary)``: int32 codes into the ids in order of first appearance."""
    interner = Interner()
    interner.add(arr)
    return interner.finish_unsorted()
