"""TREC / BEIR qrels and run files: layouts, whitespace, ordering, bad input, round trips."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest

import searchbench as sb
from searchbench.errors import DataFormatError


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


RUN = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.9 t\nq2 Q0 d1 1 1.0 t\n"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"


def test_run_is_ranked_by_score_then_docid_descending(tmp_path: Path) -> None:
    text = "q 0 a 1 1.0 t\nq 0 b 2 2.0 t\nq 0 c 3 1.0 t\nq 0 B 4 1.0 t\n"
    run = sb.Run.from_file(write(tmp_path, "r", text))
    # rank column ignored; ties on 1.0 broken by docid descending, byte-wise ("B" < "a" < "c")
    assert [d for d, _ in run.ranking("q")] == ["b", "c", "a", "B"]


def test_whitespace_crlf_bom_tabs_comments_and_extra_fields(tmp_path: Path) -> None:
    text = "\ufeff# a comment\r\nq1\tQ0  d1 1\t 0.5 t extra junk\r\n\r\n  q1 Q0 d2 2 0.9 t  \r\n"
    with pytest.warns(sb.SearchbenchWarning, match=r"r:2: 1 line\(s\) have more than six"):
        run = sb.Run.from_file(write(tmp_path, "r", text))
    assert run.ranking("q1") == [("d2", 0.9), ("d1", 0.5)]


def test_hash_inside_ids_is_not_a_comment(tmp_path: Path) -> None:
    run = sb.Run.from_file(write(tmp_path, "r", "q Q0 doc#1 1 0.5 t\n"))
    assert run.ranking("q") == [("doc#1", 0.5)]


def test_gzip_and_file_objects(tmp_path: Path) -> None:
    gz = write(tmp_path, "r.gz", gzip.compress(RUN.encode()))
    assert sb.Run.from_file(gz).to_dict() == sb.Run.from_file(io.StringIO(RUN)).to_dict()
    assert sb.Qrels.from_file(io.BytesIO(QRELS.encode())).to_dict() == {
        "q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


def test_beir_qrels_with_and_without_header(tmp_path: Path) -> None:
    with_header = write(tmp_path, "a.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    without = write(tmp_path, "b.tsv", "q1\td1\t1\n")
    assert sb.Qrels.from_file(with_header).to_dict() == {"q1": {"d1": 1}}
    assert sb.Qrels.from_file(without).to_dict() == {"q1": {"d1": 1}}


def test_negative_grades_are_kept(tmp_path: Path) -> None:
    qrels = sb.Qrels.from_file(write(tmp_path, "q", "q 0 a -2\nq 0 b 1\n"))
    assert qrels.to_dict() == {"q": {"a": -2, "b": 1}}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("run", "q1 Q0 d1 1 0.5\n", "r:1: found 5 fields, expected 6"),
        ("run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 1 abc t\n",
         "r:2: found score 'abc', expected a number"),
        ("run", "q1 Q0 d1 1 nan t\n", "r:1: score nan is not finite"),
        ("run", "q1 Q0 d1 1 inf t\n", "r:1: score inf is not finite"),
        ("run", "# only a comment\n", "holds no run lines"),
        ("run", "", "holds no run lines"),
        ("run", "q Q0 d 1 1 t\nq Q0 e 2 1 t\nq Q0 d 3 0.5 t\n",
         "r:3: duplicate (query, doc) pair ('q', 'd'), first seen at /"),
        ("qrels", "q 0 d 1\nq 0 d x\n", "r:2: found grade 'x', expected an integer"),
        ("qrels", "q 0 d 1.5\n", "r:1: found grade '1.5', expected an integer"),
        ("qrels", "q 0 d 1\nq d 1\n", "r:2: found 3 fields, expected 4"),
        ("qrels", "q 0 d 1\nq 0 d 2\n", "r:2: duplicate (query, doc) pair ('q', 'd')"),
        ("qrels", "q 0 d 1000\n", "r:1: grade 1000 is outside -128..127"),
        ("qrels", "a b c d e\n", "r:1: found 5 fields, expected 4"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, name: str, text: str,
                                       message: str) -> None:
    path = write(tmp_path, "r", text)
    reader = sb.Run.from_file if name == "run" else sb.Qrels.from_file
    with pytest.raises(DataFormatError) as err:
        reader(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_missing_file_is_a_data_format_error(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no such file"):
        sb.Run.from_file(tmp_path / "nope.trec")


@pytest.mark.parametrize(("keep", "expected"), [("max", 0.9), ("first", 0.1)])
def test_duplicate_policies(tmp_path: Path, keep: str, expected: float) -> None:
    path = write(tmp_path, "r", "q Q0 d 1 0.1 t\nq Q0 d 2 0.9 t\nq Q0 e 3 0.5 t\n")
    run = sb.Run.from_file(path, keep=keep)
    assert dict(run.ranking("q"))["d"] == expected
    assert len(run) == 2


def test_run_round_trip_keeps_scores_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=200)
    run = sb.Run.from_columns([f"q{i % 7}" for i in range(200)],
                              [f"d{i}" for i in range(200)], scores, name="x")
    run.to_file(tmp_path / "out.trec.gz")
    back = sb.Run.from_file(tmp_path / "out.trec.gz")
    assert back.to_dict() == run.to_dict()
    assert back.name == "x"


@pytest.mark.parametrize("fmt", ["trec", "beir"])
def test_qrels_round_trip(tmp_path: Path, fmt: str) -> None:
    qrels = sb.Qrels.from_dict({"q1": {"d1": 2, "d2": 0}, "q2": {"d3": -1}})
    qrels.to_file(tmp_path / "q.txt", format=fmt)
    assert sb.Qrels.from_file(tmp_path / "q.txt").to_dict() == qrels.to_dict()


def test_frames_and_dicts_agree() -> None:
    pd = pytest.importorskip("pandas")
    run = sb.Run.from_dict({"q": {"a": 1.0, "b": 2.0}})
    frame = run.to_frame()
    assert list(frame["doc_id"]) == ["b", "a"] and list(frame["rank"]) == [1, 2]
    assert sb.Run.from_frame(frame).to_dict() == run.to_dict()
    qrels = sb.Qrels.from_frame(pd.DataFrame({"query_id": ["q"], "doc_id": ["a"],
                                              "relevance": [1]}))
    assert qrels.to_dict() == {"q": {"a": 1}}


def test_constructors_do_not_mutate_inputs() -> None:
    ranking = {"q": {"a": 1.0, "b": 2.0}}
    sb.Run.from_dict(ranking)
    assert ranking == {"q": {"a": 1.0, "b": 2.0}}


def test_large_block_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines split across read blocks parse as whole lines, with right line numbers."""
    from searchbench.data import _text

    monkeypatch.setattr(_text, "BLOCK_SIZE", 64)
    lines = [f"q{i % 3} Q0 d{i} {i} {i / 10} t" for i in range(100)]
    path = write(tmp_path, "r", "\n".join(lines) + "\nq0 Q0 dX 1 oops t\n")
    monkeypatch.setattr("searchbench.data.trec.iter_blocks",
                        lambda s: _text.iter_blocks(s, block_size=64))
    with pytest.raises(DataFormatError, match=r"r:101: found score 'oops'"):
        sb.Run.from_file(path)
    path.write_text("\n".join(lines) + "\n")
    assert len(sb.Run.from_file(path)) == 100


