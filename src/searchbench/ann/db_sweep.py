"""Sweep a vector database's own search parameters (``searchbench ann sweep --db URL``).

For every setting of the store's search-time parameters (the cartesian grid of the values
given; others keep the engine's defaults), through the database's own client:

- **knn_recall@k against two ground truths**: the database's ``exact_search`` (its own
  brute force: what its index approximates) and searchbench's :func:`exact_knn` (float64,
  on the vectors searchbench embedded for the same ids). They can differ because the
  engine computes in float32 or stores vectors quantised (usearch's default is bf16), may
  order ties otherwise, and converts its distance (e.g. a similarity or a non-squared L2)
  before searchbench reads it. The first isolates the index; the second is what the
  relevance cost is measured against. Under ``filter`` only the first exists (searchbench
  cannot evaluate the engine's filter syntax): recall is then against the database's
  filtered exact search, and so is the relevance cost.
- **speed**: batch QPS (all queries in one ``search`` call, timed until stable as in
  :mod:`.sweep`), single-query latency p50/p95/p99, and concurrent QPS and latencies with
  ``concurrency`` threads each sending one query per call (the store must allow
  concurrent ``search`` calls; ``concurrency=1`` searches from the calling thread).
- **build time and index size** as the store's ``describe()`` reports them (``index``
  → ``build_seconds``, ``size_bytes``; ``None`` where the engine does not say).
- **relevance cost** (ΔnDCG@10, ΔR@100 with the paired test) from a
  :class:`~searchbench.ann.relevance.RelevanceContext`, as in the FAISS sweeps.
- **silent exactness**: when an approximate answer is expected (the engine declares an ANN
  index, or ``expect_approximate=True``), a point whose search did not use the index
  (``index_used`` False) or whose knn_recall against the engine's exact search is 1.0 on
  every query is flagged, with the engine's plan and index state as evidence.

The result is a :class:`~searchbench.ann.sweep.SweepResult`: ``searchbench ann report``
draws the same Pareto plots and tables as for the library sweeps.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import progress as steps
from ..db import StoreHits, VectorStore, check_params
from ..errors import (
    BackendError,
    ConfigError,
    DataFormatError,
    SearchbenchWarning,
    user_stacklevel,
)
from ..knn import GroundTruth, as_matrix, check_metric, exact_knn
from ._timing import machine_info, timed_batch, timed_single, warn_unstable
from .recall import knn_recall, one_recall_at
from .relevance import RelevanceContext
from .sweep import SweepResult

__all__ = ["EXPLAIN_REFERENCES", "StoreVectors", "described", "parse_db_param",
           "run_db_sweep", "search_grid", "store_vectors"]

Progress = Callable[[str], None]

EXPLAIN_REFERENCES = (
    "knn_recall is measured against two exact answers. 'vs engine exact' uses the "
    "database's own exact search on its stored vectors: the loss of its index alone. "
    "'vs searchbench exact' uses searchbench's exact_knn in float64 on the vectors "
    "searchbench embedded for the same ids. They differ when the engine computes in "
    "float32 or stores vectors quantised (e.g. usearch bf16, int8), orders tied distances "
    "otherwise, or converts its distance (a similarity, a non-squared L2) with rounding; "
    "a gap at every setting, exact search included, comes from the stored vectors, not "
    "from the index.")


@dataclass
class StoreVectors:
    """searchbench's own vectors of a store's units, with what a sweep scores them by.

    ``unit_ids`` are the store's rows (documents, or chunks ``doc#start-end`` cut with the
    store's recorded chunker and model), ``unit_docs`` their documents; ``base`` and
    ``queries`` are embedded with the store's model (through the embedding cache, so the
    vectors :func:`~searchbench.retrieval.stores.load_store` loaded are read back).
    :meth:`relevance` gives the chunk-level (chunk judgments cut from these very units)
    and document-level (a document at its best chunk) contexts."""

    base: np.ndarray
    queries: np.ndarray
    unit_ids: list[str]
    unit_docs: list[str]
    query_ids: list[str]
    evalset: Any
    chunk_qrels: Any
    model: dict[str, Any]
    chunking: str

    @property
    def chunked(self) -> bool:
        return self.chunk_qrels is not None

    def relevance(self) -> dict[str, RelevanceContext]:
        """``{"doc": …}`` and, for a chunked store, ``"chunk"`` (first: the main one)."""
        es = self.evalset
        doc = RelevanceContext(self.unit_docs, self.query_ids, es.qrels,
                               prepare=es.prepare_run)
        if not self.chunked:
            return {"doc": doc}
        return {"chunk": RelevanceContext(self.unit_ids, self.query_ids, self.chunk_qrels),
                "doc": doc}


def store_vectors(store: VectorStore, evalset: Any, model: str | None = None, *,
                  quiet: bool | None = None) -> StoreVectors:
    """The units of ``evalset`` as ``store`` holds them — split by the store's recorded
    chunker in its model's tokens, embedded with its model and prefixes — and the
    judged queries (``model`` overrides the recorded one; a different model identity is
    refused). The store's ids must be exactly these units."""
    # lazy: loads retrieval on first use
    from ..retrieval import DbRetriever, chunk_qrels, chunking_of

    r = DbRetriever(store, model=model, quiet=quiet)
    r.index(evalset.corpus)  # the store's chunker; its ids checked against the units
    units = r.units
    assert units is not None  # indexed just above
    queries = evalset.judged_queries
    base = r.unit_vectors()
    qv = r.query_vectors(queries.texts())
    docs = np.repeat(np.asarray(units.doc_ids, dtype=object),
                     np.diff(np.append(units.doc_starts, len(units)))).tolist()
    judged = (chunk_qrels(units.chunks, evalset.qrels, evalset.evidence)
              if units.chunks is not None else None)
    return StoreVectors(base, qv, list(units.ids), docs, list(queries.ids), evalset, judged,
                        r.encoder.describe(), chunking_of(r.chunker))


