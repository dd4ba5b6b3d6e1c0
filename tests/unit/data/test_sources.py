"""Every reader reads pipes, FIFOs, ``/dev/fd/N``, ``-`` and ``/dev/stdin`` exactly like a
regular file, plain or gzip-compressed: the source is opened once and the gzip magic is
sniffed from that same stream (issue 12: ``<(cat r.trec)`` used to lose its first buffer,
a FIFO used to hang).

Expected values are written out from the files' contents (first principles), and every
other way of reading must give the same.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import searchbench as sb
from searchbench.data.jsonl import read_corpus_jsonl, read_queries_jsonl
from searchbench.data.smart import read_smart_docs
from searchbench.data.trec_text import read_trec_docs, read_trec_topics

N_DOCS = 5000  # about 100 KB of run: more than any first buffer a sniff could swallow
RUN = "".join(f"q1 Q0 d{i} {i + 1} {N_DOCS - i} tag\n" for i in range(N_DOCS)).encode()
QRELS = f"q1 0 d0 1\nq1 0 d{N_DOCS - 1} 1\nq1 0 x 0\n".encode()
# relevant at ranks 1 and N_DOCS: AP = (1/1 + 2/N_DOCS) / 2
AP = (1 + 2 / N_DOCS) / 2
CORPUS = "".join(json.dumps({"_id": f"d{i}", "text": f"text {i} é"}) + "\n"
                 for i in range(3000)).encode()
QUERIES = b'{"id": "q1", "text": "first"}\n{"id": "q2", "text": "second"}\n'
SMART = b"".join(b".I %d\n.T\ntitle %d\n.W\ntext %d\n" % (i, i, i) for i in range(1, 2001))
TREC_DOCS = b"".join(b"<DOC>\n<DOCNO> d%d </DOCNO>\n<TEXT>\nbody %d\n</TEXT>\n</DOC>\n" % (i, i)
                     for i in range(2000))
TOPICS = b"<top>\n<num> Number: 7\n<title> a query\n</top>\n"
JSON_RUN = json.dumps({"q1": {f"d{i}": float(i) for i in range(3000)}}).encode()


def _run_summary(run: sb.Run) -> Any:
    ranking = run.ranking("q1")
    return len(ranking), ranking[0], ranking[-1], run.metadata.get("tag")


READERS: list[tuple[str, bytes, Callable[[Any], Any], Any]] = [
    ("run", RUN, lambda s: _run_summary(sb.Run.from_file(s)),
     (N_DOCS, ("d0", float(N_DOCS)), (f"d{N_DOCS - 1}", 1.0), "tag")),
    ("qrels", QRELS, lambda s: sb.Qrels.from_file(s).to_dict(),
     {"q1": {"d0": 1, f"d{N_DOCS - 1}": 1, "x": 0}}),
    ("corpus", CORPUS, lambda s: (lambda c: (len(c), c["d2999"].text))(read_corpus_jsonl(s)),
     (3000, "text 2999 é")),
    ("queries", QUERIES, lambda s: [(q.id, q.text) for q in read_queries_jsonl(s)],
     [("q1", "first"), ("q2", "second")]),
    ("smart", SMART, lambda s: (lambda c: (len(c), c["2000"].title, c["2000"].text))(
        read_smart_docs(s)), (2000, "title 2000", "text 2000")),
    ("trec-docs", TREC_DOCS, lambda s: (lambda c: (len(c), c["d1999"].text))(read_trec_docs(s)),
     (2000, "body 1999")),
    ("trec-topics", TOPICS, lambda s: [(q.id, q.text) for q in read_trec_topics(s)],
     [("7", "a query")]),
    ("json-run", JSON_RUN, lambda s: (lambda r: (len(r), r.ranking("q1")[0]))(
        sb.Run.from_json(s)), (3000, ("d2999", 2999.0))),
]
IDS = [r[0] for r in READERS]


def _writer(target: Callable[[], Any], data: bytes) -> threading.Thread:
    def write() -> None:
        with target() as fh:
            fh.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@contextmanager
def fifo(tmp_path: Path, data: bytes) -> Iterator[Path]:
    """A named FIFO fed by a writer thread. A watchdog opens it once more after 30 s, so a
    reader that opens the path a second time gets EOF (a wrong result) instead of hanging."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    thread = _writer(lambda: open(path, "wb"), data)  # noqa: SIM115 - closed by _writer
    watchdog = threading.Timer(30, lambda: open(path, "wb").close())
    watchdog.daemon = True
    watchdog.start()
    try:
        yield path
    finally:
        watchdog.cancel()
        thread.join(5)


