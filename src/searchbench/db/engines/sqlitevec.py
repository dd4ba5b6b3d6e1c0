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

import importlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...errors import ConfigError, DataFormatError, MissingDependencyError, OutputError, require
from ..base import Local, ParamSpec, Rows, StoreHits, StoreURL, VectorStore, advice, check_name

__all__ = ["SqliteVecStore"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_METRICS = {"cosine": "cosine", "l2": "l2"}  # searchbench → vec0 distance_metric
_RESERVED = {"id", "embedding", "text", "distance", "k", "rowid"}
_META_TABLE = "searchbench_collections"
_SQL_TYPES = {bool: "boolean", int: "integer", float: "float", str: "text"}


def sqlite_module() -> Any:
    """A DB-API ``sqlite3`` module able to load extensions: pysqlite3 when installed, else
    the standard library's when it was built with extension loading."""
    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        import sqlite3  # lazy: loads sqlite3 on first use

        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
    raise MissingDependencyError("this Python's sqlite3 cannot load extensions (sqlite-vec): "
                                 "pip install 'searchbench[sqlite-vec]' (pysqlite3-binary)")


class SqliteVecStore(VectorStore):
    """sqlite-vec vec0 table (SQLite extension): brute force only, an exact baseline in SQL.

    One ``vec0`` table in a SQLite file; exact only."""

    engine: ClassVar[str] = "sqlite-vec"
    local: ClassVar[Local | None] = Local("database file",
                                          "sqlite-vec://./vec.db?table=docs")
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    index_kinds: ClassVar[tuple[str, ...]] = ()
    metrics: ClassVar[tuple[str, ...]] = tuple(_METRICS)
    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("table", str, "docs", "the vec0 table", "url"),)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.table = check_name(self.options["table"], "table", url.public)
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

    def _read_meta(self) -> dict[str, Any] | None:
        """Id column, vector column, dimension and metric from the table's schema, and the
        provenance searchbench recorded (None: no database file, or no such table)."""
        if not self.path.is_file():
            return None
        sql = self._table_sql()
        if sql is None:
            return None
        meta = self._parse_schema(sql)
        conn = self._conn()
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                        (_META_TABLE,)).fetchone():
            row = conn.execute(f"SELECT meta FROM {_META_TABLE} WHERE name = ?",
                               (self.table,)).fetchone()
            if row:
                meta["provenance"] = json.loads(row[0]).get("provenance", {})
        return meta

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        """The provenance, in ``searchbench_collections`` (the rest is the schema)."""
        with self._conn() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_META_TABLE} "
                         "(name TEXT PRIMARY KEY, meta TEXT NOT NULL)")
            conn.execute(f"INSERT OR REPLACE INTO {_META_TABLE} VALUES (?, ?)",
                         (self.table, json.dumps({"provenance": meta.get("provenance", {})},
                                                 default=str)))

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
        return {"id": key.group(1), "vector": vec.group(1), "dim": int(vec.group(2)),
                "metric": metric, "provenance": {}}

    # -- writing ------------------------------------------------------------------------
    def _existing(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` the table holds (looked up by key, 500 at a time: a load of
        one batch reads that batch, not the whole table)."""
        conn, id_col = self._conn(), self._require_meta()["id"]
        have: set[str] = set()
        for lo in range(0, len(ids), 500):
            part = list(ids[lo:lo + 500])
            marks = ", ".join("?" * len(part))
            have.update(str(r[0]) for r in conn.execute(
                f"SELECT {id_col} FROM {self._q()} WHERE {id_col} IN ({marks})", part))
        return have

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """One transaction: the rows, their metadata columns and texts."""
        cols = self._metadata_columns(rows.metadata)
        texts, metadata = rows.texts, rows.metadata
        names = [meta["id"], meta["vector"], *cols] + (["text"] if texts is not None else [])
        sql = (f"INSERT INTO {self._q()} ({', '.join(names)}) "
               f"VALUES ({', '.join('?' * len(names))})")
        values = [(doc, rows.vectors[i].tobytes(),
                   *(self._value(metadata[i], c) for c in cols),  # type: ignore[index]
                   *((texts[i],) if texts is not None else ()))
                  for i, doc in enumerate(rows.ids)]
        with self._conn() as conn:
            conn.executemany(sql, values)

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

    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        """``vec0(id text primary key, embedding float[D] distance_metric=M, <metadata
        columns typed from the first row>, +text text)``."""
        metadata = rows.metadata
        cols = []
        for c in self._metadata_columns(metadata):
            kind = _SQL_TYPES.get(type(metadata[0][c]))  # type: ignore[index]
            if kind is None:
                raise DataFormatError(f"metadata {c!r} is a {type(metadata[0][c]).__name__}; "  # type: ignore[index]
                                      "expected bool, int, float or str")
            cols.append(f"{c} {kind}")
        spec = ", ".join(["id text primary key",
                          f"embedding float[{meta['dim']}] distance_metric="
                          f"{_METRICS[meta['metric']]}", *cols, "+text text"])
        with self._conn(create=True) as conn:
            conn.execute(f"CREATE VIRTUAL TABLE {self._q()} USING vec0({spec})")
        meta.update(id="id", vector="embedding")

    # -- reading ------------------------------------------------------------------------
    def _scan(self, q: np.ndarray, k: int, filter: str | None, meta: Mapping[str, Any]
              ) -> StoreHits:
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

    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """The exact scan (vec0 has no index)."""
        return self._scan(queries, k, filter, meta)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        return self._scan(queries, k, filter, meta)

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
        meta = self._read_meta()
        if meta is None:
            return []
        return [str(r[0]) for r in self._conn().execute(
            f"SELECT {meta['id']} FROM {self._q()}")]

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Versions, table, ``index`` (none: vec0 has no ANN index) and file size."""
        conn = self._conn()
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal"))
                   if p.exists())
        return {
            "version": conn.execute("SELECT vec_version()").fetchone()[0],
            "sqlite": sqlite_module().sqlite_version, "collection": self.table,
            "index": {"kind": None, "note": "vec0 has no ANN index: every search scans",
                      "build_seconds": None, "size_bytes": None},
            "size_bytes": size,
        }

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
