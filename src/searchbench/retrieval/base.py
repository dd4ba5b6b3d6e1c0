"""The Retriever base class: indexed units, exact blocked top-k, doc/chunk levels.

Every retriever scores *units* (whole documents, or chunks when a chunker is given) and
ranks them exactly per ARCHITECTURE §3: score descending, then id descending (byte-wise). At
``level="doc"`` a document scores as its best chunk; at ``level="chunk"`` the run's ids are
chunk ids ``"{doc_id}#{start}-{end}"`` (character offsets into the document text).
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from .._util import progress
from ..data import Corpus, Queries, Run
from ..errors import ConfigError, SearchbenchWarning, user_stacklevel
from ..vocab import LEVELS, canonical_level
from .chunking import Chunk, Chunker

__all__ = ["LEVELS", "Retriever", "Units", "build_units", "exact_topk"]


@dataclass
class Units:
    """What an index holds: one entry per unit (document or chunk), grouped by document."""

    ids: list[str]
    texts: list[str]
    doc_ids: list[str]  # distinct documents, in corpus order
    doc_starts: np.ndarray  # first unit of each document (int64), for reduceat
    chunks: list[Chunk] | None = None
    skipped_empty: int = 0
    key_units: np.ndarray = field(init=False)
    key_docs: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.key_units = _byte_order_rank(self.ids)
        self.key_docs = _byte_order_rank(self.doc_ids)

    def __len__(self) -> int:
        return len(self.ids)


def _byte_order_rank(ids: list[str]) -> np.ndarray:
    """Rank of each id in byte-wise (= code point) order, as int64 tie-break keys."""
    order = np.argsort(np.asarray(ids, dtype=str), kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


def build_units(corpus: Corpus, chunker: Chunker | None, with_title: bool,
                quiet: bool | None = None) -> Units:
    """Units of ``corpus``: whole documents, or the chunker's chunks (title prepended)."""
    ids: list[str] = []
    texts: list[str] = []
    doc_ids: list[str] = []
    starts: list[int] = []
    chunks: list[Chunk] | None = [] if chunker is not None else None
    skipped = 0
    with progress(len(corpus) if chunker else 0, "chunking", quiet,
                  unit="documents") as advance:
        for doc in corpus:
            advance(1)
            got = _doc_units(doc, chunker, with_title)
            if got is None:
                skipped += 1
                continue
            starts.append(len(ids))
            doc_ids.append(doc.id)
            for unit_id, text, chunk in got:
                ids.append(unit_id)
                texts.append(text)
                if chunks is not None and chunk is not None:  # a chunker gives chunks
                    chunks.append(chunk)
    return Units(ids, texts, doc_ids, np.asarray(starts, dtype=np.int64), chunks, skipped)


def _doc_units(doc: Any, chunker: Chunker | None,
               with_title: bool) -> list[tuple[str, str, Chunk | None]] | None:
    """``(unit id, text to index, chunk)`` of one document; None if it is empty."""
    if not (doc.text.strip() or doc.title.strip()):
        return None
    prefix = f"{doc.title} " if with_title and doc.title else ""
    if chunker is None:
        return [(doc.id, (prefix + doc.text).strip(), None)]
    got = chunker.split(doc.id, doc.text) or [Chunk(doc.id, 0, len(doc.text), doc.text)]
    return [(c.id, (prefix + c.text).strip(), c) for c in got]


