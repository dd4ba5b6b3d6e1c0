"""Qrels and runs as Parquet and Arrow IPC (``data/columnar.py``): round trips with TREC
files, evaluation equal to trec_eval's own outputs, schema errors, sniffing by magic bytes,
``searchbench convert``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import searchbench as sb
from searchbench.cli.main import main
from searchbench.data import read_qrels, read_run, read_trec_topics
from searchbench.errors import DataFormatError

RUN_TEXT = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.9 t\nq1 Q0 d3 3 0.9 t\nq2 Q0 d1 1 1 t\n"


def _rankings(run: sb.Run) -> dict[str, list[tuple[str, float]]]:
    return {q: list(run.ranking(q)) for q in run.query_ids}


def _write_parquet(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


# -- round trips -----------------------------------------------------------------------
entries = st.lists(
    st.tuples(st.sampled_from(["q1", "q2", "Q3", "10"]),
              st.text("abcXYZ09-_.", min_size=1, max_size=4),
              st.sampled_from([0.0, 1.0, -2.5, 0.25, 1e-7, 3.0])),  # few values: many ties
    min_size=1, max_size=60, unique_by=lambda e: (e[0], e[1]))


@settings(max_examples=40, deadline=None)
@given(entries, st.sampled_from(["parquet", "arrow"]))
def test_trec_to_columnar_to_trec_is_byte_identical(rows, fmt) -> None:
    """A TREC run written from a Parquet/Arrow copy equals the original file byte for byte:
    same ranking (ties by doc id descending, as trec_eval sorts), scores, ranks and tag."""
    with tempfile.TemporaryDirectory() as tmp:
        first, columnar, second = Path(tmp, "a.trec"), Path(tmp, f"r.{fmt}"), Path(tmp, "b")
        run = sb.Run.from_columns(*zip(*rows, strict=True), name="sys")
        run.to_file(first)
        from_trec = sb.Run.from_file(first)
        (from_trec.to_parquet if fmt == "parquet" else from_trec.to_arrow)(columnar)
        back = sb.Run.from_file(columnar)
        back.to_file(second)
        assert second.read_bytes() == first.read_bytes()
        assert back.name == "sys" and _rankings(back) == _rankings(from_trec)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_qrels_round_trip(tmp_path: Path, fmt: str) -> None:
    text = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\nq2 0 x -1\n"
    (tmp_path / "q.txt").write_text(text)
    qrels = read_qrels(tmp_path / "q.txt")
    (qrels.to_parquet if fmt == "parquet" else qrels.to_arrow)(tmp_path / "q.col")
    table = pa.ipc.open_file(str(tmp_path / "q.col")).read_all() if fmt == "arrow" \
        else pq.read_table(tmp_path / "q.col")
    assert table.column_names == ["query_id", "doc_id", "grade"]
    assert table.schema.field("query_id").type == pa.string()
    read_qrels(tmp_path / "q.col").to_file(tmp_path / "back.txt")
    assert sorted((tmp_path / "back.txt").read_text().splitlines()) == \
        sorted(text.splitlines())


def test_written_run_schema(tmp_path: Path) -> None:
    (tmp_path / "r").write_text(RUN_TEXT)
    sb.Run.from_file(tmp_path / "r").to_parquet(tmp_path / "r.parquet")
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.schema == pa.schema([("query_id", pa.string()), ("doc_id", pa.string()),
                                      ("score", pa.float64()), ("rank", pa.int32()),
                                      ("tag", pa.string())])
    # d2 and d3 tie on 0.9: d3 ranks first (doc id descending, trec_eval's order)
    assert table.column("doc_id").to_pylist() == ["d3", "d2", "d1", "d1"]
    assert table.column("rank").to_pylist() == [1, 2, 3, 1]
    assert set(table.column("tag").to_pylist()) == {"t"}


# -- evaluation ------------------------------------------------------------------------
def test_evaluation_from_parquet_equals_trec_eval(trec_eval_dir: Path, tmp_path: Path) -> None:
    """trec_eval's own test files converted to Parquet give trec_eval's printed values
    (out.test: map 0.1785, recip_rank 0.4064, P_10 0.3000) and exactly the TREC result."""
    qrels = read_qrels(trec_eval_dir / "qrels.test")
    run = read_run(trec_eval_dir / "results.test")
    qrels.to_parquet(tmp_path / "q.parquet")
    run.to_parquet(tmp_path / "r.parquet")
    measures = ["AP", "RR", "P@10"]
    from_text = sb.evaluate(qrels, run, measures)
    from_parquet = sb.evaluate(read_qrels(tmp_path / "q.parquet"),
                               read_run(tmp_path / "r.parquet"), measures)
    assert from_parquet.mean == from_text.mean
    assert from_parquet.per_query == from_text.per_query
    assert from_parquet.mean["AP"] == pytest.approx(0.1785, abs=5.01e-5)
    assert from_parquet.mean["RR"] == pytest.approx(0.4064, abs=5.01e-5)
    assert from_parquet.mean["P@10"] == pytest.approx(0.3, abs=5.01e-5)


def test_rank_column_is_ignored_for_ordering(tmp_path: Path) -> None:
    path = _write_parquet(tmp_path / "r.parquet", {
        "query_id": ["q", "q", "q"], "doc_id": ["a", "b", "c"], "score": [1.0, 3.0, 2.0],
        "rank": [1, 2, 3]})
    assert [d for d, _ in read_run(path).ranking("q")] == ["b", "c", "a"]


def test_integer_scores_read_as_floats(tmp_path: Path) -> None:
    path = _write_parquet(tmp_path / "r.parquet", {
        "query_id": ["q", "q"], "doc_id": ["a", "b"], "score": pa.array([2, 5], pa.int32())})
    assert read_run(path).ranking("q") == [("b", 5.0), ("a", 2.0)]


def test_dictionary_and_large_string_ids_are_strings(tmp_path: Path) -> None:
    path = _write_parquet(tmp_path / "q.parquet", {
        "query_id": pa.array(["q", "q"]).dictionary_encode(),
        "doc_id": pa.array(["a", "b"], pa.large_string()), "grade": pa.array([1, 0], pa.int8())})
    assert read_qrels(path).to_dict() == {"q": {"a": 1, "b": 0}}


# -- bad input -------------------------------------------------------------------------
BAD_RUNS = [
    ({"query_id": ["q"], "score": [1.0]}, r"r\.parquet: no column 'doc_id' \(found columns: "
                                          r"query_id, score\); expected the columns query_id"),
    ({"query_id": ["q"], "doc_id": ["a"], "score": ["1.0"]},
     r"r\.parquet: column 'score' holds string; expected number values"),
    ({"query_id": pa.array([1, 2]), "doc_id": ["a", "b"], "score": [1.0, 2.0]},
     r"r\.parquet: column 'query_id' holds int64; expected string values"),
    ({"query_id": ["q", None], "doc_id": ["a", "b"], "score": [1.0, 2.0]},
     r"r\.parquet: row 2: column 'query_id' is null; expected a value in every row"),
    ({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, None]},
     r"r\.parquet: row 2: column 'score' is null"),
    ({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, float("nan")]},
     r"r\.parquet: row 2: score nan is not finite; expected a finite number"),
    ({"query_id": ["q", "p", "q"], "doc_id": ["a", "a", "a"], "score": [1.0, 2.0, 3.0]},
     r"r\.parquet: row 3: duplicate \(query, doc\) pair \('q', 'a'\), first seen at "
     r"\S*r\.parquet: row 1"),
    ({"query_id": ["q"], "doc_id": ["a b"], "score": [1.0]},
     r"r\.parquet: doc id 'a b' is empty or holds whitespace"),
    ({"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "rank": ["1"]},
     r"column 'rank' holds string; expected integer values"),
]


@pytest.mark.parametrize(("columns", "message"), BAD_RUNS)
def test_bad_run_tables_raise_one_message(tmp_path: Path, columns, message) -> None:
    path = _write_parquet(tmp_path / "r.parquet", columns)
    with pytest.raises(DataFormatError, match=message):
        read_run(path)


@pytest.mark.parametrize(("columns", "message"), [
    ({"query_id": ["q"], "doc_id": ["a"], "score": [1]}, r"no column 'grade'"),
    ({"query_id": ["q", "q"], "doc_id": ["a", "b"], "grade": [1.0, 0.5]},
     r"q\.parquet: row 2: grade 0\.5 is not an integer"),
    ({"query_id": ["q"], "doc_id": ["a"], "grade": [300]},
     r"q\.parquet: row 1: grade 300 is outside -128\.\.127"),
    ({"query_id": ["q"], "doc_id": ["a"], "grade": ["1"]},
     r"column 'grade' holds string; expected number values"),
])
def test_bad_qrels_tables_raise_one_message(tmp_path: Path, columns, message) -> None:
    path = _write_parquet(tmp_path / "q.parquet", columns)
    with pytest.raises(DataFormatError, match=message):
        read_qrels(path)


def test_format_is_sniffed_not_taken_from_the_name(tmp_path: Path) -> None:
    """A Parquet file named like a TREC run is read as Parquet (not ``found 232 fields``);
    a TREC run whose first query id is PAR1 or ARROW1 is still text."""
    path = _write_parquet(tmp_path / "run.trec", {"query_id": ["q"], "doc_id": ["a"],
                                                  "score": [1.0]})
    assert read_run(path).ranking("q") == [("a", 1.0)]
    text = tmp_path / "text.trec"
    text.write_text("PAR1 Q0 a 1 1 t\nARROW1 Q0 b 1 2 t\n")
    assert sorted(read_run(text).query_ids) == ["ARROW1", "PAR1"]


def test_text_readers_name_a_parquet_file(tmp_path: Path) -> None:
    path = _write_parquet(tmp_path / "topics.txt", {"query_id": ["q"]})
    with pytest.raises(DataFormatError, match=r"topics\.txt: found a Parquet file; expected "
                                              r"UTF-8 text"):
        read_trec_topics(path)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_truncated_file_is_one_error_line(tmp_path: Path, capsys, fmt: str) -> None:
    (tmp_path / "r").write_text(RUN_TEXT)
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    run = sb.Run.from_file(tmp_path / "r")
    (run.to_parquet if fmt == "parquet" else run.to_arrow)(tmp_path / "full")
    data = (tmp_path / "full").read_bytes()
    (tmp_path / f"cut.{fmt}").write_bytes(data[: len(data) // 2])
    assert main(["eval", str(tmp_path / "q"), str(tmp_path / f"cut.{fmt}")]) == 1
    err = capsys.readouterr().err
    what = "Parquet" if fmt == "parquet" else "Arrow IPC"
    assert err.count("\n") == 1 and err.startswith(f"error: {tmp_path / f'cut.{fmt}'}: cannot "
                                                   f"read this {what} file")
    assert "Traceback" not in err


# -- searchbench convert ---------------------------------------------------------------
def test_convert_cli_round_trip_and_eval(tmp_path: Path, trec_eval_dir: Path, capsys) -> None:
    q, r = tmp_path / "q.parquet", tmp_path / "r.feather"
    assert main(["convert", str(trec_eval_dir / "qrels.test"), "-o", str(q)]) == 0
    assert main(["convert", str(trec_eval_dir / "results.test"), "-o", str(r)]) == 0
    assert pq.read_table(q).column_names == ["query_id", "doc_id", "grade"]
    assert pa.ipc.open_file(str(r)).read_all().column_names[:3] == ["query_id", "doc_id",
                                                                    "score"]
    assert main(["convert", str(r), "-o", str(tmp_path / "back.trec")]) == 0
    assert main(["convert", str(q), "-o", str(tmp_path / "back.tsv")]) == 0
    original = read_run(trec_eval_dir / "results.test")
    assert _rankings(read_run(tmp_path / "back.trec")) == _rankings(original)
    assert read_qrels(tmp_path / "back.tsv").to_dict() == \
        read_qrels(trec_eval_dir / "qrels.test").to_dict()
    capsys.readouterr()
    assert main(["eval", str(q), str(r), "-m", "AP", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["measures"]["AP"] == pytest.approx(0.1785, abs=5.01e-5)  # out.test: map


def test_convert_refuses_to_overwrite_and_beir_runs(tmp_path: Path, capsys) -> None:
    (tmp_path / "r").write_text(RUN_TEXT)
    (tmp_path / "out.parquet").write_bytes(b"mine")
    assert main(["convert", str(tmp_path / "r"), "-o", str(tmp_path / "out.parquet")]) == 1
    assert "it exists already" in capsys.readouterr().err
    assert (tmp_path / "out.parquet").read_bytes() == b"mine"
    source = str(tmp_path / "r")
    assert main(["convert", source, "-o", str(tmp_path / "out.parquet"), "--force"]) == 0
    assert main(["convert", source, "-o", str(tmp_path / "x"), "--format", "beir"]) == 1
    assert "BEIR files hold qrels" in capsys.readouterr().err
