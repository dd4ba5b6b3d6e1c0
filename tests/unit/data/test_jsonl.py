"""JSONL corpus/queries readers: round trips, accepted variants, bad input, streaming."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from searchbench.data.jsonl import (
    read_corpus_jsonl,
    read_queries_jsonl,
    write_corpus_jsonl,
    write_queries_jsonl,
)
from searchbench.data.texts import Corpus, Document, Queries, Query
from searchbench.errors import DataFormatError


def _corpus() -> Corpus:
    return Corpus([
        Document("d1", "first text", "Title one", {"year": 1999}),
        Document("d2", "second — ünïcode text\nwith a newline"),
        Document("10", "numeric id"),
    ])


def _queries() -> Queries:
    return Queries([
        Query("q1", "how do I sort?", "human"),
        Query("q2", "generated", "synthetic", "some-llm", True, {"kind": "how-to"}),
    ])


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz"])
def test_corpus_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert write_corpus_jsonl(path, _corpus()) == 3
    back = read_corpus_jsonl(path)
    assert list(back) == list(_corpus())
    write_corpus_jsonl(tmp_path / "again.jsonl", back)
    assert list(read_corpus_jsonl(tmp_path / "again.jsonl")) == list(_corpus())


def test_queries_round_trip_keeps_provenance(tmp_path: Path) -> None:
    write_queries_jsonl(tmp_path / "q.jsonl", _queries())
    back = read_queries_jsonl(tmp_path / "q.jsonl")
    assert list(back) == list(_queries())
    assert back["q2"].generator == "some-llm" and back["q2"].verified is True
    assert back.by_source() == {"human": 1, "synthetic": 1}


def test_beir_spelling_bom_crlf_blank_lines_and_gz(tmp_path: Path) -> None:
    text = ('\ufeff{"_id": 7, "title": "T", "text": "x", "extra": 1}\r\n\r\n'
            '{"_id": "b", "text": "y"}\r\n')
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode()))
    corpus = read_corpus_jsonl(path)
    assert corpus.ids == ["7", "b"]
    assert corpus["7"].metadata == {"extra": 1} and corpus["7"].title == "T"


def test_file_objects_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n')
    with open(path, "rb") as fh:
        assert read_queries_jsonl(fh).ids == ["a"]
    with open(path, encoding="utf-8") as fh:
        assert read_queries_jsonl(fh).ids == ["a"]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"id": "a", "text": ', "invalid JSON"),
        ('["a", "b"]', "expected an object"),
        ('{"text": "no id"}', "expected a string \"id\""),
        ('{"id": "a", "text": 5}', "'text' is a int"),
        ('{"id": " a", "text": "x"}', "contains whitespace"),
        ('{"id": "a b", "text": "x"}', "contains whitespace"),
        ('{"id": "a", "text": "x", "metadata": 3}', "'metadata' is a int"),
    ],
)
def test_bad_lines_name_path_and_line(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n' + line + "\n")
    with pytest.raises(DataFormatError, match=needle) as info:
        read_corpus_jsonl(path)
    assert f"{path}:2:" in str(info.value)


def test_bad_query_provenance(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "text": "x", "source": "crowd"}\n')
    with pytest.raises(DataFormatError, match=r"q.jsonl:1: source 'crowd'; expected one of"):
        read_queries_jsonl(path)
    path.write_text('{"id": "a", "text": "x", "verified": "yes"}\n')
    with pytest.raises(DataFormatError, match="expected true or false"):
        read_queries_jsonl(path)


def test_duplicate_id_raises_or_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n'
                    '{"id": "a", "text": "z"}\n')
    with pytest.raises(DataFormatError, match=r"c.jsonl:3: duplicate id 'a', first seen at .*:1"):
        read_corpus_jsonl(path)
    issues: list = []
    corpus = read_corpus_jsonl(path, issues=issues)
    assert corpus.ids == ["a", "b"] and corpus["a"].text == "x"
    assert [i.kind for i in issues] == ["duplicate-id"]


def test_write_is_atomic_on_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("old\n")

    def broken():
        yield Document("a", "x")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_corpus_jsonl(path, broken())  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl"]


def test_large_corpus_is_streamed_not_loaded_twice(tmp_path: Path) -> None:
    """Peak memory while reading stays well below two copies of the file."""
    path = tmp_path / "big.jsonl"
    text = "lorem ipsum dolor sit amet " * 150  # ~4 KB per document
    with open(path, "w") as fh:
        for i in range(2000):
            fh.write(json.dumps({"id": f"d{i}", "text": text + str(i)}) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    corpus = read_corpus_jsonl(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(corpus) == 2000
    assert peak < 1.5 * size, f"peak {peak} bytes for a {size}-byte file"


def test_gzip_is_detected_by_its_magic_bytes_not_the_name(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"  # gzipped content, no .gz suffix
    path.write_bytes(gzip.compress(b'{"id": "a", "text": "x"}\n'))
    assert read_corpus_jsonl(path).ids == ["a"]


@pytest.mark.parametrize("gz", [False, True])
def test_invalid_utf8_names_the_file_and_line(tmp_path: Path, gz: bool) -> None:
    data = b"".join(b'{"id": "a%d", "text": "x"}\n' % i for i in range(3000))
    data += b'{"id": "b", "text": "\xff"}\n'
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(DataFormatError, match=r"c\.jsonl(\.gz)?:3001: bytes ff \(byte offset "
                                              r"about \d+\) are not valid UTF-8 \(invalid start"):
        read_corpus_jsonl(path)
    with open(path, "rb") as fh, pytest.raises(DataFormatError, match=r":3001: bytes ff"):
        read_queries_jsonl(fh)
    if not gz:  # a text stream decodes ahead: the file object's own error, named
        with open(path, encoding="utf-8") as fh, pytest.raises(
                DataFormatError, match=r"c\.jsonl: not valid UTF-8"):
            read_corpus_jsonl(fh)


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        write_corpus_jsonl(tmp_path / "c.jsonl", _corpus())
        write_corpus_jsonl(tmp_path / "c.jsonl.gz", _corpus())
        os.umask(0o077)
        write_queries_jsonl(tmp_path / "q.jsonl", _queries())
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {"c.jsonl": 0o644, "c.jsonl.gz": 0o644, "q.jsonl": 0o600}