def exact_topk(
    scores: np.ndarray, codes: np.ndarray, key: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` per row by score desc, then ``key[code]`` desc (ids byte-wise desc).

    ``scores`` and ``codes`` are ``(n_rows, m)``; returns ``(codes, scores)`` of shape
    ``(n_rows, min(k, m))`` in rank order. Exact: ties at the cut are resolved by id.
    """
    m = scores.shape[1]
    k = min(k, m)
    if k <= 0:
        empty = np.empty((scores.shape[0], 0))
        return empty.astype(codes.dtype), empty.astype(scores.dtype)
    if k < m:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        vals = np.take_along_axis(scores, part, axis=1)
        thr = vals.min(axis=1)
        crowded = np.flatnonzero((scores >= thr[:, None]).sum(axis=1) > k)
        for r in crowded:  # rare: more ties at the cut than places left
            cand = np.flatnonzero(scores[r] >= thr[r])
            order = np.lexsort((-key[codes[r, cand]], -scores[r, cand]))[:k]
            part[r] = cand[order]
        sel = part
    else:
        sel = np.broadcast_to(np.arange(m), scores.shape)
    s = np.take_along_axis(scores, sel, axis=1)
    c = np.take_along_axis(codes, sel, axis=1)
    order = np.lexsort((-key[c], -s), axis=1)
    return np.take_along_axis(c, order, axis=1), np.take_along_axis(s, order, axis=1)


class Retriever:
    """Base class: ``index(corpus, chunker=None)`` then ``search(queries, k) -> Run``.

    Subclasses implement :meth:`_fit` (build the index over ``self.units.texts``) and
    :meth:`_score_blocks` (yield ``(unit_start, unit_stop, scores)`` for a block of the
    queries as :meth:`_prepare` returned them,
    blocks aligned to document boundaries).
    """

    name = "retriever"
    min_score: float | None = None  # units scoring <= this are not returned

    def __init__(self) -> None:
        self.units: Units | None = None
        self.corpus: Corpus | None = None
        self.chunker: Chunker | None = None
        self.timings: dict[str, float] = {}
        self.with_title = True
        self.quiet: bool | None = None  # progress bars: None = only on a terminal

    # -- public API -------------------------------------------------------------------
    def index(self, corpus: Corpus, chunker: Chunker | None = None) -> Self:
        """Index ``corpus`` (split by ``chunker`` if given); returns ``self``. A retriever
        whose system holds its own index (:meth:`_indexed_elsewhere`) only remembers the
        corpus."""
        refusal = self._indexed_elsewhere()
        if refusal is not None:
            self._index_elsewhere(corpus, chunker, refusal)
            return self
        t0 = time.perf_counter()
        self.chunker = self._bind_chunker(chunker)
        self.corpus = corpus
        self.units = build_units(corpus, self.chunker, self.with_title, self.quiet)
        if self.units.skipped_empty:
            warnings.warn(f"{self.units.skipped_empty} of {len(corpus)} documents are empty "
                          "(no title or text) and were skipped", SearchbenchWarning,
                          stacklevel=user_stacklevel())
        self._fit(self.units.texts)
        self.timings["index_s"] = time.perf_counter() - t0
        return self

    def _indexed_elsewhere(self) -> str | None:
        """Why a chunker is refused, for a retriever whose system holds its own index (a
        search service, a framework's store, a replayed run); None: searchbench indexes."""
        return None

    def _index_elsewhere(self, corpus: Corpus, chunker: Chunker | None,
                         refusal: str) -> None:
        """``index()`` of a retriever whose system holds its own index: refuse a chunker
        with ``refusal``, remember the corpus (returned ids must come from it; context
        texts) and its whole documents as the units."""
        if chunker is not None:
            raise ConfigError(refusal)
        t0 = time.perf_counter()
        self.corpus = corpus
        self.units = build_units(corpus, None, self.with_title, self.quiet)
        self.timings["index_s"] = time.perf_counter() - t0

    def search(self, queries: Queries, k: int = 100, level: str = "doc") -> Run:
        """Rank the indexed units for every query; top ``k`` per query as a :class:`Run`.

        ``timings``: ``search_s`` (ranking) and, for retrievers that embed the queries,
        ``encode_s`` (query encoding, cache reads included) apart.
        """
        units = self._require_index()
        level = check_level(level, k)
        t0 = time.perf_counter()
        self.timings.pop("encode_s", None)  # set again by retrievers that embed queries
        qids = queries.ids
        codes, vals = self._topk(queries.texts(), k, level)
        ids = units.doc_ids if level == "doc" or units.chunks is None else units.ids
        run = _to_run(qids, codes, vals, ids, self.name, self.min_score)
        self.timings["search_s"] = _minus_encoding(time.perf_counter() - t0, self.timings)
        run.metadata.update(self.describe(), level=level, k=k, timings=dict(self.timings),
                            skipped_empty_docs=units.skipped_empty)
        return run

    def config(self) -> dict[str, Any]:
        """The settings that define this retriever (for provenance)."""
        return {"retriever": self.name}

    def describe(self) -> dict[str, Any]:
        """Config plus chunker and unit counts."""
        units = self._require_index()
        return {**self.config(),
                "chunker": self.chunker.describe() if self.chunker else None,
                "n_units": len(units), "n_docs": len(units.doc_ids)}

    def context_texts(self, level: str = "doc") -> dict[str, str]:
        """The text a result stands for, by run id: the chunk (chunk level) or the whole
        document, title included (doc level) — what a RAG pipeline would put in context."""
        units = self._require_index()
        if level == "chunk" and units.chunks is not None:
            return dict(zip(units.ids, units.texts, strict=True))
        kept = set(units.doc_ids)
        return {d.id: (f"{d.title} {d.text}" if self.with_title and d.title else d.text)
                for d in self.corpus or [] if d.id in kept}

    # -- for subclasses -----------------------------------------------------------------
    def _bind_chunker(self, chunker: Chunker | None) -> Chunker | None:
        return chunker

    def _fit(self, texts: list[str]) -> None:
        """Index the unit texts; retrievers using the default :meth:`index` define it."""
        raise TypeError(f"{type(self).__name__} must define _fit() or override index()")

    def _prepare(self, query_texts: list[str]) -> Any:
        """All queries in the form :meth:`_score_blocks` takes (sliceable), computed once."""
        return query_texts

    def _score_blocks(self, queries: Any) -> Iterator[tuple[int, int, np.ndarray]]:
        """Yield ``(first query, last query, scores)`` blocks for the default :meth:`search`."""
        raise TypeError(f"{type(self).__name__} must define _score_blocks() or override "
                        "search()")

    def _query_block(self) -> int:
        return 256

    # -- engine -----------------------------------------------------------------------
    def _require_index(self) -> Units:
        if self.units is None:
            raise ConfigError(f"{self.name}: search() before index(); call "
                              ".index(corpus) first")
        return self.units

    def _topk(self, query_texts: list[str], k: int, level: str) -> tuple[np.ndarray, ...]:
        units = self._require_index()
        to_docs = level == "doc" and units.chunks is not None
        key = units.key_docs if to_docs or units.chunks is None else units.key_units
        out_c: list[np.ndarray] = []
        out_v: list[np.ndarray] = []
        step = self._query_block()
        prepared = self._prepare(query_texts)
        for a in range(0, max(len(query_texts), 1), step):
            block = prepared[a:a + step]
            if not len(block):
                break
            best_c = best_v = None
            for u0, u1, scores in self._score_blocks(block):
                codes, vals = self._reduce(scores, u0, u1, to_docs)
                c, v = exact_topk(vals, codes, key, k)  # this block's top k, then merge
                if best_v is not None:
                    c, v = exact_topk(np.concatenate([best_v, v], axis=1),
                                      np.concatenate([best_c, c], axis=1), key, k)
                best_c, best_v = c, v
            if best_c is None or best_v is None:  # no blocks: both None
                best_c, best_v = np.empty((len(block), 0), np.int64), np.empty((len(block), 0))
            out_c.append(best_c)
            out_v.append(best_v)
        if not out_c:
            return np.empty((0, 0), dtype=np.int64), np.empty((0, 0))
        return np.concatenate(out_c), np.concatenate(out_v)

    def _reduce(self, scores: np.ndarray, u0: int, u1: int, to_docs: bool):
        """Scores of units ``u0:u1`` -> (codes, scores), max-pooled per doc if asked."""
        if not to_docs:
            codes = np.arange(u0, u1, dtype=np.int64)
            return np.broadcast_to(codes, scores.shape), scores
        starts = self._require_index().doc_starts
        d0, d1 = np.searchsorted(starts, [u0, u1])
        pooled = np.maximum.reduceat(scores, starts[d0:d1] - u0, axis=1)
        codes = np.arange(d0, d1, dtype=np.int64)
        return np.broadcast_to(codes, pooled.shape), pooled


def _minus_encoding(seconds: float, timings: dict[str, float]) -> float:
    """Search time without the query encoding (``timings["encode_s"]``, reported apart:
    it is mostly cache reads when the query embeddings are cached)."""
    return max(seconds - timings.get("encode_s", 0.0), 0.0)


def doc_aligned_blocks(doc_starts: np.ndarray, n_units: int, size: int) -> list[tuple[int, int]]:
    """Split ``range(n_units)`` into blocks of about ``size`` that never split a document."""
    bounds = [0]
    for s in doc_starts[1:].tolist():
        if s - bounds[-1] >= size:
            bounds.append(s)
    bounds.append(n_units)
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def check_level(level: str, k: int) -> str:
    """The canonical level; ConfigError for an unknown level or k <= 0."""
    level = canonical_level(level)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k <= 0:
        raise ConfigError(f"k={k!r}: expected a positive number of results per query")
    return level


def _to_run(qids: list[str], codes: np.ndarray, vals: np.ndarray, ids: list[str],
            name: str, min_score: float | None) -> Run:
    """Flatten per-query top-k arrays into a Run (optionally dropping weak scores)."""
    width = codes.shape[1] if codes.ndim == 2 else 0
    q = np.repeat(np.asarray(qids, dtype=object), width)
    c = codes.reshape(-1)
    v = vals.reshape(-1)
    keep = np.ones(len(c), dtype=bool) if min_score is None else v > min_score
    doc_arr = np.asarray(ids, dtype=object)
    return Run.from_columns(q[keep].tolist(), doc_arr[c[keep]].tolist(), v[keep], name=name)
