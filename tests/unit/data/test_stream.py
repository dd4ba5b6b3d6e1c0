"""Reading a run query group by query group (data/stream.py, ARCHITECTURE §13)."""

from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchbench.data import Run
from searchbench.data.stream import iter_run_batches
from searchbench.errors import DataFormatError, SearchbenchWarning


def _lines(groups: list[tuple[str, int]]) -> str:
    return "".join(f"{q} Q0 d{i} {i} {10 - i} t\n" for q, n in groups for i in range(n))


@pytest.mark.parametrize("read_size", [8, 64, 1 << 20])
def test_batches_hold_whole_queries_and_every_line(tmp_path, read_size):
    path = tmp_path / "run.trec"
    path.write_text(_lines([("b", 5), ("a", 3), ("c", 4)]))  # grouped, not sorted
    batches = list(iter_run_batches(path, read_size=read_size, batch_entries=4))
    seen = [q for run in batches for q in run.query_ids.tolist()]
    assert sorted(seen) == ["a", "b", "c"]  # each query in exactly one batch
    assert sum(len(r) for r in batches) == 12


@pytest.mark.parametrize("read_size", [8, 1 << 20])
def test_a_query_coming_back_is_refused_with_its_line_and_how_to_sort(tmp_path, read_size):
    path = tmp_path / "run.trec"
    path.write_text(_lines([("a", 2), ("b", 2), ("a", 1)]))
    with pytest.raises(DataFormatError) as err:
        list(iter_run_batches(path, read_size=read_size))
    message = str(err.value)
    assert message.startswith(f"{path}:5: query 'a' appears again")
    assert f"LC_ALL=C sort -s -k1,1 {path}" in message


def test_gzip_advice_decompresses(tmp_path):
    path = tmp_path / "run.trec.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(_lines([("a", 1), ("b", 1), ("a", 1)]))
    with pytest.raises(DataFormatError, match=r"run.trec.gz:3: .*zcat .*\| LC_ALL=C sort"):
        list(iter_run_batches(path))


def test_parquet_repeat_names_the_row(tmp_path):
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"query_id": ["a", "b", "b", "a"], "doc_id": ["x", "x", "y", "y"],
                             "score": [1.0, 2.0, 1.0, 0.5]}), path, row_group_size=2)
    with pytest.raises(DataFormatError, match=r"run.parquet: row 4: query 'a' appears again"
                                              r".*searchbench convert"):
        list(iter_run_batches(path))


def test_parquet_null_names_the_row_of_the_whole_file(tmp_path):
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"query_id": ["a", "a", "b", None], "doc_id": ["x", "y", "x", "y"],
                             "score": [1.0, 2.0, 1.0, 0.5]}), path, row_group_size=2)
    with pytest.raises(DataFormatError, match=r"run.parquet: row 4: column 'query_id' is null"):
        list(iter_run_batches(path, read_size=2))


def test_duplicate_pair_names_both_lines_of_the_whole_file(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(_lines([("a", 3)]) + "b Q0 x 1 1 t\nb Q0 x 2 0.5 t\n")
    with pytest.raises(DataFormatError, match=r"run.trec:5: duplicate .*first seen at "
                                              r".*run.trec:4"):
        list(iter_run_batches(path, read_size=8, batch_entries=1))


def test_name_and_tag_as_read_run_gives_them(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(_lines([("a", 2)]))
    batches = iter_run_batches(path)
    [_run] = list(batches)
    whole = Run.from_file(path)
    assert (batches.name, batches.tag) == (whole.name, whole.metadata["tag"]) == ("t", "t")


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("# only a comment\n")
    with pytest.raises(DataFormatError, match="holds no run lines"):
        list(iter_run_batches(path))


def test_compact_qrels_hold_the_same_judgments_with_arrow_doc_ids():
    from searchbench.data import Qrels
    from searchbench.data.stream import compact_qrels

    judgments = {"q1": {"d3": 2, "d1": 0, "é": 1}, "q2": {"d2": 1, "d3": -1}}
    qrels = Qrels.from_dict(judgments)
    compact = compact_qrels(qrels)
    assert isinstance(compact.doc_vocab, pa.Array)
    assert compact.doc_vocab.to_pylist() == qrels.doc_vocab.tolist()
    docs = compact.doc_vocab.take(pa.array(compact.doc_codes)).to_pylist()
    assert sorted(zip(np.repeat(compact.query_ids, np.diff(compact.offsets)).tolist(), docs,
                      compact.grades.tolist(), strict=True)) == \
        sorted((q, d, g) for q, row in judgments.items() for d, g in row.items())
    for name in ("query_ids", "offsets", "doc_codes", "grades"):
        assert getattr(compact, name) is getattr(qrels, name)  # shared, not copied
    assert isinstance(qrels.doc_vocab, np.ndarray)  # the original is left as it was
    assert compact_qrels(compact).doc_vocab is compact.doc_vocab


def test_streaming_with_compact_qrels_gives_the_in_memory_result(tmp_path):
    from searchbench.data import Qrels, read_run
    from searchbench.data.stream import compact_qrels, release_free_memory
    from searchbench.measures import Evaluator, stream_run

    qrels = Qrels.from_dict({"a": {"d1": 1, "d4": 2}, "b": {"d0": 1}, "c": {"d9": 1},
                             "z": {"d2": 3}})
    path = tmp_path / "run.trec"
    path.write_text(_lines([("b", 5), ("a", 3), ("c", 4), ("x", 2)]))
    measures = ["nDCG@10", "AP", "RR", "R@2", "Judged@3"]
    with pytest.warns(SearchbenchWarning, match="have no results|not in the qrels"):
        memory = Evaluator(qrels, measures).evaluate(read_run(path))
    release_free_memory()  # only hands freed memory back: nothing observable changes
    with pytest.warns(SearchbenchWarning, match="have no results|not in the qrels"):
        streamed = stream_run(Evaluator(compact_qrels(qrels), measures), path,
                              batch_entries=4, quiet=True).result
    assert streamed.query_ids.tolist() == memory.query_ids.tolist()
    assert streamed.mean == memory.mean
    for name in measures:
        np.testing.assert_array_equal(streamed.scores[name], memory.scores[name])
