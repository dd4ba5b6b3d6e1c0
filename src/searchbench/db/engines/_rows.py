"""Input checks shared by the usearch and sqlite-vec adapters (rows to load, queries)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError, DataFormatError
from ...knn import as_matrix, check_finite, check_metric

__all__ = ["check_queries", "check_rows", "mismatch"]


def check_rows(ids: Sequence[str], vectors: np.ndarray, metric: str,
               texts: Sequence[str] | None = None,
               metadata: Sequence[Mapping[str, Any]] | None = None
               ) -> tuple[list[str], np.ndarray, str]:
    """String ids (distinct), float32 vectors (finite, one row per id) and the canonical
    metric; raises :class:`DataFormatError` / :class:`ConfigError` naming what is wrong."""
    metric = check_metric(metric)
    ids = [str(i) for i in ids]
    matrix = as_matrix(vectors, "vectors to load").astype(np.float32, copy=False)
    if len(ids) != len(matrix):
        raise DataFormatError(f"{len(ids)} ids but {len(matrix)} vectors; expected one id "
                              "per vector row")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise DataFormatError(f"id {dup!r} appears more than once; ids must be distinct")
    for name, col in (("texts", texts), ("metadata", metadata)):
        if col is not None and len(col) != len(ids):
            raise DataFormatError(f"{len(col)} {name} for {len(ids)} ids; expected one each")
    check_finite(matrix, "vectors to load")
    return ids, matrix, metric


def check_queries(queries: np.ndarray, dim: int, k: int) -> np.ndarray:
    """Float32 query matrix of the collection's dimension, and k ≥ 1."""
    q = as_matrix(queries, "query vectors").astype(np.float32, copy=False)
    if q.shape[1] != dim:
        raise ConfigError(f"query vectors have {q.shape[1]} dimensions, the collection "
                          f"{dim}; embed the queries with the collection's model")
    if k < 1:
        raise ConfigError(f"k={k}; expected k ≥ 1")
    check_finite(q, "query vectors")
    return q


def mismatch(where: str, what: str, stored: Any, given: Any) -> ConfigError:
    """The error for loading rows of another dimension or metric into a collection."""
    return ConfigError(f"{where} holds {what} {stored}, the rows given have {what} {given}; "
                       "load them into another collection (or delete this one)")
