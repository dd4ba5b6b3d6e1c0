"""sqlite-vec (a SQLite extension) as a store: ``sqlite-vec://./vec.db?table=docs``.

An exact baseline in SQL: a ``vec0`` virtual table has no ANN index, so every search is a
brute-force scan (``search`` and ``exact_search`` are the same query, ``index_used`` is
False). The table is ``vec0(id text primary key, embedding float[D]
distance_metric=cosine|l2, <metadata columns>, +text text)``; a k-NN query is

    SELECT id, distance FROM docs WHERE embedding MATCH ? AND k = ? [AND (filter)]
    ORDER BY distance

(the ``AND k = ?`` form works on every SQLite; ``LIMIT`` needs ≥ 3.41). ``--filter`` is a
SQL expression over the metadata columns, e.g. ``year >= 2020 AND lang = 'en'``.
Distances: vec0's cosine distance is 1 − cos already; its ``l2`` is the Euclidean
distance, squared here (searchbench's ``l2`` is ‖q − x‖²). vec0 has no inner product, so
``ip`` collections are refused. Provenance lives in a table ``searchbench_collections``.
A table created by other software is used as it is (its id, vector column, dimension and
metric read from its ``CREATE`` statement).

The Python of pyenv builds and some distributions cannot load SQLite extensions; then
``pysqlite3`` (package ``pysqlite3-binary``, its own recent SQLite) is used.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._util import utc_now
from ...errors import ConfigError, DataFormatError, MissingDependencyError, OutputError, require
from ..base import LoadReport, ParamSpec, StoreHits, StoreURL, VectorStore, advice
from ._rows import check_queries, check_rows, mismatch

__all__ = ["SqliteVecStore"]

_OPTIONS = ("table",)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_METRICS = {"cosine": "cosine", "l2": "l2"}  # searchbench → vec0 distance_metric
_RESERVED = {"id", "embedding", "text", "distance", "k", "rowid"}
_META_TABLE = "searchbench_collections"
_SQL_TYPES = {bool: "boolean", int: "integer", float: "float", str: "text"}


def sqlite_module() -> Any:
    """A DB-API ``sqlite3`` module able to load extensions: pysqlite3 when installed, else
    the standard library's when it was built with extension loading."""
    import importlib

    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        import sqlite3

        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
    raise MissingDependencyError("this Python's sqlite3 cannot load extensions (sqlite-vec): "
                                 "pip install 'searchbench[sqlite-vec]' (pysqlite3-binary)")