def parse_db_param(text: str) -> tuple[str, list[str]]:
    """``"expansion_search=10,20,40"`` → ``("expansion_search", ["10", "20", "40"])``;
    values are typed later by the engine's :class:`~searchbench.db.ParamSpec`."""
    name, sep, values = text.partition("=")
    parsed = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not name.strip() or not parsed:
        raise ConfigError(f"--param {text!r}: expected NAME=V1,V2,..., e.g. "
                          "expansion_search=10,20,40")
    return name.strip(), parsed


def search_grid(store: VectorStore, params: Mapping[str, Sequence[Any]]
                ) -> list[dict[str, Any]]:
    """Every combination of the given search-parameter values, each validated by the
    engine (an unknown name lists the valid ones; a build-time name says to rebuild)."""
    build = {s.name for s in store.params if s.when == "build"}
    for name in params:
        if name in build:
            raise ConfigError(f"{name} is a build parameter of {store.engine}; the sweep "
                              "varies search parameters only (it never rebuilds your "
                              "index): rebuild it with that setting (searchbench db load "
                              "--param), then sweep")
    names = list(params)
    grid = [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(params[n] for n in names))]
    return [check_params(store.engine, store.params, g, "search") for g in grid]


def run_db_sweep(
    store: VectorStore,
    queries: np.ndarray,
    doc_ids: Sequence[str],
    params: Mapping[str, Sequence[Any]] | None = None,
    *,
    base: np.ndarray | None = None,
    k: int = 10,
    filter: str | None = None,
    concurrency: int = 4,
    repeats: int = 3,
    warmup: int = 20,
    max_single: int = 500,
    relevance: Any = None,
    expect_approximate: bool | None = None,
    progress: Progress | None = None,
    quiet: bool | None = None,
    unit_docs: Sequence[str] | None = None,
) -> SweepResult:
    """Sweep ``store`` over the grid of ``params`` (search-time; see module doc).

    ``doc_ids`` are the ids of the rows of ``base`` (searchbench's vectors of the stored
    collection, for its float64 exact search) and must equal the collection's ids;
    ``queries`` are embedded with the collection's model. ``relevance`` (a
    :class:`~searchbench.ann.relevance.RelevanceContext` over ``doc_ids``) adds ΔnDCG@10 /
    ΔR@100 per point; ``{level: context}`` (chunk and doc level over a chunked store,
    :meth:`StoreVectors.relevance`) gives each level's cost, the first one as the point's
    ``relevance``. ``unit_docs`` (the document of each row, for a chunked store) adds per
    point the count of queries whose deep answer held fewer than ``k`` distinct documents
    and of queries the engine answered with fewer rows than asked (its candidate-list cap),
    apart from knn_recall. ``expect_approximate`` None: True when the engine declares an
    ANN index kind. All inputs are checked before the first timed search.
    """
    say = progress or (lambda _m: None)
    info = described(store)
    metric = check_metric(info["metric"])
    grid = search_grid(store, params or {})
    queries = as_matrix(queries, "query vectors")
    position = _check_ids(store, doc_ids, info)
    if base is not None and base.shape != (len(doc_ids), info["dim"]):
        raise ConfigError(f"searchbench's vectors have shape {base.shape}; expected "
                          f"({len(doc_ids)}, {info['dim']}) like the collection")
    contexts = (dict(relevance) if isinstance(relevance, Mapping) else
                {} if relevance is None else {"doc": relevance})
    deepest = max((c.depth for c in contexts.values()), default=0)
    depth = min(max(k, deepest), len(doc_ids))
    expect = bool(store.index_kinds) if expect_approximate is None else expect_approximate
    t0 = time.perf_counter()
    if store.has_exact:
        engine_hits = store.exact_search(queries, depth, filter=filter)
        engine_s = time.perf_counter() - t0
        engine_gt: GroundTruth | None = _as_truth(engine_hits, position, depth, metric,
                                                  "engine exact search")
        ours = None if base is None or filter else exact_knn(base, queries, depth, metric)
    else:  # Chroma: no exact mode, so searchbench's exact search is the only reference
        if base is None or filter:
            raise ConfigError(f"{store.engine} has no exact search, so the sweep needs "
                              "searchbench's exact search: give the collection's vectors "
                              "(the evaluation set and model it was loaded with) and no "
                              "filter")
        ours = exact_knn(base, queries, depth, metric)
        engine_s, engine_gt = time.perf_counter() - t0, None
    reference = ours if ours is not None else engine_gt
    say(f"{store.engine} exact search: {len(queries) / engine_s:,.0f} QPS"
        + ("" if ours is None else "; searchbench exact_knn done"))
    points = []
    with steps(len(grid), f"sweeping {store.engine}", quiet, unit="settings") as done:
        for sp in grid:
            pt = _point(store, sp, queries, k, filter, position, engine_gt, ours, base,
                        concurrency, repeats, warmup, max_single, info, expect)
            if contexts or unit_docs is not None:
                deep = store.search(queries, depth, params=sp, filter=filter)
                ids_deep = _id_matrix(deep, position, depth, pad=-1)
                pt["db"].update(_short_counts(deep, ids_deep, unit_docs, k, depth))
                costs = {level: ctx.cost(reference, {k: pt["_ids"], depth: ids_deep})
                         for level, ctx in contexts.items()}
                if costs:
                    pt["relevance"] = next(iter(costs.values()))
                    pt["db"]["relevance_by_level"] = costs
            pt.pop("_ids", None)
            vs_engine = pt["db"]["knn_recall_vs_engine_exact"]
            say(f"  {sp or '(defaults)'}: knn_recall@{k} {pt['knn_recall']['by_id']['mean']:.4f}"
                + (f" (vs engine exact {vs_engine['by_id']['mean']:.4f})" if vs_engine else "")
                + f", {pt['qps_batch']:,.0f} QPS"
                + (f"; {pt['db']['short_doc_queries']} queries with fewer than {k} documents "
                   f"in {depth} rows" if "short_doc_queries" in pt["db"] else "")
                + (f"; {pt['db']['short_row_queries']} answered with fewer rows than asked"
                   if pt["db"].get("short_row_queries") else ""))
            points.append(pt)
            done(1)
    _warn_silent(points, store.engine)
    meta = _meta(store, info, queries, metric, k, depth, filter, concurrency, expect,
                 engine_s, ours is not None)
    meta["timing"] = warn_unstable(points)
    if contexts:
        main = next(iter(contexts))
        meta["relevance"] = dict(contexts[main].describe(), level=main,
                                 levels=list(contexts), search_depths=sorted({k, depth}),
                                 against=("searchbench exact_knn" if ours is not None
                                          else "the engine's exact search"
                                          + (" under the filter" if filter else "")))
    return SweepResult(points, meta)


