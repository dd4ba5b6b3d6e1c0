"""Vectors of an evaluation set: its corpus and judged queries through an encoder.

The encoder (``searchbench.retrieval.encoder``) caches embeddings on disk, so a second
sweep of the same set and model does not embed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .relevance import RelevanceContext

__all__ = ["EmbeddedSet", "embed_evalset"]


@dataclass
class EmbeddedSet:
    """Corpus and query vectors with their ids, and the set's judgments."""

    base: np.ndarray
    queries: np.ndarray
    doc_ids: list[str]
    query_ids: list[str]
    qrels: Any
    name: str
    model: dict[str, Any]
    evalset: Any = None

    def relevance(self, **kw: Any) -> RelevanceContext:
        """A :class:`RelevanceContext` for ΔnDCG@10 / ΔR@100 of every sweep point; runs
        are prepared as the set asks (e.g. ArguAna drops hits equal to the query id)."""
        if self.evalset is not None:
            kw.setdefault("prepare", self.evalset.prepare_run)
        return RelevanceContext(self.doc_ids, self.query_ids, self.qrels, **kw)


def embed_evalset(evalset: Any, model: str = "minilm", *, with_title: bool = True,
                  quiet: bool | None = None) -> EmbeddedSet:
    """Embed ``evalset`` (an :class:`~searchbench.EvalSet` or a spec for
    :func:`~searchbench.load_evalset`) with ``model``; judged queries only."""
    from ..collections import load_evalset  # lazy: loads data, collections on first use

    # lazy: loads retrieval on first use
    from ..retrieval import encoder, length_report, warn_truncation

    es = load_evalset(evalset)
    enc = encoder(model, quiet=quiet)
    queries = es.judged_queries
    texts = es.corpus.texts(with_title)
    lengths = length_report(enc, texts)  # before embedding: warn about truncation first
    warn_truncation(lengths)
    base = enc.encode_documents(texts)
    qv = enc.encode_queries(queries.texts())
    return EmbeddedSet(np.asarray(base, dtype=np.float32), np.asarray(qv, dtype=np.float32),
                       list(es.corpus.ids), list(queries.ids), es.qrels, es.name,
                       {**enc.describe(), "truncation": lengths.to_dict()}, es)
