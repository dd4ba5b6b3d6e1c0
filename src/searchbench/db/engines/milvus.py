"""Milvus through ``pymilvus``: ``milvus://HOST:19530?collection=docs`` (a Milvus server) or
``milvus-lite://./milvus.db?collection=docs`` (Milvus Lite, a local file).

**Milvus Lite 3.x is not the Milvus engine**: it is a pure-Python rewrite on FAISS that
speaks Milvus's gRPC API. It exercises the pymilvus client path (schema, ids, filters,
index parameters, distances) and says so in :meth:`MilvusStore.describe`; recall and speed
measured on it are FAISS's, not Milvus's (knowhere's).

The collection holds ``id`` (VARCHAR primary key, declared ``max_length``, option
``id_max_length``, default 512 bytes), ``vector`` (the index under test), ``vector_exact``
(a ``FLAT`` index: the exact path), ``text`` and ``meta`` (JSON, for filters such as
``meta["lang"] == "en"``). Until :meth:`~MilvusStore.build_index` runs, ``vector`` has a
``FLAT`` index too (searches are exact and say so). Build kinds: ``HNSW`` (``M``,
``efConstruction``; search ``ef``) and ``IVF_FLAT`` (``nlist``; search ``nprobe``).

Traps handled here: Milvus accepts duplicate primary keys, so every batch first asks which
of its ids exist (a resumed load adds no duplicates); unflushed rows are searched by brute
force and Milvus Lite reports its index as finished regardless, so after every load and
build the collection is flushed, released and loaded again (which builds synchronously),
and ``index_used`` is True only when the rows counted at that point are all the rows.
Distances: Milvus's ``COSINE`` and ``IP`` are similarities (converted to 1 − cos and
−⟨q, x⟩); its ``L2`` is already squared.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._util.secrets import hold
from ...errors import BackendError, ConfigError, DataFormatError, require
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore, advice, check_name
from ._common import SettingGate

__all__ = ["MilvusLiteStore", "MilvusStore"]

_METRIC = {"cosine": "COSINE", "ip": "IP", "l2": "L2"}
_PROPERTY = "searchbench"
_TEXT_MAX = 65_535
_BUILD = {"hnsw": ("HNSW", ("M", "efConstruction")), "ivf_flat": ("IVF_FLAT", ("nlist",))}


class MilvusStore(VectorStore):
    """Milvus via pymilvus: HNSW (ef), IVF_FLAT (nprobe); exact through a second
    FLAT-indexed vector field.

    One collection in a Milvus server (``milvus://host:port?collection=docs``)."""

    engine: ClassVar[str] = "milvus"
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw", "ivf_flat")
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("M", int, 16, "HNSW: graph degree", "build", low=2, high=2048),
        ParamSpec("efConstruction", int, 200, "HNSW: candidate list while building", "build",
                  low=1, high=100_000),
        ParamSpec("nlist", int, 128, "IVF_FLAT: number of clusters", "build", low=1,
                  high=65_536),
        ParamSpec("ef", int, 64, "HNSW: candidate list per search (≥ k)", "search", low=1,
                  high=100_000),
        ParamSpec("nprobe", int, 8, "IVF_FLAT: clusters visited per search", "search", low=1,
                  high=65_536),
    )
    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("collection", str, "docs", "the collection", "url"),
        ParamSpec("id_max_length", int, 512, "bytes an id may hold (a new collection's "
                  "VARCHAR primary key)", "url", low=1, high=65_535),
        ParamSpec("secure", bool, False, "connect over HTTPS", "url"),
    )

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.collection = check_name(self.options["collection"], "collection", url.public)
        self.id_max_length = int(self.options["id_max_length"])
        self._gate = SettingGate()  # concurrent searches: one search setting at a time
        pymilvus = require("pymilvus", self.extra)
        _quiet_client_logs()
        self._pymilvus = pymilvus
        try:
            self.client = pymilvus.MilvusClient(**self._client_args(), timeout=10)
            self.version = self._server_version()
        except pymilvus.MilvusException as exc:
            raise BackendError(f"cannot reach Milvus at {url.public}: "
                               f"{_short(str(exc.message))}") from None
        if self._call(self.client.has_collection, self.collection) and \
                self._call(self.client.get_load_state, self.collection)["state"].name != "Loaded":
            self._call(self.client.load_collection, self.collection)

    def _client_args(self) -> dict[str, Any]:
        scheme = "https" if self.options["secure"] else "http"
        args: dict[str, Any] = {"uri": f"{scheme}://{self.url.host or '127.0.0.1'}:"
                                       f"{self.url.port or 19530}"}
        token = (f"{self.url.user}:{self.url.password}" if self.url.user and self.url.password
                 else os.environ.get("MILVUS_TOKEN"))
        if token:
            hold(token)
            args["token"] = token
        if self.url.path.strip("/"):
            args["db_name"] = check_name(self.url.path.strip("/"), "database", self.url.public)
        return args

    def _server_version(self) -> str:
        return f"milvus {self.client.get_server_version()}"

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._pymilvus.MilvusException as exc:
            text = _short(str(exc.message))
            kind, hint = advice(text, self.engine, self.location())
            if kind is BackendError:
                raise BackendError(f"{self.url.public}: Milvus answered: {text}") from None
            raise kind(f"{self.url.public}: Milvus answered: {text}; {hint}") from None

    # -- stored settings ----------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        if not self._call(self.client.has_collection, self.collection):
            return None
        info = self._call(self.client.describe_collection, self.collection)
        raw = (info.get("properties") or {}).get(_PROPERTY)
        if raw is None:
            raise ConfigError(f"{self.url.public}: collection {self.collection!r} was not "
                              "created by searchbench; load into another collection")
        meta: dict[str, Any] = json.loads(raw)
        return meta

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self._call(self.client.alter_collection_properties, self.collection,
                   properties={_PROPERTY: json.dumps(meta, sort_keys=True, default=str)})

    # -- writing ------------------------------------------------------------------------
    def _check_rows(self, rows: Rows) -> None:
        """Ids and texts within the collection's VARCHAR sizes."""
        long_id = next((i for i in rows.ids if len(i.encode()) > self.id_max_length), None)
        if long_id is not None:
            raise DataFormatError(f"id {long_id[:80]!r} is {len(long_id.encode())} bytes; the "
                                  f"collection declares id_max_length={self.id_max_length} "
                                  "(set ?id_max_length=N on a new collection)")
        for doc, text in zip(rows.ids, rows.texts or (), strict=False):
            if len(text.encode()) > _TEXT_MAX:
                raise DataFormatError(f"text of {doc!r} is {len(text.encode())} bytes; Milvus "
                                      f"VARCHAR holds at most {_TEXT_MAX} (chunk the document)")

    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        meta.update(index=None, synced_rows=0, id_max_length=self.id_max_length)
        self._create(meta)

    def _existing(self, ids: list[str]) -> set[str]:
        """The ids Milvus holds among ``ids`` (it accepts duplicate primary keys, so a
        resumed load must ask)."""
        have: set[str] = set()
        for start in range(0, len(ids), 1000):
            # pymilvus's query(ids=...) splices ids into the expression unescaped (an id with
            # a quote breaks it); JSON string literals are what Milvus's parser reads
            wanted = ",".join(json.dumps(i, ensure_ascii=False) for i in ids[start:start + 1000])
            found = self._call(self.client.query, self.collection, filter=f"id in [{wanted}]",
                               output_fields=["id"])
            have.update(hit["id"] for hit in found)
        return have

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        data = [{"id": doc, "vector": vector, "vector_exact": vector,
                 "text": rows.texts[i] if rows.texts is not None else "",
                 "meta": dict(rows.metadata[i]) if rows.metadata is not None else {}}
                for i, (doc, vector) in enumerate(zip(rows.ids, rows.vectors, strict=True))]
        self._call(self.client.insert, self.collection, data)

    def _after_load(self, added: int, meta: dict[str, Any]) -> None:
        """New rows in an indexed collection: flush and reload so the index covers them."""
        if meta.get("index") and added:
            self._sync(meta)
        elif not meta.get("index"):  # FLAT only: every row is searched exactly anyway
            meta["synced_rows"] = self.count()
            self._write_meta(meta)

    def _create(self, meta: dict[str, Any]) -> None:
        dtype = self._pymilvus.DataType
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", dtype.VARCHAR, is_primary=True, max_length=self.id_max_length)
        schema.add_field("vector", dtype.FLOAT_VECTOR, dim=meta["dim"])
        schema.add_field("vector_exact", dtype.FLOAT_VECTOR, dim=meta["dim"])
        schema.add_field("text", dtype.VARCHAR, max_length=_TEXT_MAX)
        schema.add_field("meta", dtype.JSON)
        index = self.client.prepare_index_params()
        for field in ("vector", "vector_exact"):
            index.add_index(field, index_type="FLAT", metric_type=_METRIC[meta["metric"]])
        self._call(self.client.create_collection, self.collection, schema=schema,
                   index_params=index, consistency_level="Strong",
                   properties={_PROPERTY: json.dumps(meta, sort_keys=True, default=str)})

    def _sync(self, meta: dict[str, Any]) -> int:
        """Seal the rows, have the index cover them, load; record the rows covered."""
        self._call(self.client.flush, self.collection)
        self._wait_index_built(meta)
        self._call(self.client.release_collection, self.collection)
        self._call(self.client.load_collection, self.collection)
        meta["synced_rows"] = self.count()
        self._write_meta(meta)
        return int(meta["synced_rows"])

    def _wait_index_built(self, meta: Mapping[str, Any], timeout: float = 3600.0) -> None:
        """A Milvus server builds indexes after a flush, in the background: wait until no
        row is pending (segments without their index are brute-forced)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self._call(self.client.describe_index, self.collection, "vector")
            if not state.get("pending_index_rows") and \
                    state.get("indexed_rows", 0) >= state.get("total_rows", 0):
                return
            if time.monotonic() > deadline:
                raise BackendError(f"{self.url.public}: the index of vector is still building "
                                   f"after {timeout:g} s ({state})")
            time.sleep(0.2)

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        index_type, names = _BUILD[kind]
        wrong = sorted(set(given) - set(names))
        if wrong:
            raise ConfigError(f"milvus {index_type} has no build parameter "
                              f"{', '.join(wrong)}; valid: {', '.join(names)}")
        return {n: given.get(n, self._spec(n).default) for n in names}

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """Replace the index of ``vector`` (HNSW or IVF_FLAT) and load it; seconds taken."""
        started = time.perf_counter()
        record = {**meta, "index": {"kind": kind, "type": _BUILD[kind][0],
                                    "params": dict(params)}}
        self._replace_index(record)
        self._sync(record)
        return time.perf_counter() - started

    def _replace_index(self, meta: Mapping[str, Any]) -> None:
        """Drop and create the index of ``vector`` (released collection) from ``meta``."""
        self._call(self.client.release_collection, self.collection)
        self._call(self.client.drop_index, self.collection, "vector")
        index = self.client.prepare_index_params()
        built = meta.get("index") or {"type": "FLAT", "params": {}}
        index.add_index("vector", index_type=built["type"], metric_type=_METRIC[meta["metric"]],
                        params=self._index_request_params(built["params"]))
        self._call(self.client.create_index, self.collection, index)

    def _index_request_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Build parameters as the index request carries them (a server reads each as a
        key of its own)."""
        return dict(params)

    def _spec(self, name: str) -> ParamSpec:
        return next(s for s in self.params if s.name == name)

    # -- reading ------------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """Top-k through the index of ``vector`` (FLAT, hence exact, before build_index)."""
        index = meta.get("index")
        kind = index["kind"] if index else None
        allowed = {"hnsw": ("ef",), "ivf_flat": ("nprobe",)}.get(kind or "", ())
        wrong = sorted(set(params) - set(allowed))
        if wrong:
            raise ConfigError(f"milvus search parameter {', '.join(wrong)} does not apply to "
                              f"the {kind or 'FLAT (no index built)'} index; valid: "
                              f"{', '.join(allowed) or 'none'}")
        search = {n: params.get(n, self._spec(n).default) for n in allowed}
        if kind == "hnsw":
            search["ef"] = max(search["ef"], k)  # Milvus refuses ef < k
        # Milvus Lite answered some queries at another request's ef when concurrent
        # requests mixed ef values (seen under load): one setting at a time, like usearch
        with self._gate.using(tuple(sorted(search.items())), lambda _: None):
            hits = self._search("vector", queries, k, filter, meta["metric"], search)
        state = self._call(self.client.describe_index, self.collection, "vector")
        rows = self.count()
        hits.index_used = bool(index) and meta.get("synced_rows") == rows and \
            state.get("state") in ("Finished", None)
        hits.plan = (f"index {state.get('index_type')} on vector: indexed_rows="
                     f"{state.get('indexed_rows')}, pending={state.get('pending_index_rows')}; "
                     f"rows={rows}, rows at the last flush+load={meta.get('synced_rows')}")
        return hits

    def widen(self, params: Mapping[str, Any], depth: int) -> dict[str, Any] | None:
        """An IVF_FLAT search returns only rows of the ``nprobe`` clusters it visits (with
        ``nprobe=1`` of 64 clusters, a search for 80 of 5,000 rows returned 35): ask again
        with four times as many clusters, up to ``nlist`` (every cluster: the answer is
        then as deep as asked). HNSW needs nothing: ``ef`` is raised to k already."""
        index = (self._require_meta().get("index") or {})
        if index.get("kind") != "ivf_flat":
            return None
        nlist = int(index["params"]["nlist"])
        nprobe = int(params.get("nprobe", self._spec("nprobe").default))
        if nprobe >= nlist:
            return None
        return {**params, "nprobe": min(nlist, 4 * nprobe)}

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        """Top-k through the FLAT index of ``vector_exact``."""
        hits = self._search("vector_exact", queries, k, filter, meta["metric"], {})
        hits.index_used, hits.plan = False, "FLAT index on vector_exact"
        return hits

    def _search(self, field: str, queries: np.ndarray, k: int, filter: str | None,
                metric: str, params: dict[str, Any]) -> StoreHits:
        request = {"metric_type": _METRIC[metric], "params": params}
        ids: list[list[str]] = []
        dists: list[np.ndarray] = []
        latencies = np.empty(len(queries))
        for i, row in enumerate(queries):
            started = time.perf_counter()
            result = self._call(self.client.search, self.collection, data=[row],
                                anns_field=field, limit=k, filter=filter or "",
                                search_params=request, output_fields=[])
            latencies[i] = time.perf_counter() - started
            pairs = sorted((_distance(hit["distance"], metric), hit["id"]) for hit in result[0])
            ids.append([doc for _, doc in pairs])
            dists.append(np.asarray([d for d, _ in pairs], dtype=np.float64))
        return StoreHits(ids, dists, None, None, dict(params), latencies)

    def exists(self) -> bool:
        return bool(self._call(self.client.has_collection, self.collection))

    def location(self) -> str:
        return f"collection {self.collection} at {self.url.public}"

    def count(self) -> int:
        """Rows in the collection (``count(*)``, strong consistency)."""
        if not self._call(self.client.has_collection, self.collection):
            return 0
        rows = self._call(self.client.query, self.collection, filter="",
                          output_fields=["count(*)"], consistency_level="Strong")
        return int(rows[0]["count(*)"])

    def stored_ids(self) -> list[str]:
        """Every id (``query_iterator``)."""
        if not self._call(self.client.has_collection, self.collection):
            return []
        out: list[str] = []
        iterator = self._call(self.client.query_iterator, self.collection, batch_size=5000,
                              output_fields=["id"])
        while batch := self._call(iterator.next):
            out.extend(hit["id"] for hit in batch)
        iterator.close()
        return out

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Engine and version, collection, the index and its state."""
        state = self._call(self.client.describe_index, self.collection, "vector")
        built = meta.get("index")
        recorded = (meta.get("provenance") or {}).get("index") or {}
        return {
            "engine": self.version, "collection": self.collection,
            "index": {**built, **recorded} if built else None,
            "exact_field": "vector_exact (FLAT)",
            "index_state": {k: state.get(k) for k in ("index_type", "indexed_rows",
                                                      "pending_index_rows", "state")},
            "id_max_length": meta.get("id_max_length"),
        }

    def close(self) -> None:
        """Close the client (Milvus Lite stops its local service)."""
        client = getattr(self, "client", None)
        if client is not None:
            client.close()


class MilvusLiteStore(MilvusStore):
    """Milvus Lite 3.x file (FAISS-based rewrite, NOT the Milvus engine): tests the pymilvus
    client path.

    Milvus Lite (``milvus-lite://./milvus.db?collection=docs``): FAISS behind the pymilvus
    API, **not** the Milvus engine (see the module docstring)."""

    engine: ClassVar[str] = "milvus-lite"

    def _client_args(self) -> dict[str, Any]:
        path = self.url.path
        if not path.endswith(".db"):
            raise ConfigError(f"{self.url.public}: Milvus Lite needs a file name ending in "
                              "'.db', e.g. 'milvus-lite://./milvus.db?collection=docs'")
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise BackendError(f"cannot open {self.url.public}: directory "
                               f"{os.path.dirname(os.path.abspath(path))} does not exist")
        try:  # Milvus Lite 3.x keeps its data in a folder of that name; it only logs why
            os.makedirs(path, exist_ok=True)  # it cannot make one: ask the system here
        except OSError as exc:
            kind, hint = advice(exc, self.engine, path)
            raise kind(f"{self.url.public}: cannot create the Milvus Lite folder {path} "
                       f"({exc.strerror or exc}); {hint}") from None
        return {"uri": path}

    def _wait_index_built(self, meta: Mapping[str, Any], timeout: float = 3600.0) -> None:
        """Milvus Lite reports its index as finished while its background worker is still
        writing the flushed segment's files (a load then fails reading them half-written),
        and searches rows not covered by a load's synchronous build exactly. Dropping the
        index waits for that worker; re-creating it makes the next load build it over every
        row."""
        self._replace_index(meta)

    def _index_request_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Milvus Lite 3.2 reads build parameters only from one JSON ``params`` key, and
        pymilvus 3 sends each as a key of its own, which it ignores: ``nlist=16`` built 128
        clusters (its default) and ``M``, ``efConstruction`` were its defaults too."""
        return {"params": dict(params)}

    def _server_version(self) -> str:
        lite = require("milvus_lite", self.extra)
        return (f"milvus-lite {getattr(lite, '__version__', '?')} (FAISS-based, not the "
                f"Milvus server) via pymilvus {self._pymilvus.__version__}")


def _distance(value: float, metric: str) -> float:
    """Milvus's score in the knn convention (smaller = closer)."""
    if metric == "cosine":
        return 1.0 - float(value)
    if metric == "ip":
        return -float(value)
    return float(value)


def _short(message: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters (Milvus echoes whole expressions)."""
    line = " ".join(message.split())
    return line if len(line) <= limit else line[:limit] + " …"


def _quiet_client_logs() -> None:
    """pymilvus installs its own stderr handler (level WARNING) and logs every failed call
    with a traceback, and Milvus Lite logs why its local service did not start;
    searchbench reports a failure itself, as one line. Their loggers are raised to CRITICAL
    while they keep the libraries' defaults (a level set by the user stays)."""
    for name, default in (("pymilvus", logging.WARNING), ("pymilvus.milvus_client", logging.INFO),
                          ("milvus_lite", logging.NOTSET)):  # "Failed to start…" + traceback
        logger = logging.getLogger(name)
        if logger.level in (default, logging.NOTSET):
            logger.setLevel(logging.CRITICAL)
