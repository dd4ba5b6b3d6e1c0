"""BEIR folders: split selection, query filtering, provenance kept through a round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.data.beir import read_beir, write_beir
from searchbench.data.evalset import read_native
from searchbench.errors import DataFormatError


def make_beir(tmp_path: Path) -> Path:
    root = tmp_path / "beirset"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "", "text": "alpha"}, {"_id": "q9", "title": "t", "text": "b"}]
    queries = [{"_id": "q1", "text": "alpha?", "metadata": {}},
               {"_id": "q9", "text": "beta?", "metadata": {}},
               {"_id": "q5", "text": "train only", "metadata": {}}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq9\td1\t1\r\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq5\td1\t1\n")
    return root


def test_split_selects_judged_queries(tmp_path: Path) -> None:
    es = read_beir(make_beir(tmp_path))
    assert es.queries.ids == ["q1", "q9"] and len(es.qrels) == 2
    assert "1 of queries.jsonl left out" in es.provenance["notes"][0]
    assert any("ArguAna-style" in n for n in es.provenance["notes"])
    train = read_beir(make_beir(tmp_path / "t"), "train")
    assert train.queries.ids == ["q5"]


def test_unknown_split_lists_the_present_ones(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no qrels for split 'dev'; expected one of the "
                                              "splits present: test, train"):
        read_beir(make_beir(tmp_path), "dev")


def test_round_trip_beir_native_beir(tmp_path: Path) -> None:
    es = read_beir(make_beir(tmp_path), ignore_identical_ids=True)
    assert es.ignore_identical_ids
    write_beir(es, tmp_path / "b2")
    back = read_beir(tmp_path / "b2")
    assert back.content_hash() == es.content_hash()
    es.write(tmp_path / "native")
    native = read_native(tmp_path / "native")
    assert native.content_hash() == es.content_hash()


def test_query_provenance_survives_beir(tmp_path: Path) -> None:
    root = make_beir(tmp_path)
    es = read_beir(root)
    es.write(tmp_path / "n")
    text = (tmp_path / "n" / "queries.jsonl").read_text().replace('"human"', '"synthetic"')
    (tmp_path / "n" / "queries.jsonl").write_text(text)
    native = read_native(tmp_path / "n")
    write_beir(native, tmp_path / "b")
    back = read_beir(tmp_path / "b")
    assert back.queries.by_source() == {"synthetic": 2}
    assert back.queries["q1"].metadata == {}
