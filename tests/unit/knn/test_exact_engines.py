"""The faiss and numpy ground-truth engines: same verified float64 answer as brute force."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from searchbench.errors import ConfigError, DataFormatError
from searchbench.knn import exact as groundtruth
from searchbench.knn import exact_knn, max_norm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ann"))
from ann_vectors import brute_force, clustered

METRICS = ["ip", "cosine", "l2"]


@pytest.fixture(params=["faiss", "numpy"])
def engine(request):
    if request.param == "faiss":
        pytest.importorskip("faiss")
    return request.param


def with_duplicates(n: int = 1500, nq: int = 25, dim: int = 12, seed: int = 4):
    """Clustered vectors with groups of exact duplicates, some queries equal to them."""
    base, queries = clustered(n, nq, dim, n_clusters=8, seed=seed)
    a, b, c = n // 7, n // 2, n - 10
    base[a:a + n // 25] = base[3]  # groups of copies: wide, narrow, 4 vectors
    base[b:b + 20] = base[b - 1]
    base[c:c + 3] = base[c - 1]
    queries[:3] = base[[3, b - 1, c - 1]]
    queries[3] = base[3] * 1.5  # same direction (cosine ties), other length
    return base, queries


def assert_same(a, b):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.distances, b.distances, atol=1e-6, rtol=0)


@pytest.mark.parametrize("metric", METRICS)
def test_engines_agree_with_each_other_and_brute_force(metric):
    pytest.importorskip("faiss")
    base, queries = with_duplicates()
    fa = exact_knn(base, queries, 30, metric, extra=10, engine="faiss")
    nu = exact_knn(base, queries, 30, metric, extra=10, engine="numpy", base_block=256,
                   query_block=8)
    assert_same(fa, nu)
    ids, dist = brute_force(base, queries, 40, metric)
    np.testing.assert_array_equal(fa.ids, ids)
    np.testing.assert_allclose(fa.distances, dist, atol=1e-6, rtol=0)
    assert fa.provenance["engine"] == "faiss" and nu.provenance["engine"] == "numpy"
    assert "faiss" in fa.provenance["library"] and "numpy" in nu.provenance["library"]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("depth_gap", [1, 6, 20])  # k + extra = n − gap: candidates ≈ n
def test_depth_near_corpus_size(engine, metric, depth_gap):
    base, queries = with_duplicates(n=300, nq=12, dim=8)
    k = len(base) - depth_gap - 5
    gt = exact_knn(base, queries, k, metric, extra=5, engine=engine)
    ids, dist = brute_force(base, queries, k + 5, metric)
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist, atol=1e-6, rtol=0)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_integer_vectors_with_large_tie_groups(engine, metric):
    # exact float32 products, tie groups far wider than the candidate margin
    rng = np.random.default_rng(11)
    base = rng.integers(-1, 2, size=(4000, 5)).astype(np.float32)
    queries = rng.integers(-1, 2, size=(20, 5)).astype(np.float32)
    gt = exact_knn(base, queries, 25, metric, extra=5, engine=engine)
    ids, dist = brute_force(base, queries, 30, metric)
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist, atol=1e-6, rtol=0)


def test_float64_decides_what_float32_cannot_separate(engine):
    # ⟨q, x_j⟩ = 1 + j·2⁻³⁰: one float32 value for every j, distinct in float64, so
    # the float32 candidates (smallest ids among equal scores) are the wrong ones
    j = np.arange(300)
    near = np.stack([np.ones(300), j * 2.0**-30], axis=1)
    far = clustered(500, 1, 2, seed=2)[0] - 5.0
    base = np.concatenate([near, far]).astype(np.float32)
    q = np.array([[1.0, 1.0]], dtype=np.float32)
    gt = exact_knn(base, q, 10, "ip", extra=0, engine=engine)
    assert gt.provenance["queries_searched_again"] == 1
    np.testing.assert_array_equal(gt.ids[0], j[::-1][:10])
    np.testing.assert_allclose(gt.distances[0], -(1 + j[::-1][:10] * 2.0**-30), rtol=0,
                               atol=1e-15)


@pytest.mark.parametrize("metric", METRICS)
def test_faiss_corpus_chunks_merge(monkeypatch, metric):
    pytest.importorskip("faiss")
    base, queries = with_duplicates()
    whole = exact_knn(base, queries, 20, metric, engine="faiss")
    monkeypatch.setattr(groundtruth, "_FAISS_CHUNK_BYTES", 4 * base.shape[1] * 97)
    monkeypatch.setattr(groundtruth, "_FAISS_VIEW_BYTES", 4 * base.shape[1] * 131)
    assert_same(exact_knn(base, queries, 20, metric, engine="faiss"), whole)


def test_forced_rescans_give_the_same_answer(engine, monkeypatch):
    base, queries = with_duplicates(seed=6)
    first = exact_knn(base, queries, 15, "l2", engine=engine)
    monkeypatch.setattr(groundtruth, "_MARGIN", 1)  # most queries fail the check once
    monkeypatch.setattr(groundtruth, "_BUDGET", 64)  # one query at a time
    assert_same(exact_knn(base, queries, 15, "l2", engine=engine), first)


def test_faiss_settings_restored():
    faiss = pytest.importorskip("faiss")
    bs, threads = faiss.cvar.distance_compute_blas_database_bs, faiss.omp_get_max_threads()
    base, queries = clustered(500, 10, 8)
    exact_knn(base, queries, 5, engine="faiss", threads=1)
    assert faiss.cvar.distance_compute_blas_database_bs == bs
    assert faiss.omp_get_max_threads() == threads


def test_engine_choice_is_checked(monkeypatch):
    base, queries = clustered(100, 3, 8)
    with pytest.raises(ConfigError, match="engine='gpu'"):
        exact_knn(base, queries, 5, engine="gpu")
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if not installed
    with pytest.raises(ConfigError, match="faiss-cpu"):
        exact_knn(base, queries, 5, engine="faiss")
    gt = exact_knn(base, queries, 5)  # auto falls back to numpy
    assert gt.provenance["engine"] == "numpy"


def test_norm_pass_names_the_bad_row_in_any_block():
    base, _ = clustered(1000, 1, 6)
    assert max_norm(base, "x", block=128) == pytest.approx(np.linalg.norm(base, axis=1).max())
    base[777, 2] = np.inf
    with pytest.raises(DataFormatError, match="row 777 holds NaN or inf"):
        max_norm(base, "corpus vectors", block=128)
    huge = np.full((3, 4), 3e19, dtype=np.float32)  # finite, but squares overflow float32
    assert max_norm(huge, "x") == pytest.approx(6e19, rel=1e-6)


def test_cosine_zero_row_named_in_a_later_part(engine):
    base, queries = clustered(40000, 2, 4)
    base[33333] = 0
    with pytest.raises(DataFormatError, match="row 33333 is a zero vector"):
        exact_knn(base, queries, 5, "cosine", engine=engine)
