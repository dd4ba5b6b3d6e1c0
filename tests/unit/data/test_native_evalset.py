"""Native evaluation-set folders: round trip, evidence offsets, provenance, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchbench.data.evalset import EvalSet, drop_identical_ids, read_native
from searchbench.data.qrels import Qrels
from searchbench.data.run import Run
from searchbench.data.texts import Corpus, Document, Queries, Query
from searchbench.errors import DataFormatError, OutputError, SearchbenchWarning


def make_set(tmp_path: Path, evidence: list[dict] | None = None) -> Path:
    folder = tmp_path / "set"
    folder.mkdir(parents=True)
    docs = [{"id": "d1", "title": "Sorting", "text": "Use sorted() to get a new sorted list."},
            {"id": "d2", "text": "list.sort() sorts in place and returns None."}]
    queries = [{"id": "q1", "text": "how to sort a list", "source": "curated", "verified": True},
               {"id": "q2", "text": "why does sort return None", "source": "synthetic",
                "generator": "llm-x", "verified": False}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td2\t3\n")
    ev = evidence if evidence is not None else [
        {"query_id": "q1", "doc_id": "d1", "grade": 2, "quote": "sorted()"},
        {"query_id": "q2", "doc_id": "d2", "grade": 3, "quote": "returns None"}]
    (folder / "evidence.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    return folder


def test_read_resolves_evidence_offsets(tmp_path: Path) -> None:
    es = read_native(make_set(tmp_path))
    assert (len(es.corpus), len(es.queries), len(es.qrels), len(es.evidence)) == (2, 2, 3, 2)
    for e in es.evidence:
        assert es.corpus[e.doc_id].text[e.start:e.end] == e.quote
    assert es.evidence[0].start == 4


def test_round_trip_keeps_content_hash(tmp_path: Path) -> None:
    es = read_native(make_set(tmp_path))
    for compress in (False, True):
        out = es.write(tmp_path / f"out-{compress}", compress=compress)
        back = read_native(out)
        assert back.content_hash() == es.content_hash()
        assert list(back.queries) == list(es.queries)
        assert back.qrels.to_dict() == es.qrels.to_dict()
        assert back.evidence == es.evidence


def test_rewrite_replaces_files_and_removes_stale_ones(tmp_path: Path) -> None:
    es = read_native(make_set(tmp_path))
    out = es.write(tmp_path / "out")
    es.evidence = ()
    with pytest.raises(OutputError, match="not empty"):
        es.write(out, compress=True)  # refused: the folder holds a set already
    es.write(out, compress=True, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl.gz", "provenance.json",
                                                     "qrels.tsv", "queries.jsonl"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_quote_not_found_lists_query_and_doc(tmp_path: Path) -> None:
    folder = make_set(tmp_path, [{"query_id": "q1", "doc_id": "d2", "grade": 1,
                                  "quote": "not in the text"}])
    with pytest.raises(DataFormatError, match=r"evidence.jsonl:1: query 'q1', doc 'd2': quote "
                                              r"not found"):
        read_native(folder)
    es = read_native(folder, strict=False)
    assert es.evidence == () and [i.kind for i in es.issues] == ["quote-not-found"]


def test_provenance_summary(tmp_path: Path) -> None:
    es = read_native(make_set(tmp_path))
    s = es.provenance_summary()
    assert s["format"] == "native" and s["documents"] == 2 and s["judgments"] == 3
    assert s["query_sources"] == {"curated": 1, "synthetic": 1}
    assert s["synthetic_share"] == 0.5 and s["verified_share"] == 0.5
    assert s["content_hash"].startswith("sha256:")
    json.dumps(s)


def test_unjudged_queries_are_excluded_with_a_warning() -> None:
    es = EvalSet(Corpus([Document("d", "t")]),
                 Queries([Query("a", "x"), Query("b", "y")]),
                 Qrels.from_dict({"a": {"d": 1}}), name="t", exclude_unjudged=True)
    assert es.judged_query_ids == ["a"] and es.unjudged_query_ids == ["b"]
    assert es.judged_queries.ids == ["a"]
    with pytest.warns(SearchbenchWarning, match="1 of 2 queries have no judgments and "
                                                 "are excluded"):
        es.warn_unjudged()


def test_provenance_and_flags_survive_the_native_format(tmp_path: Path) -> None:
    es = EvalSet(Corpus([Document("d", "t")]), Queries([Query("a", "x"), Query("b", "y")]),
                 Qrels.from_dict({"a": {"d": 1}}), name="t", exclude_unjudged=True,
                 provenance={"format": "cisi", "path": "/data/cisi", "notes": ["n1"],
                             "known_issues": {"query-without-judgments": "published so"}})
    back = read_native(es.write(tmp_path / "out"))
    assert back.exclude_unjudged and not back.ignore_identical_ids
    assert back.provenance["format"] == "native" and back.provenance["notes"] == ["n1"]
    assert back.provenance["derived_from"] == {"format": "cisi", "path": "/data/cisi"}
    assert back.provenance["known_issues"] == {"query-without-judgments": "published so"}
    assert back.content_hash() == es.content_hash()
    (tmp_path / "out" / "provenance.json").write_text("{oops")
    with pytest.raises(DataFormatError, match=r"provenance.json:1: invalid JSON"):
        read_native(tmp_path / "out")


def test_missing_file_and_both_corpus_variants(tmp_path: Path) -> None:
    folder = make_set(tmp_path)
    (folder / "qrels.tsv").unlink()
    with pytest.raises(DataFormatError, match=r"no qrels.tsv; expected a native evaluation set"):
        read_native(folder)
    folder = make_set(tmp_path / "b")
    (folder / "corpus.jsonl.gz").write_bytes(b"")
    with pytest.raises(DataFormatError, match=r"both corpus.jsonl and corpus.jsonl.gz"):
        read_native(folder)


def test_drop_identical_ids() -> None:
    run = Run.from_dict({"q1": {"q1": 9.0, "d1": 1.0}, "q2": {"d2": 2.0}})
    out = drop_identical_ids(run)
    assert out.to_dict() == {"q1": {"d1": 1.0}, "q2": {"d2": 2.0}}
    assert drop_identical_ids(out) is out


def test_content_hash_follows_replaced_parts(tmp_path: Path) -> None:
    es = read_native(make_set(tmp_path))
    first = es.content_hash()
    assert es.content_hash() == first
    es.evidence = es.evidence[:1]
    assert es.content_hash() != first


@pytest.mark.parametrize("value", ['"no"', "1", "null", '"false"'])
def test_provenance_flags_must_be_booleans(tmp_path: Path, value: str) -> None:
    out = read_native(make_set(tmp_path)).write(tmp_path / "out")
    prov = out / "provenance.json"
    prov.write_text(prov.read_text().replace('"exclude_unjudged": false',
                                             f'"exclude_unjudged": {value}'))
    with pytest.raises(DataFormatError, match=r"provenance.json: 'exclude_unjudged' is "
                                              r".*; expected true or false"):
        read_native(out)


def test_written_set_follows_the_umask(tmp_path: Path) -> None:
    import os

    es = read_native(make_set(tmp_path))
    old = os.umask(0o022)
    try:
        out = es.write(tmp_path / "out")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == dict.fromkeys(
        ["corpus.jsonl", "queries.jsonl", "qrels.tsv", "evidence.jsonl", "provenance.json"],
        0o644)


@pytest.mark.parametrize("quote", ["sorted()  to get", "sorted()\nto\tget", " sorted() to get ",
                                   "Use sorted()\r\nto"])
def test_quotes_match_modulo_whitespace_runs(tmp_path: Path, quote: str) -> None:
    folder = make_set(tmp_path, [{"query_id": "q1", "doc_id": "d1", "grade": 2,
                                  "quote": quote}])
    [ev] = read_native(folder).evidence
    text = "Use sorted() to get a new sorted list."
    assert text[ev.start:ev.end] == ev.quote            # exact offsets, the document's text
    assert " ".join(ev.quote.split()) == " ".join(quote.split())


def test_whitespace_tolerance_stops_at_words(tmp_path: Path) -> None:
    for quote in ("sorted () to", "Sorted() to", "sortedto", "sorted() to  get  an"):
        folder = make_set(tmp_path / quote, [{"query_id": "q1", "doc_id": "d1", "grade": 2,
                                              "quote": quote}])
        with pytest.raises(DataFormatError, match="quote not found"):
            read_native(folder)


def test_quote_not_found_names_the_quote_and_the_closest_passage(tmp_path: Path) -> None:
    folder = make_set(tmp_path, [{"query_id": "q1", "doc_id": "d1", "grade": 2,
                                  "quote": "to get a brand new sorted list"}])
    with pytest.raises(DataFormatError) as err:
        read_native(folder)
    msg = str(err.value)
    assert "'to get a brand new sorted list'" in msg
    assert "closest passage: '" in msg and "to get a new sorted list" in msg


def test_quote_not_found_shows_where_a_long_quote_differs(tmp_path: Path) -> None:
    # a one-letter typo after 60 characters, with the document's line breaks as spaces:
    # the 60-character closest passage alone would look identical to the quote
    text = ("Each Contributor hereby grants to You a perpetual,\nworldwide, non-exclusive, "
            "no-charge,\nroyalty-free, irrevocable patent license")
    quote = " ".join(text.split()).replace("irrevocable", "irrevocabel")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": text}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": "patent"}) + "\n")
    (folder / "qrels.tsv").write_text("q1\td1\t2\n")
    (folder / "evidence.jsonl").write_text(json.dumps(
        {"query_id": "q1", "doc_id": "d1", "grade": 2, "quote": quote}) + "\n")
    with pytest.raises(DataFormatError) as err:
        read_native(folder)
    at = quote.index("irrevocabel") + len("irrevocab") + 1  # 1-based: the 'e' of 'bel'
    assert (f"first difference at character {at} of the quote: it has "
            f"{quote[at - 21:at + 19]!r} where the document has "
            f"{' '.join(text.split())[at - 21:at + 19]!r}") in str(err.value)
