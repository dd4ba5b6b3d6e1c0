"""Your own vector database as a searchbench store (ARCHITECTURE §11).

``connect(url)`` returns a :class:`VectorStore` for the URL's engine (``pgvector://``,
``qdrant-edge://``, ``lancedb://``, ...). Adapters live in ``searchbench.db.engines`` and
import their client library only when connected (each engine is an optional extra).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..errors import ConfigError
from .base import (
    ENGINES,
    LOCAL_ENGINES,
    LoadReport,
    ParamSpec,
    StoreHits,
    StoreURL,
    VectorStore,
    check_params,
    parse_store_url,
    register_engine,
)
from .ids import IdMap

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
    "parse_store_url",
    "register_engine",
]

# scheme -> (module, class); one line per adapter, added by the adapter's author.
register_engine("pgvector", "searchbench.db.engines.pgvector", "PgVectorStore")
register_engine("qdrant-edge", "searchbench.db.engines.qdrant_edge", "QdrantEdgeStore", local=True)
register_engine("qdrant", "searchbench.db.engines.qdrant", "QdrantStore")
register_engine("lancedb", "searchbench.db.engines.lancedb", "LanceDBStore", local=True)
register_engine("chroma", "searchbench.db.engines.chroma", "ChromaStore", local=True)
register_engine("duckdb", "searchbench.db.engines.duckdb", "DuckDBStore", local=True)
register_engine("redis", "searchbench.db.engines.redis", "RedisStore")
register_engine("milvus", "searchbench.db.engines.milvus", "MilvusStore")
register_engine("milvus-lite", "searchbench.db.engines.milvus", "MilvusLiteStore", local=True)
register_engine("usearch", "searchbench.db.engines.usearch", "USearchStore", local=True)
register_engine("sqlite-vec", "searchbench.db.engines.sqlitevec", "SqliteVecStore", local=True)


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

    ``must_exist=True`` is for reading (search, describe, sweep): an embedded engine's file
    or folder that does not exist raises :class:`ConfigError` instead of being created
    empty, so a typo in the path is reported and leaves nothing behind.
    """
    parsed = parse_store_url(url)
    cls = engine_class(parsed.scheme)
    if must_exist and parsed.scheme in LOCAL_ENGINES and not Path(parsed.path).exists():
        raise ConfigError(f"{parsed.public}: no store at {parsed.path!r}; check the URL, or "
                          "load it first with searchbench db load URL --evalset SET")
    return cls(parsed)
