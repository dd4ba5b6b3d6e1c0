from __future__ import annotations

import numpy as np
import pytest

from searchbench.ann.relevance import RelevanceContext, cheapest_lossless
from searchbench.data.qrels import Qrels
from searchbench.knn import GroundTruth

DOCS = ["d0", "d1", "d2", "d3"]


def _ctx(**kw):
    qrels = Qrels.from_columns(["q0", "q1"], ["d0", "d3"], [1, 1])
    return RelevanceContext(DOCS, ["q0", "q1"], qrels, measures=("nDCG@2", "R@3"), **kw)


def test_delta_against_exact_hand_computed():
    exact = GroundTruth(np.array([[0, 1, 2], [3, 2, 1]]), np.zeros((2, 3)), "ip", 3)
    # q0: relevant d0 moves from rank 1 to rank 2; q1: relevant d3 is lost
    found = np.array([[1, 0, 2], [2, 1, 0]])
    ctx = _ctx()
    assert ctx.depth == 3
    cost = ctx.cost(exact, found)
    ndcg_q0 = 1 / np.log2(3)
    assert cost["nDCG@2"]["exact"] == pytest.approx(1.0)
    assert cost["nDCG@2"]["ann"] == pytest.approx(ndcg_q0 / 2)
    assert cost["nDCG@2"]["delta"] == pytest.approx((ndcg_q0 - 1 - 1) / 2)
    assert cost["R@3"]["delta"] == pytest.approx(-0.5)
    assert cost["R@3"]["ci"][0] <= cost["R@3"]["delta"] <= cost["R@3"]["ci"][1]
    # two queries cannot make a loss significant at 0.05
    assert cost["no_significant_loss"] is True


def test_identical_runs_cost_nothing():
    exact = GroundTruth(np.array([[0, 1, 2], [3, 2, 1]]), np.zeros((2, 3)), "ip", 3)
    cost = _ctx().cost(exact, exact.ids.copy())
    assert cost["nDCG@2"]["delta"] == 0.0 and cost["R@3"]["delta"] == 0.0
    assert cost["no_significant_loss"] is True


def test_cheapest_lossless_picks_fastest_ok_point():
    pts = [{"qps_batch": 900, "relevance": {"no_significant_loss": False}},
           {"qps_batch": 500, "relevance": {"no_significant_loss": True}},
           {"qps_batch": 300, "relevance": {"no_significant_loss": True}},
           {"qps_batch": 2000}]
    assert cheapest_lossless(pts)["qps_batch"] == 500
    assert cheapest_lossless(pts[:1]) is None


def test_each_measure_reads_the_shallowest_deep_enough_search():
    exact = GroundTruth(np.array([[0, 1, 2], [3, 2, 1]]), np.zeros((2, 3)), "ip", 3)
    shallow = np.array([[1, 2], [2, 1]])  # K=2: loses both relevant docs from the top 2
    deep = exact.ids.copy()  # K=3: exact
    cost = _ctx().cost(exact, {2: shallow, 3: deep})
    assert cost["nDCG@2"]["K"] == 2 and cost["nDCG@2"]["ann"] == 0.0
    assert cost["R@3"]["K"] == 3 and cost["R@3"]["delta"] == 0.0


def test_prepare_hook_applies_to_both_runs():
    exact = GroundTruth(np.array([[0, 1, 2], [3, 2, 1]]), np.zeros((2, 3)), "ip", 3)
    seen = []

    def prepare(run):
        seen.append(run.name)
        return run

    _ctx(prepare=prepare).cost(exact, exact.ids.copy())
    assert sorted(seen) == ["ann", "exact"]
