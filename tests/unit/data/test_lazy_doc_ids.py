"""Runs read from files keep doc ids as Arrow strings (no run-wide vocabulary): duplicate
detection by 64-bit keys against exact references, including forced collisions, and the
lazily built ``doc_codes`` / ``doc_vocab`` against runs built from columns."""

from __future__ import annotations

import io
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import searchbench as sb
from searchbench.data import _strings, _text
from searchbench.data.ids import lookup
from searchbench.errors import DataFormatError
from searchbench.measures import evaluator as evaluator_module

# ids sharing 8- and 16-byte prefixes, differing only in length, multi-byte UTF-8
TRICKY = ["a", "ab", "x" * 7, "x" * 8, "x" * 9, "x" * 15, "x" * 16, "x" * 17, "x" * 24,
          "abcdefgh", "abcdefgi", "abcdefghX", "abcdefghY", "abcdefghijklmnop",
          "abcdefghijklmnoq", "abcdefghijklmnopZ", "abcdefghijklmnop\x01", "é", "éé",
          "é" * 4, "é" * 5, "ééééé\x01", "日本語の文書", "日本語の文書2", "\U0001f600" * 3,
          "e\u0301", "E", "9", "09", "10"]


def read(text: str, **kw) -> sb.Run:
    return sb.Run.from_file(io.BytesIO(text.encode()), **kw)


def run_text(rows: list[tuple[str, str, float]]) -> str:
    return "".join(f"{q} Q0 {d} {i + 1} {s!r} t\n" for i, (q, d, s) in enumerate(rows))


def random_rows(seed: int, n: int = 300, dup: bool = False) -> list[tuple[str, str, float]]:
    """Rows over few queries, tricky ids and tied scores, in random order."""
    rng = random.Random(seed)
    pairs = {(rng.choice(["q1", "q2", "é", "10"]), rng.choice(TRICKY) + rng.choice(["", "_1", "é"]))
             for _ in range(n)}
    rows = [(q, d, rng.choice([0.0, 1.0, 2.5, -1.0])) for q, d in sorted(pairs)]
    if dup:
        q, d, _ = rng.choice(rows)
        rows.append((q, d, rng.choice([0.0, 1.0, 7.0])))
    rng.shuffle(rows)
    return rows


def reference(rows: list[tuple[str, str, float]]) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in rows:
        out.setdefault(q, []).append((d, s))
    return {q: sorted(v, key=lambda x: (x[1], x[0].encode()), reverse=True)
            for q, v in out.items()}


def rankings(run: sb.Run) -> dict[str, list[tuple[str, float]]]:
    return {q: run.ranking(q) for q in run.query_ids.tolist()}


def constant_keys(arr: pa.Array, query_codes: np.ndarray) -> np.ndarray:
    return np.zeros(len(arr), dtype=np.uint64)


# -- keys --------------------------------------------------------------------------------
def test_equal_ids_have_equal_keys_wherever_their_bytes_lie() -> None:
    """Keys depend on the id's bytes only: not on its position, neighbours, slicing,
    string width or the bytes after it in the buffer."""
    rng = random.Random(0)
    ids = [rng.choice(TRICKY) for _ in range(500)]
    codes = np.zeros(len(ids), dtype=np.int32)
    keys = _strings.doc_keys(pa.array(ids), codes)
    by_id: dict[str, int] = {}
    for i, k in zip(ids, keys.tolist(), strict=True):
        assert by_id.setdefault(i, k) == k
    assert len(set(by_id.values())) == len(by_id)  # distinct ids, distinct keys here
    padded = pa.array(["zzzzzzzzzzzzzzzzzzzz", *ids, "yyyyyyyyyyyyyyyyyy"])[1:-1]
    assert _strings.doc_keys(padded, codes).tolist() == keys.tolist()
    wide = pa.array(ids).cast(pa.large_string())
    assert _strings.doc_keys(wide, codes).tolist() == keys.tolist()
    tiny = _strings.doc_keys(pa.array(["a"]), codes[:1])  # a data buffer under 8 bytes
    assert tiny.tolist() == [by_id["a"]]


def test_query_code_is_part_of_the_key() -> None:
    arr = pa.array(["d", "d", "d"])
    keys = _strings.doc_keys(arr, np.array([0, 1, 0], dtype=np.int32))
    assert keys[0] == keys[2] != keys[1]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("keys", ["real", "constant"])
