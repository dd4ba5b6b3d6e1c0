"""Input checks shared by the adapters: rows to load, query vectors, stored settings.

Everything here runs before an engine is touched, so bad input never leaves a collection
half-written, and every message names what was found and what was expected.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError, DataFormatError
from ...knn import as_matrix, check_finite, check_metric

__all__ = ["as_hits_arrays", "batches", "check_k", "check_name", "check_queries", "check_rows",
           "check_same_layout", "vector_text"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def check_name(value: str, what: str, url: str) -> str:
    """A table/index/collection name safe to splice into the engine's own syntax."""
    if not _NAME.fullmatch(value):
        raise ConfigError(f"{url}: {what} {value!r} is not a plain name; expected letters, "
                          "digits and '_' (starting with a letter or '_', at most 63)")
    return value


def check_rows(ids: Sequence[str], vectors: np.ndarray, metric: str,
               texts: Sequence[str] | None, metadata: Sequence[Mapping[str, Any]] | None
               ) -> tuple[list[str], np.ndarray, str]:
    """Validated ``(ids, float32 vectors, canonical metric)`` for :meth:`VectorStore.load`."""
    metric = check_metric(metric)
    matrix = as_matrix(vectors, "vectors to load")
    id_list = list(ids)
    if len(id_list) != len(matrix):
        raise DataFormatError(f"{len(id_list)} ids but {len(matrix)} vectors; expected one "
                              "id per vector")
    bad = next((i for i in id_list if not isinstance(i, str) or not i), None)
    if bad is not None or any(not isinstance(i, str) for i in id_list):
        raise DataFormatError(f"id {bad!r}: expected non-empty strings as ids")
    if len(set(id_list)) != len(id_list):
        dup = next(i for i, n in Counter(id_list).items() if n > 1)
        raise DataFormatError(f"id {dup!r} occurs twice among the rows to load; "
                              "expected distinct ids")
    for what, column in (("texts", texts), ("metadata", metadata)):
        if column is not None and len(column) != len(id_list):
            raise DataFormatError(f"{len(column)} {what} for {len(id_list)} ids; expected "
                                  "one per id")
    for doc, fields in zip(id_list, metadata or (), strict=False):
        try:
            json.dumps(dict(fields), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DataFormatError(f"metadata of {doc!r}: {exc}; expected a JSON object "
                                  "(strings, numbers, booleans, lists, objects)") from None
    check_finite(matrix, "vectors to load")
    zero = np.flatnonzero(np.linalg.norm(matrix, axis=1) == 0)
    if metric == "cosine" and len(zero):
        row = int(zero[0])
        raise DataFormatError(f"vectors to load: row {row} is a zero vector; cosine is "
                              "undefined for it")
    return id_list, np.ascontiguousarray(matrix, dtype=np.float32), metric


def check_queries(queries: np.ndarray, dim: int, k: int) -> np.ndarray:
    """Query vectors as a contiguous float32 matrix of the collection's dimension."""
    matrix = as_matrix(queries, "query vectors")
    if matrix.shape[1] != dim:
        raise DataFormatError(f"query vectors have dim {matrix.shape[1]} but the collection "
                              f"holds dim {dim}; embed the queries with the corpus's model")
    if len(matrix) == 0:
        raise DataFormatError("no query vectors")
    check_finite(matrix, "query vectors")
    check_k(k)
    return np.ascontiguousarray(matrix, dtype=np.float32)


def check_k(k: int) -> None:
    """``k`` ≥ 1."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"k={k!r}; expected an integer ≥ 1")


def check_same_layout(url: str, stored: Mapping[str, Any], dim: int, metric: str) -> None:
    """A collection created for another dimension or metric is never mixed with new rows."""
    if stored.get("dim") != dim or stored.get("metric") != metric:
        raise ConfigError(f"{url} holds dim {stored.get('dim')} / metric "
                          f"{stored.get('metric')}, but the rows to load have dim {dim} / "
                          f"metric {metric}; load into another table/collection or drop it")


def batches(n: int, size: int) -> list[range]:
    """Consecutive row ranges of at most ``size`` rows."""
    if not isinstance(size, int) or size < 1:
        raise ConfigError(f"batch_size={size!r}; expected an integer ≥ 1")
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def vector_text(row: np.ndarray) -> str:
    """``[x1,x2,...]``: each float32 written as the shortest decimal that reads back to it."""
    return "[" + ",".join(map(str, row.tolist())) + "]"


def as_hits_arrays(rows: list[list[tuple[str, float]]]) -> tuple[list[list[str]],
                                                                 list[np.ndarray]]:
    """Per-query ``(ids, float64 distances)`` from ``(id, distance)`` pairs."""
    ids = [[doc for doc, _ in row] for row in rows]
    dists = [np.asarray([d for _, d in row], dtype=np.float64) for row in rows]
    return ids, dists
