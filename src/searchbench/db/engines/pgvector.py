"""PostgreSQL + pgvector as a searchbench store (``pgvector://`` URLs, ARCHITECTURE §11).

URL forms::

    pgvector:///DBNAME?host=/socket/dir&table=docs        # a Unix socket folder
    pgvector://user@host:5432/DBNAME?table=docs           # TCP

The password comes from the URL (``user:password@``) or, better, from ``PGPASSWORD`` /
``~/.pgpass`` as libpq reads them; it never appears in messages, logs or files (the
store's ``url.public`` is the only form shown). Other URL options: ``id`` and ``vector``
(column names of a table you made yourself; default ``id`` and ``embedding``), ``metric``
(for such a table: cosine, ip or l2), and any libpq keyword (``sslmode``,
``connect_timeout``...).

Layout of a table this adapter creates::

    CREATE TABLE docs (id text PRIMARY KEY, embedding vector(DIM), text text, metadata jsonb)

and one row per table in ``searchbench_provenance`` (model identity, dimension, metric,
count, index and its build parameters, load time). Loading is binary ``COPY`` in batches,
one transaction per batch, skipping ids already stored (resumable, idempotent).

Searching: search-time parameters (``hnsw.ef_search``, ``ivfflat.probes``,
``hnsw.iterative_scan``...) are applied with ``SET LOCAL`` inside the search's
transaction. Every search is also ``EXPLAIN``\\ ed once with the same settings: the plan is
returned and ``index_used`` says whether an HNSW/IVFFlat index of the table answered (the
planner switches to an exact Seq Scan + Sort at high ``ef_search`` and with selective
filters). Exact search disables index scans (``enable_indexscan`` …) and the connection
never auto-prepares statements (``prepare_threshold=None``): psycopg prepares a statement
after 5 executions and PostgreSQL then keeps a generic plan that ignores later ``SET``\\ s.

Filters are SQL ``WHERE`` fragments (``metadata->>'cat' = 'x'`` or a column of your own
table): the user's own SQL against the user's own database, inserted as written; the query
vector is always a bound parameter.

Distances follow the knn convention (smaller = closer): ``cosine`` is ``<=>`` (1 − cos),
``ip`` is ``<#>`` (−⟨q, x⟩), ``l2`` is ``<->`` squared.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from ...errors import BackendError, ConfigError, require
from ...knn import check_metric
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore, check_name

__all__ = ["PgVectorStore"]

PROVENANCE_TABLE = "searchbench_provenance"
CONNECT_TIMEOUT = 10  # seconds, unless the URL says ?connect_timeout=
_OPERATORS = {"cosine": "<=>", "ip": "<#>", "l2": "<->"}
_OPCLASS = {"cosine": "vector_cosine_ops", "ip": "vector_ip_ops", "l2": "vector_l2_ops"}
_METRIC_OF_OPCLASS = {v: k for k, v in _OPCLASS.items()}
_VECTOR_LITERAL = re.compile(r"'\[[^\]']*\]'::vector")
_EXACT_SETTINGS = ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")

_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("m", int, 16, "HNSW: links per node (more = better recall, bigger index)",
              "build", low=2, high=100),
    ParamSpec("ef_construction", int, 64, "HNSW: candidate list size while building "
              "(>= 2·m)", "build", low=4, high=1000),
    ParamSpec("lists", int, 100, "IVFFlat: number of inverted lists (rows/1000 up to 1M "
              "rows is pgvector's advice)", "build", low=1, high=32768),
    ParamSpec("hnsw.ef_search", int, 40, "HNSW: candidate list size per search; also caps "
              "the rows one index scan returns", low=1, high=1000),
    ParamSpec("hnsw.iterative_scan", str, "off", "HNSW: keep scanning until LIMIT rows "
              "pass the filter", choices=("off", "relaxed_order", "strict_order")),
    ParamSpec("hnsw.max_scan_tuples", int, 20000, "HNSW iterative scan: stop after this "
              "many tuples", low=1),
    ParamSpec("hnsw.scan_mem_multiplier", float, 1.0, "HNSW iterative scan: memory limit "
              "as a multiple of work_mem", low=1, high=1000),
    ParamSpec("ivfflat.probes", int, 1, "IVFFlat: lists searched per query", low=1,
              high=32768),
    ParamSpec("ivfflat.iterative_scan", str, "off", "IVFFlat: keep probing until LIMIT "
              "rows pass the filter", choices=("off", "relaxed_order")),
    ParamSpec("ivfflat.max_probes", int, 32768, "IVFFlat iterative scan: most lists "
              "probed", low=1, high=32768),
)
_BUILD_PARAMS = {"hnsw": ("m", "ef_construction"), "ivfflat": ("lists",)}


class PgVectorStore(VectorStore):
    """PostgreSQL + pgvector: HNSW and IVFFlat indexes, exact scan with index scans
    disabled, SQL WHERE filters.

    One table of a PostgreSQL database with the pgvector extension."""

    engine: ClassVar[str] = "pgvector"
    params: ClassVar[tuple[ParamSpec, ...]] = _PARAMS
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw", "ivfflat")

    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("table", str, "docs", "the table", "url"),
        ParamSpec("id", str, "id", "id column (a table of your own)", "url"),
        ParamSpec("vector", str, "embedding", "vector column (a table of your own)", "url"),
        ParamSpec("metric", str, None, "metric of a table of your own searchbench did not "
                  "load", "url", choices=("cosine", "ip", "l2")),
        ParamSpec("host", str, None, "host name or Unix socket folder", "url"),
    )
    passthrough: ClassVar[str | None] = "libpq"  # sslmode=, connect_timeout=, user=…

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.table = check_name(self.options["table"], "table", url.public)
        self.id_column = check_name(self.options["id"], "id column", url.public)
        self.vector_column = check_name(self.options["vector"], "vector column", url.public)
        self._local = threading.local()  # a connection per thread, as with a pool
        self._conns: list[Any] = []
        self._conns_lock = threading.Lock()

    # -- connection ---------------------------------------------------------------------
    def _url_part(self, name: str) -> Any:
        """libpq's ``dbname`` is the URL's path."""
        if name == "dbname":
            return self.url.path.lstrip("/") or None
        return super()._url_part(name)

    def _connect_kwargs(self) -> dict[str, Any]:
        """libpq keywords: every URL option except the adapter's own is passed on as
        written (``connect_timeout``, ``sslmode``, ``user``…; libpq refuses one it does
        not know); the URL's own parts fill what the options leave out (the base refused
        an option that repeats one of them with another value)."""
        u = self.url
        kw: dict[str, Any] = {"connect_timeout": str(CONNECT_TIMEOUT), **self.passed}
        own = {"host": self.options["host"] or u.host or None, "port": u.port, "user": u.user,
               "password": u.password, "dbname": u.path.lstrip("/") or "postgres"}
        for name, value in own.items():
            if kw.get(name) is None and value not in (None, ""):
                kw[name] = value
        return kw

    @property
    def _has_vector_type(self) -> bool:
        """Whether this thread's connection knows the ``vector`` type."""
        return bool(getattr(self._local, "vector_type", False))

    @_has_vector_type.setter
    def _has_vector_type(self, value: bool) -> None:
        self._local.vector_type = value

    @property
    def conn(self) -> Any:
        """This thread's open connection (made on its first use; autocommit off, never
        auto-prepared). Threads never share one: a search is a transaction with ``SET
        LOCAL`` settings, which another thread's statements would run inside."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            psycopg = require("psycopg", "pgvector")
            try:
                conn = psycopg.connect(**self._connect_kwargs(), prepare_threshold=None)
            except psycopg.ProgrammingError as exc:
                raise ConfigError(f"{self.url.public}: {_first_line(exc)}") from None
            except psycopg.Error as exc:
                raise BackendError(f"cannot connect to PostgreSQL at {self.url.public}: "
                                   f"{_first_line(exc)}; check that the server runs and the "
                                   "socket folder or host:port is right") from None
            with self._conns_lock:
                self._conns.append(conn)
            self._local.conn, self._local.vector_type = conn, False
        return conn

    def _vector_ready(self, create: bool) -> None:
        """The ``vector`` extension exists (created if ``create``) and its type is bound."""
        if self._has_vector_type:
            return
        psycopg = require("psycopg", "pgvector")
        register = require("pgvector.psycopg", "pgvector").register_vector
        conn = self.conn
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
        if row is None and create:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.commit()
                row = ("new",)
            except psycopg.Error as exc:
                conn.rollback()
                raise ConfigError(self._no_extension(f"CREATE EXTENSION vector failed: "
                                                     f"{_first_line(exc)}")) from None
        if row is None:
            conn.rollback()
            raise ConfigError(self._no_extension("it is not enabled in this database"))
        register(conn)
        conn.commit()
        self._has_vector_type = True

    def _no_extension(self, why: str) -> str:
        return (f"{self.url.public}: the pgvector extension 'vector' is missing ({why}); "
                "install pgvector on the server and run CREATE EXTENSION vector as a "
                "database owner (searchbench db load creates it when allowed)")

    @contextmanager
    def _transaction(self, settings: Mapping[str, Any]) -> Iterator[Any]:
        """A cursor in a transaction with ``SET LOCAL`` settings; rolled back at the end
        (searches write nothing), or on error with the SQL error as a ConfigError."""
        psycopg = require("psycopg", "pgvector")
        conn = self.conn
        try:
            with conn.cursor() as cur:
                for name, value in settings.items():
                    cur.execute("SELECT set_config(%s, %s, true)", (name, _pg_value(value)))
                yield cur
        except psycopg.errors.UndefinedObject as exc:
            conn.rollback()
            raise ConfigError(f"{self.url.public}: {_first_line(exc)} (is the pgvector "
                              "version on the server older than the parameter?)") from None
        except psycopg.OperationalError as exc:
            conn.rollback()
            raise BackendError(f"PostgreSQL at {self.url.public}: {_first_line(exc)}") from None
        except psycopg.Error as exc:
            conn.rollback()
            raise ConfigError(f"{self.url.public}: {_first_line(exc)}") from None
        else:
            conn.rollback()

    def close(self) -> None:
        """Close every thread's connection."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
            self._local = threading.local()
        for conn in conns:
            conn.close()

    def __del__(self) -> None:  # a store dropped without close(): no ResourceWarning
        with contextlib.suppress(Exception):
            self.close()

    # -- schema -------------------------------------------------------------------------
    def _q(self, sql_text: str, **names: str) -> Any:
        """``sql_text`` with ``{t}``, ``{id}``, ``{vec}``, ``{prov}`` and ``names`` as quoted
        identifiers."""
        sql = require("psycopg", "pgvector").sql
        idents = {"t": self.table, "id": self.id_column, "vec": self.vector_column,
                  "prov": PROVENANCE_TABLE, **names}
        return sql.SQL(sql_text).format(**{k: sql.Identifier(v) for k, v in idents.items()})

    def _table_dim(self) -> int | None:
        """The vector column's declared dimension; None when the table does not exist."""
        row = self.conn.execute(
            "SELECT a.atttypmod, t.typname FROM pg_attribute a JOIN pg_type t ON "
            "t.oid = a.atttypid WHERE a.attrelid = to_regclass(%s) AND a.attname = %s "
            "AND NOT a.attisdropped", (self._regname(), self.vector_column)).fetchone()
        exists = self.conn.execute("SELECT to_regclass(%s)", (self._regname(),)).fetchone()[0]
        if exists is None:
            return None
        if row is None or row[1] != "vector":
            raise ConfigError(f"{self.url.public}: table {self.table} has no vector column "
                              f"{self.vector_column!r}; name it with ?vector=COLUMN")
        return int(row[0]) if row[0] > 0 else None

    def _regname(self) -> str:
        return '"' + self.table + '"'

    def _create(self, dim: int) -> None:
        cur = self.conn.cursor()
        cur.execute(self._q("CREATE TABLE IF NOT EXISTS {t} ({id} text PRIMARY KEY, "
                            f"{{vec}} vector({int(dim)}) NOT NULL, text text, "
                            "metadata jsonb)"))
        cur.execute(self._q("CREATE TABLE IF NOT EXISTS {prov} (collection text PRIMARY "
                            "KEY, info jsonb NOT NULL, updated timestamptz NOT NULL "
                            "DEFAULT now())"))
        self.conn.commit()

    def _provenance(self) -> dict[str, Any]:
        """What :meth:`load` recorded for this table ({} when nothing was)."""
        exists = self.conn.execute("SELECT to_regclass(%s)",
                                   (f'"{PROVENANCE_TABLE}"',)).fetchone()[0]
        if exists is None:
            self.conn.rollback()
            return {}
        row = self.conn.execute(self._q("SELECT info FROM {prov} WHERE collection = %s"),
                                (self.table,)).fetchone()
        self.conn.rollback()
        return dict(row[0]) if row else {}

    def _read_meta(self) -> dict[str, Any] | None:
        """The vector column's dimension; the metric recorded at load, else ``?metric=``,
        else its index's; the provenance (None: no such table)."""
        dim = self._table_dim()
        if dim is None:
            self.conn.rollback()
            return None
        prov = self._provenance()
        found = prov.get("metric") or self.options["metric"]
        if not found:
            found = next((_index_info(n, d)["metric"] for n, d in self._vector_indexes()), None)
        self.conn.rollback()
        if not found:
            raise ConfigError(f"{self.url.public}: table {self.table} records no metric; add "
                              "&metric=cosine (or ip, l2) to the URL")
        return {"dim": dim, "metric": check_metric(found), "provenance": prov}

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        """The provenance (with dim and metric) as the table's row of
        ``searchbench_provenance``."""
        info = {**(meta.get("provenance") or {}), "metric": meta["metric"], "dim": meta["dim"]}
        self.conn.execute(self._q("CREATE TABLE IF NOT EXISTS {prov} (collection text PRIMARY "
                                  "KEY, info jsonb NOT NULL, updated timestamptz NOT NULL "
                                  "DEFAULT now())"))
        self.conn.execute(self._q(
            "INSERT INTO {prov} (collection, info) VALUES (%s, %s::jsonb) ON CONFLICT "
            "(collection) DO UPDATE SET info = EXCLUDED.info, updated = now()"),
            (self.table, json.dumps(info, default=str)))
        self.conn.commit()

    def _require_meta(self) -> dict[str, Any]:
        """Reading needs the extension enabled (a clear error where it is not)."""
        self._vector_ready(create=False)
        return super()._require_meta()

    # -- writing ------------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        self._vector_ready(create=True)
        self._create(int(meta["dim"]))

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """Binary ``COPY`` of the batch, one transaction."""
        self._vector_ready(create=False)
        jsonb = require("psycopg.types.json", "pgvector").Jsonb
        texts, metadata = rows.texts, rows.metadata
        with self.conn.cursor() as cur, cur.copy(self._q(
                "COPY {t} ({id}, {vec}, text, metadata) FROM STDIN WITH (FORMAT BINARY)")) as cp:
            cp.set_types(["text", "vector", "text", "jsonb"])
            for i, doc in enumerate(rows.ids):
                cp.write_row((doc, rows.vectors[i], texts[i] if texts is not None else None,
                              jsonb(dict(metadata[i])) if metadata is not None else None))
        self.conn.commit()

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """The parameters of ``kind`` only (``m`` is HNSW's, ``lists`` IVFFlat's)."""
        foreign = sorted(set(given) - set(_BUILD_PARAMS[kind]))
        if foreign:
            raise ConfigError(f"pgvector {kind} index: parameter(s) {', '.join(foreign)} "
                              f"belong to another index kind; {kind} takes "
                              f"{', '.join(_BUILD_PARAMS[kind])}")
        defaults = {p.name: p.default for p in self.params if p.name in _BUILD_PARAMS[kind]}
        return {**defaults, **given}  # explicit, so describe() shows what was built

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        name = f"{self.table}_{self.vector_column}_{kind}"[:63]
        with_ = ", ".join(f"{k} = {int(v)}" for k, v in params.items())
        t0 = time.perf_counter()
        cur = self.conn.cursor()
        for old in self._vector_indexes():
            cur.execute(self._q("DROP INDEX IF EXISTS {i}", i=old[0]))
        cur.execute(self._q(f"CREATE INDEX {{i}} ON {{t}} USING {kind} ({{vec}} "
                            f"{_OPCLASS[meta['metric']]}){f' WITH ({with_})' if with_ else ''}",
                            i=name))
        cur.execute(self._q("ANALYZE {t}"))
        self.conn.commit()
        return time.perf_counter() - t0

    def _vector_indexes(self) -> list[tuple[str, str]]:
        """``(name, definition)`` of every HNSW/IVFFlat index on the table."""
        rows = self.conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND "
            "(indexdef ILIKE '%% USING hnsw %%' OR indexdef ILIKE '%% USING ivfflat %%')",
            (self.table,)).fetchall()
        return [(r[0], r[1]) for r in rows]

    # -- reading ------------------------------------------------------------------------
    # -- reading ------------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, dict(params), filter, False, meta)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, {}, filter, True, meta)

    def widen(self, params: Mapping[str, Any], depth: int) -> dict[str, Any] | None:
        """pgvector's iterative index scans (0.8+): an HNSW scan returns at most
        ``hnsw.ef_search`` rows unless ``hnsw.iterative_scan`` keeps it scanning (in
        ``strict_order``: by distance) up to the LIMIT or ``hnsw.max_scan_tuples``; an
        IVFFlat scan keeps probing (``relaxed_order``, re-sorted by the retriever). The
        candidate list (the index's recall) stays what ``params`` set."""
        wider = dict(params)
        wider.setdefault("hnsw.iterative_scan", "off")
        wider.setdefault("ivfflat.iterative_scan", "off")
        if wider["hnsw.iterative_scan"] == "off":
            wider["hnsw.iterative_scan"] = "strict_order"
        if wider["ivfflat.iterative_scan"] == "off":
            wider["ivfflat.iterative_scan"] = "relaxed_order"
        tuples = int(wider.get("hnsw.max_scan_tuples", 20000))
        if tuples < 2 * depth:
            wider["hnsw.max_scan_tuples"] = 2 * depth
        return None if wider == {**{"hnsw.iterative_scan": "off",
                                    "ivfflat.iterative_scan": "off"}, **params} else wider

    def _search(self, q: np.ndarray, k: int, given: dict[str, Any], filter: str | None,
                exact: bool, meta: Mapping[str, Any]) -> StoreHits:
        metric = meta["metric"]
        settings: dict[str, Any] = dict(given)
        if exact:
            settings.update({name: "off" for name in _EXACT_SETTINGS})
        sql = self._select(metric, filter)
        ids: list[list[str]] = []
        dists: list[np.ndarray] = []
        lat = np.zeros(len(q))
        with self._transaction(settings) as cur:
            plan = self._explain(cur, sql, q[0], k)
            for i, vec in enumerate(q):
                t0 = time.perf_counter()
                rows = cur.execute(sql, {"q": vec, "k": int(k)}, prepare=False).fetchall()
                lat[i] = time.perf_counter() - t0
                ids.append([r[0] for r in rows])
                d = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
                dists.append(d * d if metric == "l2" else d)
        used = self._index_used(plan)
        return StoreHits(ids=ids, distances=dists, index_used=used, plan=plan,
                         params={**given, **({"exact": True} if exact else {})},
                         latencies_s=lat)

    def _select(self, metric: str, filter: str | None) -> Any:
        op = _OPERATORS[metric]
        where = f" WHERE ({filter})" if filter and filter.strip() else ""
        # the filter is the user's own SQL (see the module docstring); braces are literal
        where = where.replace("{", "{{").replace("}", "}}")
        return self._q(f"SELECT {{id}}, {{vec}} {op} %(q)s AS distance FROM {{t}}{where} "
                       f"ORDER BY {{vec}} {op} %(q)s LIMIT %(k)s")

    def _explain(self, cur: Any, sql: Any, vec: np.ndarray, k: int) -> str:
        explain = require("psycopg", "pgvector").sql.SQL("EXPLAIN ") + sql
        rows = cur.execute(explain, {"q": vec, "k": int(k)}, prepare=False).fetchall()
        return _VECTOR_LITERAL.sub("$query_vector", "\n".join(r[0] for r in rows))

    def _index_used(self, plan: str) -> bool:
        names = [n for n, _ in self._vector_indexes()]
        return any(re.search(rf"Index (Only )?Scan using \"?{re.escape(n)}\"?\b", plan)
                   for n in names)

    def exists(self) -> bool:
        """The table is there (a table with no rows counts)."""
        found = self.conn.execute("SELECT to_regclass(%s)", (self._regname(),)).fetchone()[0]
        self.conn.rollback()
        return found is not None

    def location(self) -> str:
        return f"table {self.table} in database {self.url.path.lstrip('/') or 'postgres'}"

    def count(self) -> int:
        if self.conn.execute("SELECT to_regclass(%s)", (self._regname(),)).fetchone()[0] is None:
            self.conn.rollback()
            return 0
        n = self.conn.execute(self._q("SELECT count(*) FROM {t}")).fetchone()[0]
        self.conn.rollback()
        return int(n)

    def stored_ids(self) -> list[str]:
        if self.conn.execute("SELECT to_regclass(%s)", (self._regname(),)).fetchone()[0] is None:
            self.conn.rollback()
            return []
        rows = self.conn.execute(self._q("SELECT {id} FROM {t}")).fetchall()
        self.conn.rollback()
        return [r[0] for r in rows]

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Server and pgvector versions, table, its vector indexes and size."""
        conn = self.conn
        server = conn.execute("SHOW server_version").fetchone()[0]
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
        info = {"server": f"PostgreSQL {server}", "pgvector": ext[0] if ext else None,
                "table": self.table,
                "indexes": [_index_info(n, d) for n, d in self._vector_indexes()],
                "size_bytes": int(conn.execute("SELECT pg_total_relation_size(%s)",
                                               (self._regname(),)).fetchone()[0])}
        conn.rollback()
        return info


def _index_info(name: str, definition: str) -> dict[str, Any]:
    kind = "hnsw" if " using hnsw " in definition.lower() else "ivfflat"
    params = dict(re.findall(r"(\w+)='?(\d+)'?", definition.split(" WITH ", 1)[1])) \
        if " WITH " in definition else {}
    # PostgreSQL leaves the type's default operator class (vector_l2_ops) out of indexdef
    metric = next((m for op, m in _METRIC_OF_OPCLASS.items() if op in definition), "l2")
    return {"name": name, "kind": kind, "metric": metric,
            "params": {k: int(v) for k, v in params.items()}}


def _pg_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
