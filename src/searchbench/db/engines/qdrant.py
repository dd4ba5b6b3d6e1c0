"""A Qdrant *server*: ``qdrant://HOST:6333?collection=docs`` (``qdrant-client``).

Shares its mapping with ``qdrant-edge://`` (:mod:`._qdrant`: metric names, score →
distance, payload ↔ metadata, parameter names, filters in Qdrant's JSON form, the planner
rule behind :attr:`StoreHits.index_used`). Differences from the edge shard:

- point ids are uuid5 of the string id (no file can live beside a server collection); the
  string id is the payload field ``sb_id``, returned with every hit;
- searchbench's record (metric, dimension, provenance, index build) is the collection's
  ``metadata`` (Qdrant ≥ 1.16);
- :meth:`build_index` updates the collection's HNSW and optimizer settings and waits until
  the server reports every vector indexed (the server optimizes in the background).

Options: ``collection`` (required), ``https=true``, ``api_key_env=NAME`` (the API key is
read from that environment variable, else from ``QDRANT_API_KEY``; it is never printed,
stored or returned by :meth:`describe`), ``timeout`` (seconds, default 30).

**Untested against a real server here**: no Qdrant server can be installed on the build
machine, and qdrant-client's local mode is a brute-force Python re-implementation (its
HNSW settings are accepted and ignored), so it must not stand in for one. The tests cover
what can be tested honestly: the shared mapping (also exercised by the edge adapter
against Qdrant's real engine), parameter validation and the unreachable-server error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._util.secrets import hold
from ...errors import BackendError, ConfigError, DataFormatError, require
from ..base import LoadReport, ParamSpec, StoreHits, StoreURL, VectorStore, check_params
from . import _qdrant as qm
from ._common import (
    SIDECAR_FORMAT,
    KnownIds,
    Timer,
    absent,
    batches,
    check_layout,
    check_queries,
    check_rows,
    index_provenance,
    merge_provenance,
    new_provenance,
    pending,
)

_OPTIONS = ("collection", "https", "api_key_env", "timeout")
_SCROLL = 10_000
_BUILD_WAIT_S = 3600.0


class QdrantStore(KnownIds, VectorStore):
    """One collection on a Qdrant server."""

    engine: ClassVar[str] = "qdrant"
    extra: ClassVar[str] = "qdrant"
    summary: ClassVar[str] = ("a Qdrant server through qdrant-client: HNSW, exact scan, "
                              "payload filters (not tested against a live server here)")
    params: ClassVar[tuple[ParamSpec, ...]] = (
        *qm.HNSW_PARAMS,
        ParamSpec("indexing_threshold", int, 10000,
                  "optimizer: segments above this many KB get an HNSW graph (the server's "
                  "default; lower it to index a small collection)", when="build", low=0),
        *qm.SEARCH_PARAMS,
    )
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        unknown = sorted(set(url.options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"{url.public}: unknown option {unknown[0]!r}; valid: "
                              f"{', '.join(_OPTIONS)}")
        if url.password is not None:
            raise ConfigError(f"{url.public}: do not put a secret in the URL; set the API key "
                              "in an environment variable (QDRANT_API_KEY, or the one named "
                              "by api_key_env=NAME)")
        self.name = url.options.get("collection", "")
        if not self.name or not url.host:
            raise ConfigError(f"{url.public}: expected 'qdrant://HOST:6333?collection=NAME'")
        self.where = f"Qdrant collection {self.name!r} at {url.public}"
        try:
            self._timeout = int(url.options.get("timeout", "30"))
        except ValueError:
            raise ConfigError(f"{url.public}: timeout must be whole seconds") from None
        self._models: Any = require("qdrant_client.models", "qdrant")
        self._client_module: Any = require("qdrant_client", "qdrant")
        self._client: Any = None

    # -- connection -------------------------------------------------------------------
    def _api_key(self) -> str | None:
        name = self.url.options.get("api_key_env")
        if name is not None and name not in os.environ:
            raise ConfigError(f"{self.url.public}: api_key_env={name} but that environment "
                              "variable is not set")
        key = os.environ.get(name or "QDRANT_API_KEY") or None
        hold(key)
        return key

    def _connect(self) -> Any:
        if self._client is None:
            https = self.url.options.get("https", "false").lower() in ("1", "true", "yes")
            self._client = self._call("connect", self._client_module.QdrantClient,
                                      host=self.url.host, port=self.url.port or 6333,
                                      https=https, api_key=self._api_key(),
                                      timeout=self._timeout, check_compatibility=False)
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # httpx, grpc and qdrant-client errors: one message
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BackendError(f"{self.where}: {what} failed ({why}); is the server "
                               "running and reachable?") from None

    def _info(self) -> Any:
        return self._call("read collection", self._connect().get_collection, self.name)

    def _exists(self) -> bool:
        return bool(self._call("read collections", self._connect().collection_exists,
                               self.name))

    def _record(self) -> dict[str, Any]:
        if not self._exists():
            raise ConfigError(f"{self.where} does not exist; load it first with "
                              f"`searchbench db load '{self.url.public}' ...`")
        meta = self._info().config.metadata or {}
        record = meta.get("searchbench")
        if not isinstance(record, dict) or record.get("format") != SIDECAR_FORMAT:
            raise ConfigError(f"{self.where} was not made by searchbench (no 'searchbench' "
                              "collection metadata); load a new collection")
        return record

    # -- writing ----------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        id_list, x, metric = check_rows(ids, vectors, metric, texts, metadata)
        bodies = qm.payloads(id_list, texts, metadata)
        m = self._models
        with Timer() as timer:
            if self._exists():
                record = self._record()
                check_layout(self.where, int(record["dim"]), str(record["metric"]),
                             x.shape[1], metric)
            else:
                record = {"format": SIDECAR_FORMAT, "dim": x.shape[1], "metric": metric,
                          "store": new_provenance(self.engine, x.shape[1], metric, provenance)}
                vectors_config = m.VectorParams(size=x.shape[1],
                                                distance=m.Distance(qm.DISTANCES[metric]))
                self._call("create collection", self._connect().create_collection,
                           self.name, vectors_config=vectors_config,
                           metadata={"searchbench": record})
            todo = pending(id_list, self.known_ids())
            for batch in batches(todo, batch_size):
                points = [m.PointStruct(id=qm.point_uuid(id_list[i]), vector=x[i].tolist(),
                                        payload=bodies[i]) for i in batch]
                self._call("upsert", self._connect().upsert, self.name, points, wait=True)
                self.remember([id_list[i] for i in batch])
            if merge_provenance(record, provenance):
                self._save_record(record)
        return LoadReport(len(todo), len(id_list) - len(todo), self.count(), timer.seconds)

    def _save_record(self, record: Mapping[str, Any]) -> None:
        self._call("update collection", self._connect().update_collection, self.name,
                   metadata={"searchbench": dict(record)})

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        if kind not in (None, "hnsw"):
            raise ConfigError(f"qdrant builds index kind 'hnsw', not {kind!r}")
        given = check_params(self.engine, self.params, params, "build")
        build = {s.name: given.get(s.name, s.default) for s in self.params if s.when == "build"}
        record = self._record()
        m = self._models
        with Timer() as timer:
            self._call("update collection", self._connect().update_collection, self.name,
                       hnsw_config=m.HnswConfigDiff(
                           m=build["m"], ef_construct=build["ef_construct"],
                           full_scan_threshold=build["full_scan_threshold"]),
                       optimizers_config=m.OptimizersConfigDiff(
                           indexing_threshold=build["indexing_threshold"]))
            self._wait_indexed()
        record["store"]["index"] = index_provenance("hnsw", build, timer.seconds)
        self._save_record(record)
        return timer.seconds

    def _wait_indexed(self) -> None:
        """Poll until the server's optimizer is idle and every vector is indexed."""
        deadline = time.monotonic() + _BUILD_WAIT_S
        while True:
            info = self._info()
            green = str(getattr(info.status, "value", info.status)) == "green"
            points = info.points_count or 0
            if green and (info.indexed_vectors_count or 0) >= points:
                return
            if time.monotonic() > deadline:
                raise BackendError(f"{self.where}: {info.indexed_vectors_count} of {points} "
                                   f"vectors indexed after {_BUILD_WAIT_S:.0f} s")
            time.sleep(0.5)

    # -- reading ----------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        given = check_params(self.engine, self.params, params or {}, "search")
        m = self._models
        search = m.SearchParams(hnsw_ef=given.get("hnsw_ef"),
                                indexed_only=bool(given.get("indexed_only")),
                                acorn=m.AcornSearchParams(enable=True)
                                if given.get("acorn") else None)
        return self._search(queries, k, search, filter, given)

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        return self._search(queries, k, self._models.SearchParams(exact=True), filter, {})

    def _search(self, queries: np.ndarray, k: int, search: Any, filter: str | None,
                given: dict[str, Any]) -> StoreHits:
        m = self._models
        where = m.Filter.model_validate(qm.parse_filter(filter)) if filter else None
        record = self._record()
        q = check_queries(queries, int(record["dim"]), k)
        requests = [m.QueryRequest(query=row.tolist(), limit=k, params=search, filter=where,
                                   with_payload=[qm.ID_FIELD]) for row in q]
        found = self._call("search", self._connect().query_batch_points, self.name, requests)
        ids, dists = [], []
        for response in found:
            ids.append([_string_id(p.payload, self.where) for p in response.points])
            dists.append(qm.to_distances([p.score for p in response.points],
                                         record["metric"]))
        used, plan = self._index_use(record, bool(search.exact), where)
        return StoreHits(ids, dists, used, plan, params=given)

    def _index_use(self, record: Mapping[str, Any], exact: bool, where: Any
                   ) -> tuple[bool, str]:
        info = self._info()
        matching = None
        if where is not None and not exact:
            matching = int(self._call("count", self._connect().count, self.name,
                                      count_filter=where, exact=True).count)
        kb = int(info.config.hnsw_config.full_scan_threshold or 10000)
        return qm.index_use(exact=exact, points=info.points_count or 0,
                            indexed=info.indexed_vectors_count or 0,
                            threshold=qm.threshold_points(kb, int(record["dim"])),
                            matching=matching)

    def exists(self) -> bool:
        return self._exists()

    def count(self) -> int:
        return int(self._call("count", self._connect().count, self.name, exact=True).count)

    def stored_ids(self) -> list[str]:
        if not self._exists():
            return []
        out: list[str] = []
        offset = None
        while True:
            records, offset = self._call("scroll", self._connect().scroll, self.name,
                                         limit=_SCROLL, offset=offset,
                                         with_payload=[qm.ID_FIELD], with_vectors=False)
            out.extend(_string_id(r.payload, self.where) for r in records)
            if offset is None:
                self._known = set(out)
                return out

    def describe(self) -> dict[str, Any]:
        if not self._exists():
            return absent(self.engine, self.url.public, self.where)
        record = self._record()
        info = self._info()
        hnsw = info.config.hnsw_config
        return {"engine": self.engine, "version": getattr(self._call(
                    "read version", self._connect().info), "version", None),
                "url": self.url.public, "collection": self.name, "dim": record["dim"],
                "metric": record["metric"], "count": info.points_count,
                "indexed_vectors": info.indexed_vectors_count,
                "segments": info.segments_count,
                "hnsw": {"m": hnsw.m, "ef_construct": hnsw.ef_construct,
                         "full_scan_threshold": hnsw.full_scan_threshold},
                "index": record["store"].get("index"), "provenance": record["store"]}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _string_id(payload: Mapping[str, Any] | None, where: str) -> str:
    value = (payload or {}).get(qm.ID_FIELD)
    if not isinstance(value, str):
        raise DataFormatError(f"{where}: a point has no string id in payload field "
                              f"{qm.ID_FIELD!r}; was it loaded by searchbench?")
    return value
