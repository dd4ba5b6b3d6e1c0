"""TREC / BEIR qrels and run files (``data/trec.py``, ``data/run.py``): layouts, whitespace,
ordering, bad input, round trips; the fast paths (clean-block skipping, ids trusted from a
file split, tie repair) against plain line-by-line references."""

from __future__ import annotations

import contextlib
import gzip
import io
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import searchbench as sb
import searchbench.data._ranking as ranking
from searchbench.data import _text
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


def test_large_block_boundaries(tmp_path: Path, block_size) -> None:
    """Lines split across read blocks parse as whole lines, with right line numbers."""
    lines = [f"q{i % 3} Q0 d{i} {i} {i / 10} t" for i in range(100)]
    path = write(tmp_path, "r", "\n".join(lines) + "\nq0 Q0 dX 1 oops t\n")
    block_size(64)
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


def test_block_wise_reading_equals_one_block(trec_eval_dir: Path, block_size) -> None:
    """Interning across many small blocks gives the same run as one big block."""
    whole = sb.Run.from_file(trec_eval_dir / "results.test")
    block_size(997)
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


# -- fast paths: block reader and tie repair, against plain line-by-line references --
"""Fast paths of the readers against plain line-by-line references: clean-block skipping,
ids trusted from a file split, tie repair, geometric interning, numpy ⇄ Arrow buffers."""


BLOCK_SIZES = [8, 13, 64, 300, _text.BLOCK_SIZE]


@pytest.fixture
def block_size(monkeypatch: pytest.MonkeyPatch):
    """Set the reader's block size (small ones make many blocks, clean and unclean)."""

    def use(size: int) -> None:
        monkeypatch.setattr("searchbench.data.trec.iter_blocks",
                            lambda s: _text.iter_blocks(s, block_size=size))

    return use


def reference_fields(data: bytes) -> list[list[str]]:
    """ARCHITECTURE §2.4 line by line: BOM, CRLF, tabs, runs of spaces, # comment lines."""
    text = data.decode("utf-8").removeprefix("\ufeff")
    out = []
    for line in text.split("\n"):
        line = line.replace("\t", " ").replace("\r", " ")
        if line.lstrip(" ").startswith("#") or not line.strip(" "):
            continue
        out.append([f for f in line.split(" ") if f])
    return out


def reference_ranking(data: bytes) -> dict[str, list[tuple[str, float]]]:
    per_query: dict[str, list[tuple[str, float]]] = {}
    for f in reference_fields(data):
        per_query.setdefault(f[0], []).append((f[2], float(f[4])))
    return {q: sorted(items, key=lambda x: (x[1], x[0].encode()), reverse=True)
            for q, items in per_query.items()}


def read_warning_extra_fields(data: bytes) -> contextlib.AbstractContextManager:
    """``pytest.warns`` for the more-than-six-fields warning when ``data`` has such lines
    (counted by the line rule above), else a context in which any warning fails the test."""
    if any(len(fields) > 6 for fields in reference_fields(data)):
        return pytest.warns(sb.SearchbenchWarning, match=r"line\(s\) have more than six fields")
    return warnings.catch_warnings(action="error")


def rankings(run: sb.Run) -> dict[str, list[tuple[str, float]]]:
    return {q: run.ranking(q) for q in run.query_ids.tolist()}


def mixed_run_text(seed: int) -> bytes:
    """Long clean stretches (whole clean blocks) with the odd unclean line between them."""
    rng = random.Random(seed)
    docs = ["e", "é", "E", "ë", "10", "9", "010", "d#1", "Z", "a"] + [f"d{i}" for i in range(30)]
    lines, seen = [], set()
    for i in range(160):
        q = rng.choice(["q1", "q2", "7", "10", "é"])
        d = rng.choice(docs)
        if (q, d) in seen:
            continue
        seen.add((q, d))
        fields = [q, "Q0", d, str(i), rng.choice(["1", "1.0", "2.5", "0", "-0.0", "3"]), "t"]
        line = " ".join(fields)
        r = rng.random()
        if r < 0.03:
            line = "\t".join(fields)
        elif r < 0.05:
            line = "  " + line + " x y"  # leading spaces, extra trailing fields
        elif r < 0.07:
            lines.append(rng.choice(["# a comment ", " \t# indented comment "]) + line)
        elif r < 0.09:
            lines.append(rng.choice(["", "   ", "\t"]))
        elif r < 0.10:
            line += " "
        lines.append(line)
    text = "\n".join(lines)
    return ("\ufeff# first line\n" + text + "\r\n# last line").encode()


