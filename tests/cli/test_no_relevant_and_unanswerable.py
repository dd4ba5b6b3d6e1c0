"""Every table and report says how many scored queries have no relevant document (scored 0,
as trec_eval does); queries marked ``"no_answer": true`` are left out (``--unanswerable
skip``, the default) or scored as trec_eval does (``zero``); ``evalset check`` lists them.

Expected means come from pytrec_eval (trec_eval's code) on the qrels as given (``zero``)
and without the marked queries (``skip``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from searchbench.cli.main import main

pytrec_eval = pytest.importorskip("pytrec_eval")

# q36: judged, nothing relevant (the engineer's case); q7: marked no_answer, judged 0;
# q8: marked, never judged (not scored either way); "x y"-free Unicode id é1
QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2, "a": 0}, "q36": {"d": 0, "e": 0},
         "q7": {"a": 0}, "é1": {"b": 1}}
RUN_A = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0, "a": 2.0}, "q36": {"d": 1.0},
         "q7": {"a": 1.0}, "é1": {"a": 1.0, "b": 0.5}}
RUN_B = {"q1": {"b": 2.0, "a": 1.0}, "q2": {"c": 3.0}, "q36": {"e": 1.0},
         "q7": {"b": 1.0}, "é1": {"b": 1.0}}
QUERIES = [{"id": "q1", "text": "one"}, {"id": "q2", "text": "two"},
           {"id": "q36", "text": "thirty-six"}, {"id": "q7", "text": "seven", "no_answer": True},
           {"id": "q8", "text": "eight", "no_answer": True}, {"id": "é1", "text": "e"}]
DOCS = ["a", "b", "c", "d", "e"]


def _write_run(path: Path, run: dict, tag: str) -> str:
    lines = [f"{q} Q0 {d} {i + 1} {s} {tag}" for q, docs in run.items()
             for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items()
                             for d, g in docs.items()), encoding="utf-8")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": d, "text": f"text {d}"}) + "\n" for d in DOCS),
        encoding="utf-8")
    (folder / "qrels.tsv").write_text(qrels.read_text(encoding="utf-8").replace(" 0 ", "\t")
                                      .replace(" ", "\t"), encoding="utf-8")
    return {"qrels": str(qrels), "a": _write_run(tmp_path / "a.trec", RUN_A, "A"),
            "b": _write_run(tmp_path / "b.trec", RUN_B, "B"),
            "queries": str(folder / "queries.jsonl"), "set": str(folder)}


def _reference(run: dict, leave_out: set[str]) -> float:
    qrels = {q: d for q, d in QRELS.items() if q not in leave_out}
    found = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(
        {q: r for q, r in run.items() if q in qrels})
    return float(np.mean([v["map"] for v in found.values()]))


NO_REL = "1 query has no relevant document: scored 0, as trec_eval does (q36"
NO_REL_ZERO = "2 queries have no relevant document: scored 0, as trec_eval does (q36, q7"


def test_eval_table_says_how_many_queries_have_no_relevant_document(files, capsys):
    assert main(["eval", files["qrels"], files["a"], "-m", "AP"]) == 0
    out = capsys.readouterr().out
    assert NO_REL_ZERO in out  # nothing marked without --queries: trec_eval's treatment
    assert f"{_reference(RUN_A, set()):.4f}" in out


@pytest.mark.parametrize("fmt", ["trec", "tsv"])
def test_eval_data_formats_keep_stdout_clean_and_note_on_stderr(files, capsys, fmt):
    assert main(["eval", files["qrels"], files["a"], "-m", "AP", "-f", fmt]) == 0
    out, err = capsys.readouterr()
    assert "note" not in out and NO_REL_ZERO in err
    assert main(["eval", files["qrels"], files["a"], "-m", "AP", "-f", fmt, "-q"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("policy, leave_out", [(None, {"q7"}), ("skip", {"q7"}),
                                               ("zero", set())])
def test_eval_with_queries_leaves_marked_queries_out_unless_zero(files, capsys, policy,
                                                                 leave_out):
    extra = ["--unanswerable", policy] if policy else []
    assert main(["eval", files["qrels"], files["a"], files["b"], "-m", "AP", "-f", "json",
                 "--queries", files["set"], *extra]) == 0
    runs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for obj, run in zip(runs, (RUN_A, RUN_B), strict=True):
        assert obj["measures"]["AP"] == pytest.approx(_reference(run, leave_out))
        assert obj["num_q"] == 5 - len(leave_out)
        info = obj["queries"]
        assert info["no_answer"]["query_ids"] == ["q7"]  # q8 has no judgments: not scored
        assert info["no_answer"]["policy"] == (policy or "skip")
        assert info["no_relevant"]["query_ids"] == (["q36"] if leave_out else ["q36", "q7"])


def test_eval_unanswerable_without_queries_is_one_error_line(files, capsys):
    assert main(["eval", files["qrels"], files["a"], "--unanswerable", "zero"]) == 2  # usage
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --unanswerable needs --queries")


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv", "latex"])
def test_compare_says_it_in_every_format(files, capsys, fmt):
    assert main(["compare", files["qrels"], files["a"], files["b"], "-m", "AP", "-f", fmt,
                 "--queries", files["queries"], "-n", "200"]) == 0
    out, err = capsys.readouterr()
    text = " ".join((out + err).replace("\\_", "_").split())
    assert NO_REL in text
    assert "1 query marked no_answer is left out of the measures (q7)" in text
    if fmt == "json":
        data = json.loads(out)
        assert data["n_queries"] == 4
        assert data["means"]["a.trec"]["AP"] == pytest.approx(_reference(RUN_A, {"q7"}))
        assert data["queries"]["no_relevant"]["count"] == 1
        assert data["queries"]["no_answer"] == {"count": 1, "query_ids": ["q7"],
                                                "policy": "skip",
                                                "treatment": "left out of the measures"}


def test_compare_zero_keeps_trec_eval_numbers(files, capsys):
    assert main(["compare", files["qrels"], files["a"], files["b"], "-m", "AP", "-f", "json",
                 "--queries", files["queries"], "--unanswerable", "zero", "-n", "200"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_queries"] == 5
    assert data["means"]["b.trec"]["AP"] == pytest.approx(_reference(RUN_B, set()))
    assert any(n.startswith(NO_REL_ZERO) for n in data["notes"])


def test_evalset_check_lists_queries_without_a_relevant_document(files, capsys):
    main(["evalset", "check", files["set"]])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "[no-relevant-document]" in x)
    assert "1 of 5 judged queries have no relevant document" in line and "'q36'" in line
    assert "'q7'" not in line  # marked: expected to have none
    assert "no_answer: 2 queries marked" in out
    assert "query-without-judgments" not in out  # q8 is marked: it needs no judgments
    assert main(["evalset", "check", files["set"], "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    kinds = [w["kind"] for w in data["warnings"]]
    assert "no-relevant-document" in kinds and data["summary"]["no_answer_queries"] == 2


def test_evalset_check_flags_a_marked_query_with_relevant_judgments(files, capsys):
    path = Path(files["set"]) / "queries.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace(
        '"id": "q1", "text": "one"}', '"id": "q1", "text": "one", "no_answer": true}'),
        encoding="utf-8")
    main(["evalset", "check", files["set"]])
    out = capsys.readouterr().out
    assert "[no-answer-with-relevant]" in out and "'q1'" in out


@pytest.mark.parametrize("value", ['"yes"', "1", "null", "[true]"])
def test_a_no_answer_that_is_not_true_or_false_is_one_error_line(files, capsys, value):
    path = Path(files["set"]) / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-1] + f', "no_answer": {value}}}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["evalset", "check", files["set"]]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "queries.jsonl:3: no_answer is" in err[0]
    assert "expected true" in err[0]


EXPERIMENT = """name = "na"
evalset = "set"
measures = ["AP", "nDCG@10"]
{policy}