@pytest.mark.parametrize("seed", range(5))
def test_rank_order_matches_python_sort_with_many_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    qids = [f"q{rng.integers(0, 12)}" for _ in range(n)]
    docs = [f"{rng.choice(['d', 'D', 'doc', 'é'])}{i}" for i in range(n)]
    scores = rng.choice([0.0, -0.0, 1.5, 2.0, -3.25], size=n)
    run = sb.Run.from_columns(qids, docs, scores)
    for q in set(qids):
        items = [(d, float(s)) for qq, d, s in zip(qids, docs, scores, strict=True) if qq == q]
        expected = sorted(items, key=lambda x: (x[1], x[0].encode()), reverse=True)
        assert run.ranking(q) == expected


def test_json_constructors(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"q": {"a": 1.5, "b": 2}}')
    (tmp_path / "qrels.json").write_text('{"q": {"a": 1}}')
    assert sb.Run.from_json(tmp_path / "run.json").ranking("q") == [("b", 2.0), ("a", 1.5)]
    assert sb.Qrels.from_json(tmp_path / "qrels.json").to_dict() == {"q": {"a": 1}}
    (tmp_path / "bad.json").write_text('["q"]')
    with pytest.raises(DataFormatError, match=r"bad\.json: expected a JSON object"):
        sb.Run.from_json(tmp_path / "bad.json")


