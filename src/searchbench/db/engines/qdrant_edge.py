"""Qdrant's engine in process: ``qdrant-edge://./qdrant?shard=docs`` (``qdrant-edge-py``).

An *edge shard* is Qdrant's storage and search core (segments, HNSW graph, payload index,
filters, WAL) without the server. Files, all inside the URL's folder:

- ``<shard>/`` — the shard itself (Qdrant's own layout);
- ``<shard>.ids.json`` — the :class:`~searchbench.db.IdMap` (Qdrant keys points by unsigned
  integers or UUIDs; string ids are mapped to 0, 1, 2, ... and saved *before* each batch
  is written, so a crash leaves at most ids the shard does not hold yet, which a resumed
  load writes with the same keys);
- ``<shard>.searchbench.json`` — metric, dimension, provenance and the index build.

Traps handled here: every point is scored exactly until :meth:`build_index` runs Qdrant's
optimizer (``indexed_vectors_count`` is checked afterwards), and a built graph is still
bypassed for small segments and selective filters (``full_scan_threshold``): each search
reports which case applied (see :func:`._qdrant.index_use`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._util import package_version
from ...errors import BackendError, ConfigError, require
from ..base import Local, ParamSpec, Rows, StoreHits, StoreURL, VectorStore, advice
from ..ids import IdMap
from . import _qdrant as qm
from ._common import SIDECAR_FORMAT, Sidecar, parse_record, size_on_disk

_SCROLL = 10_000


class _Handle:
    """One open shard shared by every store of this process on the same folder (Qdrant
    locks a shard's WAL: a second open in one process would fail)."""

    def __init__(self, shard: Any, record: dict[str, Any] | None) -> None:
        self.shard = shard
        self.record = record  # the sidecar's content, shared like the shard
        self.users = 1


_SHARDS: dict[Path, _Handle] = {}


class QdrantEdgeStore(VectorStore):
    """Qdrant's Rust engine in process (qdrant-edge-py): HNSW, exact scan, payload filters.

    One Qdrant edge shard in a local folder."""

    engine: ClassVar[str] = "qdrant-edge"
    local: ClassVar[Local | None] = Local(
        "folder", "qdrant-edge://./qdrant?shard=docs",
        ParamSpec("shard", str, "docs", "the shard (a folder under the URL's path)", "url"),
        "Qdrant shard")
    params: ClassVar[tuple[ParamSpec, ...]] = qm.params(
        1, 1, "Qdrant's server default, 10000, leaves small collections unindexed")
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self._qe: Any = require("qdrant_edge", "qdrant-edge")
        self._sidecar = Sidecar(self.root / f"{self.name}.searchbench.json")
        self._ids = IdMap(self.root / f"{self.name}.ids.json")
        self._held = False
        self._record: dict[str, Any] | None = None

    # -- opening ----------------------------------------------------------------------
    @property
    def _path(self) -> Path:
        return self.root / self.name

    @property
    def _key(self) -> Path:
        return self._path.resolve()

    @property
    def _shard(self) -> Any:
        return _SHARDS[self._key].shard if self._held else None

    def _hold(self, what: str, opener: Any, *args: Any) -> None:
        """Use the process's open shard for this folder, or open it."""
        handle = _SHARDS.get(self._key)
        if handle is not None:
            handle.users += 1
            self._record = handle.record or self._record
        else:
            _SHARDS[self._key] = _Handle(self._call(what, opener, *args), self._record)
        self._held = True

    def _has_data(self) -> bool:
        return self._path.is_dir() and any(self._path.iterdir())

    def _opened(self) -> Any:
        """The shard, opened (shared with the process's other stores on it)."""
        if self._shard is None:
            self._hold("open", self._qe.EdgeShard.load, str(self._path))
        return self._shard

    # -- the record -------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        if self._held:
            self._record = _SHARDS[self._key].record
        if self._record is None:
            self._record = self._sidecar.read()
        if self._record is None:
            if self._has_data():
                raise ConfigError(f"{self.where} was not made by searchbench (no "
                                  f"{self._sidecar.path.name}); its points have no string "
                                  "ids: load a new shard with `searchbench db load`")
            return None
        return parse_record(self._record, str(self._sidecar.path), "record")

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self._record = {**meta, "format": SIDECAR_FORMAT}  # as the sidecar holds it
        if self._held:
            _SHARDS[self._key].record = self._record
        self._sidecar.write(meta)

    def _config(self, record: Mapping[str, Any], build: Mapping[str, Any] | None = None
                ) -> Any:
        qe = self._qe
        vectors = qe.EdgeVectorParams(size=int(record["dim"]),
                                      distance=getattr(qe.Distance,
                                                       qm.DISTANCES[record["metric"]]))
        if build is None:
            return qe.EdgeConfig(vectors=vectors)
        hnsw = qe.HnswIndexConfig(m=build["m"], ef_construct=build["ef_construct"],
                                  full_scan_threshold=build["full_scan_threshold"])
        optim = qe.EdgeOptimizersConfig(indexing_threshold=build["indexing_threshold"])
        return qe.EdgeConfig(vectors=vectors, hnsw_config=hnsw, optimizers=optim)

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # qdrant_edge raises plain Exception for every failure
            if "WouldBlock" in str(exc):
                raise BackendError(f"{self.where}: {what} failed: {exc} (is another process "
                                   "or store using this shard?)") from None
            # its messages nest ("Service runtime error: … Service runtime error: …"): the
            # innermost cause says what went wrong
            cause = str(exc).strip().splitlines()[0].rsplit("error: ", 1)[-1] if str(exc) \
                else type(exc).__name__
            kind, hint = advice(cause, self.engine, str(self.root))
            raise kind(f"{self.where}: {what} failed: {cause[:300]}; {hint}") from None

    # -- writing ----------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        self._write_meta(meta)  # first: a shard without its record would be refused
        if self._shard is None:
            self._hold("create", self._qe.EdgeShard.create, str(self._path), self._config(meta))

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """Keys saved before the points (a crash leaves known keys only), then one upsert
        and a flush."""
        bodies = qm.payloads(rows.ids, rows.texts, rows.metadata)
        shard = self._opened()
        keys = self._ids.assign(rows.ids)
        self._ids.save()
        points = [self._qe.Point(int(key), vector.tolist(), body)
                  for key, vector, body in zip(keys, rows.vectors, bodies, strict=True)]
        self._call("upsert", shard.update, self._qe.UpdateOperation.upsert_points(points))
        self._call("flush", shard.flush)

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """Reopen the shard with the HNSW and optimizer settings, then run the optimizer."""
        self._opened()
        handle = _SHARDS[self._key]  # every store of the process sees the rebuilt shard
        handle.shard.close()
        started = time.perf_counter()
        handle.shard = self._call("open", self._qe.EdgeShard.load, str(self._path),
                                  self._config(meta, params))
        self._call("optimize", handle.shard.optimize)
        seconds = time.perf_counter() - started
        info = handle.shard.info()
        if info.indexed_vectors_count < info.points_count:
            raise BackendError(f"{self.where}: the optimizer indexed {info.indexed_vectors_count}"
                               f" of {info.points_count} vectors; lower indexing_threshold")
        return seconds

    # -- reading ----------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        acorn = self._qe.AcornSearchParams(enable=True) if params.get("acorn") else None
        search = self._qe.SearchParams(hnsw_ef=params.get("hnsw_ef"),
                                       indexed_only=bool(params.get("indexed_only")),
                                       acorn=acorn)
        return self._search(queries, k, search, filter, dict(params), meta)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, self._qe.SearchParams(exact=True), filter, {}, meta)

    def _search(self, q: np.ndarray, k: int, search: Any, filter: str | None,
                given: dict[str, Any], meta: Mapping[str, Any]) -> StoreHits:
        shard = self._opened()
        where = qm.edge_filter(self._qe, qm.parse_filter(filter)) if filter else None
        requests = [self._qe.QueryRequest(limit=k, query=self._qe.Query.Nearest(row.tolist()),
                                          params=search, filter=where, with_payload=False,
                                          with_vector=False) for row in q]
        found = self._call("search", shard.query_batch, self._qe.QueryBatchRequest(requests))
        ids = [self._ids.lookup([p.id for p in hits]) for hits in found]
        dists = [qm.to_distances([p.score for p in hits], meta["metric"]) for hits in found]
        used, plan = self._index_use(meta, search.exact, where)
        return StoreHits(ids, dists, used, plan, params=given)

    def _index_use(self, record: Mapping[str, Any], exact: bool, where: Any
                   ) -> tuple[bool, str]:
        info = self._shard.info()
        build = ((record.get("provenance") or {}).get("index") or {}).get("params") or {}
        kb = int(build.get("full_scan_threshold", 10000))
        matching = None
        if where is not None and not exact:
            matching = int(self._shard.count(self._qe.CountRequest(exact=True, filter=where)))
        return qm.index_use(exact=exact, points=info.points_count,
                            indexed=info.indexed_vectors_count,
                            threshold=qm.threshold_points(kb, int(record["dim"])),
                            matching=matching)

    def exists(self) -> bool:
        """The shard's folder is there and not empty."""
        return self._shard is not None or self._has_data()

    def count(self) -> int:
        if self._read_meta() is None:  # a shard not made by searchbench is refused here
            return 0
        return int(self._opened().info().points_count)

    def stored_ids(self) -> list[str]:
        if self._read_meta() is None:
            return []
        shard = self._opened()
        keys: list[int] = []
        offset = None
        while True:
            request = self._qe.ScrollRequest(offset=offset, limit=_SCROLL, with_payload=False,
                                             with_vector=False)
            records, offset = self._call("scroll", shard.scroll, request)
            keys.extend(int(r.id) for r in records)
            if offset is None:
                return self._ids.lookup(sorted(keys))

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        info = self._opened().info()
        return {"version": package_version("qdrant-edge-py"), "shard": self.name,
                "path": str(self._path), "indexed_vectors": info.indexed_vectors_count,
                "segments": info.segments_count, "size_bytes": size_on_disk(self._path)}

    def close(self) -> None:
        if not self._held:
            return
        self._held = False
        handle = _SHARDS[self._key]
        handle.users -= 1
        if handle.users == 0:
            del _SHARDS[self._key]
            handle.shard.close()

    def drop(self) -> None:
        """Delete the shard, its id map and its record (used by tests and `--replace`)."""
        self.close()
        shutil.rmtree(self._path, ignore_errors=True)
        for path in (self._sidecar.path, self._ids.path):
            if path is not None:
                path.unlink(missing_ok=True)
        self._record, self._ids, self._known = None, IdMap(self._ids.path), None
