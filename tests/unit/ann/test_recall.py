from __future__ import annotations

import numpy as np
import pytest

from searchbench.ann.recall import knn_recall, one_recall_at
from searchbench.errors import ConfigError
from searchbench.knn import GroundTruth, exact_knn


def _gt(ids, dist, k):
    return GroundTruth(np.array(ids), np.array(dist, dtype=float), "l2", k)


def test_by_id_hand_made():
    gt = _gt([[0, 1, 2, 3], [5, 6, 7, 8]], [[0.1, 0.2, 0.3, 0.9], [0.1, 0.2, 0.3, 0.4]], 3)
    found = [[2, 9, 0], [7, 6, 5]]
    r = knn_recall(gt, found, 3)
    np.testing.assert_allclose(r.by_id, [2 / 3, 1.0])
    assert r.name == "knn_recall@3"
    assert r.queries_with_ties == 0


def test_tie_aware_counts_an_equally_close_neighbour():
    # query 0: true 3rd (id 2) at 0.3 and id 3 also at 0.3 -> returning 3 instead of 2 is exact
    gt = _gt([[0, 1, 2, 3], [5, 6, 7, 8]], [[0.1, 0.2, 0.3, 0.3], [0.1, 0.2, 0.3, 0.4]], 3)
    found = np.array([[0, 1, 3], [5, 6, 8]])
    dist = np.array([[0.1, 0.2, 0.3], [0.1, 0.2, 0.4]])
    r = knn_recall(gt, found, 3, found_distances=dist)
    np.testing.assert_allclose(r.by_id, [2 / 3, 2 / 3])
    np.testing.assert_allclose(r.tie_aware, [1.0, 2 / 3])
    assert r.queries_with_ties == 1
    s = r.summary()
    assert s["by_id"]["min"] == pytest.approx(2 / 3)
    assert s["tie_aware"]["mean"] == pytest.approx(5 / 6)
    assert "d_k" in s["tolerance"]


def test_tolerance_boundary():
    gt = _gt([[0, 1, 2]], [[0.1, 0.2, 0.5]], 2)
    inside = knn_recall(gt, [[0, 2]], 2, found_distances=[[0.1, 0.2 + 5e-7]])
    outside = knn_recall(gt, [[0, 2]], 2, found_distances=[[0.1, 0.2 + 1e-4]])
    assert inside.tie_aware[0] == 1.0 and outside.tie_aware[0] == 0.5


def test_k_at_K_and_duplicates_and_missing():
    gt = _gt([[0, 1, 2, 3]], [[0.1, 0.2, 0.3, 0.4]], 2)
    r = knn_recall(gt, [[9, 1, 1, -1, 0]], 2)
    assert r.name == "knn_recall 2@5"
    assert r.by_id[0] == 1.0
    r2 = knn_recall(gt, [[1, 1, -1]], 2)
    assert r2.by_id[0] == 0.5  # a repeated id counts once


def test_recomputed_distances_on_vectors_with_exact_ties():
    rng = np.random.default_rng(2)
    base = rng.integers(-2, 3, size=(2000, 5)).astype(np.float32)
    queries = rng.integers(-2, 3, size=(20, 5)).astype(np.float32)
    gt = exact_knn(base, queries, 10, "l2", extra=10)
    # return the tie group's *last* members instead of the first: by-id loses, tie-aware not
    found = gt.ids[:, :10].copy()
    d = gt.distances
    swapped = 0
    for i in range(len(found)):
        ties = np.flatnonzero(np.abs(d[i] - d[i, 9]) <= 1e-9)
        after = ties[ties >= 10]
        if len(after):
            found[i, 9] = gt.ids[i, after[-1]]
            swapped += 1
    assert swapped > 0
    r = knn_recall(gt, found, 10, base=base, queries=queries)
    assert r.queries_with_ties >= swapped
    assert r.tie_aware.min() == 1.0
    assert np.sum(r.by_id < 1.0) == swapped


def test_one_recall_at_r():
    gt = _gt([[0, 1], [5, 6], [7, 8]], [[0.1, 0.2]] * 3, 1)
    found = [[1, 0, 4], [5, 9, 9], [1, 2, 3]]
    assert one_recall_at(gt, found, 1) == pytest.approx(1 / 3)
    assert one_recall_at(gt, found, 2) == pytest.approx(2 / 3)
    with pytest.raises(ConfigError):
        one_recall_at(gt, found, 4)


def test_too_few_results():
    gt = _gt([[0, 1, 2]], [[0.1, 0.2, 0.3]], 3)
    with pytest.raises(ConfigError, match="K ≥ 3"):
        knn_recall(gt, [[0, 1]], 3)
