"""Your own vector database as a searchbench store (ARCHITECTURE §11).

``connect(url)`` returns a :class:`VectorStore` for the URL's engine (``pgvector://``,
``qdrant-edge://``, ``lancedb://``, ...). Adapters live in ``searchbench.db.engines`` and
import their client library only when connected (each engine is an optional extra).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..errors import BackendError, ConfigError, SearchbenchError
from .base import (
    LoadReport,
    ParamSpec,
    StoreHits,
    VectorStore,
    check_params,
    engine_failure,
    no_store,
)
from .ids import IdMap
from .url import (
    ENGINES,
    LOCAL_ENGINES,
    StoreURL,
    parse_store_url,
    register_engine,
    without_secrets,
)

__all__ = [
    "ENGINES",
    "LOCAL_ENGINES",
    "IdMap",
    "LoadReport",
    "ParamSpec",
    "StoreHits",
    "StoreURL",
    "VectorStore",
    "check_params",
    "connect",
    "engine_class",
    "engine_failure",
    "parse_store_url",
    "register_engine",
]

# scheme -> (module, class); one line per adapter, added by the adapter's author.
register_engine("pgvector", "searchbench.db.engines.pgvector", "PgVectorStore")
register_engine("qdrant-edge", "searchbench.db.engines.qdrant_edge", "QdrantEdgeStore",
                local="folder")
register_engine("qdrant", "searchbench.db.engines.qdrant", "QdrantStore")
register_engine("lancedb", "searchbench.db.engines.lancedb", "LanceDBStore", local="folder")
register_engine("chroma", "searchbench.db.engines.chroma", "ChromaStore", local="folder")
register_engine("duckdb", "searchbench.db.engines.duckdb", "DuckDBStore", local="file")
register_engine("redis", "searchbench.db.engines.redis", "RedisStore")
register_engine("milvus", "searchbench.db.engines.milvus", "MilvusStore")
register_engine("milvus-lite", "searchbench.db.engines.milvus", "MilvusLiteStore", local="folder")
register_engine("usearch", "searchbench.db.engines.usearch", "USearchStore", local="folder")
register_engine("sqlite-vec", "searchbench.db.engines.sqlitevec", "SqliteVecStore", local="file")


def engine_class(scheme: str) -> type[VectorStore]:
    """The adapter class for ``scheme`` (imports its module, not its client library)."""
    if scheme not in ENGINES:
        raise ConfigError(f"unknown store engine {scheme!r}; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    module, name = ENGINES[scheme]
    cls: type[VectorStore] = getattr(importlib.import_module(module), name)
    return cls


def connect(url: str, *, must_exist: bool = False) -> VectorStore:
    """A store for ``url`` (e.g. ``'lancedb://./lance?table=docs'``).

    ``must_exist=True`` is for reading (search, describe, sweep): a store that is not
    there - an embedded engine's file or folder, or the table/collection/index the URL
    names in an existing database - raises :class:`ConfigError` ("no store at …") instead
    of being created empty or described as empty, so a typo is reported and leaves
    nothing behind. For every engine, a path naming a file where the engine keeps a
    folder (or the other way round) is refused before the engine opens it, and the
    engine's own exceptions are one error naming the store (:func:`engine_failure`).
    """
    parsed = parse_store_url(url)
    cls = engine_class(parsed.scheme)
    layout = LOCAL_ENGINES.get(parsed.scheme)
    if layout is not None:
        _check_layout(parsed, layout, must_exist)
    try:
        store = cls(parsed)
    except SearchbenchError:
        raise
    except Exception as exc:  # the engine's own, while opening
        text = str(exc).strip().splitlines()
        first = without_secrets(text[0] if text else type(exc).__name__, parsed)
        raise BackendError(f"{parsed.public}: {parsed.scheme} cannot open the store "
                           f"({first[:300]}); check the URL and the path") from None
    if must_exist:
        try:
            found = store.exists()
        except BaseException:
            store.close()
            raise
        if not found:
            store.close()
            raise ConfigError(no_store(parsed, store.location()))
    return store


def _check_layout(parsed: StoreURL, layout: str, must_exist: bool) -> None:
    """An embedded engine's path: absent (refused when reading), or of the right kind."""
    path = Path(parsed.path)
    if not path.exists():
        if must_exist:
            raise ConfigError(no_store(parsed, parsed.path))
        return
    if layout == "folder" and not path.is_dir():
        raise ConfigError(f"{parsed.public}: {parsed.path} is a file; {parsed.scheme} keeps "
                          "a store in a folder: give a folder path (a new one is created)")
    if layout == "file" and path.is_dir():
        raise ConfigError(f"{parsed.public}: {parsed.path} is a folder; {parsed.scheme} keeps "
                          "a store in one database file: give a file path (a new one is "
                          "created)")
