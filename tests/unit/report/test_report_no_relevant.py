"""The experiment report says how many scored queries have no relevant document, and leaves
the queries the evaluation set marks ``no_answer`` out of every number (``unanswerable =
"skip"``, the default) or keeps them (``"zero"``, the config or ``--unanswerable``): in the
text tables, the Markdown, the HTML and the JSON, with one system or several."""

from __future__ import annotations

import json

import numpy as np
import pytest

from searchbench.experiment import CellRecord, ResultsStore
from searchbench.report.experiment import experiment_report

QIDS = ["q0", "q1", "q36", "q7"]
CONFIG = {"measures": ["nDCG@10"], "levels": ["doc"], "chunkers": ["none"], "k": 10,
          "retrievers": [{"name": "base", "type": "bm25"}, {"name": "cand", "type": "bm25"}],
          "baseline": "base", "test": "t", "correction": "none", "alpha": 0.05, "seed": 0,
          "n_permutations": 100}
PROV = {"libraries": {"searchbench": "0"}, "git": None, "started": "now",
        "machine": {"platform": "x", "cpus": 2},
        "evalsets": {"set": {"errors": [], "warnings": [], "query_groups": {
            "synthetic": [], "verified": [], "no_answer": ["q7", "q99"]}, "summary": {
            "name": "set", "documents": 3, "queries": 5, "judged_queries": 4,
            "judgments": 6, "evidence": 0, "real_share": 1.0, "synthetic_share": 0.0,
            "verified_share": 0.0, "content_hash": "sha256:abc",
            "query_sources": {"human": 5}}}}}
VALUES = {"base": [1.0, 0.5, 0.0, 0.0], "cand": [0.5, 1.0, 0.0, 0.0]}
NO_REL = "2 queries have no relevant document: scored 0, as trec_eval does (q36, q7)"
ONE_NO_REL = "1 query has no relevant document: scored 0, as trec_eval does (q36)"
LEFT_OUT = "1 query marked no_answer is left out of the measures (q7)"


def _cell(name: str, no_relevant: list[str] | None) -> CellRecord:
    values = dict(zip(QIDS, VALUES[name], strict=True))
    extras = {"recall_curve": [0.25] * 100, "recall_curve_answerable": [0.5] * 100,
              "context_tokens": {"10": 30.0}, "mean_unit_tokens": 20.0,
              "token_unit": "whitespace-separated words"}
    if no_relevant is not None:
        extras["no_relevant"] = no_relevant
    return CellRecord(
        cell_key=name, system=name, evalset="set", evalset_hash="h", level="doc",
        chunker="none", retriever=name, config={}, run_path="", run_hash="",
        timings={"search_s": 0.5, "latency_ms": 1.0, "qps": 100.0}, provenance={},
        extras=extras, scores={"nDCG@10": values, "RR": values})


def _report(tmp_path, names=("base", "cand"), policy=None, config_policy=None,
            no_relevant=("q36", "q7")):
    path = tmp_path / "s.sqlite"
    config = {**CONFIG, **({"unanswerable": config_policy} if config_policy else {})}
    with ResultsStore(path) as db:
        exp = db.upsert_experiment("e", None, "", config, PROV)
        for name in names:
            db.save_cell(exp, _cell(name, None if no_relevant is None else list(no_relevant)),
                         {q: f"text of {q}" for q in QIDS})
    return experiment_report(path, unanswerable=policy)


@pytest.mark.parametrize("policy, config_policy", [(None, None), ("skip", "zero"),
                                                   (None, "skip")])
def test_skip_leaves_marked_queries_out_of_every_number(tmp_path, policy, config_policy):
    report = _report(tmp_path, policy=policy, config_policy=config_policy)
    [group] = report.groups
    assert group.query_ids == ["q0", "q1", "q36"]
    assert group.comparison.means["base"]["nDCG@10"] == pytest.approx(np.mean([1, 0.5, 0]))
    assert group.recall_curve(group.cells[0]) == [0.5] * 100
    md = report.to_markdown().replace("\\_", "_")
    assert ONE_NO_REL in md and LEFT_OUT in md
    html = " ".join(report.to_html().split())
    assert ONE_NO_REL in html and LEFT_OUT in html
    data = json.loads(report.to_json())["groups"][0]
    assert data["queries"]["no_answer"]["query_ids"] == ["q7"]  # q99: never scored
    assert data["queries"]["no_relevant"]["query_ids"] == ["q36"]
    assert data["comparison"]["n_queries"] == 3


@pytest.mark.parametrize("policy, config_policy", [("zero", None), (None, "zero"),
                                                   ("zero", "skip")])
def test_zero_keeps_them_as_trec_eval_scores_them(tmp_path, policy, config_policy):
    report = _report(tmp_path, policy=policy, config_policy=config_policy)
    [group] = report.groups
    assert group.query_ids == QIDS
    assert group.comparison.means["cand"]["nDCG@10"] == pytest.approx(np.mean(VALUES["cand"]))
    assert group.recall_curve(group.cells[0]) == [0.25] * 100
    md = report.to_markdown().replace("\\_", "_")
    assert NO_REL in md and "scored as trec_eval does (--unanswerable zero; q7)" in md


def test_one_system_still_says_it(tmp_path):
    report = _report(tmp_path, names=("base",))
    [group] = report.groups
    assert group.comparison is None
    assert ONE_NO_REL in report.to_markdown().replace("\\_", "_")
    assert ONE_NO_REL in " ".join(report.to_html().split())
    assert json.loads(report.to_json())["groups"][0]["notes"][0] == group.notes[0]


def test_cells_stored_before_the_count_say_so(tmp_path):
    report = _report(tmp_path, no_relevant=None)
    notes = report.groups[0].comparison.notes
    assert any("stored before searchbench counted" in n for n in notes)


def test_the_text_tables_print_the_notes(tmp_path, capsys):
    from searchbench.cli.experiment_cmd import print_means_tables

    print_means_tables(_report(tmp_path), 4)
    out = " ".join(capsys.readouterr().out.split())
    assert ONE_NO_REL in out and LEFT_OUT in out
    print_means_tables(_report(tmp_path / "one", names=("base",)), 4)
    assert ONE_NO_REL in " ".join(capsys.readouterr().out.split())
