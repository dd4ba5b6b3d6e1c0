"""Fusion of runs: reciprocal rank fusion and weighted sums of normalised scores.

- RRF (Cormack, Clarke & Büttcher, SIGIR 2009): ``score(d) = Σ_i 1 / (k + rank_i(d))``,
  ``rank_i`` 1-based in run i's ARCHITECTURE §3 order; a run that lacks d adds nothing.
- Weighted: ``score(d) = Σ_i w_i · norm_i(d)``, scores normalised per query and run by
  ``minmax`` ((s − min)/(max − min); 1 when max = min) or ``zscore`` ((s − mean)/std; 0 when
  std = 0). A run that lacks d contributes its lowest normalised score for that query.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import Corpus, Qrels, Queries, Run
from ..errors import ConfigError
from ..measures import evaluate
from ..vocab import FUSIONS, NORMS, canonical_fusion, canonical_norm, check_finite
from .base import Retriever, check_level
from .chunking import Chunker

__all__ = ["FUSIONS", "NORMS", "Hybrid", "SweepResult", "check_weights", "fuse", "rrf",
           "sweep_weights", "weighted"]



def _flatten(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(query_ids, doc_ids, scores, ranks)`` of every entry, ranks 1-based."""
    q = run.query_ids[run.query_codes()].astype(str)
    d = run.doc_vocab[run.doc_codes].astype(str)
    return q, d, run.scores, run.ranks() + 1


def _combine(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], name: str,
             base: dict[str, float] | None = None) -> Run:
    """Sum contributions ``(query_ids, doc_ids, values)`` per (query, doc) into a Run."""
    q = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, str)
    d = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, str)
    v = np.concatenate([p[2] for p in parts]) if parts else np.empty(0)
    qv, qi = np.unique(q, return_inverse=True)
    dv, di = np.unique(d, return_inverse=True)
    pair, inv = np.unique(qi.astype(np.int64) * max(len(dv), 1) + di, return_inverse=True)
    total = np.bincount(inv, weights=v, minlength=len(pair))
    pq, pd = pair // max(len(dv), 1), pair % max(len(dv), 1)
    if base:
        total = total + np.asarray([base.get(x, 0.0) for x in qv.tolist()])[pq]
    return Run.from_columns(qv[pq].tolist(), dv[pd].tolist(), total, name=name)


def rrf(runs: Sequence[Run], k: float = 60.0, name: str = "rrf") -> Run:
    """Reciprocal rank fusion: ``Σ_i 1/(k + rank_i(d))``."""
    k = check_finite(k, "RRF k (60 is the usual choice)", minimum=0)
    parts = []
    for run in runs:
        q, d, _, r = _flatten(run)
        parts.append((q, d, 1.0 / (k + r)))
    return _combine(parts, name)


