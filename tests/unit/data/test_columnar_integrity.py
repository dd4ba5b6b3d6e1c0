"""Damaged and degenerate columnar runs (data/columnar.py, data/stream.py; issue 24 item 12):
a page that fails its checksum is refused, never scored; Arrow IPC damage is caught where
Arrow can see it; a run without rows and a column named twice get the same single error
in memory and streamed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchbench.data import Run, read_run
from searchbench.data.columnar import write_columnar_run
from searchbench.data.stream import iter_run_batches
from searchbench.errors import DataFormatError


def _run(n_queries: int = 40, per_query: int = 50) -> Run:
    rng = np.random.default_rng(7)
    qids = [f"q{q:03d}" for q in range(n_queries) for _ in range(per_query)]
    docs = [f"d{i}" for i in range(n_queries * per_query)]
    return Run.from_columns(qids, docs, rng.random(n_queries * per_query), name="r")


def _streamed(path) -> list[Run]:
    return list(iter_run_batches(path))


def _flip(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _middle_of_column(path, name: str) -> int:
    """A byte offset in the middle of column ``name``'s pages (first row group)."""
    meta = pq.ParquetFile(path).metadata
    [col] = [meta.row_group(0).column(i) for i in range(meta.num_columns)
             if meta.row_group(0).column(i).path_in_schema == name]
    start = col.dictionary_page_offset or col.data_page_offset
    return start + col.total_compressed_size // 2


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "searchbench", "eval", *args],
                          capture_output=True, text=True, check=False)


def test_parquet_page_checksums_refuse_a_flipped_byte(tmp_path):
    run = _run()
    path = tmp_path / "r.parquet"
    write_columnar_run(run, path, "parquet")
    back = read_run(path)  # intact: read as written
    assert np.array_equal(back.scores, run.scores)
    _flip(path, _middle_of_column(path, "score"))
    with pytest.raises(DataFormatError, match=r"r\.parquet: a page fails its checksum"):
        read_run(path)
    with pytest.raises(DataFormatError, match=r"r\.parquet: a page fails its checksum"):
        _streamed(path)


def test_parquet_without_checksums_is_what_pyarrow_writes_by_default(tmp_path):
    """The control: the same flip in a file written without page checksums goes unseen
    (so the test above fails when searchbench stops writing them)."""
    run = _run()
    path = tmp_path / "plain.parquet"
    from searchbench.data.columnar import run_table

    pq.write_table(run_table(run), path)
    _flip(path, _middle_of_column(path, "score"))
    changed = read_run(path)
    assert not np.array_equal(np.sort(changed.scores), np.sort(run.scores))


@pytest.mark.parametrize("stream", [False, True])
def test_parquet_flip_in_the_middle_of_the_file_is_one_error_line(tmp_path, stream):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q000 0 d1 1\nq001 0 d60 1\n")
    path = tmp_path / "r.parquet"
    write_columnar_run(_run(), path, "parquet")
    _flip(path, path.stat().st_size // 2)
    done = _cli(str(qrels), str(path), *(["--stream"] if stream else []))
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {path}: ")
    assert done.stdout == ""


def _invalid_utf8_ipc(path) -> None:
    """An Arrow IPC file whose doc_id column holds bytes that are not UTF-8 (what a
    changed byte in a string buffer looks like); Arrow's writer does not look."""
    data = b"d1\xffd2"
    offsets = np.array([0, 2, 3, 5], dtype=np.int32)
    docs = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(data)])
    table = pa.table({"query_id": ["a", "a", "a"], "doc_id": docs,
                      "score": pa.array([3.0, 2.0, 1.0])})
    with pa.OSFile(str(path), "wb") as fh, pa.ipc.new_file(fh, table.schema) as writer:
        writer.write_table(table)


def test_arrow_ipc_damage_is_refused_where_arrow_can_see_it(tmp_path):
    path = tmp_path / "r.arrow"
    _invalid_utf8_ipc(path)
    with pytest.raises(DataFormatError, match=r"r\.arrow: cannot read this Arrow IPC file"):
        read_run(path)
    with pytest.raises(DataFormatError, match=r"r\.arrow: cannot read this Arrow IPC file"):
        _streamed(path)


def _zero_rows(path, fmt: str) -> None:
    table = pa.table({"query_id": pa.array([], pa.string()),
                      "doc_id": pa.array([], pa.string()),
                      "score": pa.array([], pa.float64())})
    _write(table, path, fmt)


def _duplicate_column(path, fmt: str) -> None:
    table = pa.table([pa.array(["a"]), pa.array(["x"]), pa.array([1.0]), pa.array(["y"])],
                     names=["query_id", "doc_id", "score", "doc_id"])
    _write(table, path, fmt)


def _write(table: pa.Table, path, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(table, path)
        return
    with pa.OSFile(str(path), "wb") as fh, pa.ipc.new_file(fh, table.schema) as writer:
        writer.write_table(table)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("case, message", [
    (_zero_rows, "the file holds no rows; expected at least one run row"),
    (_duplicate_column, "column 'doc_id' appears 2 times; expected each column once"),
])
def test_memory_and_stream_agree_on_degenerate_columnar_runs(tmp_path, fmt, case, message):
    path = tmp_path / f"r.{fmt}"
    case(path, fmt)
    expected = f"{path}: {message}"
    with pytest.raises(DataFormatError) as whole:
        read_run(path)
    with pytest.raises(DataFormatError) as streamed:
        _streamed(path)
    assert str(whole.value) == str(streamed.value) == expected
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("a 0 x 1\n")
    for extra in ([], ["--stream"]):
        done = _cli(str(qrels), str(path), *extra)
        assert (done.returncode, done.stderr.splitlines()) == (1, [f"error: {expected}"])


@pytest.mark.parametrize("case", ["checksum", "zero-rows"])
def test_ray_partitions_refuse_what_the_whole_file_reader_refuses(tmp_path, case):
    """``--engine ray`` reads query ranges of a columnar run through pyarrow.dataset: the
    same refusals as the whole-file and streamed readers, as one error line."""
    pytest.importorskip("ray")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q:03d} 0 d{q * 50} 1\n" for q in range(40)))
    path = tmp_path / "r.parquet"
    if case == "checksum":
        write_columnar_run(_run(), path, "parquet")
        _flip(path, _middle_of_column(path, "score"))
        expected = "a page fails its checksum"
    else:
        _zero_rows(path, "parquet")
        expected = f"{path}: the file holds no rows; expected at least one run row"
    done = _cli(str(qrels), str(path), "--engine", "ray", "--partitions", "4")
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and expected in line and str(path) in line