def _short_counts(hits: StoreHits, ids: np.ndarray, unit_docs: Sequence[str] | None,
                  k: int, depth: int) -> dict[str, Any]:
    """Queries answered with fewer rows than asked (the engine's candidate list capped
    the answer) and, over a chunked store, queries whose ``depth`` rows held fewer than
    ``k`` distinct documents: kept apart from knn_recall, which they do not measure."""
    rows = np.fromiter((len(r) for r in hits.ids), dtype=np.int64, count=len(hits.ids))
    out: dict[str, Any] = {"asked_rows": depth,
                           "short_row_queries": int((rows < depth).sum())}
    if unit_docs is not None:
        _, code = np.unique(np.asarray(list(unit_docs), dtype=object).astype(str),
                            return_inverse=True)
        docs = np.sort(np.where(ids >= 0, code[np.maximum(ids, 0)], -1), axis=1)
        new = np.ones(docs.shape, dtype=bool)
        new[:, 1:] = docs[:, 1:] != docs[:, :-1]
        distinct = (new & (docs >= 0)).sum(axis=1)
        out["short_doc_queries"] = int((distinct < k).sum())
    return out


def described(store: VectorStore) -> dict[str, Any]:
    """``store.describe()`` with ``dim`` (adapters may say ``dimension``); an empty or
    missing collection is an error."""
    info = dict(store.describe())
    info["dim"] = info.get("dim") or info.get("dimension")
    if not info.get("count") or not info["dim"] or not info.get("metric"):
        raise ConfigError(f"{info.get('url', store.engine)}: the collection is empty or does "
                          "not exist; load it first (searchbench db load)")
    return info