class _Pipe(io.RawIOBase):
    """A non-seekable stream, like a pipe."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, b) -> int:  # type: ignore[override]
        return self._inner.readinto(b)


ODD_BYTES = ["a", "é", "\x0b", "\x0c", "\xa0", "\x1c", "\x85", "\u3000", "\u2028"]


class TestBlockFastPath:
    """The block reader's fast paths (clean blocks skipped, ids trusted from a file split) read
    exactly as the line rule, at many block sizes."""

    @pytest.mark.parametrize("size", BLOCK_SIZES)
    def test_clean_and_unclean_blocks_read_as_the_line_rule(self, size: int, block_size,
                                                            tmp_path: Path) -> None:
        block_size(size)
        for seed in range(4):
            data = mixed_run_text(seed)
            want = reference_ranking(data)
            (tmp_path / "r").write_bytes(data)
            with read_warning_extra_fields(data):
                assert rankings(sb.Run.from_file(tmp_path / "r")) == want, seed
            if seed == 0:
                (tmp_path / "r.gz").write_bytes(gzip.compress(data))
                sources = [tmp_path / "r.gz", io.BytesIO(data), io.StringIO(data.decode())]
                for source in sources:
                    with read_warning_extra_fields(data):
                        assert rankings(sb.Run.from_file(source)) == want

    @pytest.mark.parametrize("size", BLOCK_SIZES)
    def test_qrels_blocks_read_as_the_line_rule(self, size: int, block_size,
                                                tmp_path: Path) -> None:
        """Qrels allow no extra field, so a stray space left in a block would be an error."""
        block_size(size)
        rng = random.Random(size)
        quirks = ["{} 0 {} {}", "{} 0 {} {} ", " {} 0 {} {}", "{}  0 {}\t{}", "{} 0 {} {}\r",
                  "{} 0 {} {}\t", "{} 0\r{} {}"]
        for _ in range(4):
            lines = []
            for i in range(60):
                fmt = quirks[0] if rng.random() < 0.85 else rng.choice(quirks)
                lines.append(fmt.format(rng.choice(["q1", "é", "7"]), f"d{i}", rng.randint(-2, 3)))
            data = "\n".join(lines) + rng.choice(["", "\n", " ", "\n#", "\n  "])
            (tmp_path / "q").write_text(data)
            want: dict[str, dict[str, int]] = {}
            for f in reference_fields(data.encode()):
                want.setdefault(f[0], {})[f[2]] = int(f[3])
            assert sb.Qrels.from_file(tmp_path / "q").to_dict() == want

    @pytest.mark.parametrize("size", [8, 64])
    def test_pipe_and_last_line_quirks(self, size: int, block_size) -> None:
        block_size(size)
        cases = [
            b"q Q0 a 1 1 t\nq Q0 b 2 1 t\r\n",  # CRLF only on the last line
            b"q Q0 a 1 1 t\nq Q0 b 2 1 t",  # no final newline
            b"q Q0 a 1 1 t\nq Q0 b 2 1 t ",  # trailing space, no final newline
            b"q Q0 a 1 1 t\nq Q0 b 2 1 t\n#",  # a bare comment as the last line
            b"q Q0 a 1 1 t\n \n\t\nq Q0 b 2 1 t\n",  # whitespace-only lines
        ]
        for data in cases:
            want = {"q": [("b", 1.0), ("a", 1.0)]}
            assert rankings(sb.Run.from_file(_Pipe(data))) == want, data
            assert rankings(sb.Run.from_file(io.BytesIO(data))) == want, data

    @pytest.mark.parametrize("size", [8, 21, 64, _text.BLOCK_SIZE])
    def test_errors_name_the_line_after_clean_blocks(self, size: int, block_size,
                                                     tmp_path: Path) -> None:
        block_size(size)
        clean = "".join(f"q{i % 3} Q0 d{i} {i} {i / 8} t\n" for i in range(40))
        path = tmp_path / "r"
        path.write_text(clean + "q0\tQ0 dX 1 oops t\n")  # unclean block: the tab
        with pytest.raises(DataFormatError, match=r"r:41: found score 'oops', expected a number"):
            sb.Run.from_file(path)
        path.write_text(clean + "# c\n\nq0  Q0 dX 1\n" + clean)
        with pytest.raises(DataFormatError, match=r"r:43: found 4 fields, expected 6"):
            sb.Run.from_file(path)
        path.write_text(clean + "q1 Q0 d1 1 0.5 t\n")
        with pytest.raises(DataFormatError, match=r"r:41: duplicate .* first seen at \S*/r:2;"):
            sb.Run.from_file(path)
        qrels = "".join(f"q{i % 3} 0 d{i} {i % 3}\n" for i in range(40))
        path.write_text(qrels + "q1 0 dX 1.5\n")
        with pytest.raises(DataFormatError, match=r"r:41: found grade '1.5', expected an integer"):
            sb.Qrels.from_file(path)

    @pytest.mark.parametrize("size", [8, 64, _text.BLOCK_SIZE])
    def test_beir_tsv_with_header_in_small_blocks(self, size: int, block_size,
                                                  tmp_path: Path) -> None:
        block_size(size)
        rows = [(f"q{i % 4}", f"c{i}", i % 3) for i in range(30)]
        text = "query-id\tcorpus-id\tscore\r\n" + "".join(f"{q}\t{d}\t{g}\r\n" for q, d, g in rows)
        (tmp_path / "q.tsv").write_text(text)
        qrels = sb.Qrels.from_file(tmp_path / "q.tsv")
        want: dict[str, dict[str, int]] = {}
        for q, d, g in rows:
            want.setdefault(q, {})[d] = g
        assert qrels.to_dict() == want

    @pytest.mark.parametrize("size", [8, _text.BLOCK_SIZE])
    def test_file_ids_accepted_exactly_when_columns_accept_them(self, size: int,
                                                                block_size) -> None:
        """Ids split from a file skip the whitespace check; it must not accept more for it."""
        block_size(size)
        rng = random.Random(size)
        for _ in range(60):
            odd = "".join(rng.choice(ODD_BYTES) for _ in range(rng.randint(1, 3)))
            where = rng.choice(["doc", "query"])
            doc, query = (odd, "q") if where == "doc" else ("d", odd)
            lines = [f"q Q0 d{i} 1 1 t" for i in range(rng.randint(0, 12))]  # clean blocks first
            data = ("\n".join([*lines, f"{query} Q0 {doc} 1 0.5 t"]) + "\n").encode()
            try:
                sb.Run.from_columns([query], [doc], [0.5])
                columns_ok = True
            except DataFormatError:
                columns_ok = False
            try:
                run = sb.Run.from_file(io.BytesIO(data))
                file_ok = True
            except DataFormatError as exc:
                assert re.search(r"<stream>:\d+: found ", str(exc)), exc
                file_ok = False
            assert file_ok == columns_ok, repr(odd)
            if file_ok:
                ids = run.doc_vocab.tolist() if where == "doc" else run.query_ids.tolist()
                assert odd in ids


def python_order(query: list[str], doc: list[str], score: list[float]) -> list[int]:
    return sorted(range(len(query)),
                  key=lambda i: (query[i].encode(), -score[i], [-b for b in doc[i].encode()]
                                 + [1]))


def check_rank_order(query: list[str], doc: list[str], score: list[float]) -> None:
    """Every ordering path and both vocabulary kinds give the python order."""
    want = python_order(query, doc, score)
    q_codes = np.searchsorted(np.array(sorted(set(query), key=str.encode), dtype=object),
                              np.array(query, dtype=object))
    sorted_docs = sorted(set(doc), key=str.encode)
    numpy_vocab = np.array(sorted_docs, dtype=object)
    arrow_vocab = pa.array(list(dict.fromkeys(doc)))  # file order, as a file run holds it
    s = np.array(score, dtype=np.float64)
    for vocab in (numpy_vocab, arrow_vocab):
        index = {d: i for i, d in enumerate(vocab.tolist() if isinstance(vocab, np.ndarray)
                                            else vocab.to_pylist())}
        codes = np.array([index[d] for d in doc], dtype=np.int32)
        got = ranking.rank_order(q_codes.astype(np.int32), s, codes, vocab)
        assert got.tolist() == want
        perm = np.random.default_rng(len(doc)).permutation(len(doc))  # the sorting path
        got = ranking.rank_order(q_codes[perm].astype(np.int32), s[perm], codes[perm], vocab)
        assert perm[got].tolist() == want


class TestTieRepairFastPath:
    """Rank order: every ordering path (presorted tie repair, lexsort fallback) and both
    vocabulary kinds give Python's sort order."""

    def test_tie_runs_of_many_lengths_and_adjacent_scores(self) -> None:
        rng = random.Random(3)
        query, doc, score = [], [], []
        for q in ["a", "b", "c", "é"]:
            value = 100.0
            for length in rng.sample(range(1, 9), 8):  # adjacent tie runs, different scores
                for _ in range(length):
                    query.append(q)
                    doc.append(rng.choice(["e", "é", "E", "ë", "x"]) + str(len(doc)))
                    score.append(value)
                value -= rng.choice([0.5, 1.0])
        check_rank_order(query, doc, score)

    def test_a_tie_spanning_a_query_boundary_is_two_ties(self) -> None:
        """q1's last entries and q2's first share a score: each query is re-sorted alone."""
        query = ["q1", "q1", "q1", "q2", "q2", "q2"]
        doc = ["z", "a", "b", "y", "c", "d"]
        score = [2.0, 1.0, 1.0, 1.0, 1.0, 0.0]
        check_rank_order(query, doc, score)
        run = sb.Run.from_columns(query, doc, score)
        assert [d for d, _ in run.ranking("q1")] == ["z", "b", "a"]
        assert [d for d, _ in run.ranking("q2")] == ["y", "c", "d"]

    @pytest.mark.parametrize("seed", range(6))
    def test_random_ties_all_paths(self, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
        rng = random.Random(seed)
        query, doc, score = [], [], []
        for i in range(rng.randint(1, 120)):
            query.append(rng.choice(["q1", "q2", "Q", "10", "9"]))
            doc.append(rng.choice(["e", "é", "E", "d", "D", "01", "1"]) + str(i % 7) + "_" + str(i))
            score.append(rng.choice([0.0, -0.0, 1.0, 1.5, -2.0]))
        check_rank_order(query, doc, score)
        monkeypatch.setattr(ranking, "_sorted_order", lambda q, s: None)  # lexsort fallback
        check_rank_order(query, doc, score)
