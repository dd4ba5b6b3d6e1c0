"""Redis Stack (RediSearch) as a store: ``redis://127.0.0.1:6379?index=docs``.

Rows are hashes ``<index>:<id>`` (fields ``vec`` float32 bytes, ``text``, ``meta`` JSON, and
each scalar metadata value as its own field for filters: strings as TAG, numbers as
NUMERIC). Two RediSearch indexes cover the same hashes:

- ``<index>_flat``: a ``FLAT`` vector index created at the first load, the exact path;
- ``<index>``: the ``HNSW`` index built by :meth:`RedisStore.build_index` (``M``,
  ``EF_CONSTRUCTION``); searched with ``EF_RUNTIME`` (RediSearch's ``EPSILON`` applies to
  range queries only and is refused in a KNN query, so it is not offered).

Traps handled here: an index created over existing hashes fills in the background, so
:meth:`~RedisStore.build_index` polls ``FT.INFO`` until ``indexing`` is 0 and
``percent_indexed`` is 1; results are fetched with ``RETURN`` so they never carry the vector
blob; with a filter RediSearch picks brute force (``ADHOC_BF``) or batched HNSW
(``BATCHES``) per query without saying which, so ``index_used`` is None there unless
``HYBRID_POLICY`` is given. Distances: RediSearch's ``COSINE`` is 1 − cos and ``L2`` is
squared (both the knn convention); its ``IP`` is 1 − ⟨q, x⟩, converted to −⟨q, x⟩.

The password comes from the URL (``redis://:PASSWORD@host:port``) or ``REDIS_PASSWORD``
and never appears in messages or :meth:`~RedisStore.describe`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._util.secrets import hold
from ...errors import BackendError, ConfigError, require
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore, check_name

__all__ = ["RedisStore"]

_METRIC = {"cosine": "COSINE", "ip": "IP", "l2": "L2"}
_RESERVED = {"vec", "text", "meta", "dist"}


class RedisStore(VectorStore):
    """Redis Stack / RediSearch: HNSW (EF_RUNTIME); exact through a second FLAT index over
    the same hashes.

    One RediSearch vector index (plus its FLAT twin) over hashes in a Redis server."""

    engine: ClassVar[str] = "redis"
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec.graph_degree("M", 16, low=1),
        ParamSpec.build_candidates("EF_CONSTRUCTION", 200),
        ParamSpec.search_candidates("EF_RUNTIME", 10),
        ParamSpec("HYBRID_POLICY", str, "auto", "with a filter: ADHOC_BF (brute force) or "
                  "BATCHES (HNSW in batches); auto lets RediSearch choose silently", "search",
                  choices=("auto", "ADHOC_BF", "BATCHES")),
        ParamSpec("BATCH_SIZE", int, 0, "with HYBRID_POLICY=BATCHES: batch size (0 = "
                  "RediSearch's choice)", "search", low=0, high=1_000_000),
    )

    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("index", str, "docs", "the RediSearch index (hash prefix <index>:)", "url"),)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.index = check_name(self.options["index"], "index", url.public)
        self.prefix = f"{self.index}:"
        self.flat = f"{self.index}_flat"
        self.meta_key = f"searchbench:meta:{self.index}"
        redis = require("redis", self.extra)
        self._errors = redis.exceptions
        db = url.path.strip("/") or "0"
        if not db.isdigit():
            raise ConfigError(f"{url.public}: database {db!r}; expected a number "
                              "(redis://host:port/0)")
        password = url.password or os.environ.get("REDIS_PASSWORD") or None
        hold(password)
        retry = require("redis.retry", self.extra).Retry(
            require("redis.backoff", self.extra).NoBackoff(), 0)  # fail fast, say why
        self.r = redis.Redis(host=url.host or "127.0.0.1", port=url.port or 6379, db=int(db),
                             username=url.user, password=password, socket_timeout=60,
                             socket_connect_timeout=10, retry=retry)
        try:
            self.r.ping()
            self.modules = {m[b"name"].decode(): m[b"ver"] for m in self.r.module_list()}
        except self._errors.RedisError as exc:
            raise BackendError(f"cannot reach Redis at {url.public}: {exc}") from None
        if "search" not in self.modules:
            raise BackendError(f"{url.public}: the server has no RediSearch module (found "
                               f"{', '.join(sorted(self.modules)) or 'none'}); expected "
                               "Redis Stack or Redis ≥ 8 with the query engine")

    # -- stored settings ----------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        raw = self._call(self.r.get, self.meta_key)
        return json.loads(raw) if raw else None

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self._call(self.r.set, self.meta_key,
                   json.dumps(dict(meta), sort_keys=True, default=str))

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._errors.ResponseError as exc:
            raise BackendError(f"{self.url.public}: Redis answered: {exc}") from None
        except self._errors.RedisError as exc:
            raise BackendError(f"cannot reach Redis at {self.url.public}: {exc}") from None

    def _index_info(self, name: str) -> dict[str, Any] | None:
        try:
            info: dict[str, Any] = self.r.ft(name).info()
            return info
        except self._errors.ResponseError:
            return None  # no such index
        except self._errors.RedisError as exc:
            raise BackendError(f"cannot reach Redis at {self.url.public}: {exc}") from None

    # -- writing ------------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        """The FLAT index (the exact path) over the hashes to come; the filterable fields
        are those of the first load's metadata."""
        meta["fields"] = _fields(rows.metadata)
        self._create_index(self.flat, "FLAT", meta, {})

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """The batch's hashes in one MULTI/EXEC."""
        pipe = self.r.pipeline(transaction=True)
        for i, doc in enumerate(rows.ids):
            pipe.hset(self.prefix + doc,
                      mapping=_row(rows.vectors[i], rows.texts, rows.metadata, i, meta["fields"]))
        self._call(pipe.execute)

    def _create_index(self, name: str, algorithm: str, meta: Mapping[str, Any],
                      build: Mapping[str, Any]) -> None:
        fields = self._search_fields()
        attributes = {"TYPE": "FLOAT32", "DIM": meta["dim"],
                      "DISTANCE_METRIC": _METRIC[meta["metric"]], **build}
        schema = [fields.VectorField("vec", algorithm, attributes)]
        for field, kind in meta["fields"].items():
            schema.append(fields.TagField(field) if kind == "tag" else fields.NumericField(field))
        definition = require("redis.commands.search.index_definition", self.extra)
        self._call(self.r.ft(name).create_index, schema, definition=definition.IndexDefinition(
            prefix=[self.prefix], index_type=definition.IndexType.HASH))

    def _search_fields(self) -> Any:
        return require("redis.commands.search.field", self.extra)

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """(Re)create the HNSW index over the stored hashes and wait until it is filled."""
        started = time.perf_counter()
        if self._index_info(self.index) is not None:
            self._call(self.r.ft(self.index).dropindex, delete_documents=False)
        self._create_index(self.index, "HNSW", meta, params)
        self._wait_indexed(self.index)
        return time.perf_counter() - started

    def _wait_indexed(self, name: str, timeout: float = 3600.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            info = self._index_info(name) or {}
            if _indexing_done(info):
                return
            if time.monotonic() > deadline:
                raise BackendError(f"{self.url.public}: index {name} still indexing after "
                                   f"{timeout:g} s ({info.get('percent_indexed')})")
            time.sleep(0.05)

    # -- reading ------------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """Top-k through the HNSW index (the FLAT one, reported, when none is built)."""
        info = self._index_info(self.index)
        if info is None:
            hits = self._search(self.flat, queries, k, filter, {}, meta["metric"])
            hits.index_used, hits.plan = False, "no HNSW index built: the FLAT index answered"
            return hits
        knn = {s.name: params.get(s.name, s.default) for s in self.params if s.when == "search"}
        hits = self._search(self.index, queries, k, filter, knn, meta["metric"])
        policy = knn["HYBRID_POLICY"]
        hits.plan = (f"FT.INFO {self.index}: num_docs={info.get('num_docs')}, "
                     f"percent_indexed={info.get('percent_indexed')}; filter="
                     f"{'none' if not filter else 'yes, HYBRID_POLICY=' + policy}")
        if not _indexing_done(info):
            hits.index_used = False
        elif filter and policy != "BATCHES":
            hits.index_used = False if policy == "ADHOC_BF" else None
        else:
            hits.index_used = True
        return hits

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        """Top-k by the FLAT index (brute force inside RediSearch)."""
        hits = self._search(self.flat, queries, k, filter, {}, meta["metric"])
        hits.index_used, hits.plan = False, f"FLAT index {self.flat}"
        return hits

    def _search(self, name: str, queries: np.ndarray, k: int, filter: str | None,
                knn: Mapping[str, Any], metric: str) -> StoreHits:
        query_mod = require("redis.commands.search.query", self.extra)
        attrs, values = "", {}
        if knn and not (filter and knn["HYBRID_POLICY"] == "ADHOC_BF"):
            attrs = " EF_RUNTIME $EF_RUNTIME"
            values = {"EF_RUNTIME": knn["EF_RUNTIME"]}
        if knn and filter and knn["HYBRID_POLICY"] != "auto":
            attrs += f" HYBRID_POLICY {knn['HYBRID_POLICY']}"
            if knn["HYBRID_POLICY"] == "BATCHES" and knn["BATCH_SIZE"]:
                attrs += " BATCH_SIZE $BATCH_SIZE"
                values["BATCH_SIZE"] = knn["BATCH_SIZE"]
        text = f"({filter})" if filter else "*"
        query = (query_mod.Query(f"{text}=>[KNN {k} @vec $vec{attrs} AS dist]")
                 .sort_by("dist").return_fields("dist").paging(0, k).dialect(2))
        index = self.r.ft(name)
        ids: list[list[str]] = []
        dists: list[np.ndarray] = []
        latencies = np.empty(len(queries))
        cut = len(self.prefix)
        for i, row in enumerate(queries):
            started = time.perf_counter()
            result = self._call(index.search, query, query_params={**values, "vec": row.tobytes()})
            latencies[i] = time.perf_counter() - started
            pairs = sorted((float(doc.dist), doc.id[cut:]) for doc in result.docs)
            ids.append([doc for _, doc in pairs])
            dists.append(np.asarray([d for d, _ in pairs], dtype=np.float64)
                         - (1.0 if metric == "ip" else 0.0))
        return StoreHits(ids, dists, None, None, dict(knn), latencies)

    def exists(self) -> bool:
        """searchbench's record of the index, or the index itself, is there."""
        return self._read_meta() is not None or self._index_info(self.index) is not None

    def location(self) -> str:
        return f"index {self.index} at {self.url.public}"

    def count(self) -> int:
        """Hashes under the index's prefix."""
        return len(self.stored_ids())

    def stored_ids(self) -> list[str]:
        """Every id under ``<index>:`` (SCAN)."""
        cut = len(self.prefix)
        try:
            return [key.decode()[cut:] for key in
                    self.r.scan_iter(match=_glob_escape(self.prefix) + "*", count=5000)]
        except self._errors.RedisError as exc:
            raise BackendError(f"cannot reach Redis at {self.url.public}: {exc}") from None

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Server and module versions, the two indexes, filter fields, HNSW state."""
        info = self._index_info(self.index)
        server = self._call(self.r.info, "server")
        version = ".".join(str(self.modules["search"] // 10**p % 100) for p in (4, 2, 0))
        state = None
        if info is not None:
            state = {"num_docs": int(info["num_docs"]), "indexing": int(info["indexing"]),
                     "percent_indexed": float(info["percent_indexed"]),
                     "vector_index_sz_mb": float(info.get("vector_index_sz_mb", 0) or 0)}
        built = (meta.get("provenance") or {}).get("index") if info is not None else None
        return {
            "engine": f"redis {server.get('redis_version')} + RediSearch {version}",
            "index": self.index, "exact_index": self.flat,
            "filter_fields": meta.get("fields", {}), "index_build": built,
            "index_state": state or "no HNSW index (searches use the FLAT index)",
        }

    def close(self) -> None:
        """Close the connection pool."""
        self.r.close()


def _fields(metadata: Sequence[Mapping[str, Any]] | None) -> dict[str, str]:
    """Filterable metadata fields: TAG for strings and booleans, NUMERIC for numbers."""
    kinds: dict[str, str] = {}
    for row in metadata or ():
        for key, value in row.items():
            if key in _RESERVED or not key.isidentifier():
                continue
            if isinstance(value, bool | str):
                kinds.setdefault(key, "tag")
            elif isinstance(value, int | float):
                kinds.setdefault(key, "numeric")
    return kinds


def _row(vector: np.ndarray, texts: Sequence[str] | None,
         metadata: Sequence[Mapping[str, Any]] | None, i: int,
         fields: Mapping[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = {"vec": vector.tobytes()}
    if texts is not None:
        row["text"] = texts[i]
    if metadata is not None:
        row["meta"] = json.dumps(metadata[i], sort_keys=True)
        for key in fields:
            value = metadata[i].get(key)
            if value is not None:
                row[key] = str(value).lower() if isinstance(value, bool) else value
    return row


def _indexing_done(info: Mapping[str, Any]) -> bool:
    return int(info.get("indexing", 1)) == 0 and float(info.get("percent_indexed", 0)) >= 1.0


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
