"""``searchbench judge serve`` / ``explore`` refuse bad input with one ``error:`` line and
leave the judging store untouched."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from searchbench.judging.labels import Judgment
from searchbench.judging.store import STORE_FILE, JudgmentStore


@pytest.fixture
def evalset(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "a cat"}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": "cat"}) + "\n")
    (tmp_path / "pool.jsonl").write_text(json.dumps(
        {"query_id": "q1", "doc_id": "d1", "n_runs": 1, "best_rank": 1}) + "\n")
    return folder


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, timeout=60)


def one_error(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_a_store_from_a_newer_version_is_refused_and_kept(evalset: Path) -> None:
    with JudgmentStore(evalset) as store:
        store.record(Judgment("q1", "d1", "alice", 2))
    db = sqlite3.connect(evalset / STORE_FILE)
    db.execute("UPDATE schema_version SET version = 7")
    db.commit()
    db.close()
    before = (evalset / STORE_FILE).read_bytes()
    one_error(run("judge", "serve", str(evalset), "--pool", str(evalset.parent / "pool.jsonl")),
              "schema version 7", "upgrade searchbench")
    assert (evalset / STORE_FILE).read_bytes() == before


def test_a_pool_naming_unknown_documents_is_refused(evalset: Path) -> None:
    pool = evalset.parent / "bad.jsonl"
    pool.write_text(json.dumps({"query_id": "q1", "doc_id": "d9", "n_runs": 2,
                                "best_rank": 1}) + "\n")
    one_error(run("judge", "serve", str(evalset), "--pool", str(pool)),
              f"{pool}:1", "'d9'", "not in the evaluation set's corpus")
    assert not (evalset / STORE_FILE).exists()


def test_a_folder_without_a_corpus_is_refused(evalset: Path) -> None:
    one_error(run("judge", "serve", str(evalset.parent), "--pool",
                  str(evalset.parent / "pool.jsonl")), "no corpus.jsonl")


def test_tls_files_come_in_pairs(evalset: Path) -> None:
    one_error(run("judge", "serve", str(evalset), "--pool", str(evalset.parent / "pool.jsonl"),
                  "--certfile", str(evalset / "corpus.jsonl")), "--certfile and --keyfile")
