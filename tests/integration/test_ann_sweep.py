"""Sweeps built for real (faiss, hnswlib) on clustered vectors: recall rises with effort."""

from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from searchbench.ann.relevance import RelevanceContext
from searchbench.ann.sweep import SweepResult, run_sweep
from searchbench.data.qrels import Qrels
from searchbench.knn import exact_knn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "ann"))
from ann_vectors import clustered

pytest.importorskip("faiss")
pytest.importorskip("hnswlib")


@pytest.fixture(scope="module")
def vectors():
    return clustered(4000, 120, 32, n_clusters=40, spread=0.6, seed=11)


def _sweep(*args, **kwargs) -> SweepResult:
    """``run_sweep``, whose timing-noise warning depends on the machine's load: it must
    appear exactly when some setting's batch timings did not settle, and nothing else may
    be warned (the suite's filterwarnings = error, kept for every other warning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_sweep(*args, **kwargs)
    unstable = res.meta["timing"]["unstable_points"]
    assert unstable == sum(p.get("timing_stable") is False for p in res.points)
    expected = ([f"batch timings of {unstable} of {len(res.points)} settings did not settle"]
                if unstable else [])
    assert [str(w.message)[:len(expected[0])] if expected else str(w.message)
            for w in caught] == expected
    return res


def _recalls(result: SweepResult, key: str) -> list[float]:
    pts = sorted(result.points, key=lambda p: p["search"][key])
    return [p["knn_recall"]["by_id"]["mean"] for p in pts]


@pytest.mark.parametrize("index", ["hnsw", "hnswlib"])
def test_recall_rises_with_ef_search(vectors, index):
    base, queries = vectors
    res = _sweep(base, queries, index, {"M": [4], "efConstruction": [40],
                                           "efSearch": [2, 8, 32, 128]},
                    metric="l2", k=10, repeats=1, warmup=2, max_single=30, threads=1)
    rec = _recalls(res, "efSearch")
    assert rec[0] < rec[-1]
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(rec))
    assert rec[-1] >= 0.95
    assert len({p["build_wall_s"] for p in res.points}) == 1  # one build for the search loop
    p = res.points[-1]
    assert p["index_bytes"] > base.nbytes  # the graph stores the vectors and more
    assert p["latency_ms"]["p50"] <= p["latency_ms"]["p99"]
    assert p["batch_threads"] == 1 and p["single_threads"] == 1


def test_ivf_recall_rises_with_nprobe_and_pq_is_lossy(vectors):
    base, queries = vectors
    ivf = _sweep(base, queries, "ivf", {"nlist": [32], "nprobe": [1, 4, 32]},
                    metric="cosine", k=10, repeats=1, max_single=20, threads=1)
    rec = _recalls(ivf, "nprobe")
    assert rec[0] < rec[1] <= rec[2] and rec[2] == pytest.approx(1.0)
    pq = _sweep(base, queries, "ivfpq", {"nlist": [16], "m": [8], "nbits": [4],
                                            "nprobe": [16]},
                   metric="cosine", k=10, repeats=1, max_single=20, threads=1)
    assert pq.points[0]["knn_recall"]["by_id"]["mean"] < 1.0
    assert pq.points[0]["index_bytes"] < ivf.points[0]["index_bytes"]


def test_relevance_cost_and_json_roundtrip(vectors, tmp_path):
    base, queries = vectors
    gt = exact_knn(base, queries, 10, "ip")
    doc_ids = [f"d{i}" for i in range(len(base))]
    qids = [f"q{i}" for i in range(len(queries))]
    # judged: each query's exact top 3 are relevant; an approximate index can only lose
    rows = [(qids[i], doc_ids[j]) for i in range(len(queries)) for j in gt.ids[i, :3]]
    qrels = Qrels.from_columns([r[0] for r in rows], [r[1] for r in rows], [1] * len(rows))
    ctx = RelevanceContext(doc_ids, qids, qrels, measures=("nDCG@10", "R@10"))
    res = _sweep(base, queries, "hnswlib", {"M": [4], "efConstruction": [20],
                                               "efSearch": [1, 64]},
                    metric="ip", k=10, repeats=2, max_single=10, relevance=ctx, threads=1)
    low, high = sorted(res.points, key=lambda p: p["search"]["efSearch"])
    assert low["relevance"]["nDCG@10"]["delta"] < high["relevance"]["nDCG@10"]["delta"] <= 0
    for p in res.points:  # timed at least twice, more until stable; the range kept
        assert 2 <= p["batch_repeats"] <= 8 and p["qps_batch_low"] <= p["qps_batch"]
        assert p["timing_stable"] == (p["qps_batch_spread"] <= 0.05)
        assert p["single_rounds"] == 2
    assert res.meta["timing"]["unstable_points"] == sum(
        not p["timing_stable"] for p in res.points)
    # a query is lost when R@10 is 0 where exact search found its relevant documents
    assert set(low["relevance"]["lost_queries"]) >= set(high["relevance"]["lost_queries"])
    assert low["relevance"]["nDCG@10"]["exact"] == pytest.approx(1.0)
    res.save(tmp_path / "s.json")
    back = SweepResult.load(tmp_path / "s.json")
    assert back.meta["relevance"]["measures"] == ["nDCG@10", "R@10"]
    assert np.isclose(back.points[0]["qps_batch"], res.points[0]["qps_batch"])


def test_relevance_depth_capped_at_a_small_corpus():
    base, queries = clustered(60, 8, 8, n_clusters=4, seed=2)
    doc_ids = [f"d{i}" for i in range(len(base))]
    qids = [f"q{i}" for i in range(len(queries))]
    # q_i's relevant document is d_i; every other document judged non-relevant, so the
    # runs are judged (a run almost entirely unjudged would warn: measures.scoring)
    pairs = [(q, d, int(d == f"d{i}")) for i, q in enumerate(qids) for d in doc_ids]
    qrels = Qrels.from_columns(*map(list, zip(*pairs, strict=True)))
    ctx = RelevanceContext(doc_ids, qids, qrels)  # nDCG@10, R@100 > 60 documents
    res = _sweep(base, queries, "hnswlib", {"M": [4], "efSearch": [64]}, metric="cosine",
                    k=10, repeats=1, max_single=4, relevance=ctx, threads=1)
    assert res.meta["relevance"]["search_depths"] == [10, 60]
    assert res.points[0]["relevance"]["R@100"]["K"] == 60
