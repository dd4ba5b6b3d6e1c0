"""The compiled TREC reader (``data/_scan.c``) against the pure one: the same runs, qrels,
evaluations, warnings and error messages, on the trec_eval files, on generated runs (ties,
graded and negative labels, missing queries) and on malformed and mutated files.

``SEARCHBENCH_PURE_READER=1`` switches the compiled reader off; each case is read both
ways. Without the extension built (no compiler) the comparisons are skipped, and
``searchbench --version`` says ``pure``.
"""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import searchbench as sb
from searchbench.data import _compiled
from searchbench.data._native import FORCE_PURE, scanner
from searchbench.errors import SearchbenchError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "trec_eval"
MEASURES = ["nDCG@10", "RR@10", "R@100", "AP", "P@5", "NumRet", "Judged@10"]
compiled = pytest.mark.skipif(scanner() is None, reason="the C extension is not built")


def read_both(monkeypatch: pytest.MonkeyPatch, read: Any, *args: Any) -> list[Any]:
    """``read(*args)`` with the compiled and then the pure reader: the value or the error
    (type and message), and the warnings' messages."""
    outcomes = []
    for pure in ("0", "1"):
        monkeypatch.setenv(FORCE_PURE, pure)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                value: Any = read(*args)
            except SearchbenchError as exc:
                value = (type(exc).__name__, str(exc))
        outcomes.append((value, [str(w.message) for w in seen]))
    monkeypatch.delenv(FORCE_PURE)
    return outcomes


def run_view(run: sb.Run) -> dict[str, Any]:
    """Everything a run read from a file exposes, as plain values."""
    return {"queries": run.query_ids.tolist(), "offsets": run.offsets.tolist(),
            "scores": run.scores.tolist(), "docs": run.doc_vocab[run.doc_codes].tolist(),
            "arrow": run.doc_ids_arrow().to_pylist(), "name": run.name,
            "tag": run.metadata.get("tag")}


def qrels_view(qrels: sb.Qrels) -> dict[str, Any]:
    return {"queries": qrels.query_ids.tolist(), "offsets": qrels.offsets.tolist(),
            "vocab": qrels.doc_vocab.tolist(), "docs": qrels.doc_codes.tolist(),
            "grades": qrels.grades.tolist()}


def same(outcomes: list[Any], view: Any) -> None:
    (a, warn_a), (b, warn_b) = outcomes
    assert warn_a == warn_b
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
    else:
        assert view(a) == view(b)


def read_run(path: Any, **kw: Any) -> sb.Run:
    return sb.Run.from_file(path, **kw)


def read_qrels(path: Any, **kw: Any) -> sb.Qrels:
    return sb.Qrels.from_file(path, **kw)


@compiled
def test_compiled_reader_is_active_by_default() -> None:
    out = subprocess.run([sys.executable, "-m", "searchbench", "--version"], check=True,
                         capture_output=True, text=True).stdout
    assert "TREC reader: compiled" in out
    pure = subprocess.run([sys.executable, "-m", "searchbench", "--version"], check=True,
                          capture_output=True, text=True,
                          env={**__import__("os").environ, FORCE_PURE: "1"}).stdout
    assert "TREC reader: pure" in pure


@compiled
@pytest.mark.parametrize("name", ["qrels.test", "qrels.rel_level", "qrels.comment.test",
                                  "qrels.test.with-comments"])
