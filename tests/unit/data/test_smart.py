"""SMART (.I/.T/.W) reader: fields, CRLF, positions as ids, round trip, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbench.data.smart import iter_smart, read_smart_docs, read_smart_queries, write_smart
from searchbench.errors import DataFormatError

SAMPLE = (
    ".I 1\r\n.T\r\nA title\r\n.A\r\nSmith, J.\r\n.A\r\nDoe, A.\r\n.W\r\n  first line   \r\n"
    "second line\r\n.X\r\n1\t5\t1\r\n.I 003\r\n.W\r\nonly text\r\n"
)


def test_fields_repeats_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "docs.all"
    path.write_bytes(SAMPLE.encode())
    recs = list(iter_smart(path))
    assert [r.id for r in recs] == ["1", "003"]
    assert recs[0].fields["A"] == ["Smith, J.", "Doe, A."]
    assert recs[0].line == 1 and recs[1].line == 13
    corpus = read_smart_docs(path)
    assert corpus["1"].text == "first line\nsecond line"
    assert corpus["1"].title == "A title"
    assert corpus["1"].metadata == {"authors": "Smith, J.\nDoe, A.", "references": "1\t5\t1"}


def test_queries_by_position_keep_record_id(tmp_path: Path) -> None:
    path = tmp_path / "q.qry"
    path.write_text(".I 001\n.W\nfirst\n.I 004\n.W\nsecond\n")
    q = read_smart_queries(path, ids="position")
    assert q.ids == ["1", "2"]
    assert q["2"].metadata["record_id"] == "004" and q["2"].text == "second"
    assert read_smart_queries(path).ids == ["001", "004"]


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "docs.all"
    path.write_bytes(SAMPLE.encode())
    corpus = read_smart_docs(path)
    write_smart(tmp_path / "out.all", corpus)
    back = read_smart_docs(tmp_path / "out.all")
    assert [(d.id, d.title, d.text) for d in back] == [(d.id, d.title, d.text) for d in corpus]
    queries = read_smart_queries(path)
    write_smart(tmp_path / "out.qry", queries)
    assert [q.text for q in read_smart_queries(tmp_path / "out.qry")] == queries.texts()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("stray text\n.I 1\n.W\nx\n", r"x.all:1: found 'stray text' before the first record"),
        (".W\nx\n", r"x.all:1: found '.W' before the first record"),
        (".I 1\n.W\na\n.I\n.W\nb\n", r"x.all:4: '.I' without an id"),
        (".I 1\n.W\na\n.I 1\n.W\nb\n", r"x.all:4: duplicate id '1', first seen at .*x.all:1"),
    ],
)
def test_bad_input(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "x.all"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=needle):
        read_smart_docs(path)