def _check_ids(store: VectorStore, doc_ids: Sequence[str],
               info: Mapping[str, Any]) -> dict[str, int]:
    """Row position of every id; the collection must hold exactly ``doc_ids``."""
    position = {d: i for i, d in enumerate(doc_ids)}
    if len(position) != len(doc_ids):
        raise DataFormatError("the evaluation set's document ids are not distinct")
    stored = store.stored_ids()
    extra = [s for s in stored if s not in position]
    have = set(stored)
    missing = [d for d in doc_ids if d not in have]
    if extra or missing:
        raise ConfigError(
            f"{info.get('url', store.engine)}: the collection's ids do not match the "
            f"evaluation set: {len(missing)} of its {len(doc_ids)} documents are not stored"
            f"{_examples(missing)} and {len(extra)} stored ids are not in it"
            f"{_examples(extra)}; load the evaluation set's corpus into this collection "
            "(searchbench db load) or choose the set it was loaded from")
    return position


def _examples(ids: Sequence[str]) -> str:
    return f" (e.g. {', '.join(repr(i) for i in ids[:3])})" if ids else ""


def _id_matrix(hits: StoreHits, position: Mapping[str, int], depth: int,
               pad: int) -> np.ndarray:
    """Row positions of the returned ids (n_queries × depth), ``pad`` where fewer came."""
    out = np.full((len(hits.ids), depth), pad, dtype=np.int64)
    for i, row in enumerate(hits.ids):
        got = [position[d] for d in row[:depth]]
        out[i, :len(got)] = got
    return out


def _distance_matrix(hits: StoreHits, depth: int) -> np.ndarray:
    out = np.full((len(hits.distances), depth), np.inf)
    for i, row in enumerate(hits.distances):
        out[i, :min(len(row), depth)] = row[:depth]
    return out