def test_trec_eval_qrels(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    same(read_both(monkeypatch, read_qrels, FIXTURES / name), qrels_view)


@compiled
def test_trec_eval_run_and_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    same(read_both(monkeypatch, read_run, FIXTURES / "results.trunc"), run_view)

    def evaluate(qrels: Path, run: Path) -> Any:
        res = sb.evaluate(sb.Qrels.from_file(qrels), sb.Run.from_file(run), MEASURES)
        return {k: v.tolist() for k, v in res.scores.items()}, res.query_ids.tolist()

    (a, _), (b, _) = read_both(monkeypatch, evaluate, FIXTURES / "qrels.test",
                               FIXTURES / "results.trunc")
    assert a == b


ids = st.sampled_from(["d1", "d2", "d10", "D2", "a", "b#1-2", "z9", "d1x", "0", "q"])


@st.composite
def runs_and_qrels(draw: Any) -> tuple[bytes, bytes]:
    """A run (ties, any order of lines, tabs, CRLF, comments) and qrels (graded and
    negative labels, queries the run lacks and the run's queries the qrels lack)."""
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q10", "Q1", "x"]), min_size=1,
                            max_size=4, unique=True))
    lines = []
    for q in queries:
        docs = draw(st.lists(ids, min_size=1, max_size=8, unique=True))
        for rank, d in enumerate(docs):
            score = draw(st.sampled_from(["1", "1.0", "2", "-0.5", "0", "-0", "3e-1",
                                          "0.30000000000000004", "+2E1", ".5", "7."]))
            lines.append(f"{q} Q0 {d} {rank + 1} {score} tag")
    if draw(st.booleans()):
        lines = draw(st.permutations(lines))
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(line.replace(" ", sep) + end for line in lines)
    if draw(st.booleans()):
        text = "# a comment\n\n" + text
    judged = draw(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3", "x"]), ids,
                                     st.integers(-2, 3)), min_size=1, max_size=12,
                           unique_by=lambda t: (t[0], t[1])))
    qrels = "".join(f"{q} 0 {d} {g}\n" for q, d, g in judged)
    return text.encode(), qrels.encode()


@compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs_and_qrels(), st.sampled_from(["zero", "skip"]), st.booleans())
def test_generated_runs_agree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                              files: tuple[bytes, bytes], missing: str, in_two: bool) -> None:
    monkeypatch.setattr(_compiled, "SPLIT_BYTES", 1 if in_two else _compiled.SPLIT_BYTES)
    run_path, qrels_path = tmp_path / "run", tmp_path / "qrels"
    run_path.write_bytes(files[0])
    qrels_path.write_bytes(files[1])
    same(read_both(monkeypatch, read_run, run_path), run_view)
    same(read_both(monkeypatch, read_qrels, qrels_path), qrels_view)

    def evaluate() -> Any:
        res = sb.evaluate(sb.Qrels.from_file(qrels_path), sb.Run.from_file(run_path),
                          MEASURES, missing=missing)
        return {k: v.tolist() for k, v in res.scores.items()}, res.query_ids.tolist()

    (a, warn_a), (b, warn_b) = read_both(monkeypatch, evaluate)
    assert a == b and warn_a == warn_b


RUN = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"
BAD_RUNS = [
    b"", b"\n\n", b"# only a comment\n", b"q1 Q0 d1 1 2.5\n", b"q1 Q0 d1 1 2.5 t x\n",
    b"q1 Q0 d 1 1 2.5 t\n", b"q1 Q0 d1 1 abc t\n", b"q1 Q0 d1 1 inf t\n",
    b"q1 Q0 d1 1 nan t\n", b"q1 Q0 d1 1 1e999 t\n", b"q1 Q0 d1 1 0x10 t\n",
    b"q1 Q0 d1 1 1_0 t\n", b"q1 Q0 d1\x0c 1 2 t\n", b"q1 Q0 d1\x00 1 2 t\n",
    b"q1 Q0 d\xc2\xa01 1 2 t\n", b"q1 Q0 d\xff 1 2 t\n", b"q1 Q0 d1 1 2 t\rq1 Q0 d2 1 1 t\r",
    b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n", b"q1 Q0 d1 1 2 t\nq2 Q0 d1 1 1 t\nq1 Q0 d1 2 1 t\n",
    b"\xef\xbb\xbfq1 Q0 d1 1 2 t\n", b"q1 Q0 d1 1 2 t\n\xef\xbb\xbfq1 Q0 d2 1 2 t\n",
    b"q1 Q0 caf\xc3\xa9 1 2 t\n", b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 3 t\n", b"  q1 Q0 d1 1 2 t  \n",
    b"q1 Q0 d1 1 -.5e1 t\nq1 Q0 d2 1 +.5 t\n", b"q1 Q0 d1 1 1e-400 t\n",
    b"q1 Q0 d1 1 12345678901234567890123 t\n", b"q1 Q0 d1 1 2. t\nq1 Q0 d2 1 . t\n",
    RUN + b"q3 Q0 d1 x 2 t\n", RUN + b"q3 Q0 d 1 x 2 7\n", RUN[:-1], RUN + b"q1",
    b"q1 Q0  1 2.5 t\n", b" q1 Q0 d1 1 2.5\n", b"q1 Q0 d1 1 2.5 \n", b"q1 Q0 d1 1\t2.5 t\n",
    b"q1 Q0 d1 1 2.5 t\r\n", b"q1 Q0 " + b"d" * 70 + b" 1 2.5 t\n",
]
BAD_QRELS = [
    b"", b"q1 0 d1\n", b"q1 0 d1 1 x\n", b"q1 0 d1 +1\n", b"q1 0 d1 1.0\n",
    b"q1 0 d1 200\n", b"q1 0 d1 -129\n", b"q1 0 d1 0x1\n", b"q1 0 d1 1_0\n",
    b"q1 0 d1 1\nq1 0 d1 2\n", b"q1 0 d1 9999999999999999999\n",
    b"query-id\tcorpus-id\tscore\nq1\td1\t1\n", b"q1\td1\t1\nq2\td2\t2\n",
    b"q1 d1 1\nq1 0 d2 1\n", b"q1 0 d1 1\r\nq2 0 d2 -1\r\n", b"q1 0 d\x0b1 1\n",
    QRELS + b"q9 0 d9\n", QRELS + b"# c\n\tq9 0 d9 3\n",
]


