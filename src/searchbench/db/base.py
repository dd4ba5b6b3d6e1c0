"""The vector-store protocol: what every database adapter implements (ARCHITECTURE §11).

A *store* is a collection (table, collection, index, shard) inside a real vector engine.
Adapters translate between searchbench's model and the engine's:

- **ids** are strings and round-trip exactly (chunk ids ``doc#start-end`` included). Engines
  that key rows by integers keep an :class:`IdMap` beside the collection.
- **distances** follow :mod:`searchbench.knn.metric`: *smaller = closer*
  (``ip``: −⟨q, x⟩, ``cosine``: 1 − cos, ``l2``: squared Euclidean). Adapters convert what
  their engine returns (e.g. Chroma's and pgvector's ``<=>`` are already 1 − cos; an engine
  returning a similarity is negated) so every engine is comparable with ``exact_knn``.
- **parameters** are declared as :class:`ParamSpec` (build-time or search-time) and checked
  by :func:`check_params` before anything touches the engine; unknown names list the valid
  ones.
- **index use** is reported for every search (:attr:`StoreHits.index_used`): every engine has
  a path where it silently answers exactly (planner switch, unbuilt/unflushed index, metric
  mismatch, selective filter), and a sweep must be able to say so.

Adapters register themselves with :func:`register_engine` under a URL scheme and are
imported lazily by :func:`searchbench.db.connect` (each engine is an optional extra).
"""

from __future__ import annotations

import errno
import functools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from .._util import safe_component, utc_now
from ..errors import BackendError, ConfigError, OutputError, SearchbenchError
from ._validate import Rows, check_layout, check_name, check_queries, check_rows
from .url import StoreURL, without_secrets

__all__ = [
    "LoadReport",
    "Local",
    "ParamSpec",
    "Rows",
    "StoreHits",
    "StoreURL",
    "VectorStore",
    "advice",
    "check_name",
    "check_params",
    "engine_failure",
    "no_store",
]

ParamWhen = Literal["build", "search", "url"]


@dataclass(frozen=True)
class ParamSpec:
    """One knob an engine exposes: name as the engine spells it, type, default, meaning.

    ``when`` says whether it applies when the index is built or per search. ``choices``
    restricts string values; ``low``/``high`` bound numbers (inclusive).
    """

    name: str
    kind: type  # int, float, str or bool
    default: Any
    help: str
    when: ParamWhen = "search"
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None

    def coerce(self, value: Any, engine: str) -> Any:
        """``value`` (a string from the command line, or a Python value) as ``kind``."""
        where = f"{engine} parameter {self.name}"
        try:
            if self.kind is bool:
                got: Any = _as_bool(value)
            elif isinstance(value, bool):
                raise ValueError("a boolean")
            else:
                got = self.kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected {self.kind.__name__}, found {value!r}") from None
        if self.choices is not None and got not in self.choices:
            raise ConfigError(f"{where}: expected one of {', '.join(self.choices)}, "
                              f"found {value!r}")
        if (self.low is not None and got < self.low) or (
                self.high is not None and got > self.high):
            raise ConfigError(f"{where}: expected {self.low} ≤ value ≤ {self.high}, "
                              f"found {value!r}")
        return got

    # -- the knobs of an HNSW graph, which every engine names its own way ------------------
    @classmethod
    def graph_degree(cls, name: str, default: int, *, low: int = 2,
                     high: int = 512) -> ParamSpec:
        """HNSW's M: edges per node of each layer (build time)."""
        return cls(name, int, default, "graph degree per layer", "build", low=low, high=high)

    @classmethod
    def build_candidates(cls, name: str, default: int) -> ParamSpec:
        """HNSW's efConstruction: the candidate list while building (build time)."""
        return cls(name, int, default, "candidates kept while building", "build",
                   low=1, high=_MAX_CANDIDATES)

    @classmethod
    def search_candidates(cls, name: str, default: int, how: str = "") -> ParamSpec:
        """HNSW's efSearch: the candidate list per search (search time); ``how`` says how
        the engine is told (e.g. ``SET hnsw_ef_search``)."""
        return cls(name, int, default, "candidates kept while searching"
                   + (f" ({how})" if how else ""), "search", low=1, high=_MAX_CANDIDATES)


