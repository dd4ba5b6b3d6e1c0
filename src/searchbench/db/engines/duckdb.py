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
from collections.abc import Mapping
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
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore, advice, check_name

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
    """DuckDB + vss extension: HNSW (hnsw_ef_search); exact with the extension's optimizer
    disabled; WHERE applies after the search.

    One table in a DuckDB file with an optional HNSW index."""

    engine: ClassVar[str] = "duckdb"
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec.graph_degree("M", 16),
        ParamSpec("M0", int, 32, "graph degree of the bottom layer (default 2·M)", "build",
                  low=2, high=1024),
        ParamSpec.build_candidates("ef_construction", 128),
        ParamSpec.search_candidates("hnsw_ef_search", 64, "SET hnsw_ef_search"),
    )

    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("table", str, "docs", "the table", "url"),)

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.table = check_name(self.options["table"], "table", url.public)
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
    def _read_meta(self) -> dict[str, Any] | None:
        reader = self._reader()
        if not reader.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = ?",
                              [_META]).fetchone():
            return None  # nothing loaded yet: reading creates nothing in the file
        row = reader.execute(f"SELECT info FROM {_META} WHERE name = ?",
                             [self.table]).fetchone()
        return json.loads(row[0]) if row else None

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {_META} "
                         "(name VARCHAR PRIMARY KEY, info VARCHAR)")
        self.con.execute(f"INSERT OR REPLACE INTO {_META} VALUES (?, ?)",
                         [self.table, json.dumps(dict(meta), sort_keys=True, default=str)])

    # -- writing ------------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        self.con.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (id VARCHAR PRIMARY "
                         f"KEY, vec FLOAT[{meta['dim']}] NOT NULL, text VARCHAR, meta JSON)")

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """One transaction: the batch as an Arrow table, inserted by one statement."""
        pa = require("pyarrow", self.extra)
        texts, metadata = rows.texts, rows.metadata
        batch = pa.table({
            "id": rows.ids,
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rows.vectors.ravel()), rows.dim),
            "text": list(texts) if texts is not None else [None] * len(rows.ids),
            "meta": [json.dumps(m, sort_keys=True) for m in metadata]
            if metadata is not None else [None] * len(rows.ids),
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

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """M0 defaults to 2·M, as in the extension."""
        params = super()._build_params(kind, given, meta)
        if "M0" not in given:
            params["M0"] = 2 * params["M"]
        return params

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """(Re)build the HNSW index with the collection's metric; seconds taken."""
        options = {"metric": f"'{_INDEX_METRIC[meta['metric']]}'",
                   **{name: str(value) for name, value in params.items()}}
        started = time.perf_counter()
        self.con.execute(f"DROP INDEX IF EXISTS {self.table}_hnsw")
        self.con.execute(f"CREATE INDEX {self.table}_hnsw ON {self.table} USING HNSW (vec) "
                         f"WITH ({', '.join(f'{k} = {v}' for k, v in options.items())})")
        return time.perf_counter() - started

    # -- reading ------------------------------------------------------------------------
    def _sql(self, metric: str, dim: int, filter: str | None, exact: bool) -> str:
        distance = f"{_FUNCTION[metric]}(vec, ?::VARCHAR::FLOAT[{dim}])"
        where = f" WHERE ({filter})" if filter else ""
        order = "d, id" if exact else "d"  # an extra sort key would keep the index away
        return f"SELECT id, {distance} AS d FROM {self.table}{where} ORDER BY {order} LIMIT ?"

    def _run(self, con: Any, sql: str, queries: np.ndarray, k: int, metric: str
             ) -> tuple[list[list[str]], list[np.ndarray], np.ndarray, str]:
        """Ids, distances (l2 squared), latencies and the plan of one query per row; the
        vector is bound as text (``[x1,x2,...]``, each float32's shortest decimal)."""
        texts = ["[" + ",".join(map(str, row.tolist())) + "]" for row in queries]
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
        ids = [[doc for doc, _ in row] for row in rows]
        dists = [np.asarray([d for _, d in row], dtype=np.float64) for row in rows]
        return ids, [d * d for d in dists] if metric == "l2" else dists, latencies, plan

    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """Top-k through the HNSW index (if the plan uses it: see ``index_used``)."""
        ef = params.get("hnsw_ef_search", self.params[3].default)
        con = self._reader()
        sql = self._sql(meta["metric"], meta["dim"], filter, exact=False)
        with self._query_lock:
            con.execute(f"SET SESSION hnsw_ef_search = {int(ef)}")
            try:
                ids, dists, latencies, plan = self._run(con, sql, queries, k, meta["metric"])
            finally:
                con.execute("RESET SESSION hnsw_ef_search")
        used = "HNSW_INDEX_SCAN" in plan
        short = sum(len(row) < k for row in ids)
        if filter and used and short:
            warnings.warn(f"{self.url.public}: DuckDB applies the filter to the HNSW index's "
                          f"top {k} rows, so {short} of {len(ids)} queries got fewer than "
                          f"{k} results (hnsw_ef_search does not help); use exact search "
                          "with selective filters", SearchbenchWarning,
                          stacklevel=user_stacklevel())
        return StoreHits(ids, dists, used, plan, {"hnsw_ef_search": int(ef)}, latencies)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        """Top-k by a full scan (the extension's optimizer disabled; checked by EXPLAIN)."""
        con = self._reader()
        sql = self._sql(meta["metric"], meta["dim"], filter, exact=True)
        with self._query_lock:  # DuckDB sets this optimizer switch globally, not per cursor
            con.execute("SET disabled_optimizers = 'extension'")
            try:
                ids, dists, latencies, plan = self._run(con, sql, queries, k, meta["metric"])
            finally:
                con.execute("RESET disabled_optimizers")
        if "HNSW_INDEX_SCAN" in plan:
            raise BackendError(f"{self.url.public}: the exact scan still used the HNSW index "
                               "(duckdb ignored disabled_optimizers)")
        return StoreHits(ids, dists, False, plan, {}, latencies)

    def exists(self) -> bool:
        """The database file records the table."""
        return self._read_meta() is not None

    def location(self) -> str:
        return f"table {self.table} in {self.path}"

    def count(self) -> int:
        """Rows in the table (0 before the first load)."""
        if self._read_meta() is None:
            return 0
        row = self.con.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0

    def stored_ids(self) -> list[str]:
        """Every id in the table."""
        if self._read_meta() is None:
            return []
        return [r[0] for r in self.con.execute(f"SELECT id FROM {self.table}").fetchall()]

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Engine versions, table, index (as built, if it is there) and file size."""
        indexes = self.con.execute("SELECT index_name, sql FROM duckdb_indexes() WHERE "
                                   "table_name = ?", [self.table]).fetchall()
        hnsw = [sql for name, sql in indexes if name == f"{self.table}_hnsw"]
        size = Path(self.path).stat().st_size if Path(self.path).is_file() else None
        return {
            "engine": f"duckdb {self._duckdb.__version__} + vss extension (HNSW)",
            "table": self.table,
            "index": (meta.get("provenance") or {}).get("index") if hnsw else None,
            "index_state": "built" if hnsw else "none (every search scans exactly)",
            "size_bytes": size,
        }

    def close(self) -> None:
        """Close the connection (the file lock is released)."""
        for cursor in getattr(self, "_cursors", []):
            cursor.close()
        if getattr(self, "con", None) is not None:
            self.con.close()
