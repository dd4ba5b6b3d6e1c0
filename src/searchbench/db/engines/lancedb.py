"""LanceDB, embedded: ``lancedb://./lance?table=docs``.

The table holds ``id`` (string, the searchbench id), ``vector`` (fixed-size float32
list), ``text`` and one column per metadata field (so ``--filter`` is plain SQL on them:
``"lang = 'en' AND year > 2020"``). searchbench's record (metric, dimension, provenance,
index build) is the metadata key ``searchbench`` of the ``id`` column: it travels with the
table and is updated by each load and build.

Beyond the protocol, :meth:`LanceDBStore.build_text_index`, :meth:`~LanceDBStore.text_search`
and :meth:`~LanceDBStore.hybrid_search` expose LanceDB's BM25 index and its hybrid (RRF)
search from Python.

Index kinds: ``ivf_hnsw_sq`` (search ``ef``, ``nprobes``) and ``ivf_pq`` (search
``nprobes``, ``refine_factor``); exact search bypasses the index. Every search runs
``explain_plan()``: ``ANNSubIndex`` in the plan is the evidence that the index answered.
Traps reported there: a metric other than the index's silently scans flat (the adapter
always searches with the table's metric), and rows added after the build are scanned
flat until the index is rebuilt or optimized (the plan shows a union with a flat scan).

Distances: LanceDB's ``_distance`` is ``1 − cos`` (cosine), ``1 − ⟨q, x⟩`` (dot: minus
1 gives searchbench's −⟨q, x⟩) and ‖q − x‖² (l2) when computed on the vectors. Straight
from a quantized index (no ``refine_factor``, no flat rows) they are the index's
*estimates*, and for cosine in the unit of its normalised-L2 space, ‖q̂ − x̂‖² = 2(1 − cos):
halved here, still an estimate (the plan says so).
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..._util import package_version, utc_now
from ...errors import (
    BackendError,
    ConfigError,
    DataFormatError,
    SearchbenchError,
    SearchbenchWarning,
    require,
    user_stacklevel,
)
from ..base import (
    Local,
    ParamSpec,
    Rows,
    StoreHits,
    StoreURL,
    VectorStore,
    advice,
    check_params,
)
from ._common import SIDECAR_FORMAT, first_line, metadata_value, parse_record, size_on_disk

_RESERVED = ("id", "vector", "text")
_LANCE_METRIC = {"cosine": "cosine", "ip": "dot", "l2": "l2"}
_KIND_PARAMS = {"ivf_hnsw_sq": {"num_partitions", "m", "ef_construction"},
                "ivf_pq": {"num_partitions", "num_sub_vectors", "num_bits"}}


class LanceDBStore(VectorStore):
    """LanceDB embedded: IVF_HNSW_SQ and IVF_PQ indexes, exact scan by bypassing the index,
    SQL filters.

    One LanceDB table in a local folder."""

    engine: ClassVar[str] = "lancedb"
    local: ClassVar[Local | None] = Local(
        "folder", "lancedb://./lance?table=docs",
        ParamSpec("table", str, "docs", "the table (a folder <table>.lance)", "url"),
        "LanceDB table")
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("num_partitions", int, None, "IVF partitions (default: LanceDB's, from "
                  "the row count)", when="build", low=1),
        ParamSpec("m", int, 20, "ivf_hnsw_sq: edges per node of each partition's graph",
                  when="build", low=2),
        ParamSpec("ef_construction", int, 300, "ivf_hnsw_sq: candidates kept while building",
                  when="build", low=1),
        ParamSpec("num_sub_vectors", int, None, "ivf_pq: sub-vectors per code (default: "
                  "LanceDB's, from the dimension; must divide it)", when="build", low=1),
        ParamSpec("num_bits", int, 8, "ivf_pq: bits per sub-vector code", when="build",
                  low=4, high=8),
        ParamSpec("nprobes", int, 20, "IVF partitions searched", low=1),
        ParamSpec("maximum_nprobes", int, None, "IVF partitions searched at most when the "
                  "first nprobes hold fewer than k rows (0: no limit; default: nprobes, so "
                  "an answer can hold only the probed partitions' rows)", low=0),
        ParamSpec("ef", int, None, "ivf_hnsw_sq: candidates kept while searching each "
                  "partition's graph (default: LanceDB's; raised to k when smaller)", low=1),
        ParamSpec("refine_factor", int, None, "re-rank refine_factor × k candidates by their "
                  "exact distance (needed for IVF_PQ's recall)", low=1),
        ParamSpec("fast_search", bool, False, "search the index only (skip rows added after "
                  "the build)"),
    )
    index_kinds: ClassVar[tuple[str, ...]] = ("ivf_hnsw_sq", "ivf_pq")

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self._lancedb: Any = require("lancedb", "lancedb")
        self._pa: Any = require("pyarrow", "lancedb")
        self._db: Any = None
        self._table: Any = None
        self._record: dict[str, Any] | None = None

    # -- opening ----------------------------------------------------------------------
    def _connect(self) -> Any:
        if self._db is None:
            self._db = self._call("connect", self._lancedb.connect, str(self.root))
        return self._db

    def root_text(self) -> str:
        return str(self.root)

    def exists(self) -> bool:
        return self.name in self._call("list tables", lambda: list(
            self._connect().list_tables().tables))

    def _open(self) -> Any:
        """The table (opened once; None when it does not exist)."""
        if self._table is None and self.exists():
            self._table = self._call("open", self._connect().open_table, self.name)
            self._record = _record(self._table.schema, self.where)
        return self._table

    # -- the record -------------------------------------------------------------------
    def _read_meta(self) -> dict[str, Any] | None:
        if self._open() is None:
            return None
        assert self._record is not None
        return dict(self._record)

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        """searchbench's record is the metadata of the ``id`` column (it travels with the
        table and, unlike the schema's, can be updated)."""
        self._call("record", self._table.update_field_metadata,
                   {"path": "id", "metadata": {"searchbench": _dumps(meta)}})
        self._record = dict(meta)

    def _create(self, schema: Any) -> None:
        self._table = self._call("create", self._connect().create_table, self.name,
                                 schema=schema)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SearchbenchError:  # already ours (a nested call)
            raise
        except ValueError as exc:  # LanceDB's answer to a bad name or bad input
            raise ConfigError(f"{self.where}: {what}: {exc}") from None
        except (OSError, RuntimeError) as exc:
            kind, hint = advice(exc, self.engine, self.root_text())
            raise kind(f"{self.where}: {what} failed: {first_line(exc)}; {hint}") from None

    # -- writing ----------------------------------------------------------------------
    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        """The table's columns come from every row of the first load (metadata fields
        included)."""
        schema = self._arrow(rows.ids, rows.vectors, rows.texts, rows.metadata).schema
        index = schema.get_field_index("id")
        schema = schema.set(index, schema.field(index).with_metadata(
            {"searchbench": _dumps(meta)}))
        self._create(schema)
        self._record = dict(meta)

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        batch = self._arrow(rows.ids, rows.vectors, rows.texts, rows.metadata)
        self._call("add", self._table.add, self._conform(batch))

    def _arrow(self, ids: list[str], x: np.ndarray, texts: Sequence[str] | None,
               metadata: Sequence[Mapping[str, Any]] | None) -> Any:
        pa = self._pa
        columns: dict[str, Any] = {
            "id": pa.array(ids, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()),
                                                        x.shape[1]),
            "text": pa.array(list(texts) if texts is not None else [None] * len(ids),
                             pa.string()),
        }
        if metadata is not None:
            keys = sorted({str(k) for m in metadata for k in m})
            for key in keys:
                if key in _RESERVED:
                    raise DataFormatError(f"metadata field {key!r} is reserved (the table "
                                          f"holds {', '.join(_RESERVED)}); rename it")
                values = [None if key not in m else metadata_value(m[key], doc, key)
                          for doc, m in zip(ids, metadata, strict=True)]
                try:
                    columns[key] = pa.array(values)
                except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise DataFormatError(f"metadata field {key!r} mixes types ({exc}); "
                                          "expected one type per field") from None
        return pa.table(columns)

    def _conform(self, rows: Any) -> Any:
        """``rows`` cast to the stored table's schema (its columns, its types; a metadata
        field none of these rows has is null)."""
        schema = self._table.schema
        if not set(rows.column_names) <= set(schema.names):
            raise ConfigError(f"{self.where} has columns {', '.join(schema.names)}; the rows "
                              f"to load have {', '.join(rows.column_names)}")
        for f in schema:
            if f.name not in rows.column_names:
                rows = rows.append_column(f.name, self._pa.nulls(len(rows), f.type))
        plain = self._pa.schema([self._pa.field(f.name, f.type, f.nullable) for f in schema])
        try:
            return rows.select(schema.names).cast(plain)
        except (self._pa.ArrowInvalid, self._pa.ArrowTypeError, ValueError) as exc:
            raise ConfigError(f"{self.where}: the rows to load do not fit its columns "
                              f"({exc})") from None

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """The parameters of ``kind`` only (another kind's is refused)."""
        wrong = sorted(set(given) - _KIND_PARAMS[kind])
        if wrong:
            raise ConfigError(f"lancedb build parameter {wrong[0]!r} does not apply to {kind}; "
                              f"valid for {kind}: {', '.join(sorted(_KIND_PARAMS[kind]))}")
        return {s.name: given.get(s.name, s.default) for s in self.params
                if s.name in _KIND_PARAMS[kind]}

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        index = require("lancedb.index", "lancedb")
        cls = index.IvfHnswSq if kind == "ivf_hnsw_sq" else index.IvfPq
        config = cls(distance_type=_LANCE_METRIC[meta["metric"]],
                     **{k: v for k, v in params.items() if v is not None})
        started = time.perf_counter()
        try:
            self._table.create_index("vector", config=config, replace=True)
        except (ValueError, RuntimeError, OSError) as exc:
            error, hint = advice(exc, self.engine, str(self.root))
            raise error(f"{self.where}: building {kind} failed: {first_line(exc)}; "
                        f"{hint}") from None
        seconds = time.perf_counter() - started
        if (covered := self._indexed_rows()) < (total := self.count()):
            warnings.warn(f"{self.where}: LanceDB built the {kind} index over {covered} of "
                          f"{total} rows (it trains nothing on too few rows); searches scan "
                          "the rest flat and report index_used=False", SearchbenchWarning,
                          stacklevel=user_stacklevel())
        return seconds

    def _indexed_rows(self) -> int:
        return sum(int(getattr(self._table.index_stats(ix.name), "num_indexed_rows", 0) or 0)
                   for ix in self._table.list_indices())

    # -- reading ----------------------------------------------------------------------
    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, params, filter, meta, exact=False)

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        return self._search(queries, k, {}, filter, meta, exact=True)

    def _query(self, vectors: np.ndarray, k: int, given: Mapping[str, Any],
               filter: str | None, metric: str, exact: bool) -> Any:
        query = (self._table.search(vectors, vector_column_name="vector")
                 .distance_type(_LANCE_METRIC[metric]).limit(k)
                 .select(["id", "_distance"]))
        if exact:
            query = query.bypass_vector_index()
        query = _with_params(query, given)
        if given.get("fast_search"):
            query = query.fast_search()
        if filter:
            query = query.where(filter, prefilter=True)
        return query

    def widen(self, params: Mapping[str, Any], depth: int) -> dict[str, Any] | None:
        """An IVF search returns only rows of the ``nprobes`` partitions it probes (with
        ``nprobes=1`` of 16 partitions, a search for 1,280 of 5,000 rows returned 367–387):
        ask again with ``maximum_nprobes=0``, so LanceDB probes further partitions only
        for the queries whose first ``nprobes`` hold fewer rows than asked."""
        if params.get("maximum_nprobes") == 0:
            return None
        return {**params, "maximum_nprobes": 0}

    def _search(self, q: np.ndarray, k: int, given: Mapping[str, Any], filter: str | None,
                record: Mapping[str, Any], exact: bool) -> StoreHits:
        metric = str(record["metric"])
        raised = given.get("ef") is not None and given["ef"] < k
        if raised:  # LanceDB refuses ef < k; Qdrant and hnswlib raise it silently
            given = {**given, "ef": k}
        try:
            plan = self._query(q[0], k, given, filter, metric, exact).explain_plan(True)
            table = self._query(q, k, given, filter, metric, exact).to_arrow()
        except ValueError as exc:  # LanceDB reports bad SQL and bad parameters this way
            raise ConfigError(f"{self.where}: {exc}") from None
        except (RuntimeError, OSError) as exc:
            if str(exc).startswith("Invalid input"):  # a filter LanceDB cannot parse
                raise ConfigError(f"{self.where}: {exc}") from None
            raise BackendError(f"{self.where}: search failed: {exc}") from None
        used = "ANNSubIndex" in plan
        estimated = used and "KNNVectorDistance" not in plan
        dist = _to_knn(table["_distance"].to_numpy().astype(np.float64), record["metric"],
                       estimated)
        out_ids, out_dist = _per_query(table, dist, len(q))
        note = ("\n(distances: the index's quantized estimates)" if estimated else "")
        note += f"\n(ef raised to k={k}: LanceDB requires ef ≥ k)" if raised else ""
        if used:
            note += self._unindexed_note()
        return StoreHits(out_ids, out_dist, used, plan.strip() + note, params=dict(given))

    def _unindexed_note(self) -> str:
        """Rows the index does not cover (added after the build): scanned flat."""
        late = sum(int(getattr(self._table.index_stats(ix.name), "num_unindexed_rows", 0) or 0)
                   for ix in self._table.list_indices())
        return (f"\n({late} rows added after the build are scanned flat until the index is "
                "rebuilt)") if late else ""

    # -- LanceDB's full-text and hybrid search (Python API; not part of the protocol) -------
    def build_text_index(self, **options: Any) -> float:
        """Build LanceDB's full-text (BM25) index on the ``text`` column; seconds taken.

        ``options`` are ``lancedb.index.FTS``'s (``stem``, ``remove_stop_words``,
        ``language``, ``base_tokenizer``, ...); they are recorded in the provenance."""
        record = self._require_meta()
        index = require("lancedb.index", "lancedb")
        try:
            config = index.FTS(**options)
        except TypeError as exc:
            raise ConfigError(f"{self.where}: full-text index option: {exc}") from None
        if not self._table.count_rows("text IS NOT NULL"):
            raise ConfigError(f"{self.where} holds no text; load texts to search them")
        started = time.perf_counter()
        self._call("full-text index", self._table.create_index, "text", config=config,
                   replace=True)
        seconds = time.perf_counter() - started
        record["provenance"] = {**(record.get("provenance") or {}), "text_index": {
            "kind": "fts", "params": dict(options), "build_seconds": round(seconds, 3),
            "built": utc_now()}}
        self._write_meta(record)
        return seconds

    def text_search(self, texts: Sequence[str], k: int, *, filter: str | None = None
                    ) -> StoreHits:
        """BM25 top-``k`` of each query text through LanceDB's full-text index; distances
        are −score (smaller = closer, like every store distance)."""
        self._require_meta()
        rows: list[list[str]] = []
        dists: list[np.ndarray] = []
        for text in texts:
            query = self._table.search(str(text), query_type="fts").limit(k).select(["id"])
            table = self._fetch(query.where(filter) if filter else query)
            rows.append([str(i) for i in table["id"].to_pylist()])
            dists.append(-table["_score"].to_numpy().astype(np.float64))
        return StoreHits(rows, dists, True, "LanceDB full-text index (BM25)")

    def hybrid_search(self, texts: Sequence[str], queries: np.ndarray, k: int, *,
                      params: Mapping[str, Any] | None = None, filter: str | None = None
                      ) -> StoreHits:
        """LanceDB's hybrid search: its vector top-``k`` (with search ``params``) and its
        BM25 top-``k`` fused by its default reranker (RRF, k = 60); distances are −fused
        score."""
        given = check_params(self.engine, self.params, params or {}, "search")
        record, q = self._queries(queries, k, filter)
        if len(texts) != len(q):
            raise DataFormatError(f"{len(texts)} query texts for {len(q)} query vectors")
        rows: list[list[str]] = []
        dists: list[np.ndarray] = []
        for text, vector in zip(texts, q, strict=True):
            query = (self._table.search(query_type="hybrid", vector_column_name="vector")
                     .vector(vector).text(str(text))
                     .distance_type(_LANCE_METRIC[record["metric"]]).limit(k).select(["id"]))
            query = _with_params(query, given)
            table = self._fetch(query.where(filter) if filter else query)
            rows.append([str(i) for i in table["id"].to_pylist()])
            dists.append(-table["_relevance_score"].to_numpy().astype(np.float64))
        return StoreHits(rows, dists, None, "LanceDB hybrid: vector + full-text, RRF",
                         params=dict(given))

    def _fetch(self, query: Any) -> Any:
        try:
            return query.to_arrow()
        except ValueError as exc:
            raise ConfigError(f"{self.where}: {exc}") from None
        except (RuntimeError, OSError) as exc:
            raise BackendError(f"{self.where}: search failed: {exc}") from None

    def count(self) -> int:
        table = self._open()
        return 0 if table is None else int(table.count_rows())

    def stored_ids(self) -> list[str]:
        table = self._open()
        if table is None:
            return []
        column = table.search().select(["id"]).limit(None).to_arrow()["id"]
        return [str(i) for i in column.to_pylist()]

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        indices = []
        for ix in self._table.list_indices():
            stats = self._table.index_stats(ix.name)
            indices.append({"name": ix.name, "type": str(ix.index_type),
                            "distance_type": getattr(stats, "distance_type", None),
                            "indexed_rows": getattr(stats, "num_indexed_rows", None),
                            "unindexed_rows": getattr(stats, "num_unindexed_rows", None),
                            "details": _plain(getattr(ix, "index_details", None))})
        built = (meta.get("provenance") or {}).get("index")
        return {"version": package_version("lancedb"), "table": self.name,
                "path": str(self.root), "indices": indices,
                "index": {**built, "indexed_rows": self._indexed_rows()} if built else None,
                "size_bytes": size_on_disk(self.root / f"{self.name}.lance")}

    def close(self) -> None:
        self._table = None
        self._db = None

    def drop(self) -> None:
        """Delete the table (used by tests and `--replace`)."""
        self.close()
        shutil.rmtree(self.root / f"{self.name}.lance", ignore_errors=True)
        self._record = self._known = None


