from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from searchbench.errors import ConfigError, DataFormatError
from searchbench.knn import GroundTruth, exact_knn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ann"))
from ann_vectors import brute_force, clustered


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_matches_brute_force_on_clustered_vectors(metric):
    base, queries = clustered(3000, 40, 16)
    gt = exact_knn(base, queries, 10, metric, extra=5, base_block=256, query_block=16)
    ids, dist = brute_force(base, queries, 15, metric)
    assert gt.ids.shape == (40, 15)
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist, atol=1e-6, rtol=0)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_ties_resolved_by_smaller_id(metric):
    # small integer vectors: float32 products are exact, so ties are exact and frequent
    rng = np.random.default_rng(1)
    base = rng.integers(-2, 3, size=(5000, 6)).astype(np.float32)
    queries = rng.integers(-2, 3, size=(30, 6)).astype(np.float32)
    gt = exact_knn(base, queries, 10, metric, extra=10, base_block=300)
    ids, dist = brute_force(base, queries, 20, metric)
    assert (np.diff(dist, axis=1) == 0).any(), "the case must contain ties"
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist, atol=1e-6, rtol=0)


def test_duplicate_vectors_tie_for_cosine():
    base, queries = clustered(500, 5, 8, seed=3)
    base[100:110] = base[7]  # eleven identical vectors: one tie group
    queries[0] = base[7] * 2.0
    gt = exact_knn(base, queries, 5, "cosine", extra=8)
    np.testing.assert_array_equal(gt.ids[0, :11], [7, *range(100, 110)])


def test_float64_input_and_memmap(tmp_path):
    base, queries = clustered(1200, 7, 12, seed=5)
    path = tmp_path / "base.npy"
    np.save(path, base.astype(np.float64))
    mm = np.load(path, mmap_mode="r")
    gt = exact_knn(mm, queries, 3, "l2", base_block=100)
    ids, _ = brute_force(base.astype(np.float64), queries, 13, "l2")
    np.testing.assert_array_equal(gt.ids, ids)
    assert gt.provenance["dtype"] == "float64"


def test_save_load_roundtrip_keeps_provenance(tmp_path):
    base, queries = clustered(400, 6, 8)
    gt = exact_knn(base, queries, 4, "cosine", extra=3)
    gt.save(tmp_path / "gt.npz")
    back = GroundTruth.load(tmp_path / "gt.npz")
    np.testing.assert_array_equal(back.ids, gt.ids)
    np.testing.assert_array_equal(back.distances, gt.distances)
    assert back.metric == "cosine" and back.k == 4
    for key in ("library", "dtype", "tie_policy", "base_fingerprint", "extra"):
        assert key in back.provenance
    back.check_compatible("cosine", 6, 4, base)
    with pytest.raises(ConfigError, match=r"metric 'cosine'.*'l2'"):
        back.check_compatible("l2", 6, 4)
    with pytest.raises(ConfigError, match="6 queries"):
        back.check_compatible("cosine", 5, 4)
    with pytest.raises(ConfigError, match="other corpus"):
        back.check_compatible("cosine", 6, 4, base[::-1].copy())


def test_bad_input_is_refused_before_work():
    base, queries = clustered(100, 3, 8)
    with pytest.raises(DataFormatError, match=r"dimension mismatch.*8.*4"):
        exact_knn(base, queries[:, :4], 5)
    with pytest.raises(ConfigError, match=r"k=101.*100 vectors"):
        exact_knn(base, queries, 101)
    bad = base.copy()
    bad[42, 3] = np.nan
    with pytest.raises(DataFormatError, match="row 42 holds NaN"):
        exact_knn(bad, queries, 5)
    with pytest.raises(ConfigError, match="unknown metric 'hamming'"):
        exact_knn(base, queries, 5, "hamming")
    zero = base.copy()
    zero[9] = 0
    with pytest.raises(DataFormatError, match="row 9 is a zero vector"):
        exact_knn(zero, queries, 5, "cosine")


def test_load_rejects_other_files(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(DataFormatError, match="not a searchbench ground-truth"):
        GroundTruth.load(tmp_path / "x.npz")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_same_result_for_any_thread_count(threads):
    rng = np.random.default_rng(7)
    base = rng.integers(-2, 3, size=(3000, 6)).astype(np.float32)  # many exact ties
    queries = rng.integers(-2, 3, size=(40, 6)).astype(np.float32)
    gt = exact_knn(base, queries, 10, "ip", base_block=200, query_block=16, threads=threads)
    ids, dist = brute_force(base, queries, 20, "ip")
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist, atol=1e-6, rtol=0)


def test_ann_keeps_exporting_the_exact_search():
    """Exact search moved below retrieval and ann; ``searchbench.ann`` still offers it."""
    import searchbench as sb
    from searchbench import knn

    assert sb.ann.exact_knn is knn.exact_knn and sb.ann.GroundTruth is knn.GroundTruth
    base, queries = clustered(200, 5, 8)
    library = exact_knn(base, queries, 3).provenance["library"]
    assert library.startswith(f"searchbench {sb.__version__} (")