def _as_truth(hits: StoreHits, position: Mapping[str, int], depth: int, metric: str,
              what: str) -> GroundTruth:
    """The engine's exact answer as a :class:`GroundTruth`; a query with fewer than
    ``depth`` results (a selective filter) is padded with −2, an id no search returns."""
    ids = _id_matrix(hits, position, depth, pad=-2)
    short = int(sum(len(r) < depth for r in hits.ids))
    return GroundTruth(ids, _distance_matrix(hits, depth), metric, depth,
                       {"library": what, "plan": hits.plan, "queries_short": short})


def _point(store: VectorStore, sp: dict[str, Any], queries: np.ndarray, k: int,
           filter: str | None, position: Mapping[str, int], engine_gt: GroundTruth | None,
           ours: GroundTruth | None, base: np.ndarray | None, concurrency: int,
           repeats: int, warmup: int, max_single: int, info: Mapping[str, Any],
           expect: bool) -> dict[str, Any]:
    """One setting: timings, both recalls, the exactness evidence."""
    def search(q: np.ndarray) -> StoreHits:
        return store.search(q, k, params=sp, filter=filter)

    batch, hits = timed_batch(lambda: search(queries), len(queries), 1, repeats)
    single = timed_single(lambda i: search(queries[i:i + 1]), len(queries), warmup,
                           max_single, min(3, max(1, repeats)))
    conc = _concurrent(search, queries, concurrency, max_single)
    ids = _id_matrix(hits, position, k, pad=-1)
    vs_engine = (knn_recall(engine_gt, ids, k, found_distances=_distance_matrix(hits, k))
                 if engine_gt is not None else None)
    ours_recall = (knn_recall(ours, ids, k, base=base, queries=queries)
                   if ours is not None and base is not None else None)
    vs_ours = ours_recall.summary() if ours_recall is not None else None
    recall = vs_engine if vs_engine is not None else ours_recall
    reference = ours if ours is not None else engine_gt
    assert recall is not None and reference is not None  # ours whenever no engine_gt
    index = _index_facts(info)
    pt: dict[str, Any] = {
        "index": f"{store.engine} {index.get('kind') or 'scan'}",
        "library": f"{store.engine} {info.get('version') or ''}".strip(),
        "build": dict(index.get("params") or {}), "search": dict(sp), "k": k, "K": k,
        "knn_recall": vs_ours or recall.summary(),
        "one_recall_at_1": one_recall_at(reference, ids, 1),
        "build_wall_s": index.get("build_seconds"), "build_cpu_s": None,
        "index_bytes": index.get("size_bytes", info.get("size_bytes")),
        "db": {"knn_recall_vs_engine_exact": (vs_engine.summary() if vs_engine is not None
                                              else None),
               "knn_recall_vs_searchbench_exact": vs_ours,
               "index_used": hits.index_used, "plan": hits.plan, "filter": filter,
               **conc},
    }
    pt.update(batch)
    pt.update(single)
    pt["exactness"] = _exactness(hits, recall.by_id, expect, index, store.engine,
                                 "the engine's" if vs_engine is not None else "searchbench's")
    pt["_ids"] = ids
    return pt


def _index_facts(info: Mapping[str, Any]) -> dict[str, Any]:
    """``describe()['index']``, completed from the load provenance's ``index`` record
    (``searchbench db load`` writes kind, params and build_seconds there)."""
    described = info.get("index")
    index = dict(described) if isinstance(described, Mapping) else (
        {"kind": str(described)} if described else {})
    recorded = (info.get("provenance") or {}).get("index") or {}
    if isinstance(recorded, dict):
        index.setdefault("kind", recorded.get("kind"))
        index.setdefault("params", recorded.get("params") or {})
        if index.get("build_seconds") is None:
            index["build_seconds"] = recorded.get("build_seconds")
    return index