class SqliteVecStore(VectorStore):
    """One ``vec0`` table in a SQLite file; exact only."""

    engine: ClassVar[str] = "sqlite-vec"
    extra: ClassVar[str] = "sqlite-vec"
    summary: ClassVar[str] = "sqlite-vec vec0 table (SQLite extension): brute force only, " \
                             "an exact baseline in SQL"
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    index_kinds: ClassVar[tuple[str, ...]] = ()
    has_exact: ClassVar[bool] = True

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        unknown = sorted(set(url.options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"{url.public}: unknown option {unknown[0]!r}; valid: "
                              f"{', '.join(_OPTIONS)}")
        self.table = url.options.get("table", "docs")
        if not _NAME.match(self.table):
            raise ConfigError(f"{url.public}: table {self.table!r}; expected a SQL name "
                              "(letters, digits, '_', not starting with a digit)")
        if not url.path:
            raise ConfigError(f"{url.public}: no database file; expected e.g. "
                              "'sqlite-vec://./vec.db?table=docs'")
        self.path = Path(url.path)
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    # -- connections ----------------------------------------------------------------------
    def _conn(self, create: bool = False) -> Any:
        """This thread's connection (SQLite connections are not shared across threads)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if not create and not self.path.is_file():
            raise ConfigError(f"{self.url.public}: no SQLite database at {self.path}; load "
                              "it first (searchbench db load) or fix the path")
        mod = sqlite_module()
        sqlite_vec = require("sqlite_vec", "sqlite-vec")
        try:
            conn = mod.connect(str(self.path), timeout=30, check_same_thread=False)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except mod.Error as exc:
            parent = self.path.parent
            if "unable to open" in str(exc) and not parent.is_dir():
                raise ConfigError(f"{self.url.public}: cannot open {self.path}: {parent} is not "
                                  "a folder; check the path in the URL") from None
            if "unable to open" in str(exc) and not self.path.exists():
                raise OutputError(f"{self.url.public}: cannot create {self.path} ({exc}); "
                                  f"{parent} cannot be written: choose a folder you can write "
                                  "to, or fix its permissions") from None
            kind, hint = advice(exc, self.engine, str(self.path))
            raise kind(f"{self.url.public}: cannot open {self.path} with sqlite-vec ({exc}); "
                       f"{hint}") from None
        self._local.conn = conn
        with self._lock:
            self._all.append(conn)
        return conn

    def _q(self) -> str:
        return f'"{self.table}"'

    def _table_sql(self) -> str | None:
        row = self._conn().execute("SELECT sql FROM sqlite_master WHERE name = ?",
                                   (self.table,)).fetchone()
        return row[0] if row else None

    def _meta(self, required: bool = True) -> dict[str, Any] | None:
        """Dimension, metric, columns and provenance of the table (None if absent)."""
        conn = self._conn(create=not required)
        sql = self._table_sql()
        if sql is None:
            if required:
                raise ConfigError(f"{self.url.public}: no table {self.table!r} in "
                                  f"{self.path}; load it first (searchbench db load)")
            return None
        meta = self._parse_schema(sql)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                        (_META_TABLE,)).fetchone():
            row = conn.execute(f"SELECT meta FROM {_META_TABLE} WHERE name = ?",
                               (self.table,)).fetchone()
            if row:
                meta["provenance"] = json.loads(row[0]).get("provenance", {})
        return meta

    def _parse_schema(self, sql: str) -> dict[str, Any]:
        """Id column, vector column, dimension and metric from a ``CREATE VIRTUAL TABLE``."""
        vec = re.search(r"(\w+)\s+float\[(\d+)\](?:\s+distance_metric\s*=\s*(\w+))?", sql,
                        re.IGNORECASE)
        key = re.search(r"(\w+)\s+text\s+primary\s+key", sql, re.IGNORECASE)
        if "vec0" not in sql.lower() or vec is None or key is None:
            raise ConfigError(f"{self.url.public}: table {self.table!r} is not a vec0 table "
                              "with a text primary key and a float[D] column; found: "
                              f"{sql[:200]!r}")
        metric = (vec.group(3) or "l2").lower()
        if metric not in _METRICS.values():
            raise ConfigError(f"{self.url.public}: distance_metric {metric}; expected "
                              f"{' or '.join(_METRICS.values())}")
        return {"id": key.group(1), "vector": vec.group(1), "dimension": int(vec.group(2)),
                "metric": metric, "provenance": {}}

    # -- writing ------------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        """Insert the rows whose ids are not in the table yet, one transaction per batch."""
        t0 = time.perf_counter()
        ids, matrix, metric = check_rows(ids, vectors, metric, texts, metadata)
        if metric not in _METRICS:
            raise ConfigError(f"sqlite-vec has no {metric!r} distance (vec0 offers cosine, "
                              "l2 and l1); load with metric cosine or l2")
        meta = self._meta(required=False)
        where = f"sqlite-vec table {self.table!r} in {self.path}"
        if meta is None:
            meta = self._create(matrix.shape[1], metric, metadata)
        elif meta["dimension"] != matrix.shape[1]:
            raise mismatch(where, "dimension", meta["dimension"], matrix.shape[1])
        elif meta["metric"] != metric:
            raise mismatch(where, "metric", meta["metric"], metric)
        conn = self._conn()
        self._save_meta(conn, meta, provenance)
        have = self._existing(conn, meta["id"], ids)
        new = [i for i, doc_id in enumerate(ids) if doc_id not in have]
        cols = self._metadata_columns(metadata)
        names = [meta["id"], meta["vector"], *cols] + (["text"] if texts is not None else [])
        sql = (f"INSERT INTO {self._q()} ({', '.join(names)}) "
               f"VALUES ({', '.join('?' * len(names))})")
        step = max(1, batch_size)
        for lo in range(0, len(new), step):
            rows = [(ids[i], matrix[i].tobytes(),
                     *(self._value(metadata[i], c) for c in cols),  # type: ignore[index]
                     *((texts[i],) if texts is not None else ())) for i in new[lo:lo + step]]
            with conn:
                conn.executemany(sql, rows)
        return LoadReport(len(new), len(ids) - len(new), self.count(),
                          time.perf_counter() - t0, None)

    def _existing(self, conn: Any, id_col: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the table holds (looked up by key, 500 at a time: a load of
        one batch reads that batch, not the whole table)."""
        have: set[str] = set()
        for lo in range(0, len(ids), 500):
            part = list(ids[lo:lo + 500])
            marks = ", ".join("?" * len(part))
            have.update(str(r[0]) for r in conn.execute(
                f"SELECT {id_col} FROM {self._q()} WHERE {id_col} IN ({marks})", part))
        return have

    def _metadata_columns(self, metadata: Sequence[Mapping[str, Any]] | None) -> list[str]:
        if not metadata:
            return []
        cols = sorted(metadata[0])
        for c in cols:
            if not _NAME.match(c) or c.lower() in _RESERVED:
                raise DataFormatError(f"metadata key {c!r}: expected a SQL name other than "
                                      f"{', '.join(sorted(_RESERVED))}")
        return cols

    @staticmethod
    def _value(row: Mapping[str, Any], col: str) -> Any:
        if col not in row:
            raise DataFormatError(f"a metadata row lacks {col!r}; every row needs the keys "
                                  "of the first one")
        return row[col]

    def _create(self, dim: int, metric: str,
                metadata: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
        cols = []
        for c in self._metadata_columns(metadata):
            kind = _SQL_TYPES.get(type(metadata[0][c]))  # type: ignore[index]
            if kind is None:
                raise DataFormatError(f"metadata {c!r} is a {type(metadata[0][c]).__name__}; "  # type: ignore[index]
                                      "expected bool, int, float or str")
            cols.append(f"{c} {kind}")
        spec = ", ".join(["id text primary key",
                          f"embedding float[{dim}] distance_metric={_METRICS[metric]}",
                          *cols, "+text text"])
        conn = self._conn(create=True)
        with conn:
            conn.execute(f"CREATE VIRTUAL TABLE {self._q()} USING vec0({spec})")
        return {"id": "id", "vector": "embedding", "dimension": dim, "metric": metric,
                "provenance": {}, "created": utc_now()}

    def _save_meta(self, conn: Any, meta: dict[str, Any],
                   provenance: Mapping[str, Any] | None) -> None:
        meta["provenance"] = {**meta.get("provenance", {}), **dict(provenance or {})}
        with conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_META_TABLE} "
                         "(name TEXT PRIMARY KEY, meta TEXT NOT NULL)")
            conn.execute(f"INSERT OR REPLACE INTO {_META_TABLE} VALUES (?, ?)",
                         (self.table, json.dumps({"provenance": meta["provenance"]},
                                                 default=str)))

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        """vec0 has no ANN index: nothing to build (any kind or parameter is an error)."""
        if kind is not None or params:
            raise ConfigError("sqlite-vec has no ANN index (brute force only): no index kind "
                              "or build parameter applies; valid: none")
        return 0.0

    # -- reading ------------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, filter: str | None) -> StoreHits:
        meta = self._meta()
        assert meta is not None
        q = check_queries(queries, meta["dimension"], k)
        conn = self._conn()
        cond = f" AND ({filter})" if filter else ""
        sql = (f"SELECT {meta['id']}, distance FROM {self._q()} WHERE {meta['vector']} "
               f"MATCH ? AND k = ?{cond} ORDER BY distance")
        ids: list[list[str]] = []
        dist: list[np.ndarray] = []
        try:
            plan = "; ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql,
                                                          (q[0].tobytes(), k)))
            for row in q:
                got = conn.execute(sql, (row.tobytes(), k)).fetchall()
                ids.append([str(r[0]) for r in got])
                d = np.fromiter((r[1] for r in got), dtype=np.float64, count=len(got))
                dist.append(d * d if meta["metric"] == "l2" else d)
        except sqlite_module().Error as exc:
            what = f" (filter {filter!r})" if filter else ""
            raise ConfigError(f"{self.url.public}: sqlite-vec rejected the query{what}: "
                              f"{exc}") from None
        return StoreHits(ids, dist, False, f"vec0 brute-force scan: {plan}")

    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        """The exact scan (vec0 has no index); any parameter is an error."""
        if params:
            from ..base import check_params

            check_params(self.engine, self.params, params, "search")
        return self._knn(queries, k, filter)

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        return self._knn(queries, k, filter)

    def _absent(self) -> bool:
        """No database file, or no such table in it (a collection not created yet)."""
        return not self.path.is_file() or self._table_sql() is None

    def exists(self) -> bool:
        """The database file holds the table."""
        return not self._absent()

    def location(self) -> str:
        return f"table {self.table} in {self.path}"

    def count(self) -> int:
        """Rows stored (0 for a table not created yet)."""
        if self._absent():
            return 0
        return int(self._conn().execute(f"SELECT count(*) FROM {self._q()}").fetchone()[0])

    def stored_ids(self) -> list[str]:
        """Every stored id ([] for a table not created yet)."""
        if self._absent():
            return []
        meta = self._meta()
        assert meta is not None
        return [str(r[0]) for r in self._conn().execute(
            f"SELECT {meta['id']} FROM {self._q()}")]

    def describe(self) -> dict[str, Any]:
        """Engine and versions, table, ``dim``, metric, count, ``index`` (none: vec0 has
        no ANN index), file size and provenance; ``dim`` and ``metric`` None for a table
        not created yet."""
        if self._absent():
            return {"engine": self.engine, "url": self.url.public, "collection": self.table,
                    "dim": None, "metric": None, "count": 0, "index": None,
                    "provenance": {}}
        meta = self._meta()
        assert meta is not None
        conn = self._conn()
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal"))
                   if p.exists())
        return {
            "engine": self.engine, "version": conn.execute("SELECT vec_version()").fetchone()[0],
            "sqlite": sqlite_module().sqlite_version, "url": self.url.public,
            "collection": self.table, "dim": meta["dimension"], "metric": meta["metric"],
            "count": self.count(),
            "index": {"kind": None, "note": "vec0 has no ANN index: every search scans",
                      "build_seconds": None, "size_bytes": None},
            "size_bytes": size, "provenance": meta["provenance"],
        }

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
