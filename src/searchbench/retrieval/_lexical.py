"""BM25 through ``bm25s`` (Lucene variant, k1=0.9, b=0.4, English stop words + Snowball)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._util import progress
from ..errors import ConfigError, require
from ..vocab import canonical_bm25_method, canonical_stemmer, canonical_stopwords, check_finite
from .base import Retriever

__all__ = ["BM25"]


class BM25(Retriever):
    """Okapi BM25 over title + text (or chunks), scored exactly by ``bm25s``.

    score(q, d) = Σ_t idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl)),
    Lucene's idf = ln(1 + (N − df + 0.5)/(df + 0.5)) (Robertson & Zaragoza 2009; bm25s,
    Lù 2024). Documents that match no query term are not returned, as in Lucene.
    """

    name = "bm25"
    min_score = 0.0

    def __init__(self, k1: float = 0.9, b: float = 0.4, method: str = "lucene",
                 stopwords: str | bool | Sequence[str] | None = "en",
                 stemmer: str | bool | None = "english",
                 with_title: bool = True) -> None:
        """``k1`` >= 0 and 0 <= ``b`` <= 1 (finite); ``method``, ``stopwords`` and ``stemmer``
        take the spellings of :mod:`searchbench.vocab` (None/False/"none": no stop words,
        no stemming)."""
        super().__init__()
        self.k1 = check_finite(k1, "k1", minimum=0)
        self.b = check_finite(b, "b", minimum=0, maximum=1)
        self.method = canonical_bm25_method(method)
        self.stopwords = canonical_stopwords(stopwords)
        self.stemmer_name = canonical_stemmer(stemmer)
        if not isinstance(with_title, bool):
            raise ConfigError(f"with_title is {with_title!r}; expected true or false")
        self.with_title = with_title
        self._model: Any = None
        self._stemmer: Any = None

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, "method": self.method, "k1": self.k1, "b": self.b,
                "stopwords": self.stopwords, "stemmer": self.stemmer_name,
                "with_title": self.with_title,
                "bm25s": getattr(require("bm25s", "bm25"), "__version__", "?")}

    def _tokenize(self, texts: list[str], return_ids: bool) -> Any:
        bm25s = require("bm25s", "bm25")
        if self._stemmer is None and self.stemmer_name:
            stemmer_mod = require("Stemmer", "bm25")
            try:
                self._stemmer = stemmer_mod.Stemmer(self.stemmer_name)
            except KeyError as exc:
                raise ConfigError(f"stemmer {self.stemmer_name!r} is unknown; expected one of "
                                  f"{', '.join(stemmer_mod.algorithms())}") from exc
        stop = list(self.stopwords) if isinstance(self.stopwords, tuple) else self.stopwords
        return bm25s.tokenize(texts, stopwords=stop or [], stemmer=self._stemmer,
                              return_ids=return_ids, show_progress=False)

    def _fit(self, texts: list[str]) -> None:
        bm25s = require("bm25s", "bm25")
        self._model = bm25s.BM25(method=self.method, k1=self.k1, b=self.b)
        if texts:
            with progress(1, f"indexing {len(texts):,} texts with BM25", self.quiet,
                          unit="index") as done:
                self._model.index(self._tokenize(texts, True), show_progress=False)
                done(1)

    def _prepare(self, query_texts: list[str]) -> list[list[int]]:
        """Query token ids in the index vocabulary (unknown terms dropped)."""
        if not len(self._require_index()):
            return [[] for _ in query_texts]
        toks = self._tokenize(query_texts, False)
        return [self._model.get_tokens_ids(t) for t in toks]

    def _score_blocks(self, queries: list[list[int]]) -> Iterator[tuple[int, int, np.ndarray]]:
        n = len(self._require_index())
        scores = np.zeros((len(queries), n), dtype=np.float32)
        for i, ids in enumerate(queries):
            if ids:
                scores[i] = self._model.get_scores_from_ids(ids)
        yield 0, n, scores

    def _query_block(self) -> int:
        return 64