def _concurrent(search: Callable[[np.ndarray], StoreHits], queries: np.ndarray,
                threads: int, max_queries: int) -> dict[str, Any]:
    """QPS and latency percentiles with ``threads`` clients, one query per call."""
    n = min(max_queries, len(queries))

    def one(i: int) -> float:
        t0 = time.perf_counter()
        search(queries[i:i + 1])
        return time.perf_counter() - t0

    if threads == 1:  # one client: the calling thread, for stores bound to one thread
        t0 = time.perf_counter()
        lat = np.array([one(i) for i in range(n)])
        wall = time.perf_counter() - t0
    else:
        try:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(one, range(min(threads, n))))  # warm each client
                t0 = time.perf_counter()
                lat = np.fromiter(pool.map(one, range(n)), dtype=np.float64, count=n)
                wall = time.perf_counter() - t0
        except Exception as exc:
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise BackendError(f"concurrent searches from {threads} threads failed ({why}) "
                               "although one client worked: the store may not allow "
                               "concurrent clients; rerun with --concurrency 1") from exc
    p50, p95, p99 = np.percentile(lat, [50, 95, 99]) * 1e3
    return {"concurrency": threads, "qps_concurrent": n / wall, "concurrent_queries": n,
            "latency_concurrent_ms": {"p50": float(p50), "p95": float(p95),
                                      "p99": float(p99)}}


def _exactness(hits: StoreHits, recall: np.ndarray, expect: bool, index: Mapping[str, Any],
               engine: str, whose: str = "the engine's") -> dict[str, Any]:
    """Whether this point was answered exactly while an approximation was expected."""
    reasons = []
    if hits.index_used is False:
        reasons.append("the engine reports that its index was not used")
    if len(recall) and float(np.min(recall)) == 1.0:
        reasons.append(f"knn_recall against {whose} exact search is 1.0 on all "
                       f"{len(recall)} queries")
    state = {k: v for k, v in index.items() if k in ("kind", "built", "rows_indexed", "note")}
    flagged = expect and bool(reasons)
    note = ("" if expect else f"{engine} is expected to answer exactly (no ANN index "
            "declared): exact by design, not flagged")
    return {"flag": flagged, "expected_approximate": expect, "index_used": hits.index_used,
            "reasons": reasons if flagged else [], "plan": hits.plan, "index_state": state,
            "note": note}


def _warn_silent(points: list[dict[str, Any]], engine: str) -> None:
    """One warning naming the settings flagged as silently exact."""
    flagged = [p for p in points if p["exactness"]["flag"]]
    if not flagged:
        return
    names = "; ".join(f"{p['search'] or '(defaults)'}: {', '.join(p['exactness']['reasons'])}"
                      for p in flagged)
    warnings.warn(f"silent exactness: {len(flagged)} of {len(points)} {engine} settings "
                  f"answered exactly where an approximate index was expected ({names}); "
                  f"the engine's plan: {flagged[0]['exactness']['plan']}. Check the index "
                  "state before trusting their QPS as the index's",
                  SearchbenchWarning, stacklevel=user_stacklevel())


def _meta(store: VectorStore, info: Mapping[str, Any], queries: np.ndarray, metric: str,
          k: int, depth: int, filter: str | None, concurrency: int, expect: bool,
          engine_s: float, ours: bool) -> dict[str, Any]:
    described = {key: v for key, v in info.items() if key != "provenance"}
    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "metric": metric, "k": k, "K": k, "indexes": [f"{store.engine}"],
        "n_base": int(info.get("count") or 0), "n_queries": int(queries.shape[0]),
        "dim": int(info["dim"]),
        "exact": {"qps_batch": len(queries) / engine_s, "wall_s": engine_s,
                  "library": f"{store.engine} exact_search" if store.has_exact else
                  "searchbench exact_knn (the engine has no exact search)", "label":
                  f"exact ({store.engine})" if store.has_exact else "exact (searchbench)"},
        "ground_truth": {"knn_recall": "searchbench exact_knn (float64)" if ours else
                         "the engine's exact search" + (" under the filter" if filter
                                                        else ""),
                         "depth": depth},
        "db": {"engine": store.engine, "describe": described,
               "provenance": dict(info.get("provenance") or {}), "filter": filter,
               "concurrency": concurrency, "expect_approximate": expect,
               "references": EXPLAIN_REFERENCES,
               "note": "searchbench's exact search is not computed under a filter (the "
                       "filter is in the engine's syntax)" if filter else ""},
        "machine": machine_info(1),
    }