def _normalise(run: Run, norm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-query normalised scores: ``(query_ids, doc_ids, normalised, per-query min)``."""
    norm = canonical_norm(norm)
    q, d, s, _ = _flatten(run)
    codes = run.query_codes()
    n = run.n_queries
    if norm == "minmax":
        lo = np.full(n, np.inf)
        hi = np.full(n, -np.inf)
        np.minimum.at(lo, codes, s)
        np.maximum.at(hi, codes, s)
        span = (hi - lo)[codes]
        out = np.where(span > 0, (s - lo[codes]) / np.where(span > 0, span, 1), 1.0)
    elif norm == "zscore":
        cnt = np.maximum(np.bincount(codes, minlength=n), 1)
        mean = np.bincount(codes, weights=s, minlength=n) / cnt
        var = np.bincount(codes, weights=(s - mean[codes]) ** 2, minlength=n) / cnt
        sd = np.sqrt(var)[codes]
        out = np.where(sd > 0, (s - mean[codes]) / np.where(sd > 0, sd, 1), 0.0)
    else:  # pragma: no cover - canonical_norm returned one of NORMS
        raise AssertionError(norm)
    low = np.full(n, np.inf)
    np.minimum.at(low, codes, out)
    return q, d, out, low


def weighted(runs: Sequence[Run], weights: Sequence[float] | None = None,
             norm: str = "minmax", name: str = "weighted") -> Run:
    """Weighted sum of per-query normalised scores (missing doc = run's lowest score)."""
    weights = check_weights(weights if weights is not None else [1.0 / len(runs)] * len(runs),
                            len(runs))
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    base: dict[str, float] = {}
    for run, w in zip(runs, weights, strict=True):
        q, d, s, low = _normalise(run, norm)
        codes = run.query_codes()
        parts.append((q, d, w * (s - low[codes])))
        for qid, lo in zip(run.query_ids.tolist(), low.tolist(), strict=True):
            base[qid] = base.get(qid, 0.0) + w * lo
    return _combine(parts, name, base)


def check_weights(weights: Sequence[float], n_runs: int, key: str = "weights",
                  item_key: Callable[[int], str] | None = None) -> list[float]:
    """One finite weight ≥ 0 per run, not all zero, as floats (ConfigError otherwise): a
    negative weight turns a run's ranking upside down, and all-zero weights give every
    document the same score (a ranking by doc id)."""
    weights = list(weights)
    if len(weights) != n_runs:
        raise ConfigError(f"{key} is {weights!r}: {len(weights)} weights for {n_runs} runs; "
                          "expected one finite number >= 0 per run")
    name = item_key or (lambda i: f"{key}[{i}]")
    checked = [check_finite(w, name(i), minimum=0) for i, w in enumerate(weights)]
    if not sum(checked) > 0:
        raise ConfigError(f"{key} is {weights!r}: all zero, so every document would get the "
                          "same score; expected at least one weight > 0")
    return checked


def fuse(runs: Sequence[Run], method: str = "rrf", *, rrf_k: float = 60.0,
         weights: Sequence[float] | None = None, norm: str = "minmax",
         name: str | None = None) -> Run:
    """``rrf`` or ``weighted`` fusion of ``runs`` (see module docstring)."""
    method = canonical_fusion(method)
    if method == "rrf":
        return rrf(runs, rrf_k, name=name or "rrf")
    if method == "weighted":
        return weighted(runs, weights, norm, name=name or f"weighted-{norm}")
    raise AssertionError(method)  # pragma: no cover - canonical_fusion returned one of FUSIONS


class Hybrid(Retriever):
    """Several retrievers over the same units, fused (RRF by default).

    Each child is searched ``depth`` deep (default ``max(k, 100)``) at the requested level;
    the fused run is cut to ``k``.
    """

    name = "hybrid"

    def __init__(self, retrievers: Sequence[Retriever], fusion: str = "rrf",
                 rrf_k: float = 60.0, weights: Sequence[float] | None = None,
                 norm: str = "minmax", depth: int | None = None) -> None:
        super().__init__()
        if len(retrievers) < 2:
            raise ConfigError("Hybrid needs at least two retrievers to fuse")
        fusion, norm = canonical_fusion(fusion), canonical_norm(norm)
        rrf_k = check_finite(rrf_k, "rrf_k", minimum=0)
        if weights is not None:
            weights = check_weights(weights, len(retrievers))
        self.retrievers = list(retrievers)
        self.fusion, self.rrf_k, self.weights, self.norm = fusion, rrf_k, weights, norm
        self.depth = depth

    def config(self) -> dict[str, Any]:
        return {"retriever": self.name, "fusion": self.fusion, "rrf_k": self.rrf_k,
                "weights": list(self.weights) if self.weights else None, "norm": self.norm,
                "depth": self.depth, "parts": [r.config() for r in self.retrievers]}

    def describe(self) -> dict[str, Any]:
        """Config plus the children's ``truncation`` and ``query_encoding`` (as
        :class:`~searchbench.retrieval.Dense` reports them), keyed by child name."""
        out = super().describe()
        for key in ("truncation", "query_encoding"):
            found = {r.name: r.describe()[key] for r in self.retrievers
                     if r.units is not None and r.describe().get(key)}
            if found:
                out[key] = found
        return out

    def index(self, corpus: Corpus, chunker: Chunker | None = None) -> Hybrid:
        """Index every child with the same (tokenizer-bound) chunker."""
        for r in self.retrievers:
            chunker = r._bind_chunker(chunker)
        self.chunker, self.corpus = chunker, corpus
        for r in self.retrievers:
            r.index(corpus, chunker=chunker)
            self.timings[f"index_s.{r.name}"] = r.timings.get("index_s", 0.0)
        self.units = self.retrievers[0].units
        return self

    def adopt(self) -> Hybrid:
        """Use the children as they are already indexed (by the caller, with one chunker:
        their units must be the same); returns ``self``. A caller that caches indexes
        (the pipeline, an experiment) fuses without indexing again."""
        units = [r._require_index() for r in self.retrievers]
        if any(u.ids != units[0].ids for u in units[1:]):
            raise ConfigError("Hybrid.adopt(): the retrievers hold different units (index "
                              "them with the same chunker)")
        first = self.retrievers[0]
        self.chunker, self.corpus, self.units = first.chunker, first.corpus, units[0]
        for r in self.retrievers:
            self.timings[f"index_s.{r.name}"] = r.timings.get("index_s", 0.0)
        return self

    def part_depth(self, k: int) -> int:
        """How deep each child is searched for a fused top ``k``."""
        return max(k, self.depth or 100)

    def search(self, queries: Queries, k: int = 100, level: str = "doc", *,
               part_runs: Sequence[Run] | None = None) -> Run:
        """Search every child :meth:`part_depth` deep at ``level`` and fuse, cut to ``k``.

        ``part_runs``: the children's runs computed earlier (one per child, in order, each
        at least :meth:`part_depth` deep for these queries): they are fused as they are,
        so a caller caching runs (an experiment grid) fuses without searching again."""
        units = self._require_index()
        level = check_level(level, k)
        depth = self.part_depth(k)
        t0 = time.perf_counter()
        if part_runs is None:
            runs = [r.search(queries, depth, level) for r in self.retrievers]
        elif len(part_runs) != len(self.retrievers):
            raise ConfigError(f"Hybrid.search(): {len(part_runs)} part runs for "
                              f"{len(self.retrievers)} retrievers")
        else:
            runs = list(part_runs)
        t1 = time.perf_counter()
        fused = fuse(runs, self.fusion, rrf_k=self.rrf_k, weights=self.weights,
                     norm=self.norm, name=self.name).truncate(k)
        parts = [r.metadata.get("timings", {}) for r in runs]
        encode = sum(t.get("encode_s", 0.0) for t in parts)
        self.timings["encode_s"] = encode
        self.timings["fuse_s"] = time.perf_counter() - t1
        self.timings["search_s"] = (sum(t.get("search_s", 0.0) for t in parts)
                                    + self.timings["fuse_s"] if part_runs is not None
                                    else max(time.perf_counter() - t0 - encode, 0.0))
        for r, t in zip(self.retrievers, parts, strict=True):
            self.timings[f"search_s.{r.name}"] = t.get("search_s", 0.0)
        fused.metadata.update(self.describe(), level=level, k=k, timings=dict(self.timings),
                              skipped_empty_docs=units.skipped_empty,
                              components=[{n: v for n, v in r.metadata.items()
                                           if n != "timings"} for r in runs])
        return fused


@dataclass
class SweepResult:
    """The weight chosen on the tune split, and its value on both splits."""

    measure: str
    weight: float
    tune: float
    test: float
    n_tune: int
    n_test: int
    table: list[dict[str, float]] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"weight {self.weight:.2f} (on run 1; run 2 gets {1 - self.weight:.2f}) "
                f"chosen on {self.n_tune} tune queries: {self.measure} tune {self.tune:.4f}, "
                f"held-out test ({self.n_test} queries) {self.test:.4f}")


def sweep_weights(runs: Sequence[Run], qrels: Qrels, measure: str = "nDCG@10",
                  grid: Sequence[float] | None = None, norm: str = "minmax",
                  test_fraction: float = 0.5, seed: int = 0) -> SweepResult:
    """Pick the weight of ``runs[0]`` (``runs[1]`` gets 1 − w) on a tune split of the judged
    queries; report the measure on the tune split *and* the held-out test split."""
    if not 0 < test_fraction < 1:
        raise ConfigError(f"test_fraction={test_fraction}: expected 0 < fraction < 1")
    grid = list(grid) if grid is not None else [i / 10 for i in range(11)]
    qids = qrels.query_ids.astype(str)
    perm = np.random.default_rng(seed).permutation(len(qids))
    test_ids = set(qids[perm[: round(len(qids) * test_fraction)]].tolist())
    table = []
    for w in grid:
        res = evaluate(qrels, weighted(runs, [w, 1 - w], norm), [measure])
        vals = res.scores[res.measures[0]]
        is_test = np.isin(res.query_ids.astype(str), list(test_ids))
        table.append({"weight": float(w), "tune": float(vals[~is_test].mean()),
                      "test": float(vals[is_test].mean())})
    best = max(table, key=lambda row: (row["tune"], -abs(row["weight"] - 0.5)))
    return SweepResult(measure, best["weight"], best["tune"], best["test"],
                       len(qids) - len(test_ids), len(test_ids), table)