# Ordinary lines around an odd one: the scanner takes a line in one step when 64 bytes
# follow it (split_simple in _scan.c) and field by field near the end of a block, and
# the first line's layout is checked before it starts; the padding puts every odd line
# above after a good one and on the one-step path.
PADDING = b"".join(b"q9 Q0 p%d %d 0.%d t\n" % (i, i + 1, 9 - i) for i in range(8))
QRELS_PADDING = b"".join(b"q9 0 p%d %d\n" % (i, i % 3) for i in range(12))


@compiled
@pytest.mark.parametrize("padded", [False, True, "in two"], ids=["alone", "padded", "in-two"])
@pytest.mark.parametrize("data", BAD_RUNS)
def test_odd_runs_read_alike(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                             data: bytes, padded: bool | str) -> None:
    if padded == "in two":  # the odd line in the second part of a file read in two
        monkeypatch.setattr(_compiled, "SPLIT_BYTES", 1)
        data = RUN * 3 + PADDING + data
    data = RUN + data + PADDING if padded else data
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    same(read_both(monkeypatch, read_run, path), run_view)
    gz = tmp_path / "run.trec.gz"
    gz.write_bytes(gzip.compress(data))
    same(read_both(monkeypatch, read_run, gz), run_view)


@compiled
@pytest.mark.parametrize("data", BAD_QRELS)
def test_odd_qrels_read_alike(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                              data: bytes) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(data)
    same(read_both(monkeypatch, read_qrels, path), qrels_view)


@compiled
@pytest.mark.parametrize("keep", ["max", "first"])
def test_keep_policies_agree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                             keep: str) -> None:
    path = tmp_path / "run"
    path.write_bytes(b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 3 t\nq1 Q0 d2 3 3 t\nq2 Q0 d1 1 1 t\n")
    same(read_both(monkeypatch, lambda p: read_run(p, keep=keep), path), run_view)


MUTATIONS = st.sampled_from([b"\x00", b"\x0c", b"\t", b" ", b"\n", b"\r", b"#", b"\xc2\xa0",
                             b"\xff", b"-", b"+", b".", b"e", b"9" * 30, b"1e999", b"x"])


@compiled
@settings(max_examples=200, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["run", "qrels"]), st.integers(0, 60), st.integers(0, 3), MUTATIONS,
       st.booleans())
