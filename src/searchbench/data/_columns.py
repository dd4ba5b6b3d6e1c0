"""Shared construction of the CSR-like (query → entries) arrays behind Qrels and Run."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataFormatError
from ..vocab import KEEP_POLICIES as _KEEP
from .ids import as_arrow_strings, intern

if TYPE_CHECKING:
    import pyarrow as pa

KEEP_POLICIES = (None, *_KEEP)


@dataclass
class Parsed:
    """The columns of a run or qrels file as its reader found them, before the model
    (:class:`~searchbench.data.Run`, :class:`~searchbench.data.Qrels`) checks and groups
    them: the readers (``trec``, ``columnar``) build these, the model wraps them.

    ``columns`` holds query ids, doc ids and scores or grades; the model takes them out of
    the list, so each is freed once used. ``scan`` is the compiled reader's scan of a run
    (``_compiled.scan_compiled``; ``columns`` is then empty). ``name`` is a run's default name
    (its tag, else the file's name) and ``tag`` the tag of its first row.
    """

    columns: list[Any]
    source: str
    describe_line: Callable[[int], str]
    name: str | None = None
    tag: str | None = None
    scan: dict[str, Any] | None = None


@dataclass(frozen=True)
class Grouped:
    """Entries grouped by query: ``query_ids[i]`` owns ``offsets[i]:offsets[i+1]``."""

    query_ids: np.ndarray  # object array of str, sorted
    offsets: np.ndarray  # int64, n_queries + 1
    doc_vocab: np.ndarray | pa.Array  # unique ids: sorted numpy, or pyarrow in file order
    query_codes: np.ndarray  # int32 per entry (before grouping order is applied)
    doc_codes: np.ndarray  # int32 per entry
    values: np.ndarray  # per entry


def encode(query_ids: Interned | Iterable[Any], doc_ids: Interned | Iterable[Any],
           values: np.ndarray,
           source: str | None = None) -> Grouped:
    """Intern both id columns; entries keep their input order.

    An id column may also be given already interned, as :class:`Interned`. ``source``
    (a file name) starts the message of a bad id.
    """
    q_codes, q_vocab = interned(query_ids)
    d_codes, d_vocab = interned(doc_ids)
    for given, vocab, what in ((query_ids, q_vocab, "query"), (doc_ids, d_vocab, "doc")):
        if not (isinstance(given, Interned) and given.valid):
            check_ids(vocab, what, source)
    if not (len(q_codes) == len(d_codes) == len(values)):
        raise DataFormatError(
            f"columns differ in length: {len(q_codes)} query ids, {len(d_codes)} doc ids, "
            f"{len(values)} values; expected one value per (query, doc) pair"
        )
    offsets = np.zeros(len(q_vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_codes, minlength=len(q_vocab)), out=offsets[1:])
    return Grouped(q_vocab, offsets, d_vocab, q_codes, d_codes, values)


def id_at(vocab: np.ndarray | pa.Array, code: int) -> str:
    """The id with ``code`` in a numpy or pyarrow vocabulary."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    value = vocab[code]
    return value.as_py() if isinstance(value, pa.Scalar) else value


# Whitespace by Python's str.isspace (RE2's \s is ASCII only), NUL and U+FEFF: the same set
# the TREC readers refuse in a file (trec._ODD), so columns and files accept the same ids.
ODD_ID_CHARACTERS = (r"[\s\x00\x0b\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}"
                     r"\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]")


def check_ids(vocab: np.ndarray | pa.Array, what: str, source: str | None = None) -> None:
    """Ids are non-empty and hold no whitespace, NUL or U+FEFF (TREC files could not write
    them back, and TREC readers refuse them)."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    from ._arrow import to_numpy  # lazy: loads _arrow, pyarrow on first use

    arr = vocab if isinstance(vocab, pa.Array) else as_arrow_strings(vocab).combine_chunks()
    if not len(arr):
        return
    bad = (to_numpy(pc.binary_length(arr)) == 0) | \
        to_numpy(pc.match_substring_regex(arr, ODD_ID_CHARACTERS)).astype(bool)
    if bad.any():
        example = arr[int(np.flatnonzero(bad)[0])].as_py()
        where = f"{source}: " if source else ""
        raise DataFormatError(f"{where}{what} id {example!r} is empty or holds whitespace (or a "
                              "NUL byte or U+FEFF); expected ids without spaces, tabs or "
                              "newlines")


@dataclass(frozen=True)
class Interned:
    """An id column already interned: ``vocab[codes]`` are the ids. ``valid`` says the
    ids are known non-empty and whitespace-free (split from a file on whitespace)."""

    codes: np.ndarray
    vocab: np.ndarray | pa.Array
    valid: bool = False


@dataclass(frozen=True)
class Strings:
    """A doc id column kept as one Arrow string array, not interned (runs read from
    files: see ``_strings``). ``valid`` as for :class:`Interned`."""

    array: pa.Array
    valid: bool = False


def interned(ids: Interned | Iterable[Any]) -> tuple[np.ndarray, np.ndarray]:
    return (ids.codes, ids.vocab) if isinstance(ids, Interned) else intern(ids)


def pair_keys(g: Grouped) -> np.ndarray:
    """One int64 key per (query, doc) pair, ordered by query then doc code."""
    return g.query_codes.astype(np.int64) * max(len(g.doc_vocab), 1) + g.doc_codes


def resolve_duplicates(
    g: Grouped, keep: str | None, source: str, describe_line
) -> np.ndarray | None:
    """Find duplicate (query, doc) pairs; return the entry indices to keep (None = all).

    With ``keep=None`` a duplicate raises :class:`DataFormatError`; ``describe_line(i)``
    maps an entry index to ``"path:line"`` for the message.
    """
    check_keep(keep)
    keys = pair_keys(g)
    if keep == "max":
        order = np.lexsort((np.arange(len(keys)), -g.values.astype(np.float64), keys))
    else:
        order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    dup = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if len(dup) == 0:
        return None
    if keep is None:
        first, second = np.sort(order[[dup[0], dup[0] + 1]])
        q = g.query_ids[g.query_codes[second]]
        d = id_at(g.doc_vocab, int(g.doc_codes[second]))
        raise DataFormatError(
            f"{describe_line(second)}: duplicate (query, doc) pair ({q!r}, {d!r}), first seen at "
            f"{describe_line(first)}; expected each pair once: remove one of the lines (to "
            "evaluate anyway, pass keep='max'|'first'; eval and compare: --keep max|first)"
        )
    is_first = np.ones(len(keys), dtype=bool)
    is_first[dup + 1] = False
    return np.sort(order[is_first])


def check_keep(keep: str | None) -> None:
    if keep not in KEEP_POLICIES:
        raise DataFormatError(f"keep={keep!r} is not a duplicate policy; use one of 'max', 'first'")


def subset(g: Grouped, keep_idx: np.ndarray | None) -> Grouped:
    """Drop entries not in ``keep_idx`` (vocabularies unchanged)."""
    if keep_idx is None:
        return g
    q_codes = g.query_codes[keep_idx]
    offsets = np.zeros_like(g.offsets)
    np.cumsum(np.bincount(q_codes, minlength=len(g.query_ids)), out=offsets[1:])
    return Grouped(
        g.query_ids, offsets, g.doc_vocab, q_codes, g.doc_codes[keep_idx], g.values[keep_idx]
    )


def default_line(source: str):
    """Describe entry ``i`` as ``source:entry i+1`` when no line numbers are known."""

    def describe(i: int) -> str:
        return f"{source}: entry {i + 1}"

    return describe


def flatten_mapping(mapping: object, what: str, source: str
                    ) -> tuple[list[str], list[str], np.ndarray]:
    """``{query_id: {doc_id: value}}`` as three columns: ids as str, values as numbers
    (int64 when every grade is an int; float64 otherwise, checked later; bools refused).

    Anything else - a non-mapping, a value that is not a number, an integer too large
    for int64 - raises :class:`DataFormatError` naming the query and doc.
    """
    integer = what == "grade"
    if not isinstance(mapping, Mapping):
        raise DataFormatError(f"{source}: found a {type(mapping).__name__}, expected a mapping "
                              "{query_id: {doc_id: value}}")
    qs, ds, values = [], [], []
    for qid, docs in mapping.items():
        if not isinstance(docs, Mapping):
            raise DataFormatError(f"{source}: query {qid!r} holds a {type(docs).__name__}; "
                                  "expected a mapping {doc_id: value}")
        for did, value in docs.items():
            ok = isinstance(value, int | float | np.integer | np.floating) and \
                not isinstance(value, bool) and (not integer or -2**63 <= value < 2**63)
            if not ok:
                kind = "an integer grade" if integer else "a number"
                raise DataFormatError(f"{source}: query {qid!r}, doc {did!r}: found {what} "
                                      f"{value!r}, expected {kind}")
            qs.append(str(qid))
            ds.append(str(did))
            values.append(value)
    try:
        exact = integer and all(isinstance(v, int | np.integer) for v in values)
        column = np.asarray(values, dtype=np.int64 if exact else np.float64)
    except OverflowError:  # a float score beyond float64's range
        raise DataFormatError(f"{source}: a {what} is too large for a 64-bit number; expected "
                              "ordinary numbers") from None
    return qs, ds, column


def sorted_codes(codes: bytes | bytearray | np.ndarray, vocab: Any) -> Interned:
    """Codes of a compiled scan (int32, ids in order of first appearance) as
    :class:`Interned` codes into the byte-wise sorted vocabulary (``vocab`` is the scan's
    ``Vocab``)."""
    order, ids = sorted_vocab(vocab)
    remap = np.empty(len(order), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return Interned(remap[np.frombuffer(codes, dtype=np.int32)], ids, valid=True)


def sorted_vocab(vocab: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(order, ids)``: the codes of a compiled scan's ``Vocab`` in byte-wise order of
    their ids, and those ids (a numpy array of str)."""
    order = np.frombuffer(vocab.order(None), dtype=np.int64)
    return order, np.array(vocab.tolist(), dtype=object)[order]
