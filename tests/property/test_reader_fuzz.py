"""Fuzz: every file reader, fed random bytes or mutations of a valid file, either reads it
or raises a SearchbenchError subclass - never a raw zlib/EOF/Unicode/Recursion/Arrow
error, never a hang (inputs are small; each reader gets a bounded budget).

Mutations: a byte flipped, bytes inserted (including whitespace, NUL, a BOM, a no-break
space, huge numbers, deep nesting), a range deleted, the file truncated, the file
gzip-compressed and then damaged, the gzip magic put before plain text.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import searchbench as sb
from searchbench.ann import GroundTruth
from searchbench.ann.formats import read_bigann_groundtruth, read_vectors
from searchbench.data.beir import read_beir
from searchbench.data.evalset import read_native
from searchbench.data.jsonl import read_corpus_jsonl, read_queries_jsonl
from searchbench.data.smart import read_smart_docs, read_smart_queries
from searchbench.data.trec_text import read_trec_docs, read_trec_topics
from searchbench.errors import SearchbenchError
from searchbench.experiment.config import load_config

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

RUN = b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d1 1 0.5 t\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"
BEIR_QRELS = b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n"
CORPUS = (b'{"_id": "d1", "title": "T", "text": "first text"}\n'
          b'{"_id": "d2", "title": "", "text": "second", "metadata": {"n": 1}}\n')
QUERIES = b'{"_id": "q1", "text": "first"}\n{"_id": "q2", "text": "second"}\n'
EVIDENCE = b'{"query_id": "q1", "doc_id": "d1", "grade": 1, "quote": "first"}\n'
PROVENANCE = b'{"name": "x", "provenance": {"format": "beir"}, "exclude_unjudged": false}\n'
SMART = b".I 1\n.T\nA title\n.W\nsome text\n.I 2\n.W\nmore text\n"
TREC_DOCS = b"<DOC>\n<DOCNO> d1 </DOCNO>\n<TITLE>T</TITLE>\n<TEXT>\nbody\n</TEXT>\n</DOC>\n"
TOPICS = b"<top>\n<num> Number: 1\n<title> a query\n<desc> Description:\nmore\n</top>\n"
JSON_RUN = b'{"q1": {"d1": 1.5, "d2": 0.5}, "q2": {"d1": 2}}'
TOML = (b'name = "fuzz"\nevalset = "pyref"\nk = 10\nmeasures = ["nDCG@10"]\n'
        b'[[retrievers]]\nname = "bm25"\ntype = "bm25"\n')

NASTY = [b"\x00", b"\x0c", b"\x0b", b"\xc2\xa0", b"\xef\xbb\xbf", b"\xff", b"\xed\xa0\x80",
         b"\r", b"\t", b" ", b"\n", b"#", b"\\ud800", b"9" * 5000, b"[" * 3000, b"{" * 3000,
         b"99999999999999999999999", b"1_0", b"+1", b"nan", b"-inf", b"0x10", b"\x1f\x8b",
         b'"', b"<DOC>", b"</DOC>", b".I", b"<top>"]


@st.composite
def mutated(draw: Any, seed: bytes) -> bytes:
    """A valid file with a few random mutations (or random bytes)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "insert", "nasty", "delete", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "nasty":
            data[at:at] = draw(st.sampled_from(NASTY))
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 10))]
        else:
            del data[at:]
    packing = draw(st.sampled_from(["plain", "plain", "gzip", "gzip-cut", "gzip-flip", "magic"]))
    return _pack(bytes(data), packing, draw(st.integers(0, 1 << 16)))


def _pack(data: bytes, packing: str, r: int) -> bytes:
    if packing == "plain":
        return data
    if packing == "magic":
        return b"\x1f\x8b" + data
    packed = bytearray(gzip.compress(data, mtime=0))
    if packing == "gzip-cut":
        return bytes(packed[: r % len(packed)])
    if packing == "gzip-flip":
        packed[r % len(packed)] ^= 0xFF
    return bytes(packed)


def only_searchbench_errors(read: Callable[[], object]) -> None:
    """Damaged input may raise a SearchbenchError or warn a SearchbenchWarning (e.g. extra
    fields); any other exception or warning fails the test."""
    with contextlib.suppress(SearchbenchError), warnings.catch_warnings():
        warnings.simplefilter("ignore", sb.SearchbenchWarning)
        read()


def _file(folder: Path, data: bytes, name: str) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


TEXT_READERS: list[tuple[str, bytes, Callable[[Any], object]]] = [
    ("run", RUN, sb.Run.from_file),
    ("qrels", QRELS, sb.Qrels.from_file),
    ("beir-qrels", BEIR_QRELS, sb.Qrels.from_file),
    ("corpus", CORPUS, read_corpus_jsonl),
    ("queries", QUERIES, read_queries_jsonl),
    ("smart-docs", SMART, read_smart_docs),
    ("smart-queries", SMART, read_smart_queries),
    ("trec-docs", TREC_DOCS, read_trec_docs),
    ("trec-topics", TOPICS, read_trec_topics),
    ("json-run", JSON_RUN, sb.Run.from_json),
    ("json-qrels", JSON_RUN, sb.Qrels.from_json),
]


@pytest.mark.parametrize(("name", "seed", "read"), TEXT_READERS, ids=[r[0] for r in TEXT_READERS])
def test_text_readers_raise_only_searchbench_errors(name: str, seed: bytes, read,
                                                    tmp_path: Path) -> None:
    @FUZZ
    @given(mutated(seed), st.sampled_from(["path", "bytes", "pipe"]))
    def check(data: bytes, how: str) -> None:
        if how == "path":
            source: Any = _file(tmp_path, data, name)
        elif how == "bytes":
            source = io.BytesIO(data)
        else:
            source = _Pipe(data)
        only_searchbench_errors(lambda: read(source))

    check()


