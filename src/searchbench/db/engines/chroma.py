"""Chroma, embedded (``PersistentClient``): ``chroma://./chroma?collection=docs``.

Rows are Chroma records: the searchbench id, the embedding, the text as the *document*
and the metadata as Chroma metadata (``--filter`` is a Chroma ``where`` object in JSON:
``'{"lang": "en"}'``, ``'{"$and": [{"year": {"$gt": 2020}}, {"lang": "en"}]}'``).
searchbench's record (metric, dimension, provenance, index build) is the collection
metadata key ``searchbench``. The client is opened with ``embedding_function=None``
(Chroma's default function downloads a model) and anonymized telemetry off.

The HNSW index is built while rows are added; its ``max_neighbors`` (M) and
``ef_construction`` are fixed when the collection is created, so :meth:`build_index`
with other values copies the rows into a new collection with that configuration and
renames it over the old one (the old one is deleted only once the copy is complete).

``ef_search`` trap: ``collection.modify(configuration=...)`` saves it, but an index
already loaded in the process keeps the old value. A search with another ``ef_search``
therefore saves it, clears Chroma's process-wide client cache
(``SharedSystemClient.clear_system_cache()``) and opens a new client, so the value is
really applied; the plan says so. This also invalidates other Chroma clients of the
process.

Chroma has **no exact search**: :attr:`has_exact` is False and :meth:`exact_search`
raises; sweeps then use searchbench's exact ground truth only.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._util import package_version
from ...errors import BackendError, ConfigError, SearchbenchError, require
from ..base import Local, ParamSpec, Rows, StoreHits, StoreURL, VectorStore, advice
from ._common import (
    SIDECAR_FORMAT,
    SettingGate,
    first_line,
    metadata_value,
    parse_record,
    size_on_disk,
)

_SPACE = {"cosine": "cosine", "ip": "ip", "l2": "l2"}
_PAGE = 5000
_SUFFIX = "-searchbench-rebuild"
_HNSW = ("max_neighbors", "ef_construction", "ef_search")


class ChromaStore(VectorStore):
    """Chroma embedded (PersistentClient): HNSW; no exact mode (searchbench's exact ground
    truth is used).

    One Chroma collection in a local folder."""

    engine: ClassVar[str] = "chroma"
    local: ClassVar[Local | None] = Local("folder", "chroma://./chroma?collection=docs")
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("max_neighbors", int, 16, "HNSW M: edges per node (fixed at creation: "
                  "another value rebuilds the collection)", when="build", low=2),
        ParamSpec("ef_construction", int, 100, "candidates kept while building (fixed at "
                  "creation: another value rebuilds the collection)", when="build", low=1),
        ParamSpec("ef_search", int, 100, "candidates kept while searching (saved with the "
                  "collection; applied by reopening the client)", low=1),
    )
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    has_exact: ClassVar[bool] = False
    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("collection", str, "docs", "the collection", "url"),)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.name = self.options["collection"]
        self.where = f"Chroma collection {self.name!r} in {self.root}"
        self._chromadb: Any = require("chromadb", "chroma")
        self._client: Any = None
        self._collection: Any = None
        self._gate = SettingGate()  # ef_search is the collection's: one value at a time
        # opening and the reopen that applies ef_search: a search reading the record while
        # another thread reopens would meet Chroma's client cache half cleared
        self._opening = threading.RLock()

    # -- opening ----------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._client is None:
            settings = require("chromadb.config", "chroma").Settings(anonymized_telemetry=False)
            self._client = self._call("open", self._chromadb.PersistentClient,
                                      path=str(self.root), settings=settings)
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        errors = require("chromadb.errors", "chroma")
        try:
            with warnings.catch_warnings():  # Chroma warns about its own "legacy" EF config
                warnings.simplefilter("ignore", DeprecationWarning)
                return fn(*args, **kwargs)
        except SearchbenchError:  # already ours (a nested call)
            raise
        except (errors.InvalidArgumentError, ValueError) as exc:
            raise ConfigError(f"{self.where}: {what}: {exc}") from None
        except (errors.ChromaError, OSError, RuntimeError) as exc:
            kind, hint = advice(exc, self.engine, str(self.root))
            raise kind(f"{self.where}: {what} failed: {first_line(exc)}; {hint}") from None

    def _names(self) -> set[str]:
        return {c.name for c in self._call("list", self._connect().list_collections)}

    def exists(self) -> bool:
        names = self._names()
        if self.name not in names and self.name + _SUFFIX in names:  # a rebuild was cut off
            self._call("recover", self._get(self.name + _SUFFIX).modify, name=self.name)
            return True
        return self.name in names

    def _get(self, name: str) -> Any:
        return self._call("open", self._connect().get_collection, name,
                          embedding_function=None)

    def _open(self) -> Any:
        """The collection (opened once; None when it does not exist)."""
        with self._opening:
            if self._collection is None and self.exists():
                self._collection = self._get(self.name)
            return self._collection

    def _hnsw(self) -> dict[str, Any]:
        return dict(self._collection.configuration_json.get("hnsw") or {})

    def _create(self, name: str, meta: Mapping[str, Any], hnsw: Mapping[str, Any]) -> Any:
        config = {"hnsw": {"space": _SPACE[meta["metric"]], **hnsw}}
        return self._call("create", self._connect().create_collection, name,
                          embedding_function=None, configuration=config,
                          metadata=_metadata(meta))

    # -- the record -------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        collection = self._open()
        return None if collection is None else _record(collection.metadata, self.where)

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self._call("record", self._collection.modify,
                   metadata=_metadata(meta))

    # -- writing ----------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        self._collection = self._create(self.name, meta, {})

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        size = int(self._connect().get_max_batch_size())
        for start in range(0, len(rows.ids), size):
            part = rows.take(range(start, min(start + size, len(rows.ids))))
            self._add(self._collection, part.ids, part.vectors,
                      list(part.texts) if part.texts is not None else None,
                      _metadatas(part.ids, part.metadata))

    def _add(self, collection: Any, ids: list[str], x: np.ndarray, docs: list[str] | None,
             metas: list[dict[str, Any] | None] | None) -> None:
        self._call("add", collection.add, ids=ids, embeddings=x, documents=docs,
                   metadatas=metas)

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """A parameter not given keeps the collection's current value (the defaults apply
        at creation): only what is asked for differently rebuilds the index."""
        hnsw = self._hnsw()
        current = {p.name: hnsw.get(p.name, p.default) for p in self.params
                   if p.when == "build"}
        return {**current, **given}

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """The index is built as rows are added: only other values rebuild it."""
        hnsw = self._hnsw()
        if all(hnsw.get(name) == value for name, value in params.items()):
            return 0.0
        started = time.perf_counter()
        self._rebuild(meta, {**{n: hnsw[n] for n in _HNSW if n in hnsw}, **params})
        return time.perf_counter() - started

    def _rebuild(self, meta: Mapping[str, Any], hnsw: dict[str, Any]) -> None:
        """Copy every row into a collection built with ``hnsw``, then swap names."""
        temp = self.name + _SUFFIX
        if temp in self._names():
            self._call("clean", self._connect().delete_collection, temp)
        target = self._create(temp, meta, hnsw)
        for offset in range(0, self._collection.count(), _PAGE):
            rows = self._call("read", self._collection.get, limit=_PAGE, offset=offset,
                              include=["embeddings", "documents", "metadatas"])
            metas = rows["metadatas"]
            self._add(target, rows["ids"], np.asarray(rows["embeddings"], np.float32),
                      rows["documents"] if any(d is not None for d in rows["documents"])
                      else None, metas if any(m for m in metas) else None)
        if target.count() != self._collection.count():
            raise BackendError(f"{self.where}: the rebuilt copy holds {target.count()} rows, "
                               f"expected {self._collection.count()}; the original is kept")
        self._call("swap", self._connect().delete_collection, self.name)
        self._call("swap", target.modify, name=self.name)
        self._collection = self._get(self.name)

    # -- reading ----------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        notes: list[str] = []
        where = _where(filter) if filter else None
        with self._gate.using(params.get("ef_search"),
                              lambda ef: notes.append(self._apply_ef_search(ef))):
            collection = self._collection  # a reopen replaces it: keep the one searched
            found = self._call("search", collection.query, query_embeddings=queries,
                               n_results=k, where=where, include=["distances"])
        ids = [list(row) for row in found["ids"]]
        shift = 1.0 if meta["metric"] == "ip" else 0.0  # Chroma's ip is 1 − ⟨q, x⟩
        dists = [np.asarray(row, dtype=np.float64) - shift for row in found["distances"]]
        ef = (collection.configuration_json.get("hnsw") or {}).get("ef_search")
        plan = f"HNSW (hnswlib) with ef_search={ef}{''.join(notes)}" + (
            f"; filtered by where={json.dumps(where)}" if where else "")
        return StoreHits(ids, dists, True, plan, params={**params, "ef_search": ef})

    def _apply_ef_search(self, ef: int) -> str:
        """Save ``ef`` and reopen the client so the loaded index uses it."""
        if self._hnsw().get("ef_search") == ef:
            return ""
        self._call("modify", self._collection.modify,
                   configuration={"hnsw": {"ef_search": ef}})
        shared = require("chromadb.api.shared_system_client", "chroma")
        with self._opening:
            self._call("reopen", shared.SharedSystemClient.clear_system_cache)
            self._client = self._collection = None
            self._open()
        got = self._hnsw().get("ef_search")
        if got != ef:
            raise BackendError(f"{self.where}: ef_search={ef} was not applied (found {got})")
        return " (applied by reopening the client: Chroma ignores a changed ef_search in a "\
               "loaded index)"

    def count(self) -> int:
        collection = self._open()
        return 0 if collection is None else int(collection.count())

    def stored_ids(self) -> list[str]:
        collection = self._open()
        pages = range(0, 0 if collection is None else collection.count(), _PAGE)
        return [i for offset in pages for i in self._call(
            "read", collection.get, limit=_PAGE, offset=offset, include=[])["ids"]]

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        return {"version": package_version("chromadb"), "collection": self.name,
                "path": str(self.root), "hnsw": self._hnsw(), "size_bytes": size_on_disk(self.root)}

    def close(self) -> None:
        self._collection = None
        self._client = None


def _record(metadata: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    raw = (metadata or {}).get("searchbench")
    if raw is None:
        raise ConfigError(f"{where} was not made by searchbench (no 'searchbench' collection "
                          "metadata); load a new collection with `searchbench db load`")
    return parse_record(raw, where, "collection metadata")


def _metadata(meta: Mapping[str, Any]) -> dict[str, str]:
    """The collection metadata holding searchbench's record."""
    return {"searchbench": json.dumps({**meta, "format": SIDECAR_FORMAT}, default=str)}


def _metadatas(ids: list[str], metadata: Sequence[Mapping[str, Any]] | None
               ) -> list[dict[str, Any] | None] | None:
    """Chroma metadata per row (scalars only; an empty one becomes None)."""
    if metadata is None:
        return None
    return [{str(k): metadata_value(v, doc, k) for k, v in m.items()} or None
            for doc, m in zip(ids, metadata, strict=True)]


def _where(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"Chroma filter is not JSON ({exc}); expected a where object such "
                          'as \'{"lang": "en"}\'') from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"Chroma filter: expected a non-empty JSON object, found {text!r}")
    return data
