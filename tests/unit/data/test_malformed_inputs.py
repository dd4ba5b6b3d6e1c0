"""Malformed inputs of every reader give ONE DataFormatError naming the file, the line (when
there is one), what was found and what was expected (issue 12, classes 2-5).

The decisions tested here (README, input formats):
- TREC runs have exactly six fields, qrels exactly four (or BEIR's three): more is an
  error naming the line, not a silent shift of the columns;
- grades are ``-?[0-9]+`` in -128..127; ``+1``, ``1_0``, ``0x10``, ``1.0`` are refused;
- whitespace other than space/tab (form feed, vertical tab, no-break space, Unicode
  spaces), NUL and a byte-order mark after the start of the file are refused on every line;
- a byte-order mark at the start of the file is ignored (trec_eval would keep it in the
  first query id); a line whose first non-blank character is ``#`` is a comment.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

import searchbench as sb
from searchbench.data.beir import read_beir
from searchbench.data.evalset import read_native
from searchbench.data.jsonl import read_corpus_jsonl, read_queries_jsonl
from searchbench.data.smart import read_smart_docs
from searchbench.data.trec_text import read_trec_docs
from searchbench.errors import ConfigError, DataFormatError, SearchbenchWarning

RUN = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\n"
CORPUS = b'{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n'


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def raises(read, path: Path | str, pattern: str) -> str:
    with pytest.raises(DataFormatError) as info:
        read(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    assert re.search(pattern, message), message
    return message


# -- damaged compression ---------------------------------------------------------------------
def truncated(data: bytes) -> bytes:
    packed = gzip.compress(data * 200)
    return packed[: len(packed) // 2]


def corrupt(data: bytes) -> bytes:
    packed = bytearray(gzip.compress(data * 200))
    packed[len(packed) // 2] ^= 0xFF
    packed[len(packed) // 2 + 1] ^= 0xFF
    return bytes(packed)


GZIP_READERS = [
    ("run.gz", RUN, sb.Run.from_file),
    ("qrels.gz", QRELS, sb.Qrels.from_file),
    ("corpus.jsonl.gz", CORPUS, read_corpus_jsonl),
    ("queries.jsonl.gz", CORPUS, read_queries_jsonl),
    ("docs.all.gz", b".I 1\n.W\ntext\n", read_smart_docs),
    ("docs.trec.gz", b"<DOC><DOCNO>d</DOCNO>x</DOC>\n", read_trec_docs),
]


@pytest.mark.parametrize(("name", "data", "read"), GZIP_READERS, ids=[g[0] for g in GZIP_READERS])
@pytest.mark.parametrize("damage", [truncated, corrupt, lambda d: b"\x1f\x8b" + d,
                                    lambda d: b"\x1f\x8b\x09" + bytes(40)],
                         ids=["truncated", "corrupt", "magic-then-text", "unknown-method"])
def test_damaged_gzip_is_one_error_naming_the_file(name, data, read, damage,
                                                   tmp_path: Path) -> None:
    path = write(tmp_path, name, damage(data))
    message = raises(read, path, r"the compressed file is truncated or corrupt")
    assert "expected a complete .gz file" in message


@pytest.mark.parametrize("layout", ["native", "beir"])
def test_damaged_gzip_corpus_in_evaluation_sets(layout: str, tmp_path: Path) -> None:
    root = tmp_path / "set"
    write(root, "corpus.jsonl.gz", truncated(CORPUS))
    write(root, "queries.jsonl", b'{"_id": "q1", "text": "x"}\n')
    write(root, "qrels.tsv" if layout == "native" else "qrels/test.tsv", b"q1\td1\t1\n")
    read = read_native if layout == "native" else read_beir
    with pytest.raises(DataFormatError, match=r"corpus\.jsonl\.gz: the compressed file is "
                                              r"truncated"):
        read(root)


# -- JSON ------------------------------------------------------------------------------------
JSON_LINES = [
    (b'{"_id": "d1", "text": "x", "n": ' + b"9" * 5000 + b"}\n", r":2: a JSON value cannot be "
     r"read \(found an integer of more than 4300 digits"),
    (b'{"_id": "d1", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     r":2: JSON nested too deeply"),
    (b'{"_id": "d1", "text": "bad \\ud800 half"}\n', r":2: the escape '\\\\ud800' is half of a "
     r"surrogate pair"),
    (b'{"_id": "d\\udc80", "text": "x"}\n', r":2: the escape '\\\\udc80'"),
    (b'{"_id": "d1", "text": "caf\xe9"}\n', r":2: bytes e9 \(byte offset about 54\) are not "
     r"valid UTF-8"),
]


@pytest.mark.parametrize(("line", "pattern"), JSON_LINES,
                         ids=["5000-digits", "deep", "surrogate", "surrogate-id", "latin1"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_jsonl_values_python_cannot_hold_name_the_line(line: bytes, pattern: str,
                                                       compress: bool, tmp_path: Path) -> None:
    data = b'{"_id": "d0", "text": "ok"}\n' + line
    path = write(tmp_path, "c.jsonl.gz" if compress else "c.jsonl",
                 gzip.compress(data) if compress else data)
    raises(read_corpus_jsonl, path, pattern)
    raises(read_queries_jsonl, path, pattern)


def test_a_valid_surrogate_pair_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, "c.jsonl", b'{"_id": "d1", "text": "\\ud83d\\ude00"}\n')
    assert read_corpus_jsonl(path)["d1"].text == "\U0001f600"


@pytest.mark.parametrize(("content", "pattern"), [
    (b'{"provenance": {\n"n": ' + b"9" * 5000 + b"}}", r"json:2: a JSON value cannot be read "
     r"\(found an integer of more than 4300 digits"),
    (b'{"provenance": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", r"nested too deeply"),
    (b'{"provenance": {},\n "name": "caf\xe9"}', r":2: bytes e9 \(byte offset 32\) are not "
     r"valid UTF-8"),
    (b'{"provenance": {}, "exclude_unjudged": "yes"}', r"'exclude_unjudged' is 'yes'"),
    (b'{"provenance": [}', r":1: invalid JSON"),
    (b'{"provenance": {"a": "\\udfff"}}', r"the escape '\\\\udfff' is half of a surrogate"),
], ids=["digits", "deep", "utf8", "type", "syntax", "surrogate"])
def test_provenance_json_errors_name_the_file(content: bytes, pattern: str,
                                              tmp_path: Path) -> None:
    root = tmp_path / "set"
    write(root, "corpus.jsonl", CORPUS)
    write(root, "queries.jsonl", b'{"id": "q1", "text": "x"}\n')
    write(root, "qrels.tsv", b"q1\td1\t1\n")
    path = write(root, "provenance.json", content)
    with pytest.raises(DataFormatError, match=pattern) as info:
        read_native(root)
    assert str(info.value).startswith(str(path))


@pytest.mark.parametrize(("content", "pattern"), [
    (b"name = 'x'\nk = " + b"9" * 5000 + b"\n", r"exp\.toml: cannot be read as TOML \(an integer "
     r"of more than 4300 digits\)"),
    (b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", r"exp\.toml: cannot be read as TOML "
     r"\(nested too deeply\)"),
    (b"name = 'x'\nevalset = 'caf\xe9'\n", r"exp\.toml:2: byte 0xe9 \(offset 25\) is not valid "
     r"UTF-8"),
], ids=["digits", "deep", "utf8"])
def test_experiment_toml_errors_name_the_file(content: bytes, pattern: str,
                                              tmp_path: Path) -> None:
    from searchbench.experiment.config import load_config

    with pytest.raises(ConfigError, match=pattern):
        load_config(write(tmp_path, "exp.toml", content))


@pytest.mark.parametrize(("content", "pattern"), [
    (b'{"q": {"d": "x"}}', r"query 'q', doc 'd': found score 'x', expected a number"),
    (b'{"q": {"d": ' + b"9" * 5000 + b"}}", r"a JSON value cannot be read"),
    (b'{"q": {"d": 1.0}, "r": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", r"nested too deeply"),
    (b'{"q": {"d": \xff}}', r":1: bytes ff"),
    (b'{"q": {"d\\ud800": 1}}', r"json: the escape '\\\\ud800' is half of a surrogate pair"),
], ids=["string", "digits", "deep", "utf8", "surrogate"])
def test_json_runs_name_the_file(content: bytes, pattern: str, tmp_path: Path) -> None:
    raises(sb.Run.from_json, write(tmp_path, "r.json", content), pattern)


# -- TREC numbers and fields -----------------------------------------------------------------
@pytest.mark.parametrize("grade", ["99999999999999999999999", "1_0", "+1", "0x10", "1.0", "1e2",
                                   "١", "nan", "--1"])
def test_grades_outside_the_integer_grammar_name_the_line(grade: str, tmp_path: Path) -> None:
    path = write(tmp_path, "q", QRELS + f"q2 0 d3 {grade}\n".encode())
    found = re.escape(repr(grade))
    raises(sb.Qrels.from_file, path,
           rf":3: found grade {found}, expected an integer such as 0, 1 or 2")
    header = b"query-id\tcorpus-id\tscore\nq\td\t1\n"
    beir = write(tmp_path, "q.tsv", header + f"q\te\t{grade}\n".encode())
    raises(sb.Qrels.from_file, beir, rf":3: found grade {found}, expected an integer")


@pytest.mark.parametrize("grade", ["-2", "0", "127", "-128", "007"])
def test_grades_inside_the_grammar_are_read(grade: str, tmp_path: Path) -> None:
    qrels = sb.Qrels.from_file(write(tmp_path, "q", f"q 0 d {grade}\n".encode()))
    assert qrels.to_dict() == {"q": {"d": int(grade)}}


@pytest.mark.parametrize("score", ["1_0", "abc", "0x10", "1,5", "1.5.2"])
def test_scores_that_are_not_numbers_name_the_line(score: str, tmp_path: Path) -> None:
    path = write(tmp_path, "r", RUN + f"q1 Q0 d3 3 {score} t\n".encode())
    raises(sb.Run.from_file, path, rf":3: found score {re.escape(repr(score))}, expected a number")


@pytest.mark.parametrize(("score", "value"), [("+1", 1.0), ("1e3", 1000.0), ("-0.5", -0.5),
                                              (".5", 0.5), ("7", 7.0)])
def test_decimal_scores_are_read(score: str, value: float, tmp_path: Path) -> None:
    run = sb.Run.from_file(write(tmp_path, "r", f"q Q0 d 1 {score} t\n".encode()))
    assert run.ranking("q") == [("d", value)]


@pytest.mark.parametrize(("line", "n", "why"), [
    (b"q1 Q0 doc 7 3 1.0 t", 7, "tag '1.0' is a number"),
    (b"q1 Q0 doc x 3 1.0 t", 7, "rank 'x' is not an integer"),
    (b"q1 Q0 a b c 3 1.0 t", 8, "rank 'b' is not an integer"),
], ids=["space-in-id", "space-in-id-text", "two-spaces"])
def test_run_lines_with_shifted_columns_name_the_line(line: bytes, n: int, why: str,
                                                      tmp_path: Path) -> None:
    path = write(tmp_path, "r", RUN + line + b"\n")
    raises(sb.Run.from_file, path, rf":3: found {n} fields and shifted columns \({why}: a doc "
                                   r"id holding a space\?\); expected 6 fields")


def test_trailing_fields_are_ignored_with_a_warning_as_trec_eval(tmp_path: Path) -> None:
    """trec_eval ignores fields after the sixth (its test run results.trunc has such lines)."""
    text = RUN + b"q2 Q0 d1 1 0.5 STANDARD more junk at\nq2 Q0 d2 2 0.25 t end\n"
    with pytest.warns(SearchbenchWarning, match=r"r:3: 2 line\(s\) have more than six fields; the "
                                         r"fields after the sixth are ignored"):
        run = sb.Run.from_file(write(tmp_path, "r", text))
    assert run.ranking("q2") == [("d1", 0.5), ("d2", 0.25)]
    assert run.ranking("q1") == [("d1", 2.5), ("d2", 1.5)]


def test_form_feed_as_a_whole_field_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "r", RUN + b"q1 Q0 d3 3 \x0c 1.0 t\n")
    raises(sb.Run.from_file, path, r":3: found a form feed")


def test_qrels_lines_with_extra_fields_name_the_line(tmp_path: Path) -> None:
    raises(sb.Qrels.from_file, write(tmp_path, "q", QRELS + b"q1 0 d 3 1\n"),
           r":3: found 5 fields \(a field holding a space\?\), expected 4")
    raises(sb.Qrels.from_file, write(tmp_path, "b.tsv", b"q\td\t1\nq\td 2\t1\n"),
           r":2: found 4 fields \(a field holding a space\?\), expected 3")


ODD = [(b"\x00", "a NUL byte"), (b"\x0c", "a form feed"), (b"\x0b", "a vertical tab"),
       (b"\xc2\xa0", "a no-break space"),
       (b"\xe2\x80\x83", "the whitespace character U\\+2003"),
       (b"\xe3\x80\x80", "the whitespace character U\\+3000"),
       (b"\xef\xbb\xbf", "a byte-order mark")]


@pytest.mark.parametrize(("char", "what"), ODD, ids=[o[1] for o in ODD])
@pytest.mark.parametrize("line", [1, 2, 3])
def test_odd_characters_are_refused_on_every_line(char: bytes, what: str, line: int,
                                                  tmp_path: Path) -> None:
    lines = [b"q1 Q0 d1 1 2.5 t", b"q1 Q0 d2 2 1.5 t", b"q1 Q0 d3 3 0.5 t"]
    lines[line - 1] = lines[line - 1].replace(b" d", b" d" + char)
    raises(sb.Run.from_file, write(tmp_path, "r", b"\n".join(lines) + b"\n"),
           rf":{line}: found {what}")
    qrels = [b"q1 0 d1 1", b"q1 0 d2 1", b"q1 0 d3 0"]
    qrels[line - 1] = qrels[line - 1].replace(b" d", b" d" + char)
    raises(sb.Qrels.from_file, write(tmp_path, "q", b"\n".join(qrels) + b"\n"),
           rf":{line}: found {what}")


def test_bom_at_the_start_and_indented_comments_are_accepted(tmp_path: Path) -> None:
    text = b"\xef\xbb\xbfq1 Q0 d1 1 2.5 t\n   # note\n\t# tab-indented note\nq1 Q0 d2 2 1.5 t\n"
    run = sb.Run.from_file(write(tmp_path, "r", text))
    assert run.ranking("q1") == [("d1", 2.5), ("d2", 1.5)]
    qrels = sb.Qrels.from_file(write(tmp_path, "q", b"\xef\xbb\xbf  # c\nq1 0 d1 1\n"))
    assert qrels.to_dict() == {"q1": {"d1": 1}}


def test_columns_and_files_refuse_the_same_ids() -> None:
    for char in ("\xa0", "\u3000", "\ufeff", "\x0c", "\x00"):
        with pytest.raises(DataFormatError, match="is empty or holds whitespace"):
            sb.Run.from_columns(["q"], [f"d{char}1"], [1.0])


def test_errors_after_a_header_keep_their_line(tmp_path: Path) -> None:
    path = write(tmp_path, "q.tsv", b"query-id\tcorpus-id\tscore\nq\td\t1\nq\td\t2\n")
    raises(sb.Qrels.from_file, path, r":3: duplicate \(query, doc\) pair .* first seen at "
                                     r".*q\.tsv:2")


# -- vectors ---------------------------------------------------------------------------------
def npy(tmp_path: Path, name: str, x: np.ndarray, allow_pickle: bool = False) -> Path:
    path = tmp_path / name
    np.save(path, x, allow_pickle=allow_pickle)
    return path


def test_malformed_npy_vectors(tmp_path: Path) -> None:
    from searchbench.ann.formats import read_vectors

    good = npy(tmp_path, "good.npy", np.ones((4, 3), np.float32))
    cases = [
        (npy(tmp_path, "obj.npy", np.array([{"a": 1}, None], dtype=object), True),
         r"holds Python objects \(pickled data is never loaded\)"),
        (write(tmp_path, "cut.npy", good.read_bytes()[:-5]), r"truncated"),
        (write(tmp_path, "head.npy", good.read_bytes()[:40]), r"not a readable \.npy array"),
        (write(tmp_path, "text.npy", b"hello"), r"not a readable \.npy array"),
        (npy(tmp_path, "flat.npy", np.ones(3)), r"found a 1-D array of shape \(3,\); expected "
                                                r"a 2-D array"),
        (npy(tmp_path, "cube.npy", np.ones((2, 2, 2))), r"found a 3-D array"),
        (npy(tmp_path, "empty.npy", np.ones((0, 3))), r"expected at least one vector"),
        (npy(tmp_path, "str.npy", np.array([["a"]])), r"found values of type <U1"),
        (npy(tmp_path, "nan.npy", np.array([[1, 2], [3, np.nan]])), r"row 1 holds NaN or inf"),
        (npy(tmp_path, "inf.npy", np.array([[1, 2], [3, 4], [np.inf, 0]])), r"row 2 holds"),
    ]
    for path, pattern in cases:
        raises(read_vectors, path, pattern)
    assert read_vectors(good).shape == (4, 3)


def test_fvecs_vectors(tmp_path: Path) -> None:
    from searchbench.ann.formats import read_vectors

    rows = np.arange(6, dtype="<f4").reshape(3, 2)
    data = b"".join(np.array([2], "<i4").tobytes() + r.tobytes() for r in rows)
    np.testing.assert_array_equal(read_vectors(write(tmp_path, "v.fvecs", data)), rows)
    raises(read_vectors, write(tmp_path, "cut.fvecs", data[:-3]), r"whole vectors")
    bad = data[:12] + np.array([5], "<i4").tobytes() + data[16:]
    raises(read_vectors, write(tmp_path, "dims.fvecs", bad), r"vector 1 says dimension 5")


# -- ids in text collections -----------------------------------------------------------------
@pytest.mark.parametrize("char", ["\x00", "\ufeff", "\xa0", " ", "\x0c"])
def test_text_collection_ids_refuse_what_runs_cannot_hold(char: str, tmp_path: Path) -> None:
    corpus = write(tmp_path, "c.jsonl",
                   json_line({"id": "ok", "text": "x"}) + json_line({"id": f"d{char}1"}))
    raises(read_corpus_jsonl, corpus, r":2: id .* is empty or contains whitespace")
    docs = write(tmp_path, "d.trec", f"<DOC>\n<DOCNO>ok</DOCNO>\n</DOC>\n<DOC>\n<DOCNO>d{char}1"
                                     "</DOCNO>\n</DOC>\n".encode())
    raises(read_trec_docs, docs, r":5: <DOCNO> .* holds whitespace")


def json_line(obj: dict) -> bytes:
    import json

    return (json.dumps(obj) + "\n").encode()


# -- other encodings and compressions --------------------------------------------------------
def _foreign() -> list[tuple[str, bytes, str]]:
    import bz2
    import lzma

    return [("bz2", bz2.compress(RUN), "bzip2-compressed data"),
            ("xz", lzma.compress(RUN), "xz-compressed data"),
            ("zip", b"PK\x03\x04" + bytes(30), "a zip archive"),
            ("utf16", RUN.decode().encode("utf-16"), "UTF-16 text")]


@pytest.mark.parametrize(("kind", "data", "what"), _foreign(), ids=[f[0] for f in _foreign()])
@pytest.mark.parametrize("read", [sb.Run.from_file, sb.Qrels.from_file, read_corpus_jsonl,
                                  read_smart_docs, read_trec_docs],
                         ids=["run", "qrels", "corpus", "smart", "trec"])
def test_other_compressions_and_utf16_are_named(kind: str, data: bytes, what: str, read,
                                                tmp_path: Path) -> None:
    raises(read, write(tmp_path, kind, data), rf": found {what}")


def test_a_query_id_that_looks_like_a_signature_still_reads(tmp_path: Path) -> None:
    run = sb.Run.from_file(write(tmp_path, "r", b"BZh9 Q0 d 1 1 t\n"))
    assert run.query_ids.tolist() == ["BZh9"]


def test_malformed_hdf5_vectors(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    from searchbench.ann.formats import read_ann_benchmarks, read_vectors

    raises(read_vectors, write(tmp_path, "junk.hdf5", b"not hdf5 at all"),
           r"not a readable HDF5 file")
    raises(read_ann_benchmarks, write(tmp_path, "junk2.hdf5", b"\x89HDF\r\n\x1a\n" + bytes(9)),
           r"not a readable ann-benchmarks HDF5 file")
    path = tmp_path / "nan.hdf5"
    with h5py.File(path, "w") as f:
        f["train"] = np.array([[1.0, 2.0], [np.nan, 0.0]])
        f["test"] = np.ones((1, 2))
        f["neighbors"] = np.zeros((1, 1), dtype=np.int64)
        f["distances"] = np.zeros((1, 1))
        f.create_group("group")
        f.attrs["distance"] = "euclidean"
    raises(read_vectors, path, r"\[train\]: row 1 holds NaN or inf")
    raises(read_ann_benchmarks, path, r"\[train\]: row 1 holds NaN or inf")
    with pytest.raises(DataFormatError, match=r"no dataset 'x'"):
        read_vectors(path, key="x")
    with pytest.raises(DataFormatError, match=r"nan\.hdf5"):
        read_vectors(path, key="group")
