"""Fast paths of the readers against plain line-by-line references: clean-block skipping,
ids trusted from a file split, tie repair, geometric interning, numpy ⇄ Arrow buffers."""

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
import searchbench.data.run as run_module
from searchbench.data import _text
from searchbench.data._arrow import int_or, strings, to_numpy
from searchbench.data.ids import Interner, lookup
from searchbench.errors import DataFormatError

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


@pytest.mark.parametrize("size", BLOCK_SIZES)
def test_clean_and_unclean_blocks_read_as_the_line_rule(size: int, block_size,
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
def test_qrels_blocks_read_as_the_line_rule(size: int, block_size, tmp_path: Path) -> None:
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


@pytest.mark.parametrize("size", [8, 64])
def test_pipe_and_last_line_quirks(size: int, block_size) -> None:
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
def test_errors_name_the_line_after_clean_blocks(size: int, block_size,
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
def test_beir_tsv_with_header_in_small_blocks(size: int, block_size, tmp_path: Path) -> None:
    block_size(size)
    rows = [(f"q{i % 4}", f"c{i}", i % 3) for i in range(30)]
    text = "query-id\tcorpus-id\tscore\r\n" + "".join(f"{q}\t{d}\t{g}\r\n" for q, d, g in rows)
    (tmp_path / "q.tsv").write_text(text)
    qrels = sb.Qrels.from_file(tmp_path / "q.tsv")
    want: dict[str, dict[str, int]] = {}
    for q, d, g in rows:
        want.setdefault(q, {})[d] = g
    assert qrels.to_dict() == want


ODD_BYTES = ["a", "é", "\x0b", "\x0c", "\xa0", "\x1c", "\x85", "\u3000", "\u2028"]


@pytest.mark.parametrize("size", [8, _text.BLOCK_SIZE])
def test_file_ids_accepted_exactly_when_columns_accept_them(size: int, block_size) -> None:
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


# -- tie repair -------------------------------------------------------------------------
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
        got = run_module._rank_order(q_codes.astype(np.int32), s, codes, vocab)
        assert got.tolist() == want
        perm = np.random.default_rng(len(doc)).permutation(len(doc))  # the sorting path
        got = run_module._rank_order(q_codes[perm].astype(np.int32), s[perm], codes[perm], vocab)
        assert perm[got].tolist() == want


def test_tie_runs_of_many_lengths_and_adjacent_scores() -> None:
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


def test_a_tie_spanning_a_query_boundary_is_two_ties() -> None:
    """q1's last entries and q2's first share a score: each query is re-sorted alone."""
    query = ["q1", "q1", "q1", "q2", "q2", "q2"]
    doc = ["z", "a", "b", "y", "c", "d"]
    score = [2.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    check_rank_order(query, doc, score)
    run = sb.Run.from_columns(query, doc, score)
    assert [d for d, _ in run.ranking("q1")] == ["z", "b", "a"]
    assert [d for d, _ in run.ranking("q2")] == ["y", "c", "d"]


@pytest.mark.parametrize("seed", range(6))
def test_random_ties_all_paths(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    query, doc, score = [], [], []
    for i in range(rng.randint(1, 120)):
        query.append(rng.choice(["q1", "q2", "Q", "10", "9"]))
        doc.append(rng.choice(["e", "é", "E", "d", "D", "01", "1"]) + str(i % 7) + "_" + str(i))
        score.append(rng.choice([0.0, -0.0, 1.0, 1.5, -2.0]))
    check_rank_order(query, doc, score)
    monkeypatch.setattr(run_module, "_sorted_order", lambda q, s: None)  # lexsort fallback
    check_rank_order(query, doc, score)


# -- interning --------------------------------------------------------------------------
@pytest.mark.parametrize("growth", [1, 2, 3])
def test_interner_over_blocks_with_nothing_new(growth: int, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    monkeypatch.setattr(Interner, "GROWTH", growth)
    rng = random.Random(growth)
    for _ in range(20):
        blocks = []
        for _ in range(rng.randint(1, 20)):
            pool = rng.choice([3, 40, 400])
            blocks.append([f"i{rng.randint(0, pool)}" for _ in range(rng.randint(0, 30))])
        blocks.append(blocks[0])  # a block adding no new id
        everything = [x for b in blocks for x in b]
        for sort in (True, False):
            interner = Interner()
            for i, b in enumerate(blocks):
                padded = pa.array(["pad", *b, "pad"]).slice(1, len(b))
                interner.add([b, padded, pa.chunked_array([padded[:3], padded[3:]])][i % 3])
            codes, vocab = interner.finish() if sort else interner.finish_unsorted()
            vocab = list(vocab) if sort else vocab.to_pylist()
            assert [vocab[c] for c in codes] == everything
            want = sorted(set(everything), key=str.encode) if sort else \
                list(dict.fromkeys(everything))
            assert vocab == want


# -- numpy ⇄ Arrow ----------------------------------------------------------------------
def test_to_numpy_on_chunks_with_offsets_and_empty_chunks() -> None:
    bools = pa.array([bool(i % 3) for i in range(21)])
    chunked = pa.chunked_array([bools.slice(3, 7), bools.slice(0, 0), bools.slice(13)])
    assert to_numpy(chunked).tolist() == chunked.to_pylist()
    ints = pa.array(range(20), type=pa.int16())
    chunked = pa.chunked_array([ints.slice(5, 3), ints.slice(0, 0), ints.slice(17)])
    assert to_numpy(chunked).tolist() == [5, 6, 7, 17, 18, 19]
    assert to_numpy(chunked).dtype == np.int16


def test_int_or_on_chunks_with_nulls() -> None:
    a = pa.array([1, None, 3, None, 5], type=pa.int32())
    chunked = pa.chunked_array([a.slice(1, 3), a.slice(4), pa.nulls(2, pa.int32())])
    assert int_or(chunked, -1).tolist() == [-1, 3, -1, 5, -1, -1]


@pytest.mark.parametrize("kind", [pa.date32(), pa.date64(), pa.time32("s"),
                                  pa.timestamp("s"), pa.duration("ms")])
def test_to_numpy_of_temporal_types_is_not_misread(kind: pa.DataType) -> None:
    """Only numbers take the buffer view; other fixed-width types keep pyarrow's conversion."""
    arr = pa.array([1, 2, 3], type=pa.int64()).cast(pa.int32() if kind.bit_width == 32
                                                     else pa.int64()).view(kind)
    assert to_numpy(arr.slice(1)).tolist() == arr.slice(1).to_numpy(zero_copy_only=False).tolist()


def test_strings_agree_with_lookup() -> None:
    values = ["", "é", "e", "E", "日本", "a b", "x" * 300]
    built = strings(values)
    assert built.to_pylist() == values
    assert built.equals(pa.array(values, type=pa.string()))
    vocab = np.array(sorted(set(values), key=str.encode), dtype=object)
    assert lookup(vocab, built).tolist() == [vocab.tolist().index(v) for v in values]
    assert lookup(vocab, ["nope", "é"]).tolist() == [-1, vocab.tolist().index("é")]
