"""Results store: schema version, refusal of newer/foreign stores, atomic cells, concurrency."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from searchbench.experiment import SCHEMA_VERSION, CellRecord, ResultsStore, StoreError


def _record(key: str, value: float = 0.5) -> CellRecord:
    return CellRecord(cell_key=key, system=f"sys-{key}", evalset="set", evalset_hash="h",
                      level="doc", chunker="none", retriever="bm25", config={"k": 10},
                      run_path="/x.trec", run_hash="sha256:0", timings={"search_s": 0.1},
                      extras={}, provenance={}, scores={"RR": {"q1": value, "q2": 1.0}})


def test_new_store_has_schema_version_and_round_trips(tmp_path):
    with ResultsStore(tmp_path / "s.sqlite") as db:
        assert db.schema_version == SCHEMA_VERSION
        exp = db.upsert_experiment("e", "/c.toml", "text", {"a": 1}, {"p": 2})
        db.save_cell(exp, _record("k1", 0.25), {"q1": "first", "q2": "second"})
    with ResultsStore(tmp_path / "s.sqlite") as db:
        [cell] = db.cells(exp)
        assert cell.scores == {"RR": {"q1": 0.25, "q2": 1.0}}
        assert cell.config == {"k": 10} and cell.timings == {"search_s": 0.1}
        assert db.query_texts("h") == {"q1": "first", "q2": "second"}
        assert db.finished_keys(exp) == {"k1"}
        assert db.experiment(exp)["provenance"] == {"p": 2}
        journal = db._db.execute("PRAGMA journal_mode").fetchone()[0]
        assert journal == "wal"


def test_newer_schema_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "s.sqlite"
    ResultsStore(path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION + 1,))
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
        ResultsStore(path)
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert "cells" in tables and len(before) > 0


def test_foreign_sqlite_file_is_refused_without_change(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a searchbench results store"):
        ResultsStore(path, create=False)
    con = sqlite3.connect(path)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["t"]
    con.close()


def test_foreign_sqlite_file_is_never_turned_into_a_store(tmp_path):
    """``experiment run --store their.db`` must not add our tables to someone's database."""
    path = tmp_path / "theirs.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a searchbench results store"):
        ResultsStore(path)  # create=True, as 'experiment run' opens it
    con = sqlite3.connect(path)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["customers"]
    con.close()


def test_not_a_database_is_a_store_error(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the results store"):
        ResultsStore(path)


def test_failed_write_changes_nothing(tmp_path, monkeypatch):
    """A write failing half-way (disk full, permission denied) leaves earlier cells intact."""
    db = ResultsStore(tmp_path / "s.sqlite")
    exp = db.upsert_experiment("e", None, "", {}, {})
    db.save_cell(exp, _record("k1"), {"q1": "a", "q2": "b"})
    bad = _record("k2")
    bad.scores = {"RR": {"q1": 0.5, "q2": float("nan")}}  # NaN binds as NULL: NOT NULL fails
    with pytest.raises(StoreError, match="nothing was changed"):
        db.save_cell(exp, bad, {"q9": "new"})
    assert db.finished_keys(exp) == {"k1"}
    assert db.query_texts("h") == {"q1": "a", "q2": "b"}
    with pytest.raises(StoreError), db.transaction() as con:  # an OS error from below
        con.execute("DELETE FROM cells")
        raise OSError(28, "No space left on device")
    assert db.finished_keys(exp) == {"k1"}
    db.close()


def test_two_writers_at_once_do_not_corrupt(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as db:
        exp = db.upsert_experiment("e", None, "", {}, {})
    errors: list[BaseException] = []

    def writer(prefix: str) -> None:
        try:
            with ResultsStore(path) as db:
                for i in range(40):
                    db.save_cell(exp, _record(f"{prefix}{i}"), {"q1": "a", "q2": "b"})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with ResultsStore(path) as db:
        assert len(db.finished_keys(exp)) == 80
        assert db._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert all(len(c.scores["RR"]) == 2 for c in db.cells(exp))