_MAX_CANDIDATES = 100_000  # a candidate list beyond this is a typo, not a setting


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def check_params(engine: str, specs: Sequence[ParamSpec], given: Mapping[str, Any],
                 when: ParamWhen) -> dict[str, Any]:
    """Validated, typed parameters; an unknown name raises :class:`ConfigError` listing the
    valid ones for ``when`` (build or search)."""
    known = {s.name: s for s in specs if s.when == when}
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name not in known:
            valid = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"unknown {when} parameter {name!r} for {engine}; "
                              f"valid: {valid} (see: searchbench db list-params {engine})")
        out[name] = known[name].coerce(value, engine)
    return out


@dataclass(frozen=True)
class Local:
    """Where a local engine's store lives: the URL's path names a ``what`` ("folder",
    "database file"; ``example`` is a URL that works). ``collection``, when the folder holds
    several collections, is the URL option naming one (``?table=docs``) and ``noun`` what
    the engine calls it ("LanceDB table"): the base checks that name is one safe path
    component and sets ``name`` and ``where`` from it."""

    what: str
    example: str
    collection: ParamSpec | None = None
    noun: str = ""


@dataclass
class StoreHits:
    """The answer to one batch of searches.

    ``ids[i]`` are the string ids ranked for query ``i`` (possibly fewer than k) and
    ``distances[i]`` their distances (smaller = closer, the knn convention, float64).
    ``index_used`` is True when the engine's ANN index answered, False when it scanned
    exactly, None when the engine cannot tell; ``plan`` is the evidence (EXPLAIN text,
    index state). ``latencies_s`` holds one wall time per query when searched one by one.
    """

    ids: list[list[str]]
    distances: list[np.ndarray]
    index_used: bool | None
    plan: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    latencies_s: np.ndarray | None = None


@dataclass
class LoadReport:
    """What :meth:`VectorStore.load` did (for provenance and resume messages)."""

    added: int
    skipped_existing: int
    total: int
    seconds: float
    build_seconds: float | None = None