@pytest.mark.parametrize("seed", range(5))
def test_rank_order_of_presorted_files_with_ties(seed: int) -> None:
    """Files already grouped by query with falling scores take the no-sort path."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in rng.permutation(8):
        scores = np.sort(rng.choice([0.5, 1.0, 2.0, 3.0], size=30))[::-1]
        rows += [(f"q{q}", f"d{rng.integers(0, 10**6)}-{i}", s) for i, s in enumerate(scores)]
    run = sb.Run.from_columns(*zip(*rows, strict=True))
    for q in {r[0] for r in rows}:
        items = [(d, float(s)) for qq, d, s in rows if qq == q]
        assert run.ranking(q) == sorted(items, key=lambda x: (x[1], x[0].encode()),
                                        reverse=True)


@pytest.mark.parametrize("ids", [({"q x": {"a": 1.0}}), ({"q": {"": 1.0}}), ({"q": {"a\tb": 1.0}})])
def test_ids_with_whitespace_or_empty_are_refused(ids: dict) -> None:
    with pytest.raises(DataFormatError, match="is empty or holds whitespace"):
        sb.Run.from_dict(ids)


def test_a_form_feed_inside_a_file_id_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "r", b"q Q0 a 1 1.0 t\nq Q0 b\x0cc 2 0.5 t\n")
    with pytest.raises(DataFormatError, match=r"r:2: found a form feed"):
        sb.Run.from_file(path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "r", b"q Q0 a 1 1.0 t\nq Q0 \xff 2 0.5 t\n")
    with pytest.raises(DataFormatError, match=r"r:2: byte 0xff \(field 3\) is not valid UTF-8"):
        sb.Run.from_file(path)


def test_pipes_and_file_objects_read_like_paths(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = write(tmp_path, "q", "# c\nq1 0 d1 1\nq1 0 d2 0\n")
    code = ("import sys, searchbench as sb;"
            "print(sb.Qrels.from_file(sys.stdin.buffer).to_dict())")
    with open(path, "rb") as stdin:
        out = subprocess.run([sys.executable, "-c", code], stdin=stdin, capture_output=True,
                             text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{'q1': {'d1': 1, 'd2': 0}}"
    run_path = write(tmp_path, "r", RUN)
    with open(run_path, "rb") as fh:
        assert sb.Run.from_file(fh).name == sb.Run.from_file(run_path).name == "t"


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        sb.Run.from_dict({"q": {"a": 1.0}}).to_file(tmp_path / "r.trec")
    finally:
        os.umask(old)
    assert (tmp_path / "r.trec").stat().st_mode & 0o777 == 0o644


def test_block_wise_reading_equals_one_block(trec_eval_dir: Path, monkeypatch) -> None:
    """Interning across many small blocks gives the same run as one big block."""
    from searchbench.data import _text

    whole = sb.Run.from_file(trec_eval_dir / "results.test")
    monkeypatch.setattr("searchbench.data.trec.iter_blocks",
                        lambda s: _text.iter_blocks(s, block_size=997))
    blocks = sb.Run.from_file(trec_eval_dir / "results.test")
    assert blocks.to_dict() == whole.to_dict()
    assert blocks.doc_vocab.tolist() == whole.doc_vocab.tolist()


def test_a_folder_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="is a folder; expected a file"):
        sb.Qrels.from_file(tmp_path)


def test_classic_mac_line_endings_are_refused_not_truncated(tmp_path: Path) -> None:
    path = write(tmp_path, "r", b"q Q0 a 1 2.0 t\rq Q0 b 2 1.0 t\r")
    with pytest.raises(DataFormatError, match="lone carriage return"):
        sb.Run.from_file(path)
    one = write(tmp_path, "one", b"q Q0 a 1 2.0 t\r")  # a single line ending in CR is fine
    assert len(sb.Run.from_file(one)) == 1


def test_a_nul_byte_in_an_id_is_refused_from_files_and_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "r", b"q Q0 a\x00 1 2.0 t\nq Q0 a 2 1.0 t\n")
    with pytest.raises(DataFormatError, match="NUL byte"):
        sb.Run.from_file(path)
    with pytest.raises(DataFormatError, match="NUL byte"):
        sb.Run.from_columns(["q"], ["a\x00"], [1.0])