def test_mutated_files_read_alike(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str,
                                  at: int, cut: int, insert: bytes, padded: bool) -> None:
    base = RUN if kind == "run" else QRELS
    at = min(at, len(base))
    path = tmp_path / kind
    tail = (PADDING if kind == "run" else QRELS_PADDING) if padded else b""
    path.write_bytes(base[:at] + insert + base[at + cut:] + tail)
    read, view = (read_run, run_view) if kind == "run" else (read_qrels, qrels_view)
    same(read_both(monkeypatch, read, path), view)


@compiled
def test_scores_parse_exactly_as_pyarrow() -> None:
    """Random decimals (short, long, with exponents) give the same doubles both ways."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(7)
    values = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-30, 30, 3000),
                             rng.random(3000)])
    texts = [f"{v:.{int(p)}g}" for v, p in zip(values, rng.integers(1, 20, len(values)),
                                               strict=True)]
    texts += [repr(float(v)) for v in values[:2000]]
    texts += ["0.1", "-0", "1e22", "1e23", "9007199254740993", "4.9e-324",
              "2.2250738585072014e-308"]
    data = "".join(f"q Q0 d{i} 1 {t} t\n" for i, t in enumerate(texts)).encode()
    scan = scanner().Scanner("run")
    assert scan.feed(data)
    mine = np.frombuffer(scan.finish()["values"], dtype=np.float64)
    theirs = pacsv.read_csv(pa.BufferReader("\n".join(texts).encode()),
                            read_options=pacsv.ReadOptions(column_names=["x"]),
                            convert_options=pacsv.ConvertOptions(
                                column_types={"x": pa.float64()})).column(0).to_pylist()
    assert mine.tobytes() == np.array(theirs, dtype=np.float64).tobytes()


@compiled
def test_a_build_of_an_older_scanner_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-place extension built from an older ``_scan.c`` (another ``ABI``) leaves the
    pure reader in charge until it is rebuilt."""
    import importlib

    module = importlib.import_module("searchbench.data._scan")
    assert scanner() is module
    monkeypatch.setattr(module, "ABI", 1)
    assert scanner() is None


# Ids that stress the order's radix pass and its fix-up: a shared 8-byte prefix, lengths
# either side of 8, one id the prefix of another.
IDS = st.lists(st.one_of(st.text(alphabet="ab~", min_size=1, max_size=11).map(lambda s: "d" + s),
                         st.text(alphabet="ab", max_size=5).map(lambda s: "dstem-" + s)),
               min_size=1, max_size=60)


@compiled
@settings(max_examples=200, deadline=None)
@given(IDS, st.lists(st.integers(0, 59), max_size=80))
def test_vocab_order_is_bytewise_then_position(ids: list[str], picks: list[int]) -> None:
    """``Vocab.order``: the ids in byte order (as Python sorts bytes); given codes, their
    positions in the byte order of their ids, equal ids by position."""
    data = "".join(f"q 0 {i} 1\n" for i in ids).encode()
    scan = scanner().Scanner("trec")
    assert scan.feed(data)
    vocab = scan.finish()["docs"]
    unique = list(dict.fromkeys(ids))
    order = np.frombuffer(vocab.order(None), dtype=np.int64).tolist()
    assert order == sorted(range(len(unique)), key=lambda c: unique[c].encode())
    codes = np.array([p % len(unique) for p in picks], dtype=np.int32)
    order = np.frombuffer(vocab.order(codes.tobytes()), dtype=np.int64).tolist()
    assert order == sorted(range(len(codes)), key=lambda i: unique[codes[i]].encode())


@compiled
@pytest.mark.parametrize("back", [None, "after the cut", "in the first part",
                                  "in the second part"])
