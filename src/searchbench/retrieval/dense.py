"""Exact dense retrieval: an encoder + brute-force search blocked over the corpus.

Metrics (:data:`searchbench.vocab.METRICS`, aliases accepted): ``ip`` (inner product),
``cosine`` (inner product of L2-normalised vectors; alias ``cos``) and ``l2``
(score = −‖q − d‖², so higher is better). Scores are computed block by block
(``block_size`` units at a time, blocks never split a document) with BLAS matrix products,
and each block's top k is merged exactly (ARCHITECTURE §3 ties).

Backends for unpooled search (documents, or chunks at chunk level): ``auto``/``kernel``
take candidates from :func:`searchbench.knn.exact_knn` (``faiss.knn`` when
faiss is installed, else threaded blocked sgemm), ``faiss`` from a faiss flat index; both
re-rank the candidates with this retriever's scores and ties, and rescore in full any
query whose tie at the cut may reach past the candidates. ``numpy`` (and every doc-level
search over chunks, which max-pools chunk scores per document) uses the blocked engine of
:class:`Retriever`. Backends agree up to float32 rounding: scores within ~1e-6 may be
ordered differently.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ConfigError, require
from ..vocab import BACKENDS, METRICS, canonical_backend, canonical_metric
from ._truncation import length_report, warn_truncation
from .base import Retriever, doc_aligned_blocks, exact_topk
from .chunking import Chunker
from .encoders import Encoder
from .encoders import encoder as make_encoder

__all__ = ["BACKENDS", "METRICS", "Dense", "normalize"]

_NONE = np.empty(0, dtype=np.int64)  # no rows



def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


class Dense(Retriever):
    """Embed units with ``encoder`` and rank them by exact similarity to the query."""

    name = "dense"

    def __init__(self, encoder: Encoder | str = "minilm", metric: str = "cosine",
                 backend: str = "auto", block_size: int = 16384,
                 with_title: bool = True) -> None:
        super().__init__()
        self.encoder = make_encoder(encoder)
        self.metric = canonical_metric(metric)
        backend = canonical_backend(backend)
        self.backend, self.block_size, self.with_title = backend, block_size, with_title
        self.embeddings: np.ndarray | None = None
        self._sq_norms = np.empty(0, dtype=np.float32)  # squared row norms (l2 only)
        self.truncated_units = 0
        self.truncation: dict[str, Any] | None = None  # LengthReport.to_dict() of the index
        self.query_encoding: dict[str, Any] = {}  # seconds and cache use of the last search

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, "metric": self.metric, "backend": self.backend,
                **self.encoder.describe()}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "truncated_units": self.truncated_units,
                "truncation": self.truncation, "query_encoding": dict(self.query_encoding)}

    def _bind_chunker(self, chunker: Chunker | None) -> Chunker | None:
        """Count chunk sizes with the encoder's tokenizer.

        Chunks longer than the model's ``max_seq_length`` are counted and reported by
        :meth:`_report_lengths` before embedding (one warning, with the real number);
        the chunk size alone says nothing (a chunk may be shorter than its size).
        """
        if chunker is None:
            return None
        if getattr(chunker, "tokenizer", "n/a") is None and hasattr(chunker, "with_tokenizer"):
            chunker = chunker.with_tokenizer(self.encoder.token_offsets, self.encoder.name)
        return chunker

    def _fit(self, texts: list[str]) -> None:
        self._report_lengths(texts)  # before embedding: the warning comes first
        emb = self.encoder.encode_documents(texts) if texts else np.empty((0, 0), np.float32)
        if self.metric == "cosine" and len(emb):
            emb = normalize(emb)
        self.embeddings = np.ascontiguousarray(emb, dtype=np.float32)
        if self.metric == "l2":
            self._sq_norms = (self.embeddings ** 2).sum(axis=1)

    def _report_lengths(self, texts: list[str]) -> None:
        """Count the units the encoder will truncate (its own tokenizer) and warn once."""
        report = length_report(self.encoder, texts,
                               "chunk" if self.chunker is not None else "document")
        self.truncation = report.to_dict()
        self.truncated_units = report.truncated
        warn_truncation(report)

    def _queries(self, query_texts: list[str]) -> np.ndarray:
        """Query vectors; records the encoding time and the cache use in ``timings``."""
        t0 = time.perf_counter()
        self.encoder.last_cache = None
        q = self.encoder.encode_queries(query_texts)
        q = normalize(q) if self.metric == "cosine" else q.astype(np.float32, copy=False)
        cache = self.encoder.last_cache
        self.timings["encode_s"] = time.perf_counter() - t0
        self.query_encoding = {"queries": len(query_texts), "seconds": self.timings["encode_s"],
                               "cached": cache.hits if cache is not None else 0,
                               "embedded": cache.misses if cache is not None
                               else len(query_texts)}
        return q

    def _prepare(self, query_texts: list[str]) -> np.ndarray:
        return self._queries(query_texts)

    def _vectors(self) -> np.ndarray:
        """The indexed unit vectors (:class:`ConfigError` before ``index()``)."""
        self._require_index()
        if self.embeddings is None:  # index() sets both
            raise ConfigError(f"{self.name}: search() before index(); call "
                              ".index(corpus) first")
        return self.embeddings

    def _score_blocks(self, q: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        emb = self._vectors()
        units = self._require_index()
        for a, b in doc_aligned_blocks(units.doc_starts, len(units), self.block_size):
            s = q @ emb[a:b].T
            if self.metric == "l2":
                s = 2 * s - self._sq_norms[a:b] - (q ** 2).sum(axis=1, keepdims=True)
            yield a, b, s

    def _topk(self, query_texts: list[str], k: int, level: str) -> tuple[np.ndarray, ...]:
        units = self._require_index()
        pooled = level == "doc" and units.chunks is not None
        if self.backend == "numpy" or pooled or not len(units):
            return super()._topk(query_texts, k, level)
        q = self._queries(query_texts)
        if self.backend == "faiss" and self.metric != "l2":
            return self._faiss_topk(q, k)
        return self._kernel_topk(q, k)

    def _kernel_topk(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidates from the exact k-NN kernel (:func:`exact_knn`), re-ranked
        by this retriever's scores and ARCHITECTURE §3 ties; rows with ties at the cut
        rescored."""
        from ..knn import exact_knn  # lazy: loads knn on first use

        units = self._require_index()
        emb = self._vectors()
        n = len(units)
        k = min(k, n)
        extra = min(16, n - k)
        metric = "l2" if self.metric == "l2" else "ip"  # cos: rows are already unit length
        cand = exact_knn(emb, q, k, metric, extra=extra, check=False).ids
        vecs = emb[cand]
        s = np.einsum("qd,qkd->qk", q, vecs)
        if self.metric == "l2":
            s = 2 * s - self._sq_norms[cand] - (q ** 2).sum(axis=1, keepdims=True)
        codes, scores = exact_topk(s, cand, units.key_units, k)
        tied = np.flatnonzero(scores[:, k - 1] <= s.min(axis=1)) if extra else _NONE
        if len(tied):  # ties may extend past the candidates: score those rows fully
            full = self._full(q[tied])
            all_codes = np.broadcast_to(np.arange(n, dtype=np.int64), full.shape)
            codes[tied], scores[tied] = exact_topk(full, all_codes, units.key_units, k)
        return codes, scores

    def _full(self, q: np.ndarray) -> np.ndarray:
        """Scores of ``q`` against every unit (for the rare rows tied at the cut)."""
        s = q @ self._vectors().T
        if self.metric == "l2":
            s = 2 * s - self._sq_norms - (q ** 2).sum(axis=1, keepdims=True)
        return s

    def _faiss_topk(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss flat inner-product search, widened until the cut is free of ties."""
        faiss = require("faiss", "faiss")
        units = self._require_index()
        emb = self._vectors()
        index = faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        n = len(units)
        k = min(k, n)
        width = min(n, k + 16)
        vals, idx = index.search(q, width)
        codes, scores = exact_topk(vals, idx.astype(np.int64), units.key_units, k)
        tied = np.flatnonzero(vals[:, k - 1] <= vals[:, width - 1]) if width < n else _NONE
        if len(tied):  # ties may extend past what faiss returned: score those rows fully
            full = self._full(q[tied])
            all_codes = np.broadcast_to(np.arange(n, dtype=np.int64), full.shape)
            codes[tied], scores[tied] = exact_topk(full, all_codes, units.key_units, k)
        return codes, scores