def test_has_duplicates_is_exact(seed: int, keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if keys == "constant":  # every pair collides: only the exact check decides
        monkeypatch.setattr(_strings, "doc_keys", constant_keys)
    monkeypatch.setattr(_strings, "CHUNK", 7)
    rng = random.Random(seed)
    q = [rng.randrange(3) for _ in range(40)]
    d = [rng.choice(TRICKY[:12]) for _ in range(40)]
    want = len(set(zip(q, d, strict=True))) < len(q)
    got = _strings.has_duplicates(np.array(q, dtype=np.int32), pa.array(d))
    assert got == want


@pytest.mark.parametrize("keys", ["real", "constant"])
def test_id_index_finds_exactly(keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions equal a dictionary's, with real keys, with every key equal (the listed
    pairs collide: the exact-encoding path) and with a bit table letting all through."""
    rng = random.Random(1)
    listed = [(rng.randrange(4), rng.choice(TRICKY)) for _ in range(40)]
    listed = list(dict.fromkeys(listed))  # unique pairs, ids repeated across tags
    probe = [(rng.randrange(5) - 1, rng.choice(TRICKY) + rng.choice(["", "", "x"]))
             for _ in range(400)]
    where = {pair: i for i, pair in enumerate(listed)}
    want = [where.get(pair, -1) for pair in probe]
    if keys == "constant":
        monkeypatch.setattr(_strings, "_C3", np.uint64(0))
        monkeypatch.setattr(_strings, "_C1", np.uint64(0))
    index = _strings.IdIndex(pa.array([d for _, d in listed]),
                             np.array([t for t, _ in listed]))
    assert index._unique == (keys == "real")
    tags = np.array([t for t, _ in probe])
    ids = pa.array([d for _, d in probe])
    assert index.find(ids, tags).tolist() == want
    assert index.find(ids.cast(pa.large_string()), tags).tolist() == want
    index._table[:] = 255  # every entry a candidate: only the key, tag and string decide
    assert index.find(ids, tags).tolist() == want
    empty = _strings.IdIndex(pa.nulls(0, pa.string()))
    assert empty.find(ids).tolist() == [-1] * len(probe)
    untagged = _strings.IdIndex(pa.array(TRICKY[:10]))  # ids alone
    assert untagged.find(ids).tolist() == lookup(pa.array(TRICKY[:10]), ids).tolist()


def test_id_index_with_keys_colliding_across_list_and_probe(monkeypatch) -> None:
    """A probe whose key equals a listed pair's key but whose string differs is absent."""
    vocab = pa.array(["a", "bb"])
    index = _strings.IdIndex(vocab)
    monkeypatch.setattr(_strings.IdIndex, "candidates",
                        lambda self, arr, tags: (np.arange(len(arr), dtype=np.int64),
                                                 np.repeat(index._keys[:1], len(arr))))
    probe = ["zz", "a", "bb", "a"]
    first = int(index._codes[0])  # every probe's key matches this listed id's key
    want = [first if p == vocab[first].as_py() else -1 for p in probe]
    assert index.find(pa.array(probe)).tolist() == want


# -- reading -------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("keys", ["real", "constant"])
def test_file_runs_rank_like_the_reference(seed: int, keys: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if keys == "constant":
        monkeypatch.setattr(_strings, "doc_keys", constant_keys)
    rows = random_rows(seed)
    run = read(run_text(rows))
    assert not run.has_doc_codes
    assert rankings(run) == reference(rows)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keys", ["real", "constant"])
@pytest.mark.parametrize("block", [64, _text.BLOCK_SIZE])
def test_duplicates_are_found_across_blocks(seed: int, keys: str, block: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A duplicate pair raises the message naming both lines; keep= resolves it as the
    column-built run does, wherever the two lines fall."""
    if keys == "constant":
        monkeypatch.setattr(_strings, "doc_keys", constant_keys)
    monkeypatch.setattr("searchbench.data.trec.iter_blocks",
                        lambda s: _text.iter_blocks(s, block_size=block))
    rows = random_rows(seed, dup=True)
    text = run_text(rows)
    pairs = [r[:2] for r in rows]
    q, d = next(p for p in pairs if pairs.count(p) > 1)
    lines = [i + 1 for i, p in enumerate(pairs) if p == (q, d)]
    assert len(lines) == 2
    with pytest.raises(DataFormatError) as err:
        sb.Run.from_file(io.BytesIO(text.encode()))
    message = str(err.value)
    assert f":{lines[1]}: duplicate (query, doc) pair ({q!r}, {d!r}), first seen at " in message
    assert message.split("first seen at ")[1].split(";")[0].endswith(f":{lines[0]}")
    for keep in ("max", "first"):
        got = read(text, keep=keep)
        want = sb.Run.from_columns(*zip(*rows, strict=True), keep=keep)
        assert rankings(got) == rankings(want)


def test_no_duplicate_is_reported_for_colliding_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_strings, "doc_keys", constant_keys)
    rows = [("q", d, float(i)) for i, d in enumerate(TRICKY)] + \
        [("r", d, 1.0) for d in TRICKY]
    run = read(run_text(rows))
    assert not run.has_doc_codes
    assert rankings(run) == reference(rows)


def test_ids_needing_the_whitespace_check_are_still_checked() -> None:
    with pytest.raises(DataFormatError, match=r":2: found a form feed"):
        read("q Q0 a 1 1 t\nq Q0 b\x0cc 2 0.5 t\n")


# -- lazy codes ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_lazy_codes_and_vocab_equal_the_eager_ones(seed: int) -> None:
    rows = random_rows(seed)
    lazy = read(run_text(rows))
    eager = sb.Run.from_columns(*zip(*rows, strict=True))
    assert eager.has_doc_codes and not lazy.has_doc_codes
    assert lazy.doc_ids_arrow().to_pylist() == eager.doc_ids_arrow().to_pylist()
    assert len(lazy) == len(eager)
    codes, vocab = lazy.doc_codes, lazy.doc_vocab
    assert lazy.has_doc_codes
    assert codes.dtype == np.int32
    assert len(set(vocab.tolist())) == len(vocab)
    assert vocab[codes].tolist() == eager.doc_vocab[eager.doc_codes].tolist()
    assert sorted(vocab.tolist()) == sorted(eager.doc_vocab.tolist())
    assert lazy.doc_vocab_arrow().to_pylist() == vocab.tolist()
    assert lazy.doc_ids_arrow().to_pylist() == eager.doc_ids_arrow().to_pylist()
    assert lazy.to_dict() == eager.to_dict()
    np.testing.assert_array_equal(lazy.scores, eager.scores)
    np.testing.assert_array_equal(lazy.offsets, eager.offsets)


def test_doc_vocab_arrow_first_builds_the_codes() -> None:
    lazy = read(run_text(random_rows(1)))
    vocab = lazy.doc_vocab_arrow()
    assert lazy.has_doc_codes
    assert vocab.take(pa.array(lazy.doc_codes)).to_pylist() == lazy.doc_ids_arrow().to_pylist()


@pytest.mark.parametrize("depth", [1, 2, 5, 1000])
def test_truncate_and_to_file_round_trip(depth: int, tmp_path: Path) -> None:
    rows = random_rows(depth)
    lazy = read(run_text(rows))
    eager = sb.Run.from_columns(*zip(*rows, strict=True))
    cut = lazy.truncate(depth)
    assert not cut.has_doc_codes
    assert rankings(cut) == rankings(eager.truncate(depth))
    coded = read(run_text(rows))
    coded.doc_codes  # noqa: B018
    assert rankings(coded.truncate(depth)) == rankings(cut)
    for run, name in ((lazy, "a.trec"), (cut, "b.trec.gz")):
        run.to_file(tmp_path / name)
        back = sb.Run.from_file(tmp_path / name)
        assert rankings(back) == rankings(run)


def test_large_string_ids(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Past 2 GiB of ids the column is large_string; forced here with a tiny limit."""
    monkeypatch.setattr(_strings, "_LIMIT", 16)
    monkeypatch.setattr("searchbench.data.trec.iter_blocks",
                        lambda s: _text.iter_blocks(s, block_size=64))
    rows = random_rows(5)
    run = read(run_text(rows))
    assert pa.types.is_large_string(run.doc_ids_arrow().type)
    assert rankings(run) == reference(rows)
    qrels = sb.Qrels.from_columns([q for q, _, _ in rows], [d for _, d, _ in rows],
                                  [i % 3 for i in range(len(rows))])
    measures = ["nDCG@10", "AP", "RR", "P@5", "R@10"]
    eager = sb.Run.from_columns(*zip(*rows, strict=True))
    assert sb.evaluate(qrels, run, measures).mean == sb.evaluate(qrels, eager, measures).mean
    run.truncate(3).to_file(tmp_path / "r.trec")
    assert rankings(sb.Run.from_file(tmp_path / "r.trec")) == rankings(eager.truncate(3))


@pytest.mark.parametrize("chunk", [1, 3, 1 << 22])
@pytest.mark.parametrize("passing", ["index_in", "filtered", "all"])
def test_evaluating_lazy_runs_in_chunks_equals_eager(chunk: int, passing: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluator_module, "CHUNK_ENTRIES", chunk)
    if passing != "index_in":  # the IdIndex of (query, doc) pairs, as for large qrels
        monkeypatch.setattr(evaluator_module, "PAIR_INDEX_FROM", 0)
    if passing == "all":  # every key collides: the exact encoding decides
        monkeypatch.setattr(_strings, "_C3", np.uint64(0))
        monkeypatch.setattr(_strings, "_C1", np.uint64(0))
    rows = random_rows(7, n=400)
    rng = random.Random(7)
    qrels = sb.Qrels.from_dict({q: {d: rng.randrange(3) for _, d, _ in rows[:150]}
                                for q in ["q1", "q2", "é", "zz"]})
    lazy = read(run_text(rows))
    eager = sb.Run.from_columns(*zip(*rows, strict=True))
    measures = ["nDCG@10", "AP", "RR", "P@5", "R@10", "NumRet", "NumRelRet"]
    for depth in (None, 4):  # qrels query "zz" is not in the run, run query "10" is not judged
        with (pytest.warns(sb.SearchbenchWarning, match="1 qrels queries have no results"),
              pytest.warns(sb.SearchbenchWarning, match="1 queries are not in the qrels")):
            got = sb.evaluate(qrels, lazy, measures, depth=depth)
        with (pytest.warns(sb.SearchbenchWarning, match="1 qrels queries have no results"),
              pytest.warns(sb.SearchbenchWarning, match="1 queries are not in the qrels")):
            want = sb.evaluate(qrels, eager, measures, depth=depth)
        assert got.mean == want.mean
        for m in measures:
            np.testing.assert_array_equal(got.scores[m], want.scores[m])
    assert not lazy.has_doc_codes  # evaluation built no codes


def test_lazy_paths_leave_pandas_unimported(tmp_path: Path) -> None:
    """Unsorted runs with ties (take, tie repair from strings) and depth (truncate)."""
    pytest.importorskip("pandas")
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (tmp_path / "run").write_text("q2 Q0 d9 1 1.0 t\nq1 Q0 d2 1 2.0 t\nq2 Q0 d3 2 1.0 t\n"
                                  "q1 Q0 d1 2 2.0 t\nq1 Q0 abcdefghijklmnopq 3 3.0 t\n")
    script = textwrap.dedent(f"""
        import sys
        import searchbench as sb
        q = sb.Qrels.from_file({str(tmp_path / "qrels")!r})
        r = sb.Run.from_file({str(tmp_path / "run")!r})
        res = sb.evaluate(q, r, ["nDCG@10", "RR@10", "AP"], depth=3)
        rr = res.per_query["RR@10"]
        assert abs(rr["q1"] - 1 / 3) < 1e-12 and rr["q2"] == 0.5, rr
        assert not r.has_doc_codes
        print("pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("layout", ["in order", "segments moved", "shuffled"])
def test_signed_zero_scores_stay_with_their_entries(layout: str) -> None:
    """Tied 0.0 and -0.0 are re-sorted by doc id; each keeps its own sign."""
    rows = [("a", "d1", 0.0), ("a", "d3", -0.0), ("a", "d2", 0.0), ("b", "x", 1.0),
            ("b", "z", -0.0), ("b", "y", 0.0)]
    if layout == "segments moved":
        rows = rows[3:] + rows[:3]
    elif layout == "shuffled":
        random.Random(2).shuffle(rows)
    run = read(run_text(rows))
    eager = sb.Run.from_columns(*zip(*rows, strict=True))
    sign = {(q, d): np.signbit(s) for q, d, s in rows}
    for r in (run, eager):
        for q in ("a", "b"):
            got = r.ranking(q)
            assert [d for d, _ in got] == [d for d, _ in reference(rows)[q]]
            assert [bool(np.signbit(s)) for _, s in got] == [sign[q, d] for d, _ in got]
