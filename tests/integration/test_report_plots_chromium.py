"""Every plot of every HTML report, drawn by headless Chromium: plain tick labels, no overlap.

Mathtext is off in the plots (a ``$`` in a name is a dollar sign), so a tick label written
as TeX would be shown raw (``$\\mathdefault{6\\times10^{1}}$``). The experiment report (a
hand-made results store with chunk sizes, context sizes and latencies spanning the ranges
below, two token units, both levels) and the ANN sweep report (QPS ranges) are loaded in
Chromium through Playwright; every text of every axis is checked for TeX and
double-escaped entities, and the boxes of the tick labels of each axis must not overlap.
The experiment report of a real run is checked the same way in
``test_experiment_report.py``. ``searchbench compare`` has no HTML output (no plots).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from searchbench._util import write_text
from searchbench.experiment import CellRecord, ResultsStore

from ._chromium import TEXT_ARTEFACT, plot_axes

pytestmark = pytest.mark.slow  # a browser per test

QIDS = [f"q{i}" for i in range(8)]
UNITS = ("whitespace-separated words", "model tokens of all-MiniLM-L6-v2")

# (name, chunk sizes per chunker, context sizes per chunker, latencies in ms)
RANGES = [
    ("the issue's sub-decade axis", [60.0, 200.0], [600.0, 2000.0], [0.4, 3.0]),
    ("close values inside one decade", [55.0, 58.0, 62.0, 66.0], [61.0, 63.0, 64.0, 69.0],
     [12.0, 13.0]),
    ("many decades", [3.0, 40.0, 900.0, 25000.0], [30.0, 700.0, 9000.0, 2e6], [0.001, 5e4]),
    ("just above a power of ten", [101.0, 180.0, 990.0], [1010.0, 1900.0], [1e5, 3e5]),
]


def _cell(i: int, level: str, retriever: str, chunker: str, size: float, context: float,
          latency: float, unit: str) -> CellRecord:
    values = {q: ((i * 7 + j * 3) % 5) / 4 for j, q in enumerate(QIDS)}
    return CellRecord(
        cell_key=f"{level}{i}", system=f"{retriever}/{chunker}", evalset="set",
        evalset_hash="h", level=level, chunker=chunker, retriever=retriever, config={},
        run_path="", run_hash="", timings={"search_s": 0.5, "latency_ms": latency, "qps": 1.0},
        provenance={}, scores={"nDCG@10": values, "RR": values},
        extras={"recall_curve": [min(1.0, 0.2 + k / 120) for k in range(100)],
                "mean_unit_words": size, "mean_unit_tokens": size * (1.3 if i % 2 else 1),
                "context_tokens": {"10": context}, "token_unit": unit,
                "judged": {"k": 10, "mean": 0.8}})


def _store(path, sizes, contexts, latencies):
    chunkers = [f"tokens:{int(s)}:0" for s in sizes]
    retrievers = [("bm25", UNITS[0]), ("minilm", UNITS[1])]
    config = {"measures": ["nDCG@10"], "levels": ["doc", "chunk"], "chunkers": chunkers,
              "k": 10, "retrievers": [{"name": r, "type": "bm25"} for r, _ in retrievers],
              "baseline": "bm25", "test": "t", "correction": "none", "alpha": 0.05, "seed": 0,
              "n_permutations": 100}
    with ResultsStore(path) as db:
        prov = {"libraries": {"searchbench": "test"}, "git": {}, "started": "now",
                "machine": {"platform": "linux", "cpus": 2}, "evalsets": {}}
        exp = db.upsert_experiment("plots", None, "", config, prov)
        i = 0
        for level in ("doc", "chunk"):
            for c, (chunker, size) in enumerate(zip(chunkers, sizes, strict=True)):
                for retriever, unit in retrievers:
                    db.save_cell(exp, _cell(i, level, retriever, chunker, size,
                                            contexts[c % len(contexts)],
                                            latencies[i % len(latencies)], unit),
                                 {q: q for q in QIDS})
                    i += 1
    return path


def _check(found: dict, plots: int) -> None:
    assert found["problems"] == [], found["problems"]
    assert found["axes"] >= 2 * plots  # an x and a y axis per plot at least
    assert found["labels"] >= 2 * found["axes"], found  # the check saw tick labels


@pytest.mark.parametrize("name, sizes, contexts, latencies", RANGES, ids=[r[0] for r in RANGES])
def test_experiment_report_plots_have_plain_separate_tick_labels(tmp_path, name, sizes,
                                                                  contexts, latencies):
    pytest.importorskip("matplotlib")
    from searchbench.report.experiment import experiment_report

    report = experiment_report(_store(tmp_path / "s.sqlite", sizes, contexts, latencies))
    html = write_text(tmp_path / "report.html", report.to_html())
    found = plot_axes(html)
    _check(found, plots=html.read_text(encoding="utf-8").count("<svg"))
    seen = " ".join(found["seen"])
    # the chunking plot: one panel per token unit, each axis naming its unit
    for unit in UNITS:
        assert f"chunk size: {unit} per indexed chunk" in seen
        assert f"context size: {unit} in the top 10 chunks" in seen
    assert "words per indexed chunk (mean" not in seen.replace("separated words per", "")


def test_chunking_plot_never_puts_two_token_units_on_one_axis():
    pytest.importorskip("matplotlib")
    from searchbench.report.experiment import Group
    from searchbench.report.plots import chunking_svg

    cells = [_cell(i, "doc", r, f"tokens:{s}:0", float(s), 10.0 * s, 1.0, u)
             for i, (r, u) in enumerate([("bm25", UNITS[0]), ("minilm", UNITS[1]),
                                         ("hybrid", UNITS[1])]) for s in (100, 200)]
    group = Group("set", "h", "doc", cells, None, QIDS, {}, "nDCG@10")
    svg = chunking_svg(group)
    axes = re.findall(r'<g id="axes_\d+">(.*?)(?=<g id="axes_\d+">|$)', svg, re.S)
    assert len(axes) == 2  # words, then MiniLM tokens
    assert "bm25" in axes[0] and "minilm" not in axes[0]
    assert "minilm" in axes[1] and "hybrid" in axes[1] and "bm25" not in axes[1]


@pytest.mark.parametrize("qps", [[55.0, 61.0, 70.0, 78.0], [120.0, 4e3, 9e5, 2e7],
                                 [0.2, 0.9, 3.0], [1001.0, 1500.0, 9999.0]],
                         ids=["sub-decade", "many decades", "below one", "one decade"])
def test_ann_sweep_report_plots_have_plain_separate_tick_labels(tmp_path, qps):
    pytest.importorskip("matplotlib")
    from searchbench.ann.report import render_html
    from searchbench.ann.sweep import SweepResult

    dist = {"mean": 0.9, "p5": 0.5, "min": 0.0}
    points = [{"index": name, "build": {"M": 8}, "search": {"ef": i}, "k": 10,
               "knn_recall": {"by_id": {**dist, "mean": 0.5 + i / 10}, "tie_aware": dist,
                              "queries_with_ties": 0, "tolerance": "t"},
               "one_recall_at_1": 0.9, "qps_batch": q, "qps_batch_min": q * 0.9,
               "qps_batch_max": q * 1.1, "batch_threads": 2, "batch_wall_s": 0.1,
               "batch_cpu_s": 0.2, "qps_single": q / 3,
               "latency_ms": {"p50": 1, "p95": 2, "p99": 3}, "build_wall_s": 1.0,
               "build_cpu_s": 2.0, "index_bytes": 2**20}
              for name in ("hnsw", "ivf") for i, q in enumerate(qps)]
    meta = {"metric": "cosine", "k": 10, "n_base": 5, "n_queries": 3, "dim": 4,
            "exact": {"qps_batch": qps[0] / 2}, "machine": {"cpu": "x", "cores": 2}}
    html = write_text(tmp_path / "sweep.html", render_html(SweepResult(points, meta)))
    _check(plot_axes(html), plots=2)


def test_the_check_fails_on_tex_entities_and_overlapping_labels(tmp_path):
    """The checks can fail: TeX, an escaped entity and two labels on one spot are found."""
    svg = """<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200">
      <g id="matplotlib.axis_1">
        <g id="xtick_1"><text x="50" y="20">$\\mathdefault{6\\times10^{1}}$</text></g>
        <g id="xtick_2"><text x="52" y="20">200</text></g>
        <g id="text_1"><text x="50" y="60">K &amp;amp; size</text></g>
      </g><g id="matplotlib.axis_2"><g id="ytick_1"><text x="5" y="90">0.5</text></g>
      <g id="ytick_2"><text x="5" y="150">1.0</text></g></g>
      <g id="legend_1"><text x="200" y="100">run &amp;lt;b&amp;gt;</text></g></svg>"""
    found = plot_axes(write_text(tmp_path / "bad.html", f"<html><body>{svg}</body></html>"))
    problems = " ".join(found["problems"])
    assert "mathdefault" in problems and "&amp; size" in problems
    assert "overlap" in problems and '"200"' in problems
    assert 'text "run &lt;b&gt;"' in problems  # a legend shows an entity escaped twice
    assert not [p for p in found["problems"] if "axis_2" in p]  # y labels are apart
    assert re.search(TEXT_ARTEFACT, "$") and not re.search(TEXT_ARTEFACT, "1e+06 & 60")


def test_a_real_ann_sweep_report_has_plain_separate_tick_labels(tmp_path):
    """``ann sweep`` then ``ann report`` on random vectors (hnswlib), drawn in Chromium."""
    pytest.importorskip("hnswlib")
    pytest.importorskip("matplotlib")
    from searchbench.cli.main import main

    rng = np.random.default_rng(7)
    np.save(tmp_path / "b.npy", rng.standard_normal((400, 16)).astype(np.float32))
    np.save(tmp_path / "q.npy", rng.standard_normal((20, 16)).astype(np.float32))
    assert main(["ann", "sweep", "--vectors", str(tmp_path / "b.npy"), "--queries",
                 str(tmp_path / "q.npy"), "--index", "hnswlib", "--param", "M=4,8",
                 "--param", "efSearch=2,8,64", "--repeats", "1", "--threads", "1", "-q",
                 "-o", str(tmp_path / "s.json")]) == 0
    assert main(["ann", "report", str(tmp_path / "s.json"), "-o",
                 str(tmp_path / "r.html")]) == 0
    _check(plot_axes(tmp_path / "r.html"), plots=2)