def test_a_large_run_is_scanned_in_two_parts_alike(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, back: str | None) -> None:
    """A run file of at least ``SPLIT_BYTES`` is cut at a query boundary near its middle
    and its parts scanned at once; the run is the one-part scan's and the pure reader's,
    also when a query comes back (the run is then not grouped) within either part or
    after the cut."""
    lines = [f"q{q} Q0 d{(q * 7 + r) % 23} {r + 1} {1 - r / 50:.3f} tag\n"
             for q in range(40) for r in range(12)]
    at = {"after the cut": len(lines), "in the first part": 120,
          "in the second part": len(lines) - 12}.get(back or "", 0)
    came_back = {"after the cut": "q0", "in the first part": "q1",
                 "in the second part": "q30"}.get(back or "")
    if came_back:
        lines[at:at] = [f"{came_back} Q0 late{r} {r + 1} {-r:.1f} tag\n" for r in range(3)]
    grouped = back is None
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    monkeypatch.setattr(_compiled, "SPLIT_BYTES", 1)
    cut = _compiled._split_point(path)
    data = path.read_bytes()
    assert cut is not None and data[cut - 1:cut] == b"\n"
    assert data[:cut].splitlines()[-1].split()[0] != data[cut:].split()[0]
    in_two = _compiled.scan_compiled(path, "run")
    assert in_two is not None and in_two["grouped"] is grouped
    monkeypatch.setattr(_compiled, "SPLIT_BYTES", len(data) + 1)
    assert _compiled._split_point(path) is None
    in_one = _compiled.scan_compiled(path, "run")
    assert in_one is not None
    for key in ("rows", "grouped", "descending", "duplicate", "tied", "tag"):
        assert in_two[key] == in_one[key]
    assert in_two["queries"].tolist() == in_one["queries"].tolist()
    for key in ("query_codes", "query_bounds", "values"):  # bounds: grouped, codes: not
        assert (in_two[key] is None) == (in_one[key] is None) == (key == "query_codes") \
            if grouped else (in_two[key] is None) == (key == "query_bounds")
        assert in_two[key] is None or bytes(in_two[key]) == bytes(in_one[key])
    assert [bytes(b) for b in in_two["docs"].buffers()] == \
        [bytes(b) for b in in_one["docs"].buffers()]
    monkeypatch.setattr(_compiled, "SPLIT_BYTES", 1)
    same(read_both(monkeypatch, read_run, path), run_view)


@compiled
@pytest.mark.parametrize("ties", [False, True])
def test_a_run_scanned_in_two_parts_evaluates_alike(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path, ties: bool) -> None:
    """A run scanned in two parts keeps the second part's doc ids where that part wrote
    them (``Entries`` in two parts, joined only for Arrow): evaluated, ranked (ties by doc
    id) and read id by id, it is the one-part scan's and the pure reader's run."""
    lines = [f"q{q} Q0 d{(q * 7 + r) % 23} {r + 1} {(r // 3 if ties else r) / -50:.3f} t\n"
             for q in range(40) for r in range(12)]  # q10 comes before q2 in byte order
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels"
    run_path.write_text("".join(lines))
    qrels_path.write_text("".join(f"q{q} 0 d{(q * 5 + k) % 23} {k % 3}\n"
                                  for q in range(0, 44, 2) for k in range(4)))
    qrels = sb.Qrels.from_file(qrels_path)

    def seen(split: int, pure: str) -> Any:
        monkeypatch.setattr(_compiled, "SPLIT_BYTES", split)
        monkeypatch.setenv(FORCE_PURE, pure)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = sb.Run.from_file(run_path)
            result = sb.evaluate(qrels, run, MEASURES)  # before anything joins the parts
        docs = getattr(run._doc_ids, "entries", None)
        last = docs.get(len(docs) - 1) if docs is not None else None
        return ({k: v.tolist() for k, v in result.scores.items()}, last,
                run.ranking("q17"), run.scores.tolist())

    in_two = seen(1, "0")
    assert in_two[1] == f"d{(39 * 7 + 11) % 23}"  # the last line's id: the second part
    assert in_two == seen(len(run_path.read_bytes()) + 1, "0")
    assert in_two[0] == seen(1, "1")[0] and in_two[2:] == seen(1, "1")[2:]


