"""A damaged judging store: a real store of 3,000 judgments with bytes flipped in its data
pages is refused at start (one ``error:`` line saying how to recover, the file untouched),
by ``judge serve``, ``explore`` and ``judge export`` alike; a write the store could not
commit is never acknowledged (5xx JSON, not 200); malformed request parameters are a 400,
not a 500."""

from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from searchbench.judging.labels import Judgment
from searchbench.judging.store import STORE_FILE, DamagedStoreError, JudgmentStore

from ._server import make_evalset, start

PAGE_TYPES = {0x0D: "table leaf", 0x0A: "index leaf", 0x05: "table interior"}


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> tuple[Path, Path]:
    """An evaluation set whose store holds 3,000 judgments (written through the store, one
    commit each, as the app writes them), and its pool."""
    root = tmp_path_factory.mktemp("damaged-store")
    folder, pool = make_evalset(root)
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n")  # as evalset init
    with JudgmentStore(folder) as store:
        for i in range(3000):
            store.record(Judgment(f"q{i % 2 + 1}", f"doc-{i}", f"ann{i % 20}", i % 4,
                                  note=f"note {i} " * (i % 7)))
        assert store.count() == 3000
    return folder, pool


def _damaged_copy(intact: tuple[Path, Path], tmp_path: Path, seed: int,
                  kind: int) -> tuple[Path, Path, bytes]:
    """A copy of the set with 16 bytes flipped in pages of one b-tree page type."""
    folder, pool = intact
    copy = tmp_path / "set"
    shutil.copytree(folder, copy)
    path = copy / STORE_FILE
    data = bytearray(path.read_bytes())
    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    pages = [p for p in range(1, len(data) // size) if data[p * size] == kind]
    assert pages, PAGE_TYPES[kind]
    rnd = random.Random(seed)
    for _ in range(16):
        page = rnd.choice(pages)
        data[page * size + rnd.randrange(8, size)] ^= 0xFF
    path.write_bytes(bytes(data))
    return copy, pool, bytes(data)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(("seed", "kind"), [(1, 0x0D), (2, 0x0D), (3, 0x0A), (4, 0x05)])
def test_damaged_judging_store_is_refused_at_start(intact, tmp_path: Path, seed: int,
                                                   kind: int) -> None:
    folder, pool, damaged = _damaged_copy(intact, tmp_path, seed, kind)
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d1 1 1.0 A\n")
    for args in (["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice",
                  "--new-tokens"],
                 ["explore", str(folder), "--runs", str(run), str(run)],
                 ["judge", "export", str(folder)],
                 ["judge", "agreement", str(folder)],
                 ["pool", str(folder), "--runs", str(run), "-o", str(tmp_path / "p.jsonl")],
                 ["judge", "llm", str(folder), "--pool", str(pool), "--endpoint",
                  "http://127.0.0.1:9/v1", "--model", "m", "--cache",
                  str(tmp_path / "llm.sqlite")]):
        done = _run(*args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
        assert "damaged judging store" in lines[0] and "To recover" in lines[0]
        assert "backup" in lines[0] and "history" in lines[0] and ".recover" in lines[0]
        assert "Traceback" not in done.stderr and "login#token" not in done.stdout
        assert (folder / STORE_FILE).read_bytes() == damaged  # nothing written into it
    assert not (folder / "qrels.provenance.jsonl").exists()
    assert not (tmp_path / "p.jsonl").exists()


def test_damaged_judging_store_intact_one_serves(intact, tmp_path: Path) -> None:
    # the same store, undamaged, serves: the check refuses damage, not size
    folder, pool = intact
    copy = tmp_path / "set"
    shutil.copytree(folder, copy)
    server = start(["judge", "serve", str(copy), "--pool", str(pool), "--annotator", "alice"])
    try:
        with httpx.Client(base_url=server.base) as c:
            auth = {"Authorization": f"Bearer {server.tokens['alice']}"}
            r = c.post("/api/judgment", headers=auth,
                       json={"query_id": "q1", "doc_id": "d1", "grade": 2})
            assert r.status_code == 200, r.text
    finally:
        server.stop()
    with JudgmentStore(copy) as store:
        assert store.count() == 3001


def test_damaged_judging_store_write_that_fails_is_not_acknowledged(tmp_path: Path) -> None:
    # a commit SQLite refuses (the file may not grow: "database or disk is full") is a 503
    # with an error, never a 200; the label is not there afterwards
    from starlette.testclient import TestClient

    from searchbench.judging.web.app import create_app
    from searchbench.judging.web.context import JudgingContext, load_texts

    folder, _ = make_evalset(tmp_path)
    corpus, queries, qrels = load_texts(folder)
    store = JudgmentStore(folder)
    token = store.add_annotator("alice")
    ctx = JudgingContext(folder, corpus, queries, store, [("q1", "d1"), ("q1", "d2")], qrels,
                         annotators=frozenset({"alice"}))
    auth = {"Authorization": f"Bearer {token}"}
    big = {"query_id": "q1", "doc_id": "d1", "grade": 1, "note": "x" * 9000}
    with TestClient(create_app(ctx), base_url="http://127.0.0.1") as client:
        assert client.post("/api/judgment", json=big, headers=auth).status_code == 200
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages}")  # the disk is full now
        failed = [client.post("/api/judgment", json={**big, "grade": g}, headers=auth)
                  for g in (2, 3, 0)]
        assert all(r.status_code == 503 for r in failed), [r.text for r in failed]
        assert all(r.json()["error"].startswith("not stored: cannot write") for r in failed)
    store.close()
    with JudgmentStore(folder) as again:
        assert [j.grade for j in again.judgments()] == [1]


def test_damaged_judging_store_found_while_serving_refuses_every_later_write(
        tmp_path: Path) -> None:
    folder, _ = make_evalset(tmp_path)
    with JudgmentStore(folder) as store:
        store._mark_damaged("database disk image is malformed")
        with pytest.raises(DamagedStoreError, match="To recover"):
            store.record(Judgment("q1", "d1", "alice", 1))
        assert store.count() == 0  # reading still says what it can


@pytest.mark.parametrize("query", [
    "i=" + "9" * 5000, "i=" + "1" * 13, "i=-1", "i=abc", "i=1e3", "i=%00", "i=\u0661",
    "i=1&i=2", "i=", "", "i=%ff%fe", "i=0x1", "i=+1", "i= 1",
])
def test_damaged_judging_store_malformed_parameters_are_400(served, query: str) -> None:
    server, auth = served
    with httpx.Client(base_url=server.base) as c:
        r = c.get(f"/judge?{query}", headers=auth)
    assert r.status_code == 400, (query, r.status_code)
    assert "Bad request" in r.text and "<!doctype html>" in r.text.lower()
    assert "Traceback" not in r.text


def test_damaged_judging_store_out_of_range_is_404_and_no_500_logged(served) -> None:
    server, auth = served
    with httpx.Client(base_url=server.base) as c:
        r = c.get("/judge?i=999999999999", headers=auth)
        assert r.status_code == 404 and "No item 999999999999" in r.text
        assert c.get("/judge?i=0", headers=auth).status_code == 200
    assert not any("Traceback" in line for line in server.output)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("params")
    folder, pool = make_evalset(root)
    server = start(["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice"])
    yield server, {"Authorization": f"Bearer {server.tokens['alice']}"}
    server.stop()


def test_damaged_judging_store_large_stores_get_the_quick_check(intact, tmp_path: Path,
                                                               monkeypatch) -> None:
    # over FULL_CHECK_BYTES the faster quick_check runs: damaged pages are still found
    from searchbench.judging import store as store_module

    monkeypatch.setattr(store_module, "FULL_CHECK_BYTES", 0)
    folder, _, damaged = _damaged_copy(intact, tmp_path, 5, 0x0D)
    with pytest.raises(DamagedStoreError, match="To recover"):
        JudgmentStore(folder, check=True)
    assert (folder / STORE_FILE).read_bytes() == damaged
    with JudgmentStore(intact[0], check=True) as store:  # an intact one opens
        assert store.count() == 3000


@pytest.mark.parametrize("query", ["", "q=", "q=q1&q=q2", "q=" + "q" * 5000])
def test_damaged_judging_store_malformed_explore_parameters_are_400(tmp_path, query) -> None:
    folder, _ = make_evalset(tmp_path)
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d1 1 1.0 A\n")
    server = start(["explore", str(folder), "--runs", str(run), str(run), "--annotator", "eve"])
    try:
        with httpx.Client(base_url=server.base) as c:
            auth = {"Authorization": f"Bearer {server.tokens['eve']}"}
            r = c.get(f"/explore/query?{query}", headers=auth)
            assert r.status_code == 400 and "Bad request" in r.text, (query, r.status_code)
            assert c.get("/explore/query?q=nope", headers=auth).status_code == 404
            assert c.get("/explore/query?q=q1", headers=auth).status_code == 200
    finally:
        server.stop()
    assert not any("Traceback" in line for line in server.output)
