"""A ranked run as CSR-like arrays, ordered by score descending then docid descending."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from ..errors import DataFormatError
from ._columns import (
    Grouped,
    Interned,
    Parsed,
    Strings,
    check_ids,
    check_keep,
    default_line,
    encode,
    flatten_mapping,
    interned,
    resolve_duplicates,
    sorted_codes,
    sorted_vocab,
    subset,
)
from ._entries import CompiledDocs, JudgedEntries, is_compiled_vocab
from ._ranking import file_order, rank_order, repair_sorted_ties

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Run", "compiled_arrow"]


class Run:
    """Retrieved documents per query with scores.

    Within each query, entries are ranked by **score descending, then doc id descending**
    (byte-wise), trec_eval's rule; a rank column in a file is ignored. Arrays:
    ``query_ids`` (sorted str), ``offsets`` (int64), ``doc_codes`` (int32, in rank order),
    ``doc_vocab`` (unique doc ids) and ``scores`` (float64).

    A run read from a file holds its doc ids as one Arrow string array in rank order
    (:meth:`doc_ids_arrow`) and builds ``doc_codes`` and ``doc_vocab`` (ids in order of
    first appearance in rank order) on first use; evaluation needs neither.
    """

    __slots__ = ("_doc_codes", "_doc_ids", "_doc_vocab", "_scores", "_unranked", "metadata",
                 "name", "offsets", "query_ids")
    _scores: np.ndarray | None  # None: from _unranked (scores in file order, their order)
    _unranked: tuple[np.ndarray, CompiledDocs] | None

    def __init__(self, grouped: Grouped, name: str | None = None) -> None:
        order = rank_order(grouped.query_codes, grouped.values, grouped.doc_codes,
                            grouped.doc_vocab)
        self.query_ids: np.ndarray = grouped.query_ids
        self.offsets: np.ndarray = grouped.offsets
        self._doc_vocab: np.ndarray | pa.Array | None = grouped.doc_vocab
        self._doc_codes: np.ndarray | None = grouped.doc_codes[order]
        self._doc_ids: pa.Array | CompiledDocs | None = None
        self.scores = grouped.values[order]
        self.name = name or "run"
        self.metadata: dict[str, Any] = {}

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        """Pickled with the doc ids as Python strings (the compiled reader's ``Vocab``
        lives in this process only)."""
        if self.compiled_ids or isinstance(self._doc_ids, CompiledDocs):
            self.doc_vocab  # noqa: B018 - materialises the vocabulary as numpy
        self.scores  # noqa: B018 - ranks a compiled run's scores
        return None, {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: tuple[None, dict[str, Any]]) -> None:
        for name, value in state[1].items():
            object.__setattr__(self, name, value)

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_columns(
        cls,
        query_ids: Iterable[Any],
        doc_ids: Iterable[Any],
        scores: ArrayLike,
        *,
        name: str | None = None,
        keep: str | None = None,
        source: str | None = None,
        describe_line=None,
    ) -> Run:
        """Build from three parallel columns (lists, numpy or pyarrow arrays)."""
        return cls._consume([query_ids, doc_ids, scores], name=name, keep=keep,
                            source=source, describe_line=describe_line)

    @classmethod
    def _consume(cls, columns: list, *, name: str | None, keep: str | None,
                 source: str | None, describe_line) -> Run:
        """``from_columns`` taking the columns out of ``columns``: a reader hands over its
        only references, so each column is freed as soon as it has been used (for a
        10⁸-entry run these arrays are gigabytes)."""
        src = source or name or "<run>"
        query_ids, doc_ids = columns[0], columns[1]
        score_arr = np.asarray(columns[2], dtype=np.float64)
        columns.clear()
        bad = ~np.isfinite(score_arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            where = describe_line(i) if describe_line else f"{src}: entry {i + 1}"
            raise DataFormatError(f"{where}: score {float(score_arr[i])!r} is not finite; "
                                  "expected a finite number")
        del bad
        if isinstance(doc_ids, Strings):
            from ._strings import encode_strings  # lazy: loads _strings, pyarrow on first use

            parts = [query_ids, doc_ids, score_arr]
            del query_ids, doc_ids, score_arr
            run = _lazy_run(parts, keep, name)
            if run is not None:
                return run
            query_ids, doc_ids, score_arr = parts
            doc_ids = Interned(*encode_strings(doc_ids.array), valid=doc_ids.valid)
        grouped = encode(query_ids, doc_ids, score_arr, source)
        keep_idx = resolve_duplicates(grouped, keep, src, describe_line or default_line(src))
        return cls(subset(grouped, keep_idx), name=name)

    @classmethod
    def from_scan(cls, scanned: dict[str, Any], *, name: str, keep: str | None, source: str,
                  describe_line: Callable[[int], str]) -> Run:
        """A run from the compiled reader's scan (``_compiled.scan_compiled``): doc ids stay in
        C, one per entry (:class:`CompiledDocs`), so no string object is built per entry.

        Runs grouped by query with falling scores and no repeated (query, doc) pair - what
        retrieval writes - are ranked from the file's segments (only tied entries are
        sorted, by doc id); any other goes through :meth:`from_columns`' checks with the
        doc ids as Python strings, with the same results and messages.
        """
        # the scan's columns are taken out of it: each is freed once used
        scores = np.frombuffer(scanned.pop("values"), dtype=np.float64)
        entries = scanned["docs"]
        bounds = scanned.pop("query_bounds")  # a grouped run's: where each query starts
        bounds = None if bounds is None else np.frombuffer(bounds, dtype=np.int64)
        if keep is not None or scanned["duplicate"] or not scanned["grouped"] or \
                not scanned["descending"] or len(entries) >= 2**31 - 1:
            # as the pure reader: ids as one Arrow array
            codes = scanned.pop("query_codes")
            if bounds is not None:
                codes = np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))
            queries = sorted_codes(codes, scanned["queries"])
            docs = Strings(compiled_arrow(entries), valid=True)
            return cls._consume([queries, docs, scores], name=name, keep=keep,
                                source=source, describe_line=describe_line)
        # grouped by query: query codes (in order of first appearance) number the file's
        # segments, which the scan gives as the first row of each
        by_id, q_vocab = sorted_vocab(scanned["queries"])
        bounds = cast("np.ndarray", bounds)
        seg_start, seg_len = bounds[:-1], np.diff(bounds)
        offsets = np.zeros(len(q_vocab) + 1, dtype=np.int64)
        np.cumsum(seg_len[by_id], out=offsets[1:])
        run = object.__new__(Run)
        run.query_ids, run.offsets, run.scores = q_vocab, offsets, scores
        run._doc_vocab, run._doc_codes = None, None
        if (seg_start[by_id] == offsets[:-1]).all():  # in rank order already
            run._doc_ids = CompiledDocs(entries, None)
        else:  # the segments change places: the order and the scores follow on first use
            run._doc_ids = CompiledDocs(entries, None, (seg_start[by_id], offsets))
            run._scores, run._unranked = None, (scores, run._doc_ids)
        if scanned["tied"]:
            order, run.scores = repair_sorted_ties(run._doc_ids.order, run.scores, offsets,
                                                   entries)
            run._doc_ids = CompiledDocs(entries, order)
        run.name = name
        run.metadata = {}
        return run

    @classmethod
    def from_dict(cls, ranking: Mapping[str, Mapping[str, float]], **kw: Any) -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (pytrec_eval's layout)."""
        qs, ds, ss = flatten_mapping(ranking, "score", kw.get("source") or "<run>")
        return cls.from_columns(qs, ds, ss, **kw)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str] | IO[Any], **kw: Any) -> Run:
        """Read a JSON file holding ``{query_id: {doc_id: value}}`` (pytrec_eval, ranx)."""
        from ._text import read_json_mapping, source_name  # lazy: keeps _text out of eval

        data = read_json_mapping(path)
        kw.setdefault("source", source_name(path))
        return cls.from_dict(data, **kw)

    @classmethod
    def from_frame(cls, frame: Any, **kw: Any) -> Run:
        """Build from a DataFrame with ``query_id, doc_id, score`` columns (ranx: ``q_id``)."""
        cols = {c.lower(): c for c in frame.columns}
        q = cols.get("query_id") or cols.get("q_id") or cols.get("qid")
        d = cols.get("doc_id") or cols.get("docid") or cols.get("docno")
        s = cols.get("score") or cols.get("sim")
        if not (q and d and s):
            raise DataFormatError(
                f"DataFrame columns {list(frame.columns)}: expected query_id, doc_id, score"
            )
        return cls.from_columns(
            frame[q].astype(str).tolist(), frame[d].astype(str).tolist(),
            frame[s].to_numpy(dtype=np.float64), **kw,
        )

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str] | IO[Any], *, name: str | None = None,
        keep: str | None = None,
    ) -> Run:
        """Read a TREC run (``qid Q0 docid rank score tag``), plain or ``.gz``, or a Parquet
        or Arrow IPC run (recognised by its magic bytes); the rules are
        :func:`searchbench.data.read_run`'s."""
        # lazy: keeps trec out of eval
        from .trec import parse_run  # in-function: keeps ``import searchbench.data`` light

        return cls.from_parsed(parse_run(path), name=name, keep=keep)

    @classmethod
    def from_parsed(cls, parsed: Parsed, *, name: str | None = None,
                    keep: str | None = None) -> Run:
        """A run from a reader's columns (``trec.parse_run``, ``columnar.run_columns``),
        named ``name``, else by the file (``parsed.name``); ``metadata["tag"]`` is the
        file's tag. The reader's columns are taken, so each is freed once used."""
        name = name or parsed.name or parsed.source
        if parsed.scan is not None:
            run = cls.from_scan(parsed.scan, name=name, keep=keep, source=parsed.source,
                                describe_line=parsed.describe_line)
        else:
            run = cls._consume(parsed.columns, name=name, keep=keep, source=parsed.source,
                               describe_line=parsed.describe_line)
        run.metadata["tag"] = parsed.tag
        return run

    # -- views ---------------------------------------------------------------------------
    @property
    def doc_codes(self) -> np.ndarray:
        """Doc code of every entry (int32, rank order): ``doc_vocab[doc_codes]`` are the ids.

        A run read from a file builds them on first use.
        """
        return self._codes_and_vocab()[0]

    def _codes_and_vocab(self) -> tuple[np.ndarray, np.ndarray | pa.Array]:
        """``(doc_codes, doc_vocab)``, built from the doc ids on first use."""
        if self._doc_codes is None or self._doc_vocab is None:
            from ._strings import encode_strings  # lazy: loads _strings, pyarrow on first use

            self._doc_codes, self._doc_vocab = encode_strings(self.doc_ids_arrow())
            self._doc_ids = None  # one copy of the ids: doc_ids_arrow() rebuilds them
        return self._doc_codes, self._doc_vocab

    @property
    def doc_vocab(self) -> np.ndarray:
        """Unique doc ids as a numpy object array (``doc_vocab[doc_codes]`` are the docs)."""
        vocab = self._codes_and_vocab()[1]
        if not isinstance(vocab, np.ndarray):  # Arrow, or the compiled reader's Vocab
            items = vocab.tolist() if is_compiled_vocab(vocab) else vocab.to_pylist()
            vocab = self._doc_vocab = np.array(items, dtype=object)
        return vocab

    def doc_vocab_sample(self, limit: int) -> list[str]:
        """At most ``limit`` ids of ``doc_vocab``, every step-th (for advice about ids,
        without building millions of strings for the compiled reader's ids; those are
        every step-th entry's)."""
        ids: Any = self._doc_ids if self._doc_codes is None else None
        if isinstance(ids, CompiledDocs):
            return ids.sample(limit)
        if ids is None:  # else Arrow ids, by entry
            ids = self._codes_and_vocab()[1]
        at = np.arange(0, len(ids), max(len(ids) // max(limit, 1), 1))[:limit]
        if is_compiled_vocab(ids):
            return [ids.get(int(i)) for i in at]
        if not isinstance(ids, np.ndarray):  # Arrow: only the sample becomes str
            from ._arrow import from_numpy  # lazy: loads pyarrow on first use

            return [str(i) for i in ids.take(from_numpy(at)).to_pylist()]
        return [str(i) for i in ids[at].tolist()]

    def doc_vocab_arrow(self) -> pa.Array:
        """Unique doc ids as a pyarrow string array (no Python objects built)."""
        import pyarrow as pa  # lazy: loads pyarrow on first use

        from ._arrow import strings  # lazy: loads _arrow, pyarrow on first use
        vocab = self._codes_and_vocab()[1]
        if is_compiled_vocab(vocab):
            return compiled_arrow(vocab)
        if isinstance(vocab, pa.Array):
            return vocab
        return strings(vocab)

    def vocab_codes_in(self, vocab: np.ndarray | pa.Array) -> np.ndarray:
        """For each id of ``doc_vocab`` (by doc code), its code in ``vocab`` (unique ids,
        numpy or Arrow), -1 where absent: how the evaluator joins a run with the qrels."""
        from .ids import lookup  # lazy: keeps ids out of eval

        mine = self._codes_and_vocab()[1]
        if not is_compiled_vocab(mine):
            return lookup(vocab, self.doc_vocab_arrow())
        ids = vocab.tolist() if not isinstance(vocab, np.ndarray) else vocab
        found = np.frombuffer(cast(Any, mine).codes_of(ids), dtype=np.int32)
        out = np.full(len(mine), -1, dtype=np.int32)
        hit = np.flatnonzero(found >= 0)
        out[found[hit]] = hit
        return out

    def judged_entries(self, first_row: np.ndarray, end_row: np.ndarray,
                       row_ids: tuple[np.ndarray, Any]) -> JudgedEntries | None:
        """The entries whose doc id is among their own query's judged ids: query ``i``'s
        judged ids are rows ``first_row[i]:end_row[i]`` of ``row_ids`` (int64 offsets and
        UTF-8 bytes, as an Arrow string column); None unless the ids are the compiled
        reader's (:class:`CompiledDocs`, looked up in C): how the evaluator joins such a run.
        """
        if not self.compiled_entries:
            return None
        return cast("CompiledDocs", self._doc_ids).judge(self.offsets, first_row, end_row,
                                                         row_ids)

    @property
    def compiled_entries(self) -> bool:
        """Whether the doc ids are the compiled reader's, one per entry (see
        :meth:`judged_entries`)."""
        return self._doc_codes is None and isinstance(self._doc_ids, CompiledDocs)

    def doc_ids_arrow(self) -> pa.Array:
        """Doc id of every entry, in rank order, as a pyarrow string array.

        A run read from a file holds exactly this (no codes or vocabulary are built).
        """
        from ._arrow import from_numpy  # lazy: loads _arrow, pyarrow on first use

        if isinstance(self._doc_ids, CompiledDocs):
            return self._doc_ids.arrow()
        if self._doc_ids is not None:
            return self._doc_ids
        codes, _ = self._codes_and_vocab()
        return self.doc_vocab_arrow().take(from_numpy(codes))

    @property
    def scores(self) -> np.ndarray:
        """Each entry's score (float64), in rank order."""
        if self._scores is None:  # a compiled run's: ranked on first use
            values, ranked = cast("tuple[np.ndarray, CompiledDocs]", self._unranked)
            self._scores, self._unranked = values[ranked.order], None
        return self._scores

    @scores.setter
    def scores(self, values: np.ndarray) -> None:
        self._scores, self._unranked = values, None

    @property
    def has_doc_codes(self) -> bool:
        """Whether ``doc_codes`` are built (False for a run read from a file, until used)."""
        return self._doc_codes is not None and not self.compiled_ids

    @property
    def compiled_ids(self) -> bool:
        """Whether the doc ids are held by the compiled reader (see :meth:`vocab_codes_in`)."""
        return is_compiled_vocab(self._doc_vocab)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {self.n_queries} queries, {len(self)} entries)"

    def query_codes(self) -> np.ndarray:
        """Query index of every entry (int32)."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int32), np.diff(self.offsets))

    def ranks(self) -> np.ndarray:
        """0-based rank of every entry within its query."""
        return np.arange(len(self), dtype=np.int64) - np.repeat(
            self.offsets[:-1], np.diff(self.offsets)
        )

    def ranking(self, query_id: str) -> list[tuple[str, float]]:
        """``[(doc_id, score), ...]`` of one query in rank order."""
        i = np.searchsorted(self.query_ids.astype(str), query_id)
        if i >= self.n_queries or self.query_ids[i] != query_id:
            return []
        a, b = self.offsets[i], self.offsets[i + 1]
        return list(zip(self.doc_vocab[self.doc_codes[a:b]].tolist(),
                        self.scores[a:b].tolist(), strict=True))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` in rank order."""
        docs = self.doc_vocab[self.doc_codes].tolist()
        scores = self.scores.tolist()
        out: dict[str, dict[str, float]] = {}
        for i, qid in enumerate(self.query_ids.tolist()):
            a, b = self.offsets[i], self.offsets[i + 1]
            out[qid] = dict(zip(docs[a:b], scores[a:b], strict=True))
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame ``query_id, doc_id, score, rank`` (rank 1-based)."""
        import pandas as pd  # lazy: the pandas extra

        return pd.DataFrame(
            {
                "query_id": self.query_ids[self.query_codes()],
                "doc_id": self.doc_vocab[self.doc_codes],
                "score": self.scores,
                "rank": self.ranks() + 1,
            }
        )

    def to_file(self, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
        """Write a TREC run file (atomically); ranks are 1-based in rank order."""
        # lazy: keeps trec out of eval
        from .trec import write_run  # in-function: keeps ``import searchbench.data`` light

        write_run(self, path, tag=tag)

    def to_parquet(self, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
        """Write a Parquet file (``query_id, doc_id, score, rank, tag``), atomically."""
        # lazy: loads columnar, pyarrow on first use
        from .columnar import write_columnar_run  # in-function: columnar loads pyarrow

        write_columnar_run(self, path, "parquet", tag=tag)

    def to_arrow(self, path: str | os.PathLike[str], *, tag: str | None = None) -> None:
        """Write an Arrow IPC file (``.arrow``/``.feather``) with :meth:`to_parquet`'s
        columns, atomically."""
        # lazy: loads columnar, pyarrow on first use
        from .columnar import write_columnar_run  # in-function: columnar loads pyarrow

        write_columnar_run(self, path, "arrow", tag=tag)

    def truncate(self, depth: int) -> Run:
        """A new run with the top ``depth`` entries of each query (trec_eval ``-M``)."""
        if depth <= 0:
            raise DataFormatError(f"depth {depth} must be a positive integer")
        keep = np.flatnonzero(self.ranks() < depth)
        new = object.__new__(Run)
        q_codes = self.query_codes()[keep]
        offsets = np.zeros_like(self.offsets)
        np.cumsum(np.bincount(q_codes, minlength=self.n_queries), out=offsets[1:])
        new.query_ids, new.offsets, new._doc_vocab = self.query_ids, offsets, self._doc_vocab
        if isinstance(self._doc_ids, CompiledDocs):
            new._doc_codes, new._doc_ids = None, self._doc_ids.take(keep)
        elif self._doc_ids is not None:  # read from a file, codes not built
            from ._arrow import from_numpy  # lazy: loads _arrow, pyarrow on first use

            new._doc_codes, new._doc_ids = None, self._doc_ids.take(from_numpy(keep))
        else:
            new._doc_codes, new._doc_ids = self.doc_codes[keep], None
        new.scores = self.scores[keep]
        new.name, new.metadata = self.name, dict(self.metadata)
        return new


def _lazy_run(parts: list, keep: str | None, name: str | None) -> Run | None:
    """A run keeping the doc ids (``parts[1]``, :class:`Strings`) as strings, in rank order.

    None when some (query, doc) pair repeats: then ``parts`` still holds the columns and the
    interned path reports or resolves the duplicate, with the same message as ever.
    Otherwise the columns are taken out of ``parts`` and freed as they are used.
    """
    from ._arrow import from_numpy  # lazy: loads _arrow, pyarrow on first use
    from ._strings import has_duplicates  # lazy: loads _strings, pyarrow on first use
    check_keep(keep)
    query_ids, doc_ids, scores = parts
    q_codes, q_vocab = interned(query_ids)
    if not (isinstance(query_ids, Interned) and query_ids.valid):
        check_ids(q_vocab, "query")
    if not doc_ids.valid:
        check_ids(doc_ids.array, "doc")
    ids = doc_ids.array
    if not (len(q_codes) == len(ids) == len(scores)) or has_duplicates(q_codes, ids):
        return None
    parts.clear()
    del query_ids, doc_ids
    offsets = np.zeros(len(q_vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_codes, minlength=len(q_vocab)), out=offsets[1:])
    order, repaired = file_order(q_codes, scores, ids)  # order None: already in order
    del q_codes
    if order is not None:
        scores = scores[order]
    if not repaired:
        order, scores = repair_sorted_ties(order, scores, offsets, ids)
    run = object.__new__(Run)
    run.query_ids, run.offsets, run.scores = q_vocab, offsets, scores
    run._doc_vocab, run._doc_codes = None, None
    run._doc_ids = ids if order is None else ids.take(from_numpy(order))
    run.name = name or "run"
    run.metadata = {}
    return run


def compiled_arrow(vocab: Any) -> pa.Array:
    """The ids of the compiled reader's ``Vocab`` (by code) or ``Entries`` (by entry) as an
    Arrow string array."""
    from ._entries import entries_arrow  # lazy: loads pyarrow on first use

    return entries_arrow(vocab)