@st.composite
def judge_cases(draw: Any) -> tuple[list[str], list[int] | None, list[int] | None, list[int],
                                    list[list[str] | None]]:
    """Entries' doc ids; an order of rank positions, or each query's first entry (the
    segments of a file put in another order), or neither (file order); query bounds over
    the positions; and each query's judged ids (None: a query the qrels lack; a repeated
    id, a query judging more ids than a small table holds)."""
    docs = draw(st.lists(st.text(alphabet="abc", max_size=4), min_size=1, max_size=120))
    how = draw(st.sampled_from(["file", "order", "starts"]))
    order = draw(st.permutations(range(len(docs))).map(list)) if how == "order" else None
    n_pos = len(docs) if order is None else draw(st.integers(0, len(docs)))
    order = None if order is None else order[:n_pos]
    cuts = sorted(draw(st.lists(st.integers(0, n_pos), max_size=12)))
    bounds = [0, *cuts, n_pos]
    starts = None
    if how == "starts":
        starts = [draw(st.integers(0, len(docs) - (end - start)))
                  for start, end in itertools.pairwise(bounds)]
    judged = draw(st.lists(st.none() | st.lists(st.text(alphabet="abc", max_size=4),
                                                max_size=20),
                           min_size=len(bounds) - 1, max_size=len(bounds) - 1))
    return docs, order, starts, bounds, judged


@compiled
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judge_cases(), st.integers(1, 8))
def test_entries_judge_is_python_s(case: tuple, parts: int) -> None:
    """``Entries.judge``: the (query, rank, row) of every entry whose doc id is among its
    own query's judged ids (the first row of a repeated id), in query then rank order,
    whatever the order of positions (given entry by entry or query by query) and the
    number of parts judged at once (a large run's are split over the cores)."""
    docs, order, starts, bounds, judged = case
    data = "".join(f"q0 Q0 d{d} {r + 1} {-r} t\n" for r, d in enumerate(docs)).encode()
    scan = scanner().Scanner("run")
    assert scan.feed(data)
    entries = scan.finish()["docs"]
    rows: list[str] = []
    first_row, end_row = [], []
    for ids in judged:
        first_row.append(len(rows))
        rows += [f"d{i}" for i in ids or []]
        end_row.append(len(rows) if ids is not None else first_row[-1])
    offsets, row_data = sb.data.utf8_column(np.array(rows, dtype=str))
    expected = []
    for q in range(len(bounds) - 1):
        mine = rows[first_row[q]:end_row[q]]
        for pos in range(bounds[q], bounds[q + 1]):
            entry = pos if order is None else order[pos]
            if starts is not None:
                entry = starts[q] + pos - bounds[q]
            doc = f"d{docs[entry]}"
            if doc in mine:
                expected.append((q, pos - bounds[q], first_row[q] + mine.index(doc)))
    arrays = (None if order is None else np.array(order, dtype=np.int32),
              np.array(bounds, dtype=np.int64), np.array(first_row, dtype=np.int64),
              np.array(end_row, dtype=np.int64), offsets, row_data)
    given_starts = None if starts is None else np.array(starts, dtype=np.int64)
    for kw in ({"parts": parts}, {}):
        query, rank, row = entries.judge(*arrays, starts=given_starts, **kw)
        got = zip(np.frombuffer(query, np.int32).tolist(), np.frombuffer(rank, np.int64).tolist(),
                  np.frombuffer(row, np.int32).tolist(), strict=True)
        assert list(got) == expected


