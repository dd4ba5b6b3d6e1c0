"""The seven shared collections load with the exact counts of ../shared/data/README.md."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pytest

import searchbench as sb
from searchbench.errors import SearchbenchWarning

# spec prefix, folder, docs, queries, judged queries, judgments  (shared data README table)
COUNTS = [
    ("cranfield", "cranfield", 1400, 225, 225, 1837),
    ("cisi", "cisi", 1460, 112, 76, 3114),
    ("med", "med", 1033, 30, 30, 696),
    ("cacm", "cacm", 3204, 64, 52, 796),
    ("vaswani", "vaswani", 11429, 93, 93, 2083),
    ("beir", "beir/scifact", 5183, 300, 300, 339),
    ("beir", "beir/arguana", 8674, 1406, 1406, 1406),
]


def _load(shared_data: Path, prefix: str, folder: str) -> sb.EvalSet:
    path = shared_data / folder
    if not path.is_dir():
        pytest.fail(f"{path} is missing from the shared data")
    return _cached(prefix, str(path))


@functools.cache
def _cached(prefix: str, path: str) -> sb.EvalSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sb.load_evalset(f"{prefix}:{path}")


@pytest.mark.data
@pytest.mark.parametrize(("prefix", "folder", "docs", "queries", "judged", "judgments"), COUNTS)
def test_counts(shared_data: Path, prefix: str, folder: str, docs: int, queries: int,
                judged: int, judgments: int) -> None:
    es = _load(shared_data, prefix, folder)
    assert len(es.corpus) == docs
    assert len(es.queries) == queries
    assert len(es.judged_queries) == judged
    assert len(es.qrels) == judgments


@pytest.mark.data
def test_cranfield_grades_and_query_positions(shared_data: Path) -> None:
    es = _load(shared_data, "cranfield", "cranfield")
    # cranqrel codes: 128x1, 387x2, 734x3, 363x4 and 225x-1 (one per query, source doc)
    values, counts = np.unique(es.qrels.grades, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist(), strict=True)) == {
        1: 363, 2: 734, 3: 387, 4: 128 + 225}
    assert es.queries["225"].metadata["record_id"] == "365"
    assert es.qrels.to_dict()["1"]["486"] == 4  # query 1's -1 line: its source document
    source0 = sb.load_evalset(f"cranfield:{shared_data / 'cranfield'}")
    assert source0.qrels.to_dict()["1"]["184"] == 3  # code 2 -> grade 3


@pytest.mark.data
@pytest.mark.parametrize(("prefix", "n_unjudged"), [("cisi", 36), ("cacm", 12)])
def test_unjudged_queries_warn_and_are_excluded(shared_data: Path, prefix: str,
                                                n_unjudged: int) -> None:
    with pytest.warns(SearchbenchWarning, match=f"{n_unjudged} of .* excluded from evaluation"):
        es = sb.load_evalset(f"{prefix}:{shared_data / prefix}")
    assert es.exclude_unjudged and len(es.unjudged_query_ids) == n_unjudged
    assert set(es.judged_queries.ids) == set(es.qrels.query_ids.tolist())


@pytest.mark.data
def test_every_judged_document_is_in_the_corpus(shared_data: Path) -> None:
    for prefix, folder, *_ in COUNTS[:6]:
        es = _load(shared_data, prefix, folder)
        ids = set(es.corpus.ids)
        missing = [d for d in es.qrels.doc_vocab.tolist() if d not in ids]
        assert missing == [], (folder, missing[:5])


@pytest.mark.data
def test_arguana_identical_ids_option(shared_data: Path) -> None:
    es = sb.load_evalset(f"beir:{shared_data / 'beir/arguana'}", ignore_identical_ids=True)
    qid = es.queries.ids[0]
    run = sb.Run.from_dict({qid: {qid: 5.0, "x": 1.0}})
    assert es.prepare_run(run).to_dict() == {qid: {"x": 1.0}}
    assert any("ArguAna-style" in n for n in es.provenance["notes"])


@pytest.mark.data
def test_cacm_html_records(shared_data: Path) -> None:
    es = _load(shared_data, "cacm", "cacm")
    doc = es.corpus["CACM-3000"]
    assert doc.title == "Segment Sizes and Lifetimes in Algol 60 Programs"
    assert doc.text.startswith("The characteristics of the virtual memory")
    assert doc.metadata["authors"] == ["Batson, A. P.", "Brundage, R. E."]
    assert "2095\t4" not in doc.text


@pytest.mark.data
def test_generic_trec_spec_reads_vaswani(shared_data: Path) -> None:
    d = shared_data / "vaswani"
    es = sb.load_evalset(f"trec:{d / 'doc-text.trec'},{d / 'query-text.trec'},{d / 'qrels'}")
    assert (len(es.corpus), len(es.queries), len(es.qrels)) == (11429, 93, 2083)
    assert es.content_hash() == _load(shared_data, "vaswani", "vaswani").content_hash()
