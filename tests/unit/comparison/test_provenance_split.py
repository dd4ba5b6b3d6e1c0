"""The main measure split by query provenance (real vs synthetic, verified vs not) in
compare, its Markdown/terminal/JSON renderings, the experiment report, and the CLI's
--queries; means checked against pytrec_eval's per-query nDCG@10."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

import searchbench as sb
from searchbench.cli.main import main
from searchbench.data import Queries, Query
from searchbench.experiment import CellRecord, ResultsStore
from searchbench.report.experiment import experiment_report

QRELS = {f"q{i}": {"d1": 1, "d2": i % 3, "d3": 2} for i in range(6)}
RUNS = {
    "base": {f"q{i}": {"d1": 3.0, "d2": 2.0, "d3": 1.0 + i % 2} for i in range(6)},
    "<b>cand</b>": {f"q{i}": {"d3": 3.0, "d2": 2.5 - i % 2, "d1": 1.0} for i in range(6)},
}
# q0 q1 q2 real (q0, q1 verified); q3 q4 q5 synthetic (q3 verified)
QUERIES = Queries([Query(f"q{i}", f"text {i}", "synthetic" if i >= 3 else "human",
                         "m" if i >= 3 else None, i in (0, 1, 3)) for i in range(6)])
CONFIG = {"measures": ["nDCG@10"], "levels": ["doc"], "chunkers": ["none"], "k": 10,
          "retrievers": [{"name": "base", "type": "bm25"}, {"name": "cand", "type": "bm25"}],
          "baseline": "base", "test": "t", "correction": "none", "alpha": 0.05, "seed": 0,
          "n_permutations": 100}
PROV = {"libraries": {"searchbench": "0"}, "git": None, "started": "now",
        "machine": {"platform": "x", "cpus": 2},
        "evalsets": {"set": {"errors": [], "warnings": [], "summary": {
            "name": "set", "documents": 3, "queries": 6, "judged_queries": 6,
            "judgments": 6, "evidence": 0, "real_share": 0.5, "synthetic_share": 0.5,
            "verified_share": 0.5, "content_hash": "sha256:abc",
            "query_sources": {"human": 3, "synthetic": 3}}}}}
GROUPS = {"real": ["q0", "q1", "q2"], "synthetic": ["q3", "q4", "q5"],
          "verified": ["q0", "q1", "q3"], "unverified": ["q2", "q4", "q5"]}


def _reference(run: dict, qids: list[str]) -> float:
    ev = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10"})
    scores = ev.evaluate(run)
    return float(np.mean([scores[q]["ndcg_cut_10"] for q in qids]))


def test_compare_splits_the_main_measure_by_provenance() -> None:
    cmp = sb.compare(sb.Qrels.from_dict(QRELS),
                     {n: sb.Run.from_dict(r, name=n) for n, r in RUNS.items()},
                     ["nDCG@10", "P@5"], test="t", queries=QUERIES)
    assert cmp.provenance_shares() == {"real": 3, "synthetic": 3, "verified": 3,
                                       "unverified": 3, "total": 6}
    rows = {r.group: r for r in cmp.provenance_split()}
    assert list(rows) == list(GROUPS)
    for group, qids in GROUPS.items():
        for name, run in RUNS.items():
            assert rows[group].means[name] == pytest.approx(_reference(run, qids))
    md = cmp.to_markdown()
    assert "Queries: 3 real (50%), 3 synthetic (50%); 3 verified (50%), 3 unverified (50%)." in md
    assert "| nDCG@10 by query provenance | queries | base (baseline) | &lt;b&gt;cand&lt;/b&gt; |" \
        in md  # a run name is inert text
    data = json.loads(cmp.to_json())["query_provenance"]
    assert data["shares"]["synthetic"] == 3 and data["split"][0]["group"] == "real"


def test_no_split_without_provenance_or_when_every_query_is_alike() -> None:
    qrels = sb.Qrels.from_dict(QRELS)
    runs = {n: sb.Run.from_dict(r, name=n) for n, r in RUNS.items()}
    plain = sb.compare(qrels, runs, "nDCG@10", test="t")
    assert plain.provenance_split() == [] and "by query provenance" not in plain.to_markdown()
    alike = {f"q{i}": ("human", True) for i in range(6)}
    same = sb.compare(qrels, runs, "nDCG@10", test="t", queries=alike)
    assert same.provenance_split() == []
    assert "6 real (100%), 0 synthetic (0%)" in same.to_markdown()


def test_compare_cli_queries_option(tmp_path: Path, capsys) -> None:
    sb.Qrels.from_dict(QRELS).to_file(tmp_path / "qrels.txt")
    paths = []
    for i, run in enumerate(RUNS.values()):
        paths.append(tmp_path / f"r{i}.trec")
        sb.Run.from_dict(run).to_file(paths[-1])
    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"id": q.id, "text": q.text, "source": q.source, "verified": q.verified})
        + "\n" for q in QUERIES))
    code = main(["compare", str(tmp_path / "qrels.txt"), *map(str, paths), "-m", "nDCG@10",
                 "--queries", str(tmp_path), "-f", "markdown"])
    out = capsys.readouterr().out
    assert code == 0 and "| synthetic | 3 |" in out


def test_experiment_report_splits_by_the_stored_query_groups(tmp_path: Path) -> None:
    qids = [f"q{i}" for i in range(6)]
    prov = copy.deepcopy(PROV)
    prov["evalsets"]["set"]["query_groups"] = {"synthetic": GROUPS["synthetic"],
                                               "verified": GROUPS["verified"]}
    values = {"base": [1.0, 0.5, 0.0, 0.2, 0.4, 0.6], "cand": [0.5, 0.5, 1.0, 0.0, 0.0, 0.3]}
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as db:
        exp = db.upsert_experiment("e", None, "", CONFIG, prov)
        for name, vals in values.items():
            scores = dict(zip(qids, vals, strict=True))
            db.save_cell(exp, CellRecord(
                cell_key=name, system=name, evalset="set", evalset_hash="h", level="doc",
                chunker="none", retriever=name, config={}, run_path="", run_hash="",
                timings={"search_s": 0.5, "latency_ms": 1.0, "qps": 100.0}, provenance={},
                extras={"recall_curve": [0.5] * 100}, scores={"nDCG@10": scores,
                                                              "RR": scores}),
                {q: q for q in qids})
    report = experiment_report(path)
    md = report.to_markdown()
    assert "| synthetic | 3 | 0.4000 | 0.1000 |" in md  # means of q3..q5
    assert "| real | 3 | 0.5000 | 0.6667 |" in md
    html = report.to_html()
    assert 'data-kind="provenance-split"' in html and "<td>synthetic</td>" in html