@compiled
def test_entries_judge_refuses_what_is_out_of_range() -> None:
    """A bound past the positions, a row past the judged ids, or an order or segment start
    naming a missing entry is a ValueError, never a read outside the arrays."""
    scan = scanner().Scanner("run")
    assert scan.feed(b"q0 Q0 d1 1 2 t\nq0 Q0 d2 2 1 t\n")
    entries = scan.finish()["docs"]
    offsets, data = sb.data.utf8_column(np.array(["d1"]))
    one = np.array([0], dtype=np.int64)
    good = (None, np.array([0, 2], dtype=np.int64), one, one + 1, offsets, data)
    assert np.frombuffer(entries.judge(*good)[2], np.int32).tolist() == [0]
    for at, bad in [(1, np.array([0, 3], dtype=np.int64)), (3, one + 2),
                    (0, np.array([0, 5], dtype=np.int32)), (4, np.array([0, 9]))]:
        with pytest.raises(ValueError, match="judge"):
            entries.judge(*good[:at], bad, *good[at + 1:])
    for starts in (one + 1, np.array([0, 0])):  # the second entry's segment runs past the end
        with pytest.raises(ValueError, match="judge"):
            entries.judge(*good, starts=starts)


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("ids", [["d1", "", "dd22"], ["a\x00b", "c"], ["é", "a\x00b", "日本"], []])
def test_utf8_column_is_an_arrow_string_column(ids: list[str], pure: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``utf8_column(ids, at)``: the int64 offsets and UTF-8 bytes of ``ids[at]``, as
    Arrow's string column holds them, in C and in the pure fallback."""
    import pyarrow as pa

    if pure:
        monkeypatch.setenv(FORCE_PURE, "1")
    array = np.array(ids, dtype=object)
    for at in (None, np.array([i % max(len(ids), 1) for i in range(2 * len(ids))][::-1],
                              dtype=np.int32)):
        chosen = ids if at is None else [ids[i] for i in at]
        offsets, data = sb.data.utf8_column(array, at)
        column = pa.array(chosen, type=pa.large_string())
        assert offsets.tolist() == np.frombuffer(column.buffers()[1], np.int64).tolist()
        held = column.buffers()[2]
        assert data == (held.to_pybytes()[:int(offsets[-1])] if held is not None else b"")


def test_the_run_scan_starts_without_numpy(tmp_path: Path) -> None:
    """``RunsReadAhead`` scans a run file before numpy is imported (``searchbench eval``
    starts it first, and imports numpy meanwhile): importing it loads neither numpy nor
    pyarrow, and the run it gives is :meth:`Run.from_file`'s."""
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q{q} Q0 d{r} {r + 1} {1 - r / 9:.2f} t\n"
                            for q in range(3) for r in range(4)))
    code = ("import sys\nfrom searchbench.data import RunsReadAhead\n"
            "assert 'numpy' not in sys.modules and 'pyarrow' not in sys.modules\n"
            f"ahead = RunsReadAhead([{str(path)!r}], ['r'], None)\n"
            "[run] = ahead.runs()\n"
            "print(json.dumps([run.query_ids.tolist(), run.offsets.tolist(), "
            "run.scores.tolist()]))\n")
    done = subprocess.run([sys.executable, "-c", "import json\n" + code],
                          capture_output=True, text=True, check=True)
    run = sb.Run.from_file(path)
    assert json.loads(done.stdout) == [run.query_ids.tolist(), run.offsets.tolist(),
                                       run.scores.tolist()]


@compiled
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=12), st.randoms(), st.integers(1, 9))
def test_compiled_docs_by_segments_are_the_docs_by_order(lengths: list[int], rng: Any,
                                                         limit: int) -> None:
    """A run whose file segments only change places keeps them as ``segments``, not an
    order per entry: its length, sample, ids and a part taken are those of the same docs
    given the order entry by entry."""
    from searchbench.data._entries import CompiledDocs

    file_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    data = "".join(f"q0 Q0 d{e} {e + 1} {-e} t\n" for e in range(sum(lengths))).encode()
    scan = scanner().Scanner("run")
    assert scan.feed(data)
    entries = scan.finish()["docs"]
    ranked = list(range(len(lengths)))
    rng.shuffle(ranked)
    offsets = np.concatenate([[0], np.cumsum([lengths[q] for q in ranked])]).astype(np.int64)
    starts = file_starts[ranked]
    order = np.concatenate([np.arange(s, s + lengths[q]) for q, s in zip(ranked, starts,
                                                                        strict=True)])
    by_segments, by_order = CompiledDocs(entries, None, (starts, offsets)), \
        CompiledDocs(entries, order)
    assert len(by_segments) == len(by_order)
    assert by_segments.sample(limit) == by_order.sample(limit)
    index = np.array([len(order) - 1, 0])
    assert by_segments.take(index).order.tolist() == by_order.take(index).order.tolist()
    built = by_segments.order  # None: the file's order (no segment moved)
    assert (np.arange(len(order)) if built is None else built).tolist() == order.tolist()
    assert by_segments.arrow().to_pylist() == by_order.arrow().to_pylist()
