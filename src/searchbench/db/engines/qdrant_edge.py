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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._util import package_version, safe_component, utc_now
from ...errors import BackendError, ConfigError, require
from ..base import LoadReport, ParamSpec, StoreHits, StoreURL, VectorStore, advice, check_params
from ..ids import IdMap
from . import _qdrant as qm
from ._common import (
    KnownIds,
    Sidecar,
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

_OPTIONS = ("shard",)
_SCROLL = 10_000


class _Handle:
    """One open shard shared by every store of this process on the same folder (Qdrant
    locks a shard's WAL: a second open in one process would fail)."""

    def __init__(self, shard: Any, record: dict[str, Any] | None) -> None:
        self.shard = shard
        self.record = record  # the sidecar's content, shared like the shard
        self.users = 1


_SHARDS: dict[Path, _Handle] = {}


class QdrantEdgeStore(KnownIds, VectorStore):
    """One Qdrant edge shard in a local folder."""

    engine: ClassVar[str] = "qdrant-edge"
    extra: ClassVar[str] = "qdrant-edge"
    summary: ClassVar[str] = ("Qdrant's Rust engine in process (qdrant-edge-py): HNSW, exact "
                              "scan, payload filters")
    params: ClassVar[tuple[ParamSpec, ...]] = (
        *qm.HNSW_PARAMS,
        ParamSpec("indexing_threshold", int, 1,
                  "optimizer: segments above this many KB get an HNSW graph (Qdrant's server "
                  "default, 10000, leaves small collections unindexed)", when="build", low=1),
        *qm.SEARCH_PARAMS,
    )
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        unknown = sorted(set(url.options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"{url.public}: unknown option {unknown[0]!r}; valid: shard")
        if not url.path:
            raise ConfigError(f"{url.public}: no folder; expected "
                              "'qdrant-edge://./qdrant?shard=docs'")
        self.name = safe_component(url.options.get("shard", "docs"), "Qdrant shard name")
        self.root = Path(url.path)
        self.where = f"Qdrant shard {self.name!r} in {self.root}"
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

    def _open(self, dim: int | None = None, metric: str | None = None,
              provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Open (or, given dim and metric, create) the shard; its record."""
        if self._held:
            self._record = _SHARDS[self._key].record
        if self._record is None:
            self._record = self._sidecar.read()
        record = self._record
        has_data = self._path.is_dir() and any(self._path.iterdir())
        if has_data and record is None:
            raise ConfigError(f"{self.where} was not made by searchbench (no "
                              f"{self._sidecar.path.name}); its points have no string ids: "
                              "load a new shard with `searchbench db load`")
        if record is not None and dim is not None and metric is not None:
            check_layout(self.where, int(record["dim"]), str(record["metric"]), dim, metric)
        if self._shard is not None:
            return record  # type: ignore[return-value]
        if record is None or not has_data:
            if dim is None or metric is None:
                raise ConfigError(f"{self.where} does not exist; load it first with "
                                  f"`searchbench db load '{self.url.public}' ...`")
            record = record or {"store": new_provenance(self.engine, dim, metric, provenance),
                                "dim": dim, "metric": metric}
            self._save(record)
            self._hold("create", self._qe.EdgeShard.create, str(self._path),
                       self._config(record))
        else:
            self._hold("open", self._qe.EdgeShard.load, str(self._path))
        return record

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

    def _save(self, record: dict[str, Any]) -> None:
        self._record = record
        if self._held:
            _SHARDS[self._key].record = record
        self._sidecar.write(record)

    # -- writing ----------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        id_list, x, metric = check_rows(ids, vectors, metric, texts, metadata)
        bodies = qm.payloads(id_list, texts, metadata)  # checked before anything is written
        with Timer() as timer:
            record = self._open(x.shape[1], metric, provenance)
            todo = pending(id_list, self.known_ids())
            for batch in batches(todo, batch_size):
                keys = self._ids.assign([id_list[i] for i in batch])
                self._ids.save()  # before the points: a crash leaves known keys only
                points = [self._qe.Point(int(key), x[i].tolist(), bodies[i])
                          for key, i in zip(keys, batch, strict=True)]
                self._call("upsert", self._shard.update,
                           self._qe.UpdateOperation.upsert_points(points))
                self.remember([id_list[i] for i in batch])
            self._call("flush", self._shard.flush)
        merge_provenance(record, provenance)
        record["store"]["loaded"] = utc_now()
        self._save(record)
        return LoadReport(len(todo), len(id_list) - len(todo), self.count(), timer.seconds)

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        if kind not in (None, "hnsw"):
            raise ConfigError(f"qdrant-edge builds index kind 'hnsw', not {kind!r}")
        given = check_params(self.engine, self.params, params, "build")
        build = {s.name: given.get(s.name, s.default) for s in self.params if s.when == "build"}
        record = self._open()
        handle = _SHARDS[self._key]  # every store of the process sees the rebuilt shard
        handle.shard.close()
        with Timer() as timer:
            handle.shard = self._call("open", self._qe.EdgeShard.load, str(self._path),
                                      self._config(record, build))
            self._call("optimize", handle.shard.optimize)
        info = self._shard.info()
        if info.indexed_vectors_count < info.points_count:
            raise BackendError(f"{self.where}: the optimizer indexed {info.indexed_vectors_count}"
                               f" of {info.points_count} vectors; lower indexing_threshold")
        record["store"]["index"] = index_provenance("hnsw", build, timer.seconds)
        self._save(record)
        return timer.seconds

    # -- reading ----------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        given = check_params(self.engine, self.params, params or {}, "search")
        acorn = self._qe.AcornSearchParams(enable=True) if given.get("acorn") else None
        search = self._qe.SearchParams(hnsw_ef=given.get("hnsw_ef"),
                                       indexed_only=bool(given.get("indexed_only")), acorn=acorn)
        return self._search(queries, k, search, filter, given)

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        return self._search(queries, k, self._qe.SearchParams(exact=True), filter, {})

    def _search(self, queries: np.ndarray, k: int, search: Any, filter: str | None,
                given: dict[str, Any]) -> StoreHits:
        record = self._open()
        q = check_queries(queries, int(record["dim"]), k)
        where = qm.edge_filter(self._qe, qm.parse_filter(filter)) if filter else None
        requests = [self._qe.QueryRequest(limit=k, query=self._qe.Query.Nearest(row.tolist()),
                                          params=search, filter=where, with_payload=False,
                                          with_vector=False) for row in q]
        found = self._call("search", self._shard.query_batch,
                           self._qe.QueryBatchRequest(requests))
        ids = [self._ids.lookup([p.id for p in hits]) for hits in found]
        dists = [qm.to_distances([p.score for p in hits], record["metric"]) for hits in found]
        used, plan = self._index_use(record, search.exact, where)
        return StoreHits(ids, dists, used, plan, params=given)

    def _index_use(self, record: Mapping[str, Any], exact: bool, where: Any
                   ) -> tuple[bool, str]:
        info = self._shard.info()
        build = (record["store"].get("index") or {}).get("params") or {}
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
        return self._shard is not None or (self._path.is_dir() and any(self._path.iterdir()))

    def count(self) -> int:
        self._open()
        return int(self._shard.info().points_count)

    def stored_ids(self) -> list[str]:
        if self._shard is None and not self._path.is_dir():
            return []
        self._open()
        keys: list[int] = []
        offset = None
        while True:
            request = self._qe.ScrollRequest(offset=offset, limit=_SCROLL, with_payload=False,
                                             with_vector=False)
            records, offset = self._call("scroll", self._shard.scroll, request)
            keys.extend(int(r.id) for r in records)
            if offset is None:
                found = self._ids.lookup(sorted(keys))
                self._known = set(found)
                return found

    def describe(self) -> dict[str, Any]:
        if self._shard is None and not (self._path.is_dir() and any(self._path.iterdir())):
            return absent(self.engine, self.url.public, self.where)
        record = self._open()
        info = self._shard.info()
        return {
            "engine": self.engine, "version": package_version("qdrant-edge-py"),
            "url": self.url.public, "shard": self.name, "path": str(self._path),
            "dim": record["dim"], "metric": record["metric"], "count": info.points_count,
            "indexed_vectors": info.indexed_vectors_count, "segments": info.segments_count,
            "index": record["store"].get("index"), "size_bytes": _size(self._path),
            "provenance": record["store"],
        }

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


def _size(path: Path) -> int:
    """Bytes allocated on disk (Qdrant preallocates sparse 32 MB WAL files)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())
