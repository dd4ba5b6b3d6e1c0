"""The checks :class:`~searchbench.db.VectorStore` runs before any engine is touched: rows to
load, query vectors, a collection's layout and names spliced into an engine's syntax.

One behaviour for every engine, one error class per case:

- :class:`~searchbench.errors.DataFormatError` — the data given is bad: not a 2-D array, NaN
  or ±inf, a zero vector under cosine, ids not one distinct non-empty string per row,
  texts/metadata not one per row, metadata that is not a JSON object, query vectors of
  another dimension than the collection's (another model's vectors);
- :class:`~searchbench.errors.ConfigError` — the request does not fit the store: rows of
  another dimension or metric for an existing collection (use another collection), a
  metric the engine lacks, ``k`` or ``batch_size`` below 1, a name that is not plain.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, DataFormatError
from ..knn import as_matrix, check_finite, check_metric

__all__ = ["Rows", "check_k", "check_layout", "check_name", "check_queries", "check_rows"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@dataclass(frozen=True)
class Rows:
    """Validated rows to load: string ids, float32 C-contiguous vectors (one row per id),
    the canonical metric and the optional texts and metadata (one per id)."""

    ids: list[str]
    vectors: np.ndarray
    metric: str
    texts: Sequence[str] | None = None
    metadata: Sequence[Mapping[str, Any]] | None = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def take(self, positions: Sequence[int] | np.ndarray) -> Rows:
        """The rows at ``positions`` (one batch of a load)."""
        pos = [int(i) for i in positions]
        return Rows([self.ids[i] for i in pos], self.vectors[pos], self.metric,
                    None if self.texts is None else [self.texts[i] for i in pos],
                    None if self.metadata is None else [self.metadata[i] for i in pos])


def check_rows(ids: Sequence[str], vectors: np.ndarray, metric: str,
               texts: Sequence[str] | None = None,
               metadata: Sequence[Mapping[str, Any]] | None = None) -> Rows:
    """Validated :class:`Rows` for :meth:`VectorStore.load` (see the module docstring)."""
    metric = check_metric(metric)
    matrix = np.ascontiguousarray(as_matrix(vectors, "vectors to load"), dtype=np.float32)
    id_list = list(ids)
    if len(id_list) != len(matrix):
        raise DataFormatError(f"{len(id_list)} ids but {len(matrix)} vectors; expected one "
                              "id per vector")
    bad = next((i for i in id_list if not isinstance(i, str) or not i), None)
    if bad is not None:
        raise DataFormatError(f"id {bad!r}: expected non-empty strings as ids")
    if len(set(id_list)) != len(id_list):
        dup = next(i for i, n in Counter(id_list).items() if n > 1)
        raise DataFormatError(f"id {dup!r} occurs twice among the rows to load; expected "
                              "distinct ids")
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
    if metric == "cosine":
        zero = np.flatnonzero(~np.any(matrix, axis=1))
        if len(zero):
            row = int(zero[0])
            raise DataFormatError(f"vectors to load: row {row} (id {id_list[row]!r}) is a "
                                  "zero vector; cosine is undefined for it")
    return Rows(id_list, matrix, metric, texts, metadata)


def check_queries(queries: np.ndarray, dim: int, k: int) -> np.ndarray:
    """Query vectors as a float32 C-contiguous ``(n, dim)`` matrix (finite), and k ≥ 1.
    A zero query is allowed under cosine: it has no neighbours, but the engine answers."""
    check_k(k)
    q = np.ascontiguousarray(as_matrix(queries, "query vectors"), dtype=np.float32)
    if q.shape[1] != dim:
        raise DataFormatError(f"query vectors have dim {q.shape[1]}, the collection holds "
                              f"dim {dim}; embed the queries with the model that embedded "
                              "the corpus")
    check_finite(q, "query vectors")
    return q


def check_k(k: int) -> None:
    """``k`` is an integer ≥ 1."""
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"k={k!r}; expected an integer ≥ 1")


def check_layout(where: str, stored: Mapping[str, Any], dim: int | None, metric: str) -> None:
    """A collection holding another dimension or metric never takes these rows (``dim``
    None: a load of no rows, only the metric is compared)."""
    if (dim is not None and stored.get("dim") != dim) or stored.get("metric") != metric:
        given = f"dim {dim} / metric {metric}" if dim is not None else f"metric {metric}"
        raise ConfigError(f"{where} holds dim {stored.get('dim')} / metric "
                          f"{stored.get('metric')}, the rows to load have {given}; load them "
                          "into another collection (or delete this one)")


def check_name(value: str, what: str, url: str) -> str:
    """A table/index/collection name safe to splice into the engine's own syntax."""
    if not _NAME.fullmatch(value):
        raise ConfigError(f"{url}: {what} {value!r} is not a plain name; expected letters, "
                          "digits and '_' (starting with a letter or '_', at most 63)")
    return value
