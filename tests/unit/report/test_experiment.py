"""Experiment report data from a hand-made store: wins/losses, first-relevant ranks, CIs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from searchbench.experiment import CellRecord, ResultsStore
from searchbench.report.experiment import experiment_report

QIDS = [f"q{i}" for i in range(6)]
BASE = [1.0, 0.5, 0.0, 1.0, 0.2, 0.5]
CAND = [1.0, 1.0, 0.5, 0.0, 0.2, 1.0]
RR_BASE = [1.0, 0.5, 0.0, 1.0, 0.25, 0.5]
RR_CAND = [1.0, 1.0, 0.5, 0.0, 0.25, 1.0]
CONFIG = {"measures": ["nDCG@10"], "levels": ["doc"], "chunkers": ["none"], "k": 10,
          "retrievers": [{"name": "base", "type": "bm25"}, {"name": "cand", "type": "bm25"}],
          "baseline": "base", "test": "t", "correction": "none", "alpha": 0.05, "seed": 0,
          "n_permutations": 100}
PROV = {"libraries": {"searchbench": "0"}, "git": None, "started": "now",
        "machine": {"platform": "x", "cpus": 2},
        "evalsets": {"set": {"errors": [], "warnings": [
            {"kind": "small-set", "message": "only 6 judged queries"}], "summary": {
                "name": "set", "documents": 3, "queries": 6, "judged_queries": 6,
                "judgments": 12, "evidence": 0, "real_share": 1.0, "synthetic_share": 0.0,
                "verified_share": 1.0, "content_hash": "sha256:abc",
                "query_sources": {"human": 6}}}}}


def _cell(name: str, values: list[float], rr: list[float]) -> CellRecord:
    return CellRecord(
        cell_key=name, system=name, evalset="set", evalset_hash="h", level="doc",
        chunker="none", retriever=name, config={}, run_path="", run_hash="",
        timings={"search_s": 0.5, "latency_ms": 1.0, "qps": 100.0}, provenance={},
        extras={"recall_curve": [0.5] * 100, "context_tokens": {"10": 300.0}},
        scores={"nDCG@10": dict(zip(QIDS, values, strict=True)),
                "RR": dict(zip(QIDS, rr, strict=True))})


@pytest.fixture
def report(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as db:
        exp = db.upsert_experiment("e", None, "", CONFIG, PROV)
        texts = {q: f"text of {q}" for q in QIDS}
        db.save_cell(exp, _cell("base", BASE, RR_BASE), texts)
        db.save_cell(exp, _cell("cand", CAND, RR_CAND), texts)
    return experiment_report(path)


def test_groups_and_comparison(report):
    [group] = report.groups
    assert group.comparison.baseline == "base"
    assert group.best_candidate() == "cand"
    stat = group.comparison.stat("cand", "nDCG@10")
    d = np.asarray(CAND) - np.asarray(BASE)
    assert stat.delta == pytest.approx(d.mean())
    assert stat.p_value == pytest.approx(stats.ttest_rel(CAND, BASE).pvalue)


def test_wins_losses_with_first_relevant_ranks(report):
    [group] = report.groups
    wl = group.wins_losses("cand")
    assert [r["query_id"] for r in wl["wins"]] == ["q1", "q2", "q5"]
    assert [r["query_id"] for r in wl["losses"]] == ["q3"]
    q2 = wl["wins"][1]
    assert (q2["baseline_rank"], q2["system_rank"]) == (None, 2)  # RR 0 -> none retrieved
    assert q2["text"] == "text of q2" and q2["delta"] == pytest.approx(0.5)
    assert group.first_relevant_rank("base")["q4"] == 4


def test_mean_ci_is_students_interval(report):
    [group] = report.groups
    mean, lo, hi = group.mean_ci("base")
    expected = stats.t.interval(0.95, len(BASE) - 1, loc=np.mean(BASE),
                                scale=stats.sem(BASE))
    assert mean == pytest.approx(np.mean(BASE))
    assert (lo, hi) == pytest.approx(expected)


def test_markdown_and_json(report):
    md = report.to_markdown()
    assert "| base (baseline) |" in md and "text of q3" in md
    assert "warning \\[small-set\\]: only 6 judged queries" in md  # escaped brackets
    data = json.loads(report.to_json())
    assert data["groups"][0]["wins_losses"]["losses"][0]["query_id"] == "q3"
