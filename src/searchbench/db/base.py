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
import re
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from .._util.secrets import hold
from .._util.urls import split_url
from ..errors import BackendError, ConfigError, OutputError, SearchbenchError

__all__ = [
    "ENGINES",
    "LOCAL_ENGINES",
    "LoadReport",
    "ParamSpec",
    "StoreHits",
    "StoreURL",
    "VectorStore",
    "advice",
    "check_params",
    "engine_failure",
    "parse_store_url",
    "register_engine",
]

ParamWhen = Literal["build", "search"]


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
class StoreURL:
    """A parsed store URL: ``scheme://[user[:password]@]host[:port]/path?key=value&...``.

    ``path`` is a filesystem path for embedded engines (``lancedb://./lance`` → ``./lance``)
    or a database name for servers. ``public`` is the URL with any password removed: the
    only form that may appear in messages, logs and files.
    """

    scheme: str
    host: str
    port: int | None
    path: str
    user: str | None
    password: str | None
    options: dict[str, str]
    public: str


def parse_store_url(url: str) -> StoreURL:
    """Parse ``url``; raises :class:`ConfigError` naming what is wrong (never the password:
    :func:`~searchbench._util.urls.split_url`, which also holds it for redaction)."""
    parts = split_url(url, "store URL", "e.g. 'pgvector:///app?host=/run/pg&table=docs'")
    port = parts.port
    hold(*(v for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
           if _SECRET_OPTION.search(k) and not k.lower().endswith("_env")))  # env: a name
    if not parts.scheme:
        raise ConfigError(f"store URL {_redacted(url)!r} has no scheme; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    options: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True,
                                             strict_parsing=False):
        if key in options:
            raise ConfigError(f"store URL {_redacted(url)!r}: option {key!r} given twice")
        options[key] = value
    path = urllib.parse.unquote(parts.netloc.split("@")[-1] if _embedded_path(parts) else "")
    path = path + urllib.parse.unquote(parts.path) if path else urllib.parse.unquote(parts.path)
    return StoreURL(parts.scheme.lower(), parts.hostname or "", port, path,
                    urllib.parse.unquote(parts.username) if parts.username else None,
                    urllib.parse.unquote(parts.password) if parts.password else None,
                    options, _redacted(url))


def _embedded_path(parts: urllib.parse.SplitResult) -> bool:
    """``lancedb://./lance`` puts ``.`` in the netloc: a relative path, not a host."""
    return parts.netloc in (".", "..") or parts.netloc.startswith("~")


_SECRET_OPTION = re.compile(r"(?i)key|token|secret|sig|pass|pwd|auth|cred")


def _redacted(url: str) -> str:
    """``url`` with the password (if any) and the values of credential-like options
    (``?password=``, ``api_key=``, ``token=``…) replaced by ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        secret_options = any(_SECRET_OPTION.search(k) for k, _ in pairs)
        if parts.password is None and not secret_options:
            return url
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
        query = "&".join(f"{k}=***" if _SECRET_OPTION.search(k) else f"{k}={v}"
                         for k, v in pairs) if secret_options else parts.query
        # by hand: urlunsplit drops an empty host ("pgvector:///db" -> "pgvector:/db")
        return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
                + (f"#{parts.fragment}" if parts.fragment else ""))
    except ValueError:
        return "<unparsable URL>"


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
    """One collection in one real engine. Subclasses set the class variables and implement
    the abstract methods; :func:`searchbench.db.connect` builds them from a URL.

    Life cycle: ``connect(url)`` → ``load(...)`` (idempotent, resumable) →
    ``build_index(...)`` (if the engine builds separately) → ``search``/``exact_search`` →
    ``close()``. Stores are context managers.
    """

    engine: ClassVar[str]  # URL scheme, e.g. "pgvector"
    extra: ClassVar[str]  # pip extra that installs the engine, e.g. "pgvector"
    summary: ClassVar[str]  # one line for `db list-params`
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    index_kinds: ClassVar[tuple[str, ...]] = ()  # e.g. ("hnsw", "ivfflat"); first = default
    has_exact: ClassVar[bool] = True  # False: exact_search raises (no exact path)

    def __init__(self, url: StoreURL) -> None:
        self.url = url

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every public method of an adapter reports its engine's own exceptions as one
        :class:`SearchbenchError` naming the store (:func:`engine_failure`): a client
        library's traceback never reaches the user, whatever the engine."""
        super().__init_subclass__(**kwargs)
        for name in _GUARDED:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_guarded", False):
                setattr(cls, name, _guarded(method, name))

    def exists(self) -> bool:
        """Whether the collection (table, index, shard…) is there: read-only commands
        refuse a store that is not (:func:`searchbench.db.connect` with ``must_exist``).
        The default says a collection without rows is absent; adapters that can tell an
        empty collection from a missing one override it."""
        return self.count() > 0

    def location(self) -> str:
        """Where the collection would be, for messages (default: the URL's path)."""
        return str(getattr(self, "where", None) or self.url.path or self.url.public)

    # -- writing ----------------------------------------------------------------------
    @abstractmethod
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        """Add the rows whose ids are not stored yet, in batches; re-running after a crash
        finishes the job without duplicates. A collection holding another dimension or
        metric raises :class:`ConfigError`. ``provenance`` (model identity, dimension,
        metric, ...) is stored with the collection (merged key by key into what is there)
        and returned by :meth:`describe` under ``"provenance"``. A call with zero rows (a
        ``(0, dim)`` array) only merges ``provenance``: :func:`~searchbench.retrieval.
        stores.load_store` records the final count, index and times that way."""

    @abstractmethod
    def build_index(self, kind: str | None = None, **params: Any) -> float:
        """Build (or rebuild) the ANN index with build-time ``params``; seconds taken."""

    # -- reading ----------------------------------------------------------------------
    @abstractmethod
    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        """Top-``k`` through the engine's index with search-time ``params`` (validated with
        :func:`check_params`); ``filter`` is in the engine's own syntax."""

    @abstractmethod
    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        """Top-``k`` by the engine's own exact scan (its ground truth)."""

    @abstractmethod
    def count(self) -> int:
        """Rows stored."""

    @abstractmethod
    def stored_ids(self) -> list[str]:
        """Every stored id (for resume and for matching against an evaluation set)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Engine and version, collection, dimension, metric, count, index kind and build
        parameters, index state (built / rows indexed), size on disk where known, and the
        provenance stored by :meth:`load`. Never a password."""

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


def without_secrets(text: str, url: StoreURL) -> str:
    """``text`` (an engine's message) with the URL's password and the values of its
    credential-like options (``api_key=``, ``token=``…) replaced by ``***``, before any
    cut."""
    secrets = [url.password or ""] + [v for k, v in url.options.items()
                                       if _SECRET_OPTION.search(k)]
    for secret in sorted((x for x in secrets if len(x) >= 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


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


ENGINES: dict[str, tuple[str, str]] = {}  # scheme -> (module, class name), imported lazily
LOCAL_ENGINES: dict[str, str] = {}  # scheme -> "file" or "folder": what its URL path names


def register_engine(scheme: str, module: str, cls: str, *,
                    local: Literal["file", "folder"] | None = None) -> None:
    """Declare that ``scheme://`` URLs are served by ``module.cls`` (imported on first use);
    ``local``: the URL's path is a file or a folder on this machine that the engine creates
    on first open."""
    ENGINES[scheme] = (module, cls)
    if local:
        LOCAL_ENGINES[scheme] = local
