"""Your own vector database as a searchbench store (ARCHITECTURE §11).

``connect(url)`` returns a :class:`VectorStore` for the URL's engine (``pgvector://``,
``qdrant-edge://``, ``lancedb://``, ...). Adapters live in ``searchbench.db.engines`` and
import their client library only when connected (each engine is an optional extra).
"""

from __future__ import annotations

import importlib

from ..errors import ConfigError
from .base import (
    ENGINES,
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
register_engine("qdrant-edge", "searchbench.db.engines.qdrant_edge", "QdrantEdgeStore")
register_engine("qdrant", "searchbench.db.engines.qdrant", "QdrantStore")
register_engine("lancedb", "searchbench.db.engines.lancedb", "LanceDBStore")
register_engine("chroma", "searchbench.db.engines.chroma", "ChromaStore")
register_engine("duckdb", "searchbench.db.engines.duckdb", "DuckDBStore")
register_engine("redis", "searchbench.db.engines.redis", "RedisStore")
register_engine("milvus", "searchbench.db.engines.milvus", "MilvusStore")
register_engine("milvus-lite", "searchbench.db.engines.milvus", "MilvusLiteStore")
register_engine("usearch", "searchbench.db.engines.usearch", "USearchStore")
register_engine("sqlite-vec", "searchbench.db.engines.sqlitevec", "SqliteVecStore")


def engine_class(scheme: str) -> type[VectorStore]:
    """The adapter class for ``scheme`` (imports its module, not its client library)."""
    if scheme not in ENGINES:
        raise ConfigError(f"unknown store engine {scheme!r}; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    module, name = ENGINES[scheme]
    cls: type[VectorStore] = getattr(importlib.import_module(module), name)
    return cls


def connect(url: str) -> VectorStore:
    """A store for ``url`` (e.g. ``'lancedb://./lance?table=docs'``)."""
    parsed = parse_store_url(url)
    return engine_class(parsed.scheme)(parsed)
