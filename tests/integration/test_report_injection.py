"""Hostile names, texts, ids and notes in the HTML reports run nothing in a browser.

Every payload tries to run ``document.title = 'PWNED…'`` (or to add an element with an
``on*`` handler, a script or a ``javascript:`` link). The experiment report (built from a
hand-made results store) and the ANN sweep report are loaded in headless Chromium; the test
asserts that the title is untouched, no handler, extra script or link exists, and that each
payload is displayed literally (page text, aria-labels, SVG text). The Markdown reports get
the same payloads and must contain no raw HTML.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from searchbench._util import write_text
from searchbench.experiment import CellRecord, ResultsStore
from searchbench.report.experiment import experiment_report

from ._chromium import chromium_path, load_page

PAYLOADS = [
    '"><script>document.title="PWNED1"</script>',
    "x\" onload=\"document.title='PWNED2'\" y=\"",
    "</script><script>document.title='PWNED3'</script>",
    "javascript:document.title='PWNED4'",
    "<img src=x onerror=\"document.title='PWNED5'\">",
    "<svg onload=\"document.title='PWNED6'\"></svg>",
    "' onmouseover='document.title=`PWNED7`' '",
    "{{7*7}} {% raw %}",
    "line\u2028sep\u2029para",
    "$\\frac{1}{0}$ \\1 \\g<0> _under",
    "]]><![CDATA[<script>document.title='PWNED8'</script>",
    "<!-- <style>*{display:none}</style>",
]
SYSTEMS = [*PAYLOADS[:6], "plain"]
QIDS = [f"q{i}" for i in range(len(PAYLOADS))]
# the same hostile query id shows up in the per-query tables
QIDS[0] = "q0\"><b onclick=\"document.title='PWNED9'\">"


def _cell(i: int, name: str) -> CellRecord:
    values = [((i + j) % 5) / 4 for j in range(len(QIDS))]
    return CellRecord(
        cell_key=f"k{i}", system=name, evalset="set", evalset_hash="h", level="doc",
        chunker=PAYLOADS[7], retriever=name, config={}, run_path="", run_hash="",
        timings={"search_s": 0.5, "latency_ms": 1.0 + i, "qps": 100.0},
        provenance={"retriever": {"identity": PAYLOADS[3]}},
        extras={"recall_curve": [0.5] * 100, "context_tokens": {"10": 300.0}},
        scores={"nDCG@10": dict(zip(QIDS, values, strict=True)),
                "RR": dict(zip(QIDS, values, strict=True))})


def _store(path: Path) -> Path:
    finding = [{"kind": PAYLOADS[0], "message": PAYLOADS[1]}]
    prov = {"libraries": {"searchbench": PAYLOADS[2]}, "git": {"commit": PAYLOADS[4],
                                                               "dirty": True},
            "started": PAYLOADS[5], "machine": {"platform": PAYLOADS[6], "cpus": 2},
            "evalsets": {PAYLOADS[10]: {"errors": finding, "warnings": finding, "summary": {
                "name": PAYLOADS[9], "documents": 3, "queries": 6, "judged_queries": 6,
                "judgments": 12, "evidence": 0, "real_share": 1.0, "synthetic_share": 0.0,
                "verified_share": 1.0, "content_hash": PAYLOADS[11], "format": PAYLOADS[3],
                "query_sources": {PAYLOADS[8]: 6}}}}}
    config = {"measures": ["nDCG@10"], "levels": ["doc"], "chunkers": [PAYLOADS[7]], "k": 10,
              "retrievers": [{"name": s, "type": "bm25"} for s in SYSTEMS],
              "baseline": SYSTEMS[0], "test": "t", "correction": "none", "alpha": 0.05,
              "seed": 0, "n_permutations": 100}
    with ResultsStore(path) as db:
        exp = db.upsert_experiment(PAYLOADS[0], None, "", config, prov)
        texts = {q: PAYLOADS[i] for i, q in enumerate(QIDS)}
        for i, name in enumerate(SYSTEMS):
            db.save_cell(exp, _cell(i, name), texts)
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    return experiment_report(_store(tmp_path_factory.mktemp("inj") / "s.sqlite"))


def _normal(text: str) -> str:
    return " ".join(text.split())


CSP = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"


def _assert_inert(page: dict, expected_title: str) -> None:
    """Nothing injected exists in the DOM (checked whatever the page's CSP would block)."""
    seen = page["page"]
    # an executed payload sets the title to "PWNED<n>"; the literal title holds the payload
    assert _normal(seen["title"]) == _normal(expected_title), seen["title"]
    assert seen["scripts"] == 0, "an injected <script> element exists"
    assert seen["handlers"] == [], seen["handlers"]
    assert not [u for u in seen["links"] if not u.startswith("#")], seen["links"]
    assert page["errors"] == [], page["errors"]


def test_experiment_report_runs_nothing_and_shows_the_text(report, tmp_path):
    from searchbench.report.html import render_html

    chromium_path()
    html = render_html(report)
    assert CSP in html  # defence in depth: no script may run even if escaping failed
    page = load_page(write_text(tmp_path / "report.html", html))
    _assert_inert(page, f"searchbench · {PAYLOADS[0]}")
    text = _normal(page["page"]["text"])
    for payload in PAYLOADS:  # every payload is somewhere on the page, as text
        assert _normal(payload) in text, payload
    assert "49" not in text.split("{{7*7}}")[0][-3:]  # no template evaluation
    labels = page["page"]["labels"]
    assert any(f"per-query delta of {SYSTEMS[1]} against" in lab
               or f"against {SYSTEMS[0]}" in lab for lab in labels), labels
    svg_text = " ".join(page["page"]["svgText"])
    assert SYSTEMS[1] in svg_text and SYSTEMS[0] in svg_text  # axis labels / legend, literal
    assert "_under" not in svg_text or "$\\frac{1}{0}$" in svg_text  # no mathtext


def test_ann_sweep_report_runs_nothing_and_shows_the_text(tmp_path):
    pytest.importorskip("matplotlib")
    from searchbench.ann.report import render_html
    from searchbench.ann.sweep import SweepResult

    chromium_path()
    dist = {"mean": 0.9, "p5": 0.5, "min": 0.0}
    points = []
    for i, name in enumerate(PAYLOADS):
        points.append({
            "index": name, "build": {PAYLOADS[1]: PAYLOADS[2]}, "search": {"ef": i}, "k": 10,
            "knn_recall": {"by_id": {**dist, "mean": 0.5 + i / 40}, "tie_aware": dist,
                           "queries_with_ties": 1, "tolerance": PAYLOADS[3]},
            "one_recall_at_1": 0.9, "qps_batch": 1000.0 - i, "qps_batch_min": 900.0,
            "qps_batch_max": 1100.0, "batch_threads": 2, "batch_wall_s": 0.1,
            "batch_cpu_s": 0.2, "qps_single": 500.0, "latency_ms": {"p50": 1, "p95": 2,
                                                                  "p99": 3},
            "build_wall_s": 1.0, "build_cpu_s": 2.0, "index_bytes": 2**20,
            "relevance": {PAYLOADS[4]: {"exact": 0.5, "ann": 0.5, "delta": 0.0, "p": 0.5,
                                        "ci": [-0.01, 0.01], "significant_loss": False},
                          "no_significant_loss": True}})
    meta = {"metric": PAYLOADS[5], "k": 10, "K": 100, "n_base": 5, "n_queries": 3, "dim": 4,
            "exact": {"qps_batch": 300.0},
            "relevance": {"test": PAYLOADS[6], "alpha": 0.05, "rule": PAYLOADS[7]},
            "ground_truth": {PAYLOADS[8]: PAYLOADS[9]},
            "machine": {"cpu": PAYLOADS[10], "cores": 2, "load_average": [0, 0, 0],
                        "libraries": {PAYLOADS[11]: "2"}}}
    html = render_html(SweepResult(points, meta), title=PAYLOADS[2])
    assert CSP in " ".join(html.split())
    page = load_page(write_text(tmp_path / "sweep.html", html))
    _assert_inert(page, f"searchbench · {PAYLOADS[2]}")
    text = _normal(page["page"]["text"])
    for payload in PAYLOADS:
        assert _normal(payload) in text, payload
    svg_text = " ".join(page["page"]["svgText"])
    assert PAYLOADS[0] in svg_text and "_under" in svg_text  # legend keeps '_' names


def _no_raw_html(markdown: str) -> None:
    assert not re.search(r"<\s*(script|img|svg|b|style|!--)", markdown, re.I), markdown
    assert "onload=\"" not in markdown and "\u2028" not in markdown


def test_markdown_reports_contain_no_raw_html(report):
    from searchbench.report.experiment_md import render_markdown

    markdown = render_markdown(report)
    _no_raw_html(markdown)
    assert "&lt;script&gt;document.title=&quot;PWNED1&quot;&lt;/script&gt;" in markdown
    # a table row has as many cells as the header: hostile '|' cannot add columns
    for block in markdown.split("\n\n"):
        rows = [r for r in block.splitlines() if r.startswith("|")]
        widths = {len(re.findall(r"(?<!\\)\|", r)) for r in rows}
        assert len(widths) <= 1, block


def test_ann_markdown_contains_no_raw_html():
    from searchbench.ann.report import render_markdown
    from searchbench.ann.sweep import SweepResult

    dist = {"mean": 0.9, "p5": 0.5, "min": 0.0}
    point = {"index": PAYLOADS[0] + "|x", "build": {}, "search": {"ef": PAYLOADS[4]}, "k": 10,
             "knn_recall": {"by_id": dist, "tie_aware": dist, "tolerance": ""},
             "one_recall_at_1": 0.9, "qps_batch": 10.0, "qps_batch_min": 9.0,
             "qps_batch_max": 11.0, "batch_wall_s": 0.1, "batch_cpu_s": 0.2,
             "qps_single": 5.0, "latency_ms": {"p50": 1, "p95": 2, "p99": 3},
             "build_wall_s": 1.0, "build_cpu_s": 2.0, "index_bytes": 2**20}
    markdown = render_markdown(SweepResult([point], {"machine": {"cpu": PAYLOADS[5]}}))
    _no_raw_html(markdown)
    rows = [r for r in markdown.splitlines() if r.startswith("|")]
    assert len({len(re.findall(r"(?<!\\)\|", r)) for r in rows}) == 1