[[retrievers]]
name = "bm25"
type = "bm25"

[[retrievers]]
name = "bm25b"
type = "bm25"
k1 = 0.5
"""


@pytest.mark.parametrize("policy, flag, left_out", [("", [], True),
                                                    ('unanswerable = "zero"', [], False),
                                                    ('unanswerable = "zero"',
                                                     ["--unanswerable", "skip"], True)])
def test_experiment_stores_the_counts_and_the_report_applies_the_policy(
        files, capsys, policy, flag, left_out):
    folder = Path(files["set"]).parent
    config = folder / "na.toml"
    config.write_text(EXPERIMENT.format(policy=policy), encoding="utf-8")
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    assert main(["experiment", "report", str(config), "--quiet", *flag]) == 0
    out = " ".join(capsys.readouterr().out.split())
    data = json.loads((folder / "report" / "na.json").read_text(encoding="utf-8"))
    [group] = data["groups"]
    assert group["queries"]["no_answer"]["query_ids"] == ["q7"]
    for cell in group["cells"]:
        assert cell["extras"]["no_relevant"] == ["q36", "q7"]
        assert len(cell["extras"]["recall_curve_answerable"]) == 100
    assert data["provenance"]["evalsets"]["set"]["query_groups"]["no_answer"] == ["q7", "q8"]
    assert group["comparison"]["n_queries"] == (4 if left_out else 5)
    if left_out:
        assert NO_REL in out and "1 query marked no_answer is left out" in out
    else:
        assert NO_REL_ZERO in out and "(--unanswerable zero; q7)" in out


def test_a_bad_unanswerable_in_the_config_is_one_error_line(files, capsys):
    config = Path(files["set"]).parent / "bad.toml"
    config.write_text(EXPERIMENT.format(policy='unanswerable = "ignore"'), encoding="utf-8")
    assert main(["experiment", "run", str(config), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "key 'unanswerable': unknown unanswerable policy 'ignore'" in err[0]


def test_no_answer_survives_add_queries_convert_and_changes_the_hash_only_when_set(
        files, tmp_path, capsys):
    from searchbench.collections.registry import load_evalset
    from searchbench.data import read_queries_jsonl

    folder = Path(files["set"])
    before = load_evalset(str(folder)).content_hash()
    new = tmp_path / "more.jsonl"
    new.write_text('{"text": "nothing on this", "no_answer": true}\n'
                   '{"text": "an ordinary one"}\n', encoding="utf-8")
    assert main(["evalset", "add-queries", str(folder), str(new)]) == 0
    marked = read_queries_jsonl(folder / "queries.jsonl").no_answer_ids()
    assert marked == ["q7", "q8", "q9"]  # the new marked query got the next free id
    lines = (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert '"no_answer"' not in lines[-1] and '"no_answer":true' in lines[-2]
    for fmt in ("beir", "native"):
        out = tmp_path / fmt
        assert main(["evalset", "convert", str(folder), "-o", str(out), "--format",
                     fmt]) == 0
        spec = f"beir:{out}" if fmt == "beir" else str(out)
        # a BEIR split keeps its judged queries only: q8 and q9 have no judgments
        assert load_evalset(spec).queries.no_answer_ids() == (["q7"] if fmt == "beir"
                                                              else marked)
    es = load_evalset(str(folder))
    assert es.content_hash() != before
    from dataclasses import replace

    from searchbench.data import Queries

    unmarked = replace(es, queries=Queries([replace(q, no_answer=False) for q in es.queries]))
    plain = tmp_path / "plain"
    unmarked.write(plain)
    assert '"no_answer"' not in (plain / "queries.jsonl").read_text(encoding="utf-8")
    capsys.readouterr()


def test_add_queries_refuses_a_no_answer_that_is_not_a_boolean(files, tmp_path, capsys):
    new = tmp_path / "more.jsonl"
    new.write_text('{"text": "x", "no_answer": "maybe"}\n', encoding="utf-8")
    assert main(["evalset", "add-queries", files["set"], str(new)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "more.jsonl:1: no_answer is 'maybe'" in err[0]


@pytest.mark.parametrize("policy, left_out", [([], ["q7"]), (["--unanswerable", "zero"], [])])
def test_run_summary_and_sidecar_say_it(files, tmp_path, capsys, policy, left_out):
    out = tmp_path / "bm25.trec"
    assert main(["run", files["set"], "-r", "bm25", "-o", str(out), *policy]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    side = json.loads(out.with_name(out.name + ".json").read_text(encoding="utf-8"))
    info = next(v["queries"] for v in _dicts(side) if "queries" in v
                and isinstance(v["queries"], dict) and "no_answer" in v["queries"])
    assert info["no_answer"]["query_ids"] == ["q7"]
    assert info["no_answer"]["policy"] == ("zero" if not left_out else "skip")
    assert info["scored"] == 5 - len(left_out)
    assert (NO_REL if left_out else NO_REL_ZERO) in printed


def _dicts(obj):
    """Every dict nested in ``obj``."""
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _dicts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _dicts(v)