@contextmanager
def pipe(data: bytes) -> Iterator[int]:
    """An anonymous pipe's read end (``/dev/fd/N``, as ``<(...)`` gives), fed by a thread."""
    r, w = os.pipe()
    thread = _writer(lambda: os.fdopen(w, "wb"), data)
    try:
        yield r
    finally:
        thread.join(5)
        os.close(r)


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS, ids=IDS)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_regular_files(name, data, read, want, compress, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    assert read(path) == want
    assert read(str(path)) == want
    with open(path, "rb") as fh:
        assert read(fh) == want
        assert read(fh) == want  # a seekable file object is rewound: it reads again


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS, ids=IDS)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_named_fifos(name, data, read, want, compress, tmp_path: Path) -> None:
    with fifo(tmp_path, gzip.compress(data) if compress else data) as path:
        assert read(path) == want


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS, ids=IDS)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_dev_fd_paths_and_pipe_objects(name, data, read, want, compress) -> None:
    payload = gzip.compress(data) if compress else data
    with pipe(payload) as fd:
        assert read(f"/dev/fd/{fd}") == want
    with pipe(payload) as fd, os.fdopen(os.dup(fd), "rb") as stream:
        assert read(stream) == want


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS, ids=IDS)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_dash_reads_standard_input(name, data, read, want, compress,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with pipe(gzip.compress(data) if compress else data) as fd:
        stdin = io.TextIOWrapper(os.fdopen(os.dup(fd), "rb"))
        monkeypatch.setattr(sys, "stdin", stdin)
        assert read("-") == want
        stdin.close()


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS[:2], ids=IDS[:2])
def test_text_file_objects(name, data, read, want) -> None:
    assert read(io.StringIO(data.decode())) == want
    assert read(io.BytesIO(data)) == want


# -- through the CLI ---------------------------------------------------------------------
def cli(args: list[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          timeout=120, **kw)


def ap_of(out: subprocess.CompletedProcess) -> float:
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)["measures"]["AP"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "q.txt", tmp_path / "r.trec"
    qrels.write_bytes(QRELS)
    run.write_bytes(RUN)
    return qrels, run


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_cli_reads_runs_and_qrels_from_standard_input(files, compress: bool) -> None:
    qrels, run = files
    run_bytes = gzip.compress(RUN) if compress else RUN
    assert ap_of(cli(["eval", str(qrels), str(run), "-m", "AP", "-f", "json"])) == \
        pytest.approx(AP, abs=1e-12)
    for name in ("-", "/dev/stdin"):
        out = cli(["eval", str(qrels), name, "-m", "AP", "-f", "json"], input=run_bytes)
        assert ap_of(out) == pytest.approx(AP, abs=1e-12), name
    out = cli(["eval", "-", str(run), "-m", "AP", "-f", "json"],
              input=gzip.compress(QRELS) if compress else QRELS)
    assert ap_of(out) == pytest.approx(AP, abs=1e-12)


def test_cli_reads_process_substitution_and_fifos(files, tmp_path: Path) -> None:
    qrels, run = files
    command = (f"{sys.executable} -m searchbench eval {qrels} <(cat {run}) <(gzip -c {run}) "
               "-m AP -f json")
    out = subprocess.run(["bash", "-c", command], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    lines = out.stdout.decode().splitlines()
    assert [json.loads(line)["measures"]["AP"] for line in lines] == \
        [pytest.approx(AP, abs=1e-12)] * 2
    with fifo(tmp_path, RUN) as path:
        assert ap_of(cli(["eval", str(qrels), str(path), "-m", "AP", "-f", "json"])) == \
            pytest.approx(AP, abs=1e-12)


def test_cli_reports_a_damaged_stream_in_one_line(files) -> None:
    qrels, _ = files
    damaged = gzip.compress(RUN)[:300]
    out = cli(["eval", str(qrels), "-", "-m", "AP"], input=damaged)
    err = out.stderr.decode().strip().splitlines()
    assert out.returncode == 1 and len(err) == 1, err
    assert err[0].startswith("error: <stdin>: the compressed file is truncated or corrupt")


class _Trickle(io.RawIOBase):
    """A pipe that hands out one byte per read (the gzip magic arrives in two reads)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(1)
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize(("name", "data", "read", "want"), READERS[:4], ids=IDS[:4])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_stream_giving_one_byte_per_read(name, data, read, want, compress) -> None:
    assert read(_Trickle(gzip.compress(data) if compress else data)) == want