def _dumps(meta: Mapping[str, Any]) -> str:
    return json.dumps({**meta, "format": SIDECAR_FORMAT}, default=str)


def _with_params(query: Any, given: Mapping[str, Any]) -> Any:
    """``query`` with the search parameters set (``nprobes`` first: it sets LanceDB's
    minimum and maximum, so a ``maximum_nprobes`` must come after it)."""
    for name, value in sorted(given.items(), key=lambda item: item[0] != "nprobes"):
        if value is not None and name != "fast_search":
            query = getattr(query, name)(value)
    return query


def _record(schema: Any, where: str) -> dict[str, Any]:
    """searchbench's record from the ``id`` column's metadata."""
    names = schema.names
    raw = (schema.field("id").metadata or {}).get(b"searchbench") if "id" in names else None
    if raw is None:
        raise ConfigError(f"{where} was not made by searchbench (no 'searchbench' metadata "
                          "on its id column); load a new table with `searchbench db load`")
    return parse_record(raw, where, "schema metadata")


def _per_query(table: Any, dist: np.ndarray, n: int) -> tuple[list[list[str]],
                                                               list[np.ndarray]]:
    """Rows of a multi-vector search grouped by ``query_index`` (order kept)."""
    which = table["query_index"].to_numpy() if "query_index" in table.column_names \
        else np.zeros(len(dist), dtype=np.int64)
    ids = table["id"].to_pylist()
    order = np.argsort(which, kind="stable")
    cuts = np.searchsorted(which[order], np.arange(n + 1))
    spans = list(itertools.pairwise(cuts))
    return [[ids[j] for j in order[a:b]] for a, b in spans], [dist[order[a:b]] for a, b in spans]


def _to_knn(dist: np.ndarray, metric: str, estimated: bool) -> np.ndarray:
    """LanceDB's ``_distance`` in searchbench's convention (see the module docstring)."""
    if metric == "ip":
        return dist - 1.0
    if metric == "cosine" and estimated:
        return dist / 2.0
    return dist


def _plain(value: Any) -> Any:
    """LanceDB's index details as plain JSON values (runtime hints dropped)."""
    if not isinstance(value, dict):
        return None
    return json.loads(json.dumps({k: v for k, v in value.items() if k != "runtime_hints"},
                                 default=str))
