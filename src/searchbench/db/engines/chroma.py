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
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._util import package_version
from ...errors import BackendError, ConfigError, DataFormatError, SearchbenchError, require
from ..base import LoadReport, ParamSpec, StoreHits, StoreURL, VectorStore, advice, check_params
from ._common import (
    SIDECAR_FORMAT,
    KnownIds,
    SettingGate,
    Timer,
    absent,
    batches,
    check_layout,
    check_queries,
    check_rows,
    index_provenance,
    merge_provenance,
    metadata_value,
    new_provenance,
    pending,
)

_OPTIONS = ("collection",)
_SPACE = {"cosine": "cosine", "ip": "ip", "l2": "l2"}
_PAGE = 5000
_SUFFIX = "-searchbench-rebuild"


class ChromaStore(KnownIds, VectorStore):
    """One Chroma collection in a local folder."""

    engine: ClassVar[str] = "chroma"
    extra: ClassVar[str] = "chroma"
    summary: ClassVar[str] = ("Chroma embedded (PersistentClient): HNSW; no exact mode "
                              "(searchbench's exact ground truth is used)")
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

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        unknown = sorted(set(url.options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"{url.public}: unknown option {unknown[0]!r}; valid: collection")
        if not url.path:
            raise ConfigError(f"{url.public}: no folder; expected "
                              "'chroma://./chroma?collection=docs'")
        self.name = url.options.get("collection", "docs")
        self.root = Path(url.path)
        self.where = f"Chroma collection {self.name!r} in {self.root}"
        self._chromadb: Any = require("chromadb", "chroma")
        self._client: Any = None
        self._collection: Any = None
        self._reloaded = False
        self._gate = SettingGate()  # ef_search is the collection's: one value at a time

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
            kind, hint = advice(exc, self.engine, self.root_text())
            raise kind(f"{self.where}: {what} failed: {_line(exc)}; {hint}") from None

    def _names(self) -> set[str]:
        return {c.name for c in self._call("list", self._connect().list_collections)}

    def root_text(self) -> str:
        return str(self.root)

    def _exists(self) -> bool:
        names = self._names()
        if self.name not in names and self.name + _SUFFIX in names:  # a rebuild was cut off
            self._call("recover", self._get(self.name + _SUFFIX).modify, name=self.name)
            return True
        return self.name in names

    def _get(self, name: str) -> Any:
        return self._call("open", self._connect().get_collection, name,
                          embedding_function=None)

    def _open(self) -> dict[str, Any]:
        if self._collection is None:
            if not self._exists():
                raise ConfigError(f"{self.where} does not exist; load it first with "
                                  f"`searchbench db load '{self.url.public}' ...`")
            self._collection = self._get(self.name)
        return _record(self._collection.metadata, self.where)

    def _create(self, name: str, record: Mapping[str, Any], hnsw: Mapping[str, Any]) -> Any:
        config = {"hnsw": {"space": _SPACE[record["metric"]], **hnsw}}
        return self._call("create", self._connect().create_collection, name,
                          embedding_function=None, configuration=config,
                          metadata={"searchbench": json.dumps(record)})

    # -- writing ----------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        id_list, x, metric = check_rows(ids, vectors, metric, texts, metadata)
        metas = _metadatas(id_list, metadata)
        with Timer() as timer:
            if self._exists():
                record = self._open()
                check_layout(self.where, int(record["dim"]), str(record["metric"]),
                             x.shape[1], metric)
            else:
                record = {"format": SIDECAR_FORMAT, "dim": x.shape[1], "metric": metric,
                          "store": new_provenance(self.engine, x.shape[1], metric, provenance)}
                self._collection = self._create(self.name, record, {})
            todo = pending(id_list, self.known_ids())
            size = min(batch_size, int(self._connect().get_max_batch_size()))
            for batch in batches(todo, size):
                self._add(self._collection, [id_list[i] for i in batch], x[batch],
                          [texts[i] for i in batch] if texts is not None else None,
                          [metas[i] for i in batch] if metas is not None else None)
                self.remember([id_list[i] for i in batch])
            if merge_provenance(record, provenance):
                self._save_record(record)
        return LoadReport(len(todo), len(id_list) - len(todo), self.count(), timer.seconds)

    def _save_record(self, record: Mapping[str, Any]) -> None:
        self._call("record", self._collection.modify,
                   metadata={"searchbench": json.dumps(record)})

    def _add(self, collection: Any, ids: list[str], x: np.ndarray, docs: list[str] | None,
             metas: list[dict[str, Any] | None] | None) -> None:
        self._call("add", collection.add, ids=ids, embeddings=x, documents=docs,
                   metadatas=metas)

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        if kind not in (None, "hnsw"):
            raise ConfigError(f"chroma builds index kind 'hnsw', not {kind!r}")
        given = check_params(self.engine, self.params, params, "build")
        record = self._open()
        hnsw = self._collection.configuration_json.get("hnsw") or {}
        seconds = 0.0  # the index is built as rows are added, with these values
        if any(hnsw.get(name) != value for name, value in given.items()):
            with Timer() as timer:
                self._rebuild(record, {**{n: hnsw[n] for n in ("max_neighbors",
                                                                 "ef_construction", "ef_search")
                                          if n in hnsw}, **given})
            seconds = timer.seconds
        hnsw = self._collection.configuration_json.get("hnsw") or {}
        effective = {n: hnsw.get(n) for n in ("max_neighbors", "ef_construction")}
        record = self._open()
        record["store"]["index"] = index_provenance("hnsw", effective, seconds)
        self._save_record(record)
        return seconds

    def _rebuild(self, record: dict[str, Any], hnsw: dict[str, Any]) -> None:
        """Copy every row into a collection built with ``hnsw``, then swap names."""
        temp = self.name + _SUFFIX
        if temp in self._names():
            self._call("clean", self._connect().delete_collection, temp)
        target = self._create(temp, record, hnsw)
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
    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        given = check_params(self.engine, self.params, params or {}, "search")
        notes: list[str] = []
        where = _where(filter) if filter else None

        def apply(ef: int) -> None:
            self._open()
            notes.append(self._apply_ef_search(ef))

        with self._gate.using(given.get("ef_search"), apply):  # no reopen while searching
            record = self._open()
            q = check_queries(queries, int(record["dim"]), k)
            collection = self._collection  # a reopen replaces it: keep the one searched
            found = self._call("search", collection.query, query_embeddings=q,
                               n_results=k, where=where, include=["distances"])
        note = "".join(notes)
        ids = [list(row) for row in found["ids"]]
        shift = 1.0 if record["metric"] == "ip" else 0.0  # Chroma's ip is 1 − ⟨q, x⟩
        dists = [np.asarray(row, dtype=np.float64) - shift for row in found["distances"]]
        ef = (collection.configuration_json.get("hnsw") or {}).get("ef_search")
        plan = f"HNSW (hnswlib) with ef_search={ef}{note}" + (
            f"; filtered by where={json.dumps(where)}" if where else "")
        return StoreHits(ids, dists, True, plan, params={**given, "ef_search": ef})

    def _apply_ef_search(self, ef: int | None) -> str:
        """Save ``ef`` and reopen the client so the loaded index uses it."""
        hnsw = self._collection.configuration_json.get("hnsw") or {}
        if ef is None or hnsw.get("ef_search") == ef:
            return ""
        self._call("modify", self._collection.modify,
                   configuration={"hnsw": {"ef_search": ef}})
        shared = require("chromadb.api.shared_system_client", "chroma")
        self._call("reopen", shared.SharedSystemClient.clear_system_cache)
        self._client = self._collection = None
        self._open()
        got = (self._collection.configuration_json.get("hnsw") or {}).get("ef_search")
        if got != ef:
            raise BackendError(f"{self.where}: ef_search={ef} was not applied (found {got})")
        return " (applied by reopening the client: Chroma ignores a changed ef_search in a "\
               "loaded index)"

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        raise ConfigError("Chroma has no exact search mode (every query walks its HNSW "
                          "graph); use searchbench's exact ground truth instead (ann sweep "
                          "computes it from the same vectors)")

    def exists(self) -> bool:
        return self._collection is not None or self._exists()

    def count(self) -> int:
        self._open()
        return int(self._collection.count())

    def stored_ids(self) -> list[str]:
        if self._collection is None and not self._exists():
            return []
        self._open()
        out: list[str] = []
        for offset in range(0, self._collection.count(), _PAGE):
            out.extend(self._call("read", self._collection.get, limit=_PAGE, offset=offset,
                                  include=[])["ids"])
        self._known = set(out)
        return out

    def describe(self) -> dict[str, Any]:
        if self._collection is None and not self._exists():
            return absent(self.engine, self.url.public, self.where)
        record = self._open()
        return {"engine": self.engine, "version": package_version("chromadb"),
                "url": self.url.public, "collection": self.name, "path": str(self.root),
                "dim": record["dim"], "metric": record["metric"], "count": self.count(),
                "hnsw": self._collection.configuration_json.get("hnsw"),
                "index": record["store"].get("index"), "size_bytes": _size(self.root),
                "provenance": record["store"]}

    def close(self) -> None:
        self._collection = None
        self._client = None


def _record(metadata: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    raw = (metadata or {}).get("searchbench")
    if raw is None:
        raise ConfigError(f"{where} was not made by searchbench (no 'searchbench' collection "
                          "metadata); load a new collection with `searchbench db load`")
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise DataFormatError(f"{where}: damaged searchbench metadata ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != SIDECAR_FORMAT:
        raise DataFormatError(f"{where}: expected {SIDECAR_FORMAT} collection metadata")
    return record


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


def _size(path: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def _line(exc: BaseException) -> str:
    """The first line of an engine's message (its own messages nest and repeat)."""
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]
