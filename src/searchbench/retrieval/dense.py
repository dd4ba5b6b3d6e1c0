"""Exact dense retrieval: an encoder + brute-force search blocked over the corpus.

Metrics: ``ip`` (inner product), ``cos`` (inner product of L2-normalised vectors) and
``l2`` (score = −‖q − d‖², so higher is better). Scores are computed block by block
(``block_size`` units at a time, blocks never split a document) with BLAS matrix products,
and each block's top k is merged exactly (ARCHITECTURE §3 ties).

Backends for unpooled search (documents, or chunks at chunk level): ``auto``/``kernel``
take candidates from :func:`searchbench.ann.groundtruth.exact_knn` (``faiss.knn`` when
faiss is installed, else threaded blocked sgemm), ``faiss`` from a faiss flat index; both
re-rank the candidates with this retriever's scores and ties, and rescore in full any
query whose tie at the cut may reach past the candidates. ``numpy`` (and every doc-level
search over chunks, which max-pools chunk scores per document) uses the blocked engine of
:class:`Retriever`. Backends agree up to float32 rounding: scores within ~1e-6 may be
ordered differently.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ConfigError, require
from .base import Retriever, doc_aligned_blocks, exact_topk
from .chunking import Chunker, TokenChunker
from .encoders import Encoder
from .encoders import encoder as make_encoder

__all__ = ["METRICS", "Dense", "normalize"]

METRICS = ("cos", "ip", "l2")
BACKENDS = ("auto", "numpy", "kernel", "faiss")
_ALIASES = {"cosine": "cos", "inner_product": "ip", "dot": "ip", "euclidean": "l2"}


def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


class Dense(Retriever):
    """Embed units with ``encoder`` and rank them by exact similarity to the query."""

    name = "dense"

    def __init__(self, encoder: Encoder | str = "minilm", metric: str = "cos",
                 backend: str = "auto", block_size: int = 16384,
                 with_title: bool = True) -> None:
        super().__init__()
        self.encoder = make_encoder(encoder)
        self.metric = _ALIASES.get(metric, metric)
        if self.metric not in METRICS:
            raise ConfigError(f"metric {metric!r} is unknown; expected one of cos, ip, l2")
        if backend not in BACKENDS:
            raise ConfigError(f"backend {backend!r} is unknown; expected one of "
                              f"{', '.join(BACKENDS)}")
        self.backend, self.block_size, self.with_title = backend, block_size, with_title
        self.embeddings: np.ndarray | None = None
        self._sq_norms: np.ndarray | None = None
        self.truncated_units = 0

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, "metric": self.metric, "backend": self.backend,
                **self.encoder.describe()}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "truncated_units": self.truncated_units}

    def _bind_chunker(self, chunker: Chunker | None) -> Chunker | None:
        """Count with the encoder's tokenizer; warn if chunks exceed its max length."""
        if chunker is None:
            return None
        if getattr(chunker, "tokenizer", "n/a") is None and hasattr(chunker, "with_tokenizer"):
            chunker = chunker.with_tokenizer(self.encoder.token_offsets, self.encoder.name)
        limit = self.encoder.max_seq_length
        size = getattr(chunker, "size", None) or getattr(chunker, "max_tokens", None)
        if limit and size and size > limit:
            warnings.warn(f"chunks of up to {size} tokens exceed {self.encoder.name}'s "
                          f"max_seq_length of {limit}: tokens after the first {limit} of a "
                          "chunk are truncated (ignored) when embedding", stacklevel=3)
        return chunker

    def _fit(self, texts: list[str]) -> None:
        emb = self.encoder.encode_documents(texts) if texts else np.empty((0, 0), np.float32)
        if self.metric == "cos" and len(emb):
            emb = normalize(emb)
        self.embeddings = np.ascontiguousarray(emb, dtype=np.float32)
        self._sq_norms = (self.embeddings ** 2).sum(axis=1) if self.metric == "l2" else None
        self.truncated_units = self._count_truncated(texts)

    def _count_truncated(self, texts: list[str]) -> int:
        limit = self.encoder.max_seq_length
        if not limit or (isinstance(self.chunker, TokenChunker) and self.chunker.size <= limit):
            return 0
        return sum(1 for t in texts if len(t) > limit - 2 and
                   len(self.encoder.token_offsets(t)) > limit - 2)

    def _queries(self, query_texts: list[str]) -> np.ndarray:
        q = self.encoder.encode_queries(query_texts)
        return normalize(q) if self.metric == "cos" else q.astype(np.float32, copy=False)

    def _prepare(self, query_texts: list[str]) -> np.ndarray:
        return self._queries(query_texts)

    def _score_blocks(self, q: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        emb = self.embeddings
        units = self._require_index()
        for a, b in doc_aligned_blocks(units.doc_starts, len(units), self.block_size):
            s = q @ emb[a:b].T  # type: ignore[index]
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
        """Candidates from the ANN module's exact kernel (:func:`exact_knn`), re-ranked
        by this retriever's scores and ARCHITECTURE §3 ties; rows with ties at the cut rescored."""
        from ..ann.groundtruth import exact_knn

        units = self._require_index()
        emb = self.embeddings
        n = len(units)
        k = min(k, n)
        extra = min(16, n - k)
        metric = "l2" if self.metric == "l2" else "ip"  # cos: rows are already unit length
        cand = exact_knn(emb, q, k, metric, extra=extra, check=False).ids
        vecs = emb[cand]  # type: ignore[index]
        s = np.einsum("qd,qkd->qk", q, vecs)
        if self.metric == "l2":
            s = 2 * s - self._sq_norms[cand] - (q ** 2).sum(axis=1, keepdims=True)
        codes, scores = exact_topk(s, cand, units.key_units, k)
        tied = np.flatnonzero(scores[:, k - 1] <= s.min(axis=1)) if extra else []
        if len(tied):  # ties may extend past the candidates: score those rows fully
            full = self._full(q[tied])
            all_codes = np.broadcast_to(np.arange(n, dtype=np.int64), full.shape)
            codes[tied], scores[tied] = exact_topk(full, all_codes, units.key_units, k)
        return codes, scores

    def _full(self, q: np.ndarray) -> np.ndarray:
        """Scores of ``q`` against every unit (for the rare rows tied at the cut)."""
        s = q @ self.embeddings.T  # type: ignore[union-attr]
        if self.metric == "l2":
            s = 2 * s - self._sq_norms - (q ** 2).sum(axis=1, keepdims=True)
        return s

    def _faiss_topk(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss flat inner-product search, widened until the cut is free of ties."""
        faiss = require("faiss", "faiss")
        units = self._require_index()
        index = faiss.IndexFlatIP(self.embeddings.shape[1])  # type: ignore[union-attr]
        index.add(self.embeddings)
        n = len(units)
        k = min(k, n)
        width = min(n, k + 16)
        vals, idx = index.search(q, width)
        codes, scores = exact_topk(vals, idx.astype(np.int64), units.key_units, k)
        tied = np.flatnonzero(vals[:, k - 1] <= vals[:, width - 1]) if width < n else []
        if len(tied):  # ties may extend past what faiss returned: score those rows fully
            full = self._full(q[tied])
            all_codes = np.broadcast_to(np.arange(n, dtype=np.int64), full.shape)
            codes[tied], scores[tied] = exact_topk(full, all_codes, units.key_units, k)
        return codes, scores
