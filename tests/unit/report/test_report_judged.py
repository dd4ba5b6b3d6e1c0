"""Judged coverage in the experiment report: a Judged@10 column beside the means in the
Markdown and HTML reports and the JSON, a note for mostly unjudged systems, and no column
for cells stored without it (older stores)."""

from __future__ import annotations

import json

import pytest

from searchbench.experiment import CellRecord, ResultsStore
from searchbench.report.experiment import experiment_report

QIDS = ["q0", "q1", "q2"]
CONFIG = {"measures": ["nDCG@10"], "levels": ["doc"], "chunkers": ["none"], "k": 10,
          "retrievers": [{"name": "base", "type": "bm25"}, {"name": "cand", "type": "bm25"}],
          "baseline": "base", "test": "t", "correction": "none", "alpha": 0.05, "seed": 0,
          "n_permutations": 100}
PROV = {"libraries": {"searchbench": "0"}, "git": None, "started": "now",
        "machine": {"platform": "x", "cpus": 2},
        "evalsets": {"set": {"errors": [], "warnings": [], "summary": {
            "name": "set", "documents": 3, "queries": 3, "judged_queries": 3,
            "judgments": 6, "evidence": 0, "real_share": 1.0, "synthetic_share": 0.0,
            "verified_share": 1.0, "content_hash": "sha256:abc",
            "query_sources": {"human": 3}}}}}


def _cell(name: str, values: list[float], judged: float | None) -> CellRecord:
    extras = {"recall_curve": [0.5] * 100, "context_tokens": {"10": 300.0}}
    if judged is not None:
        extras["judged"] = {"k": 10, "mean": judged}
    return CellRecord(
        cell_key=name, system=name, evalset="set", evalset_hash="h", level="doc",
        chunker="none", retriever=name, config={}, run_path="", run_hash="",
        timings={"search_s": 0.5, "latency_ms": 1.0, "qps": 100.0}, provenance={},
        extras=extras, scores={"nDCG@10": dict(zip(QIDS, values, strict=True)),
                               "RR": dict(zip(QIDS, values, strict=True))})


def _report(tmp_path, judged: tuple[float | None, float | None]):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as db:
        exp = db.upsert_experiment("e", None, "", CONFIG, PROV)
        texts = {q: f"text of {q}" for q in QIDS}
        db.save_cell(exp, _cell("base", [1.0, 0.5, 0.0], judged[0]), texts)
        db.save_cell(exp, _cell("cand", [0.5, 0.5, 1.0], judged[1]), texts)
    return experiment_report(path)


def test_judged_column_and_note(tmp_path):
    report = _report(tmp_path, (0.9, 0.25))
    [group] = report.groups
    assert group.comparison.judged == pytest.approx({"base": 0.9, "cand": 0.25})
    md = report.to_markdown()
    header = next(line for line in md.splitlines() if line.startswith("| system"))
    assert header.rstrip(" |").endswith("Judged@10")
    assert "0.9000 |" in md and "0.2500 |" in md
    assert "mostly unjudged documents" in md and "cand 25%" in md
    html = report.to_html()
    assert '<th class="judged">Judged@10</th>' in html
    assert '<td class="judged">0.2500</td>' in html and "cand 25%" in html
    data = json.loads(report.to_json())
    assert data["groups"][0]["comparison"]["judged"] == {
        "cutoff": 10, "means": {"base": 0.9, "cand": 0.25}}


def test_cells_stored_without_coverage_show_no_column(tmp_path):
    report = _report(tmp_path, (None, None))
    [group] = report.groups
    assert group.comparison.judged == {} and group.comparison.judged_label is None
    assert "Judged@" not in report.to_markdown()
    assert 'class="judged"' not in report.to_html()
