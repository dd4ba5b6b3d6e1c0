"""Helpers shared by the engine adapters of this package (input checks, resume, sidecars).

Private to ``searchbench.db.engines``: every adapter checks its rows and queries the same
way, resumes a load the same way (only ids not stored yet are written, in batches) and,
when its engine cannot hold searchbench's facts (metric, dimension, provenance) with the
collection, keeps them in one JSON *sidecar* next to it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..._util import utc_now, write_json
from ...errors import ConfigError, DataFormatError
from ...knn import as_matrix, check_finite, check_metric

SIDECAR_FORMAT = "searchbench-store/1"


def check_rows(ids: Sequence[str], vectors: np.ndarray, metric: str,
               texts: Sequence[str] | None, metadata: Sequence[Mapping[str, Any]] | None
               ) -> tuple[list[str], np.ndarray, str]:
    """Validated ``(ids, float32 vectors, canonical metric)`` for :meth:`VectorStore.load`."""
    metric = check_metric(metric)
    x = np.ascontiguousarray(as_matrix(vectors, "vectors"), dtype=np.float32)
    id_list = [str(i) for i in ids]
    if len(id_list) != len(x):
        raise DataFormatError(f"{len(id_list)} ids for {len(x)} vectors; expected one id per "
                              "vector")
    if len(set(id_list)) != len(id_list):
        seen: set[str] = set()
        dup = next(i for i in id_list if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise DataFormatError(f"id {dup!r} appears more than once; expected distinct ids")
    for name, column in (("texts", texts), ("metadata", metadata)):
        if column is not None and len(column) != len(x):
            raise DataFormatError(f"{len(column)} {name} for {len(x)} vectors; expected one "
                                  "per vector")
    check_finite(x, "vectors")
    if metric == "cosine":
        zero = ~np.any(x, axis=1)
        if zero.any():
            row = int(np.flatnonzero(zero)[0])
            raise DataFormatError(f"vectors: row {row} (id {id_list[row]!r}) is a zero vector; "
                                  "cosine is undefined for it")
    return id_list, x, metric


def check_queries(queries: np.ndarray, dim: int, k: int) -> np.ndarray:
    """Query vectors as float32 ``(n, dim)``; ``k ≥ 1``."""
    q = np.ascontiguousarray(as_matrix(queries, "query vectors"), dtype=np.float32)
    if q.shape[1] != dim:
        raise DataFormatError(f"query vectors have dim {q.shape[1]}, the store holds dim {dim}; "
                              "embed the queries with the model that embedded the corpus")
    if k < 1:
        raise ConfigError(f"k={k}; expected k ≥ 1")
    check_finite(q, "query vectors")
    return q


def pending(ids: Sequence[str], stored: set[str]) -> np.ndarray:
    """Positions of the ids not stored yet (what a resumed load still has to write)."""
    return np.asarray([i for i, doc_id in enumerate(ids) if doc_id not in stored],
                      dtype=np.int64)


def batches(positions: np.ndarray, size: int) -> Iterator[np.ndarray]:
    """``positions`` cut into consecutive batches of at most ``size``."""
    if size < 1:
        raise ConfigError(f"batch_size={size}; expected ≥ 1")
    for start in range(0, len(positions), size):
        yield positions[start:start + size]


def check_layout(where: str, found_dim: int, found_metric: str, dim: int, metric: str) -> None:
    """A collection holding another dimension or metric cannot take these vectors."""
    if found_dim != dim:
        raise ConfigError(f"{where} holds vectors of dim {found_dim}, the vectors to load have "
                          f"dim {dim}; use another collection name or the model it was "
                          "loaded with")
    if found_metric != metric:
        raise ConfigError(f"{where} was created with metric {found_metric!r}, the load asks "
                          f"for {metric!r}; use another collection name or --metric "
                          f"{found_metric}")


def metadata_value(value: Any, doc_id: str, key: str) -> Any:
    """A metadata value engines can store as a scalar (str, int, float, bool)."""
    if isinstance(value, (str, int, float, bool)):
        return value
    raise DataFormatError(f"metadata of {doc_id!r}: field {key!r} is a {type(value).__name__}; "
                          "expected a string, number or boolean")


def new_provenance(engine: str, dim: int, metric: str, provenance: Mapping[str, Any] | None
                   ) -> dict[str, Any]:
    """What a store records about its vectors when it is created."""
    out: dict[str, Any] = {"engine": engine, "dim": dim, "metric": metric,
                           "created": utc_now()}
    if provenance:
        out.update({str(k): v for k, v in provenance.items()})
        out["dim"], out["metric"] = dim, metric
    return out


def merge_provenance(record: dict[str, Any], provenance: Mapping[str, Any] | None) -> bool:
    """Merge a load's ``provenance`` into the record (dim and metric stay the store's);
    True when something changed. Every load may add to it (``db load`` records the model,
    chunker, count and index once the load is complete)."""
    if not provenance:
        return False
    store = record["store"]
    new = {**store, **{str(k): v for k, v in provenance.items()},
           "dim": record["dim"], "metric": record["metric"]}
    changed = new != store
    record["store"] = new
    return changed


def index_provenance(kind: str, params: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """The provenance entry of a built index (effective parameters, defaults included)."""
    return {"kind": kind, "params": dict(params), "build_seconds": round(seconds, 3),
            "built": utc_now()}


def absent(engine: str, url: str, where: str) -> dict[str, Any]:
    """What :meth:`describe` says of a collection that does not exist yet."""
    return {"engine": engine, "url": url, "exists": False, "where": where, "count": 0,
            "dim": None, "metric": None, "provenance": {}}


class Sidecar:
    """searchbench's record of one embedded collection, as JSON next to it (atomic writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        """The record, or None when the collection was not made by searchbench."""
        if not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataFormatError(f"{self.path}: not a searchbench store record ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
            raise DataFormatError(f"{self.path}: expected a {SIDECAR_FORMAT} record")
        return data

    def write(self, record: Mapping[str, Any]) -> None:
        write_json(self.path, dict(record, format=SIDECAR_FORMAT))


class KnownIds:
    """Mixin: the ids a store holds, read once (``stored_ids``) and then kept up to date by
    its own loads, so ``db load``'s one call per batch does not re-read the collection."""

    _known: set[str] | None = None

    def known_ids(self) -> set[str]:
        if self._known is None:
            self._known = set(self.stored_ids())  # type: ignore[attr-defined]
        return self._known

    def remember(self, ids: list[str]) -> None:
        if self._known is not None:
            self._known.update(ids)


class Timer:
    """Wall time of a block: ``with Timer() as t: ...; t.seconds``."""

    seconds: float = 0.0

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def ragged(rows: list[list[str]], dists: list[np.ndarray]) -> tuple[list[list[str]],
                                                                    list[np.ndarray]]:
    """Per-query id lists and float64 distance arrays, as :class:`StoreHits` holds them."""
    return rows, [np.asarray(d, dtype=np.float64) for d in dists]


class SettingGate:
    """Concurrent searches under one engine-wide search setting (usearch's
    ``expansion_search``, Chroma's ``ef_search`` live on the index, not on the call).

    Searches asking for the setting in force run together; one asking for another value
    waits until they are done, then applies it. So a search never runs under a setting it
    did not ask for, and searches that agree (a sweep's clients) never wait."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._value: Any = None

    @contextmanager
    def using(self, value: Any, apply: Callable[[Any], None]) -> Iterator[None]:
        """Run the block with the setting ``value`` (None: the block does not depend on
        it). ``apply(value)`` is called when no search is running (it should do nothing
        when the engine already has the value) or when the value differs."""
        with self._cond:
            while value is not None and self._active and self._value != value:
                self._cond.wait()
            if value is not None and (not self._active or self._value != value):
                apply(value)
                self._value = value
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()
