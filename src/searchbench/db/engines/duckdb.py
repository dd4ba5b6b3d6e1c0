"""DuckDB + the ``vss`` extension (HNSW) as a store: ``duckdb://./vec.duckdb?table=docs``.

The extension is the file shipped by the ``duckdb-extension-vss`` wheel, loaded by path
(``LOAD '<file>'``): ``INSTALL vss`` would try the network. Traps handled here:

- a file database keeps an HNSW index only with
  ``SET hnsw_enable_experimental_persistence=true`` (set on every connection);
- the index answers only ``ORDER BY <distance of its metric> LIMIT k``; a query with another
  metric's distance scans exactly. Every search runs ``EXPLAIN`` once and reports
  ``index_used`` from the plan (``HNSW_INDEX_SCAN``);
- ``WHERE`` is applied to the HNSW index's top-k rows: a filter keeping a fraction f of the
  rows returns about f·k rows whatever ``hnsw_ef_search`` (the hits are what the engine
  returned, and a :class:`~searchbench.errors.SearchbenchWarning` says how many queries
  came back short);
- the exact path is the same SQL with ``SET disabled_optimizers='extension'``, checked with
  ``EXPLAIN`` (a sequential scan with ``TOP_N``);
- query vectors are bound as text (``?::VARCHAR::FLOAT[dim]``): binding a Python list costs
  35–50 ms per query.

Distances: ``cosine`` → ``array_cosine_distance`` (1 − cos), ``ip`` →
``array_negative_inner_product`` (−⟨q, x⟩), ``l2`` → ``array_distance`` squared here (the
index metric ``l2sq`` orders by the same rows).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...errors import (
    BackendError,
    ConfigError,
    MissingDependencyError,
    SearchbenchWarning,
    require,
    user_stacklevel,
)
from ..base import LoadReport, ParamSpec, StoreHits, StoreURL, VectorStore, advice, check_params
from ._input import (
    as_hits_arrays,
    batches,
    check_name,
    check_queries,
    check_rows,
    check_same_layout,
    vector_text,
)

__all__ = ["DuckDBStore", "vss_extension_path"]

_META = "searchbench_meta"
_FUNCTION = {"cosine": "array_cosine_distance", "ip": "array_negative_inner_product",
             "l2": "array_distance"}
_INDEX_METRIC = {"cosine": "cosine", "ip": "ip", "l2": "l2sq"}


def vss_extension_path() -> Path:
    """The ``vss`` extension file shipped by ``duckdb-extension-vss`` for this duckdb."""
    duckdb = require("duckdb", "duckdb")
    vss = require("duckdb_extension_vss", "duckdb")
    path = Path(vss.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "vss.duckdb_extension"
    if not path.is_file():
        found = sorted(p.name for p in (Path(vss.__path__[0]) / "extensions").glob("v*"))
        raise MissingDependencyError(
            f"duckdb {duckdb.__version__} has no matching vss extension (the "
            f"duckdb-extension-vss package ships {', '.join(found) or 'none'}); "
            "pip install 'searchbench[duckdb]' installs a matching pair")
    return path


class DuckDBStore(VectorStore):
    """One table in a DuckDB file with an optional HNSW index."""

    engine: ClassVar[str] = "duckdb"
    extra: ClassVar[str] = "duckdb"
    summary: ClassVar[str] = ("DuckDB + vss extension: HNSW (hnsw_ef_search); exact with the "
                              "extension's optimizer disabled; WHERE applies after the search")
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("M", int, 16, "graph degree per layer", "build", low=2, high=512),
        ParamSpec("M0", int, 32, "graph degree of the bottom layer (default 2·M)", "build",
                  low=2, high=1024),
        ParamSpec("ef_construction", int, 128, "candidate list while building", "build",
                  low=1, high=100_000),
        ParamSpec("hnsw_ef_search", int, 64, "candidate list per search (SET hnsw_ef_search)",
                  "search", low=1, high=100_000),
    )

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        unknown = set(url.options) - {"table"}
        if unknown:
            raise ConfigError(f"{url.public}: unknown option(s) {', '.join(sorted(unknown))}; "
                              "valid: table")
        self.table = check_name(url.options.get("table", "docs"), "table", url.public)
        self.path = url.path or url.host
        if not self.path:
            raise ConfigError(f"{url.public}: no database file; expected "
                              "'duckdb://./vec.duckdb?table=docs' or 'duckdb:///abs/vec.duckdb?table=docs'")
        self._duckdb = require("duckdb", self.extra)
        extension = vss_extension_path()
        if not Path(self.path).parent.is_dir():
            raise BackendError(f"cannot open {url.public}: directory "
                               f"{Path(self.path).parent} does not exist")
        try:
            self.con = self._duckdb.connect(self.path)
            self.con.execute(f"LOAD '{extension}'")
            self.con.execute("SET hnsw_enable_experimental_persistence=true")
        except self._duckdb.Error as exc:
            kind, hint = advice(exc, self.engine, self.path)
            raise kind(f"cannot open {url.public}: {str(exc).strip().splitlines()[0]}; "
                       f"{hint}") from None
        self._local = threading.local()
        self._cursors: list[Any] = []
        self._cursors_lock = threading.Lock()
        # one query at a time: the vss extension's HNSW scan crashed the process (SIGSEGV)
        # with 4 cursors searching 5,183 × 384 SciFact vectors at once (duckdb 1.5.5 + vss);
        # and disabled_optimizers (exact search) is a database-wide setting
        self._query_lock = threading.Lock()

    def _reader(self) -> Any:
        """This thread's cursor: a DuckDB connection may not be shared between threads
        (DuckDB's Python API: one ``con.cursor()`` per thread, same database)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            with self._cursors_lock:  # the shared connection makes it: one thread at a time
                cursor = self.con.cursor()
                self._cursors.append(cursor)
            self._local.cursor = cursor
        return cursor

    # -- stored settings ----------------------------------------------------------------
    def _meta(self) -> dict[str, Any] | None:
        reader = self._reader()
        if not reader.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = ?",
                              [_META]).fetchone():
            return None  # nothing loaded yet: reading creates nothing in the file
        row = reader.execute(f"SELECT info FROM {_META} WHERE name = ?",
                             [self.table]).fetchone()
        return json.loads(row[0]) if row else None

    def _save_meta(self, meta: Mapping[str, Any]) -> None:
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {_META} "
                         "(name VARCHAR PRIMARY KEY, info VARCHAR)")
        self.con.execute(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?)",
                         [self.table, json.dumps(meta, sort_keys=True, default=str)])

    def _require_meta(self) -> dict[str, Any]:
        meta = self._meta()
        if meta is None:
            raise ConfigError(f"{self.url.public}: table {self.table!r} was not loaded by "
                              "searchbench; run `searchbench db load` first")
        return meta

    # -- writing ------------------------------------------------------------------------
    def load(self, ids: Sequence[str], vectors: np.ndarray, *, metric: str,
             texts: Sequence[str] | None = None,
             metadata: Sequence[Mapping[str, Any]] | None = None,
             batch_size: int = 1000, provenance: Mapping[str, Any] | None = None
             ) -> LoadReport:
        """Insert rows whose ids are absent, one transaction per batch (resumable)."""
        started = time.perf_counter()
        id_list, matrix, metric = check_rows(ids, vectors, metric, texts, metadata)
        dim = matrix.shape[1]
        meta = self._meta()
        if meta is None:
            meta = {"dim": dim, "metric": metric, "provenance": dict(provenance or {}),
                    "index": None}
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (id VARCHAR PRIMARY "
                             f"KEY, vec FLOAT[{dim}] NOT NULL, text VARCHAR, meta JSON)")
            self._save_meta(meta)
        check_same_layout(self.url.public, meta, dim, metric)
        have = set(self.stored_ids())
        todo = np.asarray([i for i, doc in enumerate(id_list) if doc not in have], dtype=np.int64)
        for rows in batches(len(todo), batch_size):
            self._insert(todo[rows.start:rows.stop], id_list, matrix, texts, metadata)
        if provenance:
            meta = self._require_meta()
            self._save_meta({**meta, "provenance": {**meta["provenance"], **provenance}})
        return LoadReport(len(todo), len(id_list) - len(todo), self.count(),
                          time.perf_counter() - started)

    def _insert(self, rows: np.ndarray, ids: list[str], matrix: np.ndarray,
                texts: Sequence[str] | None, metadata: Sequence[Mapping[str, Any]] | None
                ) -> None:
        pa = require("pyarrow", self.extra)
        dim = matrix.shape[1]
        batch = pa.table({
            "id": [ids[i] for i in rows],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(matrix[rows].ravel()), dim),
            "text": [texts[i] if texts is not None else None for i in rows],
            "meta": [json.dumps(metadata[i], sort_keys=True) if metadata is not None else None
                     for i in rows],
        })
        self.con.register("searchbench_batch", batch)
        try:
            self.con.execute("BEGIN")
            self.con.execute(f"INSERT INTO {self.table} SELECT id, vec, text, meta::JSON "
                             "FROM searchbench_batch")
            self.con.execute("COMMIT")
        except self._duckdb.Error as exc:
            self.con.execute("ROLLBACK")
            raise BackendError(f"{self.url.public}: inserting a batch failed: {exc}") from None
        finally:
            self.con.unregister("searchbench_batch")

    def build_index(self, kind: str | None = None, **params: Any) -> float:
        """(Re)build the HNSW index with the collection's metric; seconds taken."""
        if kind not in (None, "hnsw"):
            raise ConfigError(f"duckdb index kind {kind!r}; expected hnsw")
        given = check_params(self.engine, self.params, params, "build")
        given = {**{p.name: p.default for p in self.params if p.when == "build"}, **given}
        if "M0" not in params:
            given["M0"] = 2 * given["M"]  # the extension's default
        meta = self._require_meta()
        options = {"metric": f"'{_INDEX_METRIC[meta['metric']]}'",
                   **{name: str(value) for name, value in given.items()}}
        started = time.perf_counter()
        self.con.execute(f"DROP INDEX IF EXISTS {self.table}_hnsw")
        self.con.execute(f"CREATE INDEX {self.table}_hnsw ON {self.table} USING HNSW (vec) "
                         f"WITH ({', '.join(f'{k} = {v}' for k, v in options.items())})")
        seconds = time.perf_counter() - started
        index = {"kind": "hnsw", "params": given, "build_seconds": round(seconds, 3)}
        self._save_meta({**meta, "index": index,
                         "provenance": {**meta["provenance"], "index": index}})
        return seconds

    # -- reading ------------------------------------------------------------------------
    def _sql(self, metric: str, dim: int, filter: str | None, exact: bool) -> str:
        distance = f"{_FUNCTION[metric]}(vec, ?::VARCHAR::FLOAT[{dim}])"
        where = f" WHERE ({filter})" if filter else ""
        order = "d, id" if exact else "d"  # an extra sort key would keep the index away
        return f"SELECT id, {distance} AS d FROM {self.table}{where} ORDER BY {order} LIMIT ?"

    def _run(self, con: Any, sql: str, queries: np.ndarray, k: int, metric: str
             ) -> tuple[list[list[tuple[str, float]]], np.ndarray, str]:
        texts = [vector_text(row) for row in queries]
        try:
            plan = "\n".join(r[1] for r in con.execute("EXPLAIN " + sql, [texts[0], k])
                             .fetchall())
            rows, latencies = [], np.empty(len(texts))
            for i, text in enumerate(texts):
                started = time.perf_counter()
                rows.append(con.execute(sql, [text, k]).fetchall())
                latencies[i] = time.perf_counter() - started
        except self._duckdb.Error as exc:
            raise BackendError(f"{self.url.public}: search failed: {exc}") from None
        if metric == "l2":
            rows = [[(doc, d * d) for doc, d in row] for row in rows]
        return rows, latencies, plan

    def search(self, queries: np.ndarray, k: int, *, params: Mapping[str, Any] | None = None,
               filter: str | None = None) -> StoreHits:
        """Top-k through the HNSW index (if the plan uses it: see ``index_used``)."""
        given = check_params(self.engine, self.params, params or {}, "search")
        meta = self._require_meta()
        q = check_queries(queries, meta["dim"], k)
        ef = given.get("hnsw_ef_search", self.params[3].default)
        con = self._reader()
        sql = self._sql(meta["metric"], meta["dim"], filter, exact=False)
        with self._query_lock:
            con.execute(f"SET SESSION hnsw_ef_search = {int(ef)}")
            try:
                rows, latencies, plan = self._run(con, sql, q, k, meta["metric"])
            finally:
                con.execute("RESET SESSION hnsw_ef_search")
        ids, dists = as_hits_arrays(rows)
        used = "HNSW_INDEX_SCAN" in plan
        short = sum(len(row) < k for row in ids)
        if filter and used and short:
            warnings.warn(f"{self.url.public}: DuckDB applies the filter to the HNSW index's "
                          f"top {k} rows, so {short} of {len(ids)} queries got fewer than "
                          f"{k} results (hnsw_ef_search does not help); use exact search "
                          "with selective filters", SearchbenchWarning,
                          stacklevel=user_stacklevel())
        return StoreHits(ids, dists, used, plan, {"hnsw_ef_search": int(ef)}, latencies)

    def exact_search(self, queries: np.ndarray, k: int, *,
                     filter: str | None = None) -> StoreHits:
        """Top-k by a full scan (the extension's optimizer disabled; checked by EXPLAIN)."""
        meta = self._require_meta()
        q = check_queries(queries, meta["dim"], k)
        con = self._reader()
        sql = self._sql(meta["metric"], meta["dim"], filter, exact=True)
        with self._query_lock:  # DuckDB sets this optimizer switch globally, not per cursor
            con.execute("SET disabled_optimizers = 'extension'")
            try:
                rows, latencies, plan = self._run(con, sql, q, k, meta["metric"])
            finally:
                con.execute("RESET disabled_optimizers")
        if "HNSW_INDEX_SCAN" in plan:
            raise BackendError(f"{self.url.public}: the exact scan still used the HNSW index "
                               "(duckdb ignored disabled_optimizers)")
        ids, dists = as_hits_arrays(rows)
        return StoreHits(ids, dists, False, plan, {}, latencies)

    def exists(self) -> bool:
        """The database file records the table."""
        return self._meta() is not None

    def location(self) -> str:
        return f"table {self.table} in {self.path}"

    def count(self) -> int:
        """Rows in the table (0 before the first load)."""
        if self._meta() is None:
            return 0
        row = self.con.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0

    def stored_ids(self) -> list[str]:
        """Every id in the table."""
        if self._meta() is None:
            return []
        return [r[0] for r in self.con.execute(f"SELECT id FROM {self.table}").fetchall()]

    def describe(self) -> dict[str, Any]:
        """Engine versions, table, dimension, metric, count, index, size, provenance."""
        meta = self._meta() or {}
        indexes = self.con.execute("SELECT index_name, sql FROM duckdb_indexes() WHERE "
                                   "table_name = ?", [self.table]).fetchall()
        hnsw = [sql for name, sql in indexes if name == f"{self.table}_hnsw"]
        size = Path(self.path).stat().st_size if Path(self.path).is_file() else None
        return {
            "engine": f"duckdb {self._duckdb.__version__} + vss extension (HNSW)",
            "url": self.url.public, "table": self.table, "dim": meta.get("dim"),
            "metric": meta.get("metric"), "count": self.count(),
            "index": meta.get("index") if hnsw else None,
            "index_state": "built" if hnsw else "none (every search scans exactly)",
            "size_bytes": size, "provenance": meta.get("provenance", {}),
        }

    def close(self) -> None:
        """Close the connection (the file lock is released)."""
        for cursor in getattr(self, "_cursors", []):
            cursor.close()
        if getattr(self, "con", None) is not None:
            self.con.close()
