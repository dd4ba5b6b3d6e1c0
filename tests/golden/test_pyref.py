"""The built-in ``pyref`` evaluation set: integrity of the shipped data files.

Reads the files directly (no loader involved), so a broken data file is reported here
with the offending ids, whatever state the loaders are in. See docs/pyref.md.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import re
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

PYREF = files("searchbench.collections") / "pyref"
DOC = Path(__file__).resolve().parents[2] / "docs" / "pyref.md"
KINDS = {"howto", "lookup", "conceptual", "error"}


def _jsonl(name: str) -> list[dict]:
    raw = (PYREF / name).read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return _jsonl("corpus.jsonl.gz")


@pytest.fixture(scope="module")
def docs(corpus: list[dict]) -> dict[str, str]:
    return {d["id"]: d["text"] for d in corpus}


@pytest.fixture(scope="module")
def queries() -> list[dict]:
    return _jsonl("queries.jsonl")


@pytest.fixture(scope="module")
def qrels() -> list[tuple[str, str, int]]:
    text = (PYREF / "qrels.tsv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines(), delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    return [(q, d, int(g)) for q, d, g in rows[1:]]


@pytest.fixture(scope="module")
def evidence() -> list[dict]:
    return _jsonl("evidence.jsonl")


def test_corpus_is_the_frozen_one_recorded_in_the_docs() -> None:
    raw = (PYREF / "corpus.jsonl.gz").read_bytes()
    assert raw[4:8] == b"\x00\x00\x00\x00", "gzip header mtime must be 0 (deterministic build)"
    content = hashlib.sha256(gzip.decompress(raw)).hexdigest()
    recorded = re.search(r"content sha256[^`]*`([0-9a-f]{64})`", DOC.read_text(encoding="utf-8"))
    assert recorded, f"{DOC} must record the corpus content sha256"
    assert content == recorded.group(1)


def test_corpus_records(corpus: list[dict]) -> None:
    ids = [d["id"] for d in corpus]
    assert len(ids) == 79
    assert ids == sorted(ids)
    assert not [i for i, n in Counter(ids).items() if n > 1]
    for d in corpus:
        assert set(d) == {"id", "title", "text", "metadata"}, d["id"]
        assert d["title"].strip() and d["text"].strip(), d["id"]
        assert d["metadata"]["source"] == "pydoc_data.topics", d["id"]
        assert d["metadata"]["python_version"].startswith("3.11."), d["id"]


def test_queries_and_provenance(queries: list[dict]) -> None:
    assert len(queries) >= 80
    ids = [q["id"] for q in queries]
    assert not [i for i, n in Counter(ids).items() if n > 1]
    assert all(re.fullmatch(r"pyref-\d{3}", i) for i in ids)
    texts = [q["text"].strip().lower() for q in queries]
    assert not [t for t, n in Counter(texts).items() if n > 1], "duplicate query texts"
    for q in queries:
        assert q["text"].strip(), q["id"]
        assert q["source"] == "curated", q["id"]
        assert q["verified"] is True, q["id"]
        assert q["metadata"]["kind"] in KINDS, q["id"]
    assert set(Counter(q["metadata"]["kind"] for q in queries)) == KINDS


def test_judgments(queries: list[dict], docs: dict[str, str],
                   qrels: list[tuple[str, str, int]]) -> None:
    qids = {q["id"] for q in queries}
    pairs = [(q, d) for q, d, _ in qrels]
    assert not [p for p, n in Counter(pairs).items() if n > 1], "duplicate judgments"
    assert not [q for q, _, _ in qrels if q not in qids], "judgments for unknown queries"
    assert not [d for _, d, _ in qrels if d not in docs], "judged docs missing from the corpus"
    assert all(g in (0, 1, 2, 3) for _, _, g in qrels)
    relevant = {q for q, _, g in qrels if g >= 1}
    assert sorted(qids - relevant) == [], "queries without a relevant document"


def test_evidence(docs: dict[str, str], qrels: list[tuple[str, str, int]],
                  evidence: list[dict]) -> None:
    grades = {(q, d): g for q, d, g in qrels}
    for e in evidence:
        assert set(e) == {"query_id", "doc_id", "grade", "quote"}, e
        key = (e["query_id"], e["doc_id"])
        assert grades.get(key, 0) >= 1, f"evidence for a pair not judged relevant: {key}"
        assert e["grade"] == grades[key], key
        assert len(e["quote"]) >= 10, key
        assert e["quote"] in docs[e["doc_id"]], f"quote not in document: {key} {e['quote']!r}"
    with_evidence = {(e["query_id"], e["doc_id"]) for e in evidence}
    missing = sorted(k for k, g in grades.items() if g >= 1 and k not in with_evidence)
    assert missing == [], "relevant judgments without evidence"