class _Pipe(io.RawIOBase):
    """A non-seekable binary stream that hands out a few bytes at a time, like a pipe."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(min(len(buffer), 7))
        buffer[: len(chunk)] = chunk
        return len(chunk)


FOLDER_FILES = {"corpus.jsonl": CORPUS, "queries.jsonl": QUERIES, "qrels.tsv": BEIR_QRELS,
                "evidence.jsonl": EVIDENCE, "provenance.json": PROVENANCE}


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "qrels").mkdir(parents=True)
    return folder


def test_native_folder_raises_only_searchbench_errors(tmp_path: Path) -> None:
    @FUZZ
    @given(st.sampled_from(sorted(FOLDER_FILES)), st.booleans(), st.data())
    def check(target: str, gz_corpus: bool, data: Any) -> None:
        folder = _fresh(tmp_path / "set")
        for name, content in FOLDER_FILES.items():
            damaged = data.draw(mutated(content)) if name == target else content
            if name == "corpus.jsonl" and gz_corpus:
                if name != target:
                    damaged = gzip.compress(damaged, mtime=0)
                name = "corpus.jsonl.gz"
            (folder / name).write_bytes(damaged)
        only_searchbench_errors(lambda: read_native(folder))

    check()


def test_beir_folder_raises_only_searchbench_errors(tmp_path: Path) -> None:
    @FUZZ
    @given(st.sampled_from(["corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv"]), st.data())
    def check(target: str, data: Any) -> None:
        folder = _fresh(tmp_path / "beir")
        files = {"corpus.jsonl.gz": gzip.compress(CORPUS, mtime=0), "queries.jsonl": QUERIES,
                 "qrels/test.tsv": BEIR_QRELS}
        for name, content in files.items():
            if name == target:
                plain = gzip.decompress(content) if name.endswith(".gz") else content
                content = data.draw(mutated(plain))
            (folder / name).write_bytes(content)
        only_searchbench_errors(lambda: read_beir(folder))

    check()


def test_experiment_config_raises_only_searchbench_errors(tmp_path: Path) -> None:
    @FUZZ
    @given(mutated(TOML))
    def check(data: bytes) -> None:
        only_searchbench_errors(lambda: load_config(_file(tmp_path, data, "exp.toml")))

    check()


def _npy(x: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, x)
    return out.getvalue()


VECTORS = np.arange(12, dtype=np.float32).reshape(4, 3)
BIN = np.array([4, 3], dtype="<u4").tobytes() + VECTORS.tobytes()
FVECS = b"".join(np.array([3], "<i4").tobytes() + row.tobytes() for row in VECTORS)
def _groundtruth() -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gt.npz"
        GroundTruth(np.array([[0, 1], [2, 3]]), np.array([[0.0, 1.0], [0.5, 2.0]]), "l2", 2,
                    {"source": "fuzz"}).save(path)
        return path.read_bytes()


VECTOR_FILES = [("v.npy", _npy(VECTORS)), ("v.fbin", BIN), ("v.fvecs", FVECS),
                ("gt.ibin", np.array([2, 2], "<u4").tobytes() + bytes(32)),
                ("gt.npz", _groundtruth())]


@pytest.mark.parametrize(("name", "seed"), VECTOR_FILES, ids=[v[0] for v in VECTOR_FILES])
def test_vector_readers_raise_only_searchbench_errors(name: str, seed: bytes,
                                                      tmp_path: Path) -> None:
    @FUZZ
    @given(mutated(seed))
    def check(data: bytes) -> None:
        path = _file(tmp_path, data, name)
        if name == "gt.npz":
            only_searchbench_errors(lambda: GroundTruth.load(path))
        elif name.startswith("gt"):
            only_searchbench_errors(lambda: read_bigann_groundtruth(path, "l2"))
        else:
            only_searchbench_errors(lambda: np.asarray(read_vectors(path)).sum())

    check()


CLASSIC = {
    "cranfield": {"cran.all.1400": b".I 1\r\n.T\r\nsource\r\n.W\r\none\r\n.I 2\r\n.W\r\ntwo\r\n",
                  "cran.qry": b".I 001\r\n.W\r\nfirst ?\r\n.I 004\r\n.W\r\nsecond\r\n",
                  "cranqrel": b"1 2 2\r\n1 1 -1\r\n2 2 4\r\n"},
    "cisi": {"CISI.ALL": b".I 1\n.T\nA\n.A\nX\n.W\nabc\n.X\n1\t5\t1\n",
             "CISI.QRY": b".I 1\n.W\nq one\n.I 2\n.W\nq two\n",
             "CISI.REL": b"     1     1\t0\t0.000000\n"},
}


@pytest.mark.parametrize("collection", sorted(CLASSIC))
def test_classic_collections_raise_only_searchbench_errors(collection: str,
                                                           tmp_path: Path) -> None:
    from searchbench.collections.classic import load_cisi, load_cranfield

    load = {"cranfield": load_cranfield, "cisi": load_cisi}[collection]
    files = CLASSIC[collection]

    @FUZZ
    @given(st.sampled_from(sorted(files)), st.data())
    def check(target: str, data: Any) -> None:
        for name, content in files.items():
            (tmp_path / name).write_bytes(data.draw(mutated(content)) if name == target
                                          else content)
        only_searchbench_errors(lambda: load(tmp_path))

    check()