class VectorStore(ABC):
    """One collection in one real engine; :func:`searchbench.db.connect` builds it from a URL.

    Life cycle: ``connect(url)`` → ``load(...)`` (idempotent, resumable) →
    ``build_index(...)`` (if the engine builds separately) → ``search``/``exact_search`` →
    ``close()``. Stores are context managers.

    The public methods here do the work every engine shares (as httpx's ``BaseTransport``
    or ir_measures' ``Provider.evaluator()`` → ``_evaluator()``): URL options checked
    against :attr:`url_options`, rows and queries validated (:mod:`._validate`: one error
    class per case for every engine), the layout check, resumable batching, provenance
    merged into the collection's record, index parameters checked and recorded. An
    adapter sets the class variables and implements the narrow hooks: ``_read_meta`` /
    ``_write_meta`` (the record: ``dim``, ``metric``, ``provenance`` and its own keys),
    ``_create_collection``, ``_write_batch`` (one atomic batch), ``_knn`` / ``_exact_knn``,
    ``_build``, ``_describe``, plus ``count``, ``stored_ids``, ``exists``, ``close``.
    """

    engine: ClassVar[str]  # URL scheme, e.g. "pgvector"
    extra: ClassVar[str]  # pip extra that installs the engine (default: the engine's name)
    summary: ClassVar[str]  # one line for `db list-params`: the docstring's first paragraph
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    index_kinds: ClassVar[tuple[str, ...]] = ()  # e.g. ("hnsw", "ivfflat"); first = default
    has_exact: ClassVar[bool] = True  # False: exact_search raises (no exact path)
    url_options: ClassVar[tuple[ParamSpec, ...]] = ()  # URL options it reads (when="url")
    # other URL options are handed to this client library, which refuses what it does not
    # know (pgvector: "libpq"); None: any other option is refused here
    passthrough: ClassVar[str | None] = None
    metrics: ClassVar[tuple[str, ...]] = ("cosine", "ip", "l2")  # distances it can store
    filters: ClassVar[bool] = True  # False: a filter is refused (no payload stored)
    local: ClassVar[Local | None] = None  # an engine whose store is a local folder or file
    root: Path  # a local engine's folder or file (the URL's path)
    name: str  # a local engine's collection in that folder (Local.collection)
    where: str  # that collection, for messages

    def __init__(self, url: StoreURL) -> None:
        self.url = url
        self._known: set[str] | None = None  # stored ids, kept current by this object's loads
        self.options: dict[str, Any] = {}
        self.passed: dict[str, str] = {}  # options for the client library (passthrough)
        self.options, self.passed = self._check_options()
        if self.local:
            self._place(self.local)

    def _place(self, local: Local) -> None:
        """A local engine's folder or file (``root``) and collection (``name``, ``where``)."""
        if not self.url.path:
            raise ConfigError(f"{self.url.public}: no {local.what}; expected e.g. "
                              f"{local.example!r}")
        self.root = Path(self.url.path)  # the folder or file the store lives in
        if local.collection is not None:
            self.name = safe_component(self.options[local.collection.name],
                                       f"{local.noun} name")
            self.where = f"{local.noun} {self.name!r} in {self.root}"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every public method of an adapter reports its engine's own exceptions as one
        :class:`SearchbenchError` naming the store (:func:`engine_failure`): a client
        library's traceback never reaches the user, whatever the engine."""
        super().__init_subclass__(**kwargs)
        local = cls.__dict__.get("local")
        if local is not None and local.collection is not None:  # one declaration
            cls.url_options = (local.collection, *cls.__dict__.get("url_options", ()))
        if "engine" in cls.__dict__:
            if not hasattr(cls, "extra"):
                cls.extra = cls.engine
            first = (cls.__doc__ or "").strip().split("\n\n")[0]
            cls.summary = " ".join(first.split())
        for name in _GUARDED:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_guarded", False):
                setattr(cls, name, _guarded(method, name))

    # -- URL options ------------------------------------------------------------------
    def _check_options(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The declared options (typed, defaults filled) and the passthrough ones. An
        unknown option, or one repeating a part of the URL with another value (``?user=``
        and ``user@``), is a :class:`ConfigError`."""
        specs = {s.name: s for s in self.url_options}
        known = {name: s.default for name, s in specs.items()}
        passed: dict[str, str] = {}
        for name, value in self.url.options.items():
            if name in specs:
                known[name] = specs[name].coerce(value, self.engine)
            elif self.passthrough:
                passed[name] = value
            else:
                raise ConfigError(f"{self.url.public}: unknown option {name!r}; valid: "
                                  f"{', '.join(sorted(specs)) or 'none'}")
            own = self._url_part(name)
            if own not in (None, "") and str(own) != str(value):
                shown = "***" if name == "password" else f"{value!r} and {own!r}"
                raise ConfigError(f"{self.url.public}: {name} is given twice, in the URL "
                                  f"and as ?{name}= ({shown}); give it once")
        return known, passed

    def _url_part(self, name: str) -> Any:
        """What the URL itself says for option ``name`` (``user@``, ``:port``…), or None."""
        u = self.url
        return {"user": u.user, "password": u.password, "host": u.host or None,
                "port": u.port}.get(name)

    # -- writing ----------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        """Add the rows whose ids are not stored yet, in batches of ``batch_size`` (each
        written atomically by ``_write_batch``): re-running after a crash finishes the job
        without duplicates. A collection holding another dimension or metric raises
        :class:`ConfigError`. ``provenance`` (model identity, dimension, metric, ...) is
        merged key by key into the collection's record (its ``dim`` and ``metric`` are
        always the collection's) and returned by :meth:`describe`. A call with zero rows
        (a ``(0, dim)`` array) only merges ``provenance``: :func:`~searchbench.retrieval.
        stores.load_store` records the final count, index and times that way."""
        started = time.perf_counter()
        rows = check_rows(ids, vectors, metric, texts, metadata)
        self._check_rows(rows)
        if rows.metric not in self.metrics:
            raise ConfigError(f"{self.engine} has no {rows.metric!r} distance; load with "
                              f"metric {' or '.join(self.metrics)}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size={batch_size!r}; expected an integer ≥ 1")
        n = len(rows.ids)
        meta = self._read_meta()
        changed = meta is None
        if meta is None:
            if not rows.dim:  # nothing to load, no dimension: nothing to create
                return LoadReport(0, 0, 0, time.perf_counter() - started)
            meta = {"dim": rows.dim, "metric": rows.metric, "created": utc_now(),
                    "provenance": {}}
            self._create_collection(meta, rows)
        else:
            check_layout(f"{self.url.public}: {self.location()}", meta,
                         rows.dim if n else None, rows.metric)
        if provenance:
            merged = {**(meta.get("provenance") or {}),
                      **{str(k): v for k, v in provenance.items()}}
            merged.update({k: meta[k] for k in ("dim", "metric") if k in merged})
            changed = changed or merged != meta.get("provenance")
            meta["provenance"] = merged
        if changed:
            self._write_meta(meta)
        have = self._existing(rows.ids) if n else set()
        todo = [i for i, doc in enumerate(rows.ids) if doc not in have]
        for start in range(0, len(todo), batch_size):
            batch = rows.take(todo[start:start + batch_size])
            self._write_batch(batch, meta)
            if self._known is not None:
                self._known.update(batch.ids)
        self._after_load(len(todo), meta)
        return LoadReport(len(todo), n - len(todo), self.count(), time.perf_counter() - started)

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        """Build (or rebuild) the ANN index of ``kind`` (default: the engine's first) with
        build-time ``params`` (checked, defaults filled by ``_build_params``); the index
        and its effective parameters are recorded under ``provenance["index"]``. Seconds
        taken. An engine without an ANN index builds nothing (any kind or parameter is an
        error)."""
        if not self.index_kinds:
            if kind is not None or params:
                raise ConfigError(f"{self.engine} has no ANN index (every search is exact): "
                                  "no index kind or build parameter applies; valid: none")
            return 0.0
        kind = kind or self.index_kinds[0]
        if kind not in self.index_kinds and kind.lower() in self.index_kinds:
            kind = kind.lower()  # as engines' docs spell them: HNSW, IVF_FLAT, IVF_PQ
        if kind not in self.index_kinds:
            raise ConfigError(f"{self.engine} index kind {kind!r}; expected one of "
                              f"{', '.join(self.index_kinds)}")
        given = check_params(self.engine, self.params, params, "build")
        meta = self._require_meta()
        effective = self._build_params(kind, given, meta)
        seconds = self._build(kind, effective, meta)
        meta = self._require_meta()  # the build may have recorded its own state
        meta["provenance"] = {**(meta.get("provenance") or {}), "index": {
            "kind": kind, "params": effective, "build_seconds": round(seconds, 3),
            "built": utc_now()}}
        self._write_meta(meta)
        return seconds

    # -- reading ----------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        """Top-``k`` through the engine's index with search-time ``params`` (validated with
        :func:`check_params`); ``filter`` is in the engine's own syntax."""
        given = check_params(self.engine, self.params, params or {}, "search")
        meta, q = self._queries(queries, k, filter)
        if not len(q):
            return StoreHits([], [], None, params=given)
        return _float64(self._knn(q, k, given, filter, meta))

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        """Top-``k`` by the engine's own exact scan (its ground truth)."""
        if not self.has_exact:
            raise ConfigError(f"{self.engine} has no exact search path; compute the ground "
                              "truth with searchbench ann groundtruth")
        meta, q = self._queries(queries, k, filter)
        if not len(q):
            return StoreHits([], [], False)
        return _float64(self._exact_knn(q, k, filter, meta))

    def _queries(self, queries: np.ndarray, k: int, filter: str | None
                 ) -> tuple[dict[str, Any], np.ndarray]:
        """The collection's record and the checked query matrix."""
        if filter and not self.filters:
            raise ConfigError(f"{self.engine} stores no metadata, so it has no filters; drop "
                              "--filter or use an engine with filters (e.g. sqlite-vec)")
        if filter:
            self._check_filter(filter)
        meta = self._require_meta()
        return meta, check_queries(queries, int(meta["dim"]), k)

    def _require_meta(self) -> dict[str, Any]:
        """The collection's record; :class:`ConfigError` ("no store at …") when there is
        none (never loaded, or a mistyped name)."""
        meta = self._read_meta()
        if meta is None:
            raise ConfigError(no_store(self.url, self.location()))
        return meta

    def describe(self) -> dict[str, Any]:
        """Engine and version, collection, dimension, metric, count, index kind and build
        parameters, index state (built / rows indexed), size on disk where known, and the
        provenance stored by :meth:`load`. Never a password. A collection not created yet:
        ``dim`` and ``metric`` None, ``count`` 0, ``provenance`` {}."""
        info: dict[str, Any] = {"engine": self.engine, "url": self.url.public,
                                "where": self.location(), "dim": None, "metric": None,
                                "count": 0, "index": None, "provenance": {}}
        meta = self._read_meta()
        if meta is None:
            return info
        provenance = dict(meta.get("provenance") or {})
        info.update(dim=meta["dim"], metric=meta["metric"], count=self.count(),
                    index=provenance.get("index"), provenance=provenance)
        info.update(self._describe(meta))
        return info

    def exists(self) -> bool:
        """Whether the collection (table, index, shard…) is there: read-only commands
        refuse a store that is not (:func:`searchbench.db.connect` with ``must_exist``).
        The default says a collection without rows is absent; adapters that can tell an
        empty collection from a missing one override it."""
        return self.count() > 0

    def location(self) -> str:
        """Where the collection would be, for messages (default: the URL's path)."""
        return str(getattr(self, "where", None) or self.url.path or self.url.public)

    @abstractmethod
    def count(self) -> int:
        """Rows stored (0 for a collection not created yet)."""

    @abstractmethod
    def stored_ids(self) -> list[str]:
        """Every stored id (for resume and for matching against an evaluation set)."""

    def widen(self, params: Mapping[str, Any], depth: int) -> dict[str, Any] | None:
        """Search parameters that let one search return ``depth`` rows where ``params``
        made the engine return fewer (its candidate list capping the answer, e.g.
        pgvector's ``hnsw.ef_search``); None when this engine has nothing more to ask
        (the default: engines whose answer is not capped, or cannot be widened).
        :class:`~searchbench.retrieval.stores.DbRetriever` calls it to find k distinct
        documents among a chunked store's rows."""
        return None

    def close(self) -> None:
        """Release connections and files (adapters holding any override this)."""
        return None

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- engine hooks -------------------------------------------------------------------
    @abstractmethod
    def _read_meta(self) -> dict[str, Any] | None:
        """The collection's record, or None when it does not exist: ``dim``, ``metric``,
        ``provenance`` (a dict) and any key of the adapter's own. Reading creates
        nothing. A collection made by other software may be described from its schema."""

    @abstractmethod
    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        """Store the record (the whole of it, as :meth:`_read_meta` returns it)."""

    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        """Create the collection for ``meta["dim"]`` / ``meta["metric"]`` (the first load,
        ``rows`` its rows; may add keys of the adapter's own to ``meta``, which the base
        then writes with :meth:`_write_meta`). Default: nothing (created on first write)."""
        return None

    def _check_rows(self, rows: Rows) -> None:
        """Refuse rows this engine cannot hold (a size limit of its own…) before anything
        is written. Default: nothing more than the shared checks."""
        return None

    def _after_load(self, added: int, meta: dict[str, Any]) -> None:
        """Called once the batches of a load are written (``added`` rows; ``meta`` as
        written): an engine that must flush or reload before new rows are searched through
        its index does it here (Milvus). Default: nothing."""
        return None

    def _existing(self, ids: list[str]) -> set[str]:
        """The ids among ``ids`` that are stored (a superset will do). Default: every
        stored id, read once per store object and kept current by its own loads."""
        if self._known is None:
            self._known = set(self.stored_ids())
        return self._known

    @abstractmethod
    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """Write one batch atomically (one transaction; a killed load leaves whole batches
        only, so a resumed one skips exactly what was written)."""

    @abstractmethod
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """Top-``k`` of checked float32 ``queries`` (at least one) through the index, with
        checked ``params``; distances in the knn convention."""

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        """Top-``k`` by the engine's exact scan (called only when :attr:`has_exact`)."""
        raise BackendError(f"{self.engine}: has_exact is set but _exact_knn is missing")

    def _check_filter(self, filter: str) -> None:
        """Refuse a filter that is not in the engine's syntax before any request is made
        (:class:`ConfigError`). Default: the engine itself judges it when searching."""
        return None

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """The effective build parameters of ``kind``: the declared defaults, then
        ``given`` (adapters with per-kind parameters or derived defaults override)."""
        return {**{p.name: p.default for p in self.params if p.when == "build"}, **given}

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """Build the index; seconds taken (called only when :attr:`index_kinds` is set)."""
        raise BackendError(f"{self.engine}: index_kinds are declared but _build is missing")

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """The adapter's own keys for :meth:`describe` (version, index state, size…)."""
        return {}



def _float64(hits: StoreHits) -> StoreHits:
    """``hits`` with float64 distance arrays (the :class:`StoreHits` contract)."""
    hits.distances = [np.asarray(d, dtype=np.float64) for d in hits.distances]
    return hits


def no_store(url: StoreURL, where: str) -> str:
    """The message for a store that is not there (never loaded, or a mistyped name)."""
    return (f"{url.public}: no store at {where!r}; check the URL, or load it first with "
            "searchbench db load URL --evalset SET")


_GUARDED = ("load", "build_index", "search", "exact_search", "count", "stored_ids",
            "describe", "exists", "close")


def _guarded(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: VectorStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SearchbenchError:
            raise
        except Exception as exc:  # the engine's own: one error naming the store
            raise engine_failure(self, name, exc) from None

    call._guarded = True  # type: ignore[attr-defined]
    return call


for _name in ("load", "build_index", "search", "exact_search", "describe"):
    setattr(VectorStore, _name, _guarded(getattr(VectorStore, _name), _name))

_ACCESS = (errno.EACCES, errno.EPERM, errno.EROFS)
_NOT_A_FOLDER = (errno.ENOTDIR, errno.EEXIST, errno.EISDIR)
_ACCESS_WORDS = ("permission denied", "operation not permitted", "read-only file system",
                 "readonly database", "attempt to write a readonly")


def engine_failure(store: VectorStore, action: str, exc: BaseException) -> SearchbenchError:
    """One error for an engine's exception during ``action``: the store's public URL,
    what failed, the engine's first line (passwords removed) and what to do."""
    text = str(exc).strip().splitlines()
    first = without_secrets(text[0] if text else type(exc).__name__, store.url)
    where = f"{store.url.public}: {store.engine} {action} failed ({first[:300]})"
    kind, hint = advice(exc, store.engine, store.location())
    return kind(f"{where}; {hint}")


def advice(exc: BaseException | str, engine: str, location: str
           ) -> tuple[type[SearchbenchError], str]:
    """The error class and what to do for an engine's failure to open or write a store,
    from the errno or the words of its message (engines word these differently)."""
    code = getattr(exc, "errno", None)
    lowered = str(exc).lower()
    if code in _ACCESS or any(w in lowered for w in _ACCESS_WORDS):
        return OutputError, (f"{location} cannot be written: choose a folder you can write "
                             "to, or fix its permissions")
    if code in _NOT_A_FOLDER or any(w in lowered for w in ("not a directory", "file exists",
                                                           "is a directory")):
        return ConfigError, (f"a file is where {engine} expects a folder (or the other way "
                             "round): check the path in the URL")
    if "unable to open database" in lowered:  # SQLite's CANTOPEN: missing or unwritable
        return OutputError, (f"{location} cannot be opened for writing: check that its "
                             "folder exists and can be written (permissions, a read-only "
                             "file system)")
    if any(w in lowered for w in ("not a database", "not a valid",
                                  "no such file or directory", "does not exist")):
        return ConfigError, (f"{location} is not a {engine} store, or its folder is missing: "
                             "check the path, or give a new one for searchbench db load to "
                             "create")
    return BackendError, (f"check the URL, that the store was made by {engine} "
                          "(searchbench db load creates one) and that its folder can be "
                          "written")
