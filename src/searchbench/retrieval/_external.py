"""A retriever that replays a precomputed run (a vector database's, another system's).

It lets results produced elsewhere take part in fusion next to the built-in retrievers, and
serves as a test double in users' own tests (no model, no index)::

    hybrid = sb.retrieval.Hybrid([sb.retrieval.BM25(), sb.retrieval.RunRetriever(db_run)])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data import Queries, Run
from ..errors import ConfigError
from .base import Retriever

__all__ = ["RunRetriever"]


class RunRetriever(Retriever):
    """``search`` returns the given run's top ``k`` for the queries asked (doc level)."""

    def __init__(self, run: Run, name: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.name = name or run.name or "run"

    def config(self) -> dict[str, Any]:
        return {"retriever": "run", "name": self.name, "entries": len(self.run)}

    def _indexed_elsewhere(self) -> str:
        """The corpus is remembered (for context sizes); a chunker is not supported."""
        return (f"{self.name}: a replayed run has fixed documents; it cannot be chunked "
                "(use level='doc' without a chunker)")

    def search(self, queries: Queries, k: int = 100, level: str = "doc") -> Run:
        if level != "doc" or k <= 0:
            raise ConfigError(f"{self.name}: level={level!r}, k={k}; a replayed run "
                              "answers level='doc' with k > 0")
        wanted = np.isin(self.run.query_ids.astype(str), queries.ids)
        keep = np.flatnonzero(wanted[self.run.query_codes()] & (self.run.ranks() < k))
        q = self.run.query_ids[self.run.query_codes()[keep]].astype(str).tolist()
        d = self.run.doc_vocab[self.run.doc_codes[keep]].astype(str).tolist()
        out = Run.from_columns(q, d, self.run.scores[keep], name=self.name)
        out.metadata.update(self.config(), level=level, k=k)
        return out
