from __future__ import annotations

import numpy as np
import pytest

from searchbench.ann.relevance import RelevanceContext, cheapest_lossless
from searchbench.data.qrels import Qrels
from searchbench.errors import SearchbenchWarning
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
    # the K=2 search judges nothing in its top 2: the one coverage step warns (as eval)
    with pytest.warns(SearchbenchWarning, match=r"'ANN search \(K=2\)': only 0.0%"):
        cost = _ctx().cost(exact, {2: shallow, 3: deep})
    assert cost["nDCG@2"]["K"] == 2 and cost["nDCG@2"]["ann"] == 0.0
    assert cost["R@3"]["K"] == 3 and cost["R@3"]["delta"] == 0.0
    # Judged@2 (the main cutoff) of the exact run and of the timed (shallowest) search
    assert (cost["judged_k"], cost["judged_exact"], cost["judged_ann"]) == (2, 0.5, 0.0)


def test_prepare_hook_applies_to_both_runs():
    exact = GroundTruth(np.array([[0, 1, 2], [3, 2, 1]]), np.zeros((2, 3)), "ip", 3)
    seen = []

    def prepare(run):
        seen.append(run.name)
        return run

    _ctx(prepare=prepare).cost(exact, exact.ids.copy())
    assert sorted(seen) == ["ann", "exact"]


# -- verdicts: the test and the interval never contradict each other --------------------
def _lose(n_queries: int, lost: int, test: str):
    """n queries, one relevant document each, found at rank 1 by exact search; the ANN run
    misses it for the first ``lost`` queries: per-query ΔR@3 is −1 there, 0 elsewhere."""
    docs = [f"d{i}" for i in range(n_queries + 3)]
    qids = [f"q{i:02d}" for i in range(n_queries)]
    qrels = Qrels.from_columns(qids, docs[:n_queries], [1] * n_queries)
    exact_ids = np.array([[i, n_queries, n_queries + 1] for i in range(n_queries)])
    found = exact_ids.copy()
    found[:lost, 0] = n_queries + 2
    exact = GroundTruth(exact_ids, np.zeros(exact_ids.shape), "ip", 3)
    ctx = RelevanceContext(docs, qids, qrels, measures=("R@3",), test=test)
    return ctx.cost(exact, found), np.r_[-np.ones(lost), np.zeros(n_queries - lost)], qids


def test_randomization_p_and_t_interval_disagree_gives_possible_loss():
    # 4 of 20 queries lost: the sign-flip test cannot reject (exactly p = 2/16 = 0.125)
    # while Student's interval excludes 0 (scipy: t = −2.18, p = 0.042)
    from scipy import stats

    cost, diffs, qids = _lose(20, 4, "randomization")
    r = cost["R@3"]
    assert r["p"] == pytest.approx(2 / 16, abs=0.01)  # 10,000 sampled sign flips
    lo, hi = stats.t.interval(0.95, len(diffs) - 1, loc=diffs.mean(), scale=stats.sem(diffs))
    assert r["ci"] == pytest.approx([lo, hi]) and hi < 0
    assert r["verdict"] == "possible loss"  # before: "no significant loss"
    assert cost["no_significant_loss"] is False
    assert cost["lost_queries"] == qids[:4] and r["lost_queries"] == qids[:4]


def test_t_test_and_its_interval_are_one_procedure():
    from scipy import stats

    cost, diffs, _ = _lose(20, 4, "t")  # the default test
    r = cost["R@3"]
    assert r["p"] == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)
    assert r["p"] < 0.05 and r["ci"][1] < 0 and r["verdict"] == "loss"
    for lost in range(0, 9):  # p < α exactly when the interval excludes 0
        r = _lose(20, lost, "t")[0]["R@3"]
        assert (r["p"] < 0.05) == (r["ci"][1] < 0 or r["ci"][0] > 0)
        assert r["verdict"] in ("loss", "no significant loss")


def test_verdict_rule():
    from searchbench.ann.relevance import verdict

    assert verdict(-0.07, 0.059, -0.0009, 0.05) == "possible loss"  # the row
    assert verdict(-0.07, 0.01, -0.01, 0.05) == "loss"
    assert verdict(-0.07, 0.01, 0.02, 0.05) == "possible loss"
    assert verdict(-0.07, 0.30, 0.02, 0.05) == "no significant loss"
    assert verdict(0.01, 0.001, 0.02, 0.05) == "no significant loss"  # a gain


def _point(qps, low, recall, rel_ok=True, lost=()):
    return {"index": "hnsw", "search": {"efSearch": qps}, "qps_batch": qps,
            "qps_batch_low": low, "knn_recall": {"by_id": {"mean": recall}},
            "relevance": {"no_significant_loss": rel_ok, "lost_queries": list(lost)}}


def test_recommendation_skips_lost_queries_and_ignores_timing_noise():
    from searchbench.ann.relevance import noise_ties

    noisy_fast = _point(9690, 3000, 0.80, lost=["q7"])  # loses a query entirely
    a = _point(5000, 4000, 0.90)
    b = _point(4500, 4200, 0.95)   # overlaps a's range [4000, 5000]: a tie, better recall
    c = _point(3000, 2900, 0.99)   # clearly slower
    bad = _point(20000, 19000, 0.5, rel_ok=False)
    pts = [noisy_fast, a, b, c, bad]
    assert cheapest_lossless(pts) is b
    assert noise_ties(pts) == [a, b]
    # allowed, the noisy point's range [3000, 9690] overlaps every other: all are ties, so
    # its single fast run does not win; the most accurate tie does
    assert cheapest_lossless(pts, allow_lost=True) is c
    only_lost = [noisy_fast, bad]
    assert cheapest_lossless(only_lost) is None
    assert cheapest_lossless(only_lost, allow_lost=True) is noisy_fast
