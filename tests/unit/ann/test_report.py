from __future__ import annotations

import re

import pytest

from searchbench.ann.report import pareto, render_html, render_markdown
from searchbench.ann.sweep import SweepResult


def _pt(index, ef, recall, qps, rel=None):
    dist = {"mean": recall, "p5": recall / 2, "min": 0.0}
    p = {"index": index, "build": {"M": 8}, "search": {"efSearch": ef}, "k": 10,
         "knn_recall": {"by_id": dist, "tie_aware": dist, "queries_with_ties": 1,
                        "tolerance": "|d − d_k| ≤ 1e-06 + 1e-05·|d_k|"},
         "one_recall_at_1": recall, "qps_batch": qps, "qps_batch_min": qps * 0.9,
         "qps_batch_max": qps * 1.1, "batch_threads": 2, "batch_wall_s": 0.1,
         "batch_cpu_s": 0.2, "qps_single": qps / 2, "latency_ms": {"p50": 1, "p95": 2, "p99": 3},
         "build_wall_s": 1.0, "build_cpu_s": 2.0, "index_bytes": 2**20}
    if rel is not None:
        p["relevance"] = {"nDCG@10": {"exact": 0.5, "ann": 0.5 + rel, "delta": rel, "p": 0.5,
                                      "ci": [rel - 0.01, rel + 0.01],
                                      "significant_loss": rel < -0.05},
                          "no_significant_loss": rel >= -0.05}
    return p


def test_pareto_drops_dominated_points():
    pts = [_pt("h", 1, 0.5, 1000), _pt("h", 2, 0.7, 800), _pt("h", 3, 0.6, 500),
           _pt("h", 4, 0.9, 100)]
    assert [p["search"]["efSearch"] for p in pareto(pts)] == [1, 2, 4]


def test_html_is_self_contained_with_plot_and_tables():
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    pts = [_pt("hnsw", 8, 0.8, 5000, -0.1), _pt("hnsw", 64, 0.99, 2000, -0.001),
           _pt("ivf", 4, 0.9, 3000, -0.02)]
    meta = {"metric": "cosine", "k": 10, "K": 100, "n_base": 5, "n_queries": 3, "dim": 4,
            "exact": {"qps_batch": 300.0}, "relevance": {"test": "randomization",
                                                         "alpha": 0.05, "rule": "r"},
            "machine": {"cpu": "x", "cores": 2, "load_average": [0, 0, 0],
                        "libraries": {"numpy": "2"}}}
    html = render_html(SweepResult(pts, meta))
    assert html.count("<svg") == 2
    assert not re.search(r"""(src|href)=["']https?:""", html)
    assert "ivf efSearch" not in html and "M=8 efSearch=64" in html
    assert "Fastest setting without a significant relevance loss" in html
    assert "ivf M=8 efSearch=4 — 3,000 QPS" in html  # hnsw ef=8 loses, ivf is next fastest
    md = render_markdown(SweepResult(pts, meta))
    assert md.count("\n| hnsw") == 4  # two in the points table, two in the relevance table


def test_markdown_index_names_from_the_sweep_file_are_inert():
    """A sweep file is input: an index named like a cell break or HTML stays one cell."""
    meta = {"metric": "ip", "k": 10, "n_base": 5, "n_queries": 3, "dim": 4,
            "machine": {"cpu": "x", "cores": 2}}
    md = render_markdown(SweepResult([_pt("a|b <b>x</b>", 8, 0.8, 5000)], meta))
    header, rule, row = md.splitlines()[2:5]
    assert row.startswith(r"| a\|b &lt;b&gt;x&lt;/b&gt; | M=8 efSearch=8 | ")
    assert row.replace("\\|", "").count("|") == header.count("|") == rule.count("|")
def _rel(verdict, lost=()):
    loss = verdict != "no significant loss"
    return {"R@100": {"exact": 0.8, "ann": 0.73, "delta": -0.0667, "p": 0.059,
                      "ci": [-0.1325, -0.0009], "verdict": verdict, "significant_loss": loss,
                      "lost_queries": list(lost)},
            "no_significant_loss": not loss, "lost_queries": list(lost)}


def _meta(**extra):
    return {"metric": "cosine", "k": 10, "K": 100, "n_base": 5, "n_queries": 3, "dim": 4,
            "exact": {"qps_batch": 300.0}, "relevance": {"test": "t", "alpha": 0.05},
            "machine": {"cpu": "x", "cores": 2, "load_average": [0, 0, 0]}, **extra}


def test_rows_and_conclusion_state_possible_loss_and_lost_queries():
    from searchbench.ann.report import conclusion, relevance_rows

    ivf = _pt("ivf", 4, 0.9, 9000)
    ivf["relevance"] = _rel("possible loss")  # the row: p = 0.059, interval < 0
    fast = _pt("hnsw", 2, 0.7, 8000)
    fast["relevance"] = _rel("no significant loss", lost=["q7"])
    slow = _pt("hnsw", 64, 0.99, 2000)
    slow["relevance"] = _rel("no significant loss")
    result = SweepResult([ivf, fast, slow], _meta())
    verdicts = {r["params"]: r["verdict"] for r in relevance_rows(result)}
    assert verdicts == {"M=8 efSearch=4": "possible loss",
                        "M=8 efSearch=2": "no significant loss; loses 1 query (q7)",
                        "M=8 efSearch=64": "no significant loss"}
    text = conclusion(result)
    assert "hnsw M=8 efSearch=64 — 2,000 QPS" in text  # neither the doubtful nor the lossy
    only_lossy = SweepResult([ivf, fast], _meta())
    assert "loses some query entirely" in conclusion(only_lossy)
    assert "hnsw M=8 efSearch=2" in conclusion(only_lossy)


def test_unstable_timings_are_reported():
    pts = [_pt("hnsw", 8, 0.8, 5000)]
    pts[0].update(timing_stable=False, qps_batch_spread=0.4, batch_repeats=12)
    md = render_markdown(SweepResult(pts, _meta(timing={"stable_within": 0.05,
                                                        "unstable_points": 1,
                                                        "worst_spread": 0.4})))
    assert "**Warning:** Timing noise: the batch QPS of 1 settings did not settle" in md
    assert "12 runs unstable" in md
