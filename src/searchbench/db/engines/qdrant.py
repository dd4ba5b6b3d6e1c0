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
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._util.secrets import hold
from ...errors import BackendError, ConfigError, DataFormatError, require
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore
from . import _qdrant as qm
from ._common import SIDECAR_FORMAT, parse_record

_SCROLL = 10_000
_BUILD_WAIT_S = 3600.0


class QdrantStore(VectorStore):
    """a Qdrant server through qdrant-client: HNSW, exact scan, payload filters (not tested
    against a live server here).

    One collection on a Qdrant server."""

    engine: ClassVar[str] = "qdrant"
    params: ClassVar[tuple[ParamSpec, ...]] = qm.params(
        10000, 0, "the server's default; lower it to index a small collection")
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("collection", str, "", "the collection (required)", "url"),
        ParamSpec("https", bool, False, "connect over HTTPS", "url"),
        ParamSpec("api_key_env", str, None, "the environment variable holding the API key "
                  "(default QDRANT_API_KEY)", "url"),
        ParamSpec("timeout", int, 30, "seconds per request", "url", low=1),
    )

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        if url.password is not None:
            raise ConfigError(f"{url.public}: do not put a secret in the URL; set the API key "
                              "in an environment variable (QDRANT_API_KEY, or the one named "
                              "by api_key_env=NAME)")
        self.name = self.options["collection"]
        if not self.name or not url.host:
            raise ConfigError(f"{url.public}: expected 'qdrant://HOST:6333?collection=NAME'")
        self.where = f"Qdrant collection {self.name!r} at {url.public}"
        self._timeout = self.options["timeout"]
        self._models: Any = require("qdrant_client.models", "qdrant")
        self._client_module: Any = require("qdrant_client", "qdrant")
        self._client: Any = None

    # -- connection -------------------------------------------------------------------
    def _api_key(self) -> str | None:
        name = self.options["api_key_env"]
        if name is not None and name not in os.environ:
            raise ConfigError(f"{self.url.public}: api_key_env={name} but that environment "
                              "variable is not set")
        key = os.environ.get(name or "QDRANT_API_KEY") or None
        hold(key)
        return key

    def _connect(self) -> Any:
        if self._client is None:
            https = self.options["https"]
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

    # -- the record -------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        if not self._exists():
            return None
        record = (self._info().config.metadata or {}).get("searchbench")
        if not isinstance(record, dict):
            raise ConfigError(f"{self.where} was not made by searchbench (no 'searchbench' "
                              "collection metadata); load a new collection")
        return parse_record(record, self.where, "collection metadata")

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self._call("update collection", self._connect().update_collection, self.name,
                   metadata=_metadata(meta))

    # -- writing ----------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        m = self._models
        vectors_config = m.VectorParams(size=meta["dim"],
                                        distance=m.Distance(qm.DISTANCES[meta["metric"]]))
        self._call("create collection", self._connect().create_collection, self.name,
                   vectors_config=vectors_config, metadata=_metadata(meta))

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        bodies = qm.payloads(rows.ids, rows.texts, rows.metadata)
        points = [self._models.PointStruct(id=qm.point_uuid(doc), vector=vector.tolist(),
                                           payload=body)
                  for doc, vector, body in zip(rows.ids, rows.vectors, bodies, strict=True)]
        self._call("upsert", self._connect().upsert, self.name, points, wait=True)

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """Update the HNSW and optimizer settings, then wait until every vector is indexed."""
        m = self._models
        started = time.perf_counter()
        self._call("update collection", self._connect().update_collection, self.name,
                   hnsw_config=m.HnswConfigDiff(
                       m=params["m"], ef_construct=params["ef_construct"],
                       full_scan_threshold=params["full_scan_threshold"]),
                   optimizers_config=m.OptimizersConfigDiff(
                       indexing_threshold=params["indexing_threshold"]))
        self._wait_indexed()
        return time.perf_counter() - started

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
    def _check_filter(self, filter: str) -> None:
        qm.parse_filter(filter)

    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        m = self._models
        search = m.SearchParams(hnsw_ef=params.get("hnsw_ef"),
                                indexed_only=bool(params.get("indexed_only")),
                                acorn=m.AcornSearchParams(enable=True)
                                if params.get("acorn") else None)
        return self._search(queries, k, search, filter, dict(params), meta)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, self._models.SearchParams(exact=True), filter, {},
                            meta)

    def _search(self, q: np.ndarray, k: int, search: Any, filter: str | None,
                given: dict[str, Any], meta: Mapping[str, Any]) -> StoreHits:
        m = self._models
        where = m.Filter.model_validate(qm.parse_filter(filter)) if filter else None
        requests = [m.QueryRequest(query=row.tolist(), limit=k, params=search, filter=where,
                                   with_payload=[qm.ID_FIELD]) for row in q]
        found = self._call("search", self._connect().query_batch_points, self.name, requests)
        ids = [[_string_id(p.payload, self.where) for p in r.points] for r in found]
        dists = [qm.to_distances([p.score for p in r.points], meta["metric"]) for r in found]
        used, plan = self._index_use(meta, bool(search.exact), where)
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
        if not self._exists():
            return 0
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
                return out

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        info = self._info()
        hnsw = info.config.hnsw_config
        return {"version": getattr(self._call("read version", self._connect().info),
                                   "version", None),
                "collection": self.name, "indexed_vectors": info.indexed_vectors_count,
                "segments": info.segments_count,
                "hnsw": {"m": hnsw.m, "ef_construct": hnsw.ef_construct,
                         "full_scan_threshold": hnsw.full_scan_threshold}}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The collection metadata holding searchbench's record."""
    return {"searchbench": {**meta, "format": SIDECAR_FORMAT}}


def _string_id(payload: Mapping[str, Any] | None, where: str) -> str:
    value = (payload or {}).get(qm.ID_FIELD)
    if not isinstance(value, str):
        raise DataFormatError(f"{where}: a point has no string id in payload field "
                              f"{qm.ID_FIELD!r}; was it loaded by searchbench?")
    return value
