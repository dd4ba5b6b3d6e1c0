"""The judging store: latest labels, history, undo, idempotent retries, hashed tokens,
schema versions and durability of acknowledged judgments under ``kill -9``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from searchbench.errors import DataFormatError
from searchbench.judging.labels import Judgment, Quote
from searchbench.judging.store import STORE_FILE, JudgmentStore


@pytest.fixture
def store(tmp_path: Path) -> JudgmentStore:
    with JudgmentStore(tmp_path) as s:
        yield s


def J(q: str, d: str, grade: int | None, who: str = "alice", **kw) -> Judgment:
    return Judgment(q, d, who, grade, **kw)


def test_store_lives_in_the_evalset_folder_in_wal_mode(tmp_path: Path) -> None:
    JudgmentStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / STORE_FILE)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_latest_label_per_annotator_query_doc_and_history_kept(store: JudgmentStore) -> None:
    store.record(J("q1", "d1", 1))
    store.record(J("q1", "d1", 3))          # alice changes her mind
    store.record(J("q1", "d1", 0, "bob"))
    store.record(J("q1", "d2", None))       # a skip
    latest = {(j.annotator, j.doc_id): j.grade for j in store.judgments()}
    assert latest == {("alice", "d1"): 3, ("bob", "d1"): 0, ("alice", "d2"): None}
    assert [j.grade for j in store.judgments(latest=False)] == [1, 3, 0, None]
    assert [j.doc_id for j in store.judgments(include_skips=False)] == ["d1", "d1"]
    assert [j.grade for j in store.judgments(annotator="bob")] == [0]


def test_undo_restores_the_previous_label_and_keeps_the_row(store: JudgmentStore) -> None:
    store.record(J("q1", "d1", 1))
    store.record(J("q1", "d1", 2))
    store.record(J("q1", "d1", 0, "bob"))
    undone = store.undo("alice")
    assert undone is not None and undone.grade == 2
    assert {j.annotator: j.grade for j in store.judgments()} == {"alice": 1, "bob": 0}
    assert store.undo("alice") is not None and store.undo("alice") is None
    assert [j.annotator for j in store.judgments()] == ["bob"]   # bob's label untouched
    rows = store.history()
    assert len(rows) == 3 and [r["undone_at"] is not None for r in rows] == [True, True, False]


def test_client_key_makes_a_retry_store_exactly_once(store: JudgmentStore) -> None:
    first = store.record(J("q1", "d1", 2), client_key="k-1")
    again = store.record(J("q1", "d1", 2), client_key="k-1")
    other = store.record(J("q1", "d1", 2, "bob"), client_key="k-1")  # keys are per annotator
    assert first == again != other
    assert store.count() == 2


def test_evidence_and_note_round_trip(store: JudgmentStore) -> None:
    doc = "The cat sat on the mat. Dogs bark."
    quotes = (Quote(4, 7, doc[4:7]), Quote(24, 34, doc[24:34]))
    store.record(J("q1", "d1", 2, evidence=quotes, note="second <b>quote</b> weak",
                   source="explore"))
    (j,) = store.judgments()
    assert j.evidence == quotes and j.evidence[1].text == "Dogs bark."
    assert j.note == "second <b>quote</b> weak" and j.source == "explore"
    assert j.created_at.endswith("Z")


@pytest.mark.parametrize("bad", [
    J("q1", "d1", 4), J("q1", "d1", -1), J("q1", "d1", True), J("", "d1", 1),
    J("q1", "d1", 1, evidence=(Quote(5, 3, "ab"),)),
    J("q1", "d1", 1, evidence=(Quote(0, 3, "ab"),)),
    J("q1", "d1", 1, kind="robot"),
])
def test_invalid_judgments_are_refused_and_nothing_is_stored(store: JudgmentStore,
                                                              bad: Judgment) -> None:
    with pytest.raises(DataFormatError):
        store.record(bad)
    assert store.count() == 0


def test_tokens_are_stored_only_as_hashes(tmp_path: Path) -> None:
    with JudgmentStore(tmp_path) as s:
        token = s.add_annotator("alice")
        assert s.annotator(token) == "alice"
        assert s.annotator(token + "x") is None and s.annotator("") is None
        new = s.add_annotator("alice")          # a new token replaces the old one
        assert s.annotator(new) == "alice" and s.annotator(token) is None
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert token.encode() not in raw and new.encode() not in raw


def test_human_and_llm_labels_are_never_mixed_under_one_name(store: JudgmentStore) -> None:
    store.add_annotator("llm:m@v1", kind="llm")
    store.record(J("q1", "d1", 2, "llm:m@v1", kind="llm"))
    with pytest.raises(DataFormatError, match="registered as 'llm'"):
        store.record(J("q1", "d1", 2, "llm:m@v1", kind="human"))
    with pytest.raises(DataFormatError):
        store.add_annotator("llm:m@v1", kind="human")
    assert store.judgments(kind="llm")[0].kind == "llm"


def test_a_store_from_a_newer_version_is_one_clear_error(tmp_path: Path) -> None:
    JudgmentStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / STORE_FILE)
    db.execute("UPDATE schema_version SET version = 99")
    db.commit()
    db.close()
    with pytest.raises(DataFormatError, match=r"schema version 99.*upgrade searchbench"):
        JudgmentStore(tmp_path)


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / STORE_FILE)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(DataFormatError, match="without a schema_version"):
        JudgmentStore(tmp_path)
    (tmp_path / "x.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(DataFormatError, match="not a judging store"):
        JudgmentStore(tmp_path / "x.sqlite")


_WRITER = textwrap.dedent("""
    import sys
    from searchbench.judging.labels import Judgment
    from searchbench.judging.store import JudgmentStore
    store = JudgmentStore(sys.argv[1])
    for i in range(100000):
        key = f"k{i}"
        store.record(Judgment(f"q{i % 7}", f"d{i}", "alice", i % 4), client_key=key)
        print(key, flush=True)
""")


def test_every_acknowledged_judgment_survives_kill_9(tmp_path: Path) -> None:
    """A writer process prints a key after each record() returns; we kill -9 it mid-stream:
    every printed key is in the store exactly once."""
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    assert proc.stdout is not None
    acked = []
    try:
        for line in proc.stdout:
            acked.append(line.strip())
            if len(acked) == 300:
                os.kill(proc.pid, signal.SIGKILL)
                break
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    acked += [line.strip() for line in proc.stdout]  # printed before the kill landed
    proc.stdout.close()
    with JudgmentStore(tmp_path) as s:
        keys = [r["client_key"] for r in s.history()]
    assert len(keys) == len(set(keys))
    assert set(acked) <= set(keys)
    assert len(acked) >= 300


def test_sessions_are_hashed_and_end_when_the_token_changes(tmp_path: Path) -> None:
    with JudgmentStore(tmp_path) as s:
        s.add_annotator("alice")
        sid, csrf = s.open_session("alice")
        assert s.session(sid) == ("alice", csrf) and s.session(sid + "x") is None
    with JudgmentStore(tmp_path) as s:                  # survives a restart
        assert s.session(sid) == ("alice", csrf)
        s.add_annotator("alice")
        assert s.session(sid) is None
        sid2, _ = s.open_session("alice")
        s.close_session(sid2)
        assert s.session(sid2) is None
    assert sid.encode() not in (tmp_path / STORE_FILE).read_bytes()
