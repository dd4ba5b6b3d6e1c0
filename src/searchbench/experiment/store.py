"""The results store: one SQLite file holding every experiment's cells and scores.

A cell is written in one transaction (its row, its per-query scores and the query texts),
after its run file has been written atomically; a cell that is not in the store was not
finished, so an interrupted run never leaves a partial result that reads as complete.
Each cell records its run file's SHA-256; :meth:`ResultsStore.run_file_problems` names the
run files that are missing or changed since. WAL journaling and a busy timeout let two runs
write to the same store at once. Every failure (disk full at ``COMMIT``, a damaged file) is
one :class:`StoreError` saying what to do, and a failed write changes nothing. A store
written by a newer searchbench (higher ``schema_version``) is refused, never modified.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util.secrets import redact
from ..errors import SearchbenchError
from .naming import run_file_problem

__all__ = ["SCHEMA_VERSION", "CellRecord", "ResultsStore", "StoreError"]

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, config_path TEXT, config_text TEXT,
    config_json TEXT NOT NULL, provenance TEXT NOT NULL, created REAL NOT NULL,
    updated REAL NOT NULL, UNIQUE (name, config_path));
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    cell_key TEXT NOT NULL, system TEXT NOT NULL, evalset TEXT NOT NULL,
    evalset_hash TEXT NOT NULL, level TEXT NOT NULL, chunker TEXT NOT NULL,
    retriever TEXT NOT NULL, config_json TEXT NOT NULL, run_path TEXT NOT NULL,
    run_hash TEXT NOT NULL, timings TEXT NOT NULL, extras TEXT NOT NULL,
    provenance TEXT NOT NULL, finished REAL NOT NULL, UNIQUE (experiment_id, cell_key));
CREATE TABLE IF NOT EXISTS scores (
    cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
    measure TEXT NOT NULL, query_id TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (cell_id, measure, query_id));
CREATE TABLE IF NOT EXISTS queries (
    evalset_hash TEXT NOT NULL, query_id TEXT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (evalset_hash, query_id));
"""


class StoreError(SearchbenchError):
    """The results store cannot be opened, is too new, or a write failed (nothing changed)."""


@dataclass
class CellRecord:
    """A finished cell as stored: config, run file, timings, extras and per-query scores."""

    cell_key: str
    system: str
    evalset: str
    evalset_hash: str
    level: str
    chunker: str
    retriever: str
    config: dict[str, Any]
    run_path: str
    run_hash: str
    timings: dict[str, float]
    extras: dict[str, Any]
    provenance: dict[str, Any]
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # measure -> qid -> v
    finished: float = 0.0

    def score_array(self, measure: str, query_ids: list[str]) -> np.ndarray:
        """Per-query values of ``measure`` aligned with ``query_ids``."""
        got = self.scores[measure]
        return np.asarray([got[q] for q in query_ids], dtype=np.float64)


class ResultsStore:
    """A SQLite results store (created on first use)."""

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise StoreError(f"{self.path}: no such results store")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not create or self._has_tables():  # never add tables to a foreign database
                self._require_store()
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._init_schema()
        except sqlite3.DatabaseError as exc:
            self._db_close_quietly()
            if getattr(exc, "sqlite_errorname", "") in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
                raise StoreError(f"{self.path}: cannot open the results store: {exc}; "
                                 "expected a searchbench SQLite store (or a new file "
                                 "path)") from None
            raise StoreError(f"{self.path}: cannot open the results store: "
                             f"{_why(exc, self.path)}") from None
        except OSError as exc:
            self._db_close_quietly()
            raise StoreError(f"{self.path}: cannot create the results store: "
                             f"{_why(exc, self.path)}") from None

    def _db_close_quietly(self) -> None:
        db = getattr(self, "_db", None)
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error as exc:  # a checkpoint at close on a full disk
            raise StoreError(f"{self.path}: closing the results store failed: "
                             f"{_why(exc, self.path)}") from None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -------------------------------------------------------------------------------
    def _has_tables(self) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' "
                                "LIMIT 1").fetchone() is not None

    def _require_store(self) -> None:
        """Refuse a SQLite file that is not a searchbench store (without changing it)."""
        found = self._db.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                                 "name IN ('meta', 'cells')").fetchall()
        if len(found) < 2:
            self._db.close()
            raise StoreError(f"{self.path}: not a searchbench results store (no meta/cells "
                             "tables); pass the .sqlite file 'experiment run' wrote")

    def _init_schema(self) -> None:
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, "
                       "value TEXT NOT NULL)")
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: the results store has schema version {row[0]}, newer than "
                    f"this searchbench understands ({SCHEMA_VERSION}); upgrade searchbench "
                    "or pass --store with another file")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))

    @property
    def schema_version(self) -> int:
        with self._reading() as db:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any error rolls everything back.

        A failure (disk full, I/O error, a constraint) raises one :class:`StoreError` saying
        nothing was changed. SQLite may already have rolled the transaction back by itself
        (a full disk at ``COMMIT``); the rollback here is then skipped, never an error.
        """
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot write to the results store: "
                             f"{_why(exc, self.path)}") from None
        try:
            yield db
            db.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, sqlite3.Error | OSError) and not isinstance(exc, StoreError):
                raise StoreError(f"{self.path}: writing to the results store failed, nothing "
                                 f"was changed: {_why(exc, self.path)}") from exc
            raise

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not done so already."""
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """Reads: a damaged or vanished store is a :class:`StoreError`, not a traceback."""
        try:
            yield self._db
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot read the results store: "
                             f"{_why(exc, self.path)}; "
                             "expected a searchbench SQLite store") from None

    # -- experiments --------------------------------------------------------------------------
    def upsert_experiment(self, name: str, config_path: str | None, config_text: str,
                          config: dict[str, Any], provenance: dict[str, Any]) -> int:
        """The id of experiment (name, config path), created or updated."""
        now = time.time()
        with self.transaction() as db:
            row = db.execute("SELECT id FROM experiments WHERE name = ? AND config_path IS ?",
                             (name, config_path)).fetchone()
            args = (redact(config_text), _dump(config), _dump(provenance), now)
            if row:
                db.execute("UPDATE experiments SET config_text=?, config_json=?, provenance=?,"
                           " updated=? WHERE id=?", (*args, row[0]))
                return int(row[0])
            cur = db.execute("INSERT INTO experiments (name, config_path, config_text, "
                             "config_json, provenance, updated, created) VALUES "
                             "(?, ?, ?, ?, ?, ?, ?)", (name, config_path, *args, now))
            if cur.lastrowid is None:  # sqlite3 sets it after every INSERT that succeeds
                raise StoreError(f"{self.path}: the new experiment {name!r} got no row id")
            return cur.lastrowid

    def experiments(self) -> list[dict[str, Any]]:
        """Every experiment with its number of finished cells, newest first."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT e.id, e.name, e.config_path, e.created, e.updated, COUNT(c.id) "
                "FROM experiments e LEFT JOIN cells c ON c.experiment_id = e.id "
                "GROUP BY e.id ORDER BY e.updated DESC").fetchall()
        keys = ("id", "name", "config_path", "created", "updated", "cells")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def experiment(self, experiment_id: int) -> dict[str, Any]:
        with self._reading() as db:
            row = db.execute("SELECT id, name, config_path, config_json, provenance, "
                             "created, updated FROM experiments WHERE id = ?",
                             (experiment_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no experiment with id {experiment_id}")
        return {"id": row[0], "name": row[1], "config_path": row[2],
                "config": json.loads(row[3]), "provenance": json.loads(row[4]),
                "created": row[5], "updated": row[6]}

    def find_experiment(self, name: str, config_path: str | None) -> int | None:
        with self._reading() as db:
            row = db.execute("SELECT id FROM experiments WHERE name = ? AND config_path IS ?",
                             (name, config_path)).fetchone()
        return None if row is None else int(row[0])

    # -- cells --------------------------------------------------------------------------------
    def finished_keys(self, experiment_id: int) -> set[str]:
        with self._reading() as db:
            rows = db.execute("SELECT cell_key FROM cells WHERE experiment_id = ?",
                              (experiment_id,)).fetchall()
        return {r[0] for r in rows}

    def stored_measures(self, experiment_id: int) -> dict[str, set[str]]:
        """``{cell_key: measures with stored per-query scores}`` of finished cells."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT DISTINCT c.cell_key, s.measure FROM cells c JOIN scores s "
                "ON s.cell_id = c.id WHERE c.experiment_id = ?", (experiment_id,)).fetchall()
        out: dict[str, set[str]] = {}
        for key, measure in rows:
            out.setdefault(key, set()).add(measure)
        return out

    def run_file_problems(self, experiment_id: int,
                          keys: set[str] | None = None) -> dict[str, str]:
        """``{cell_key: what is wrong}`` for finished cells whose run file is missing or no
        longer has the SHA-256 recorded when the cell was stored (empty: all intact; a cell
        stored without a run file, by the Python API, is not checked)."""
        with self._reading() as db:
            rows = db.execute("SELECT cell_key, run_path, run_hash FROM cells "
                              "WHERE experiment_id = ? ORDER BY id", (experiment_id,)).fetchall()
        out = {}
        for key, path, digest in rows:
            if path and (keys is None or key in keys):
                why = run_file_problem(path, digest)
                if why is not None:
                    out[key] = why
        return out

    def cell_index(self) -> list[tuple[int, str, dict[str, Any], str]]:
        """``(experiment_id, cell_key, config, evalset_hash)`` of every stored cell, newest
        first (to find a stored cell that did the same work, see :func:`.naming.work_key`)."""
        with self._reading() as db:
            rows = db.execute("SELECT experiment_id, cell_key, config_json, evalset_hash "
                              "FROM cells ORDER BY id DESC").fetchall()
        return [(e, k, json.loads(c), h) for e, k, c, h in rows]

    def save_cell(self, experiment_id: int, rec: CellRecord,
                  query_texts: dict[str, str]) -> None:
        """Store a finished cell and its scores in one transaction (replacing an older
        version of the same cell). Call it only once the run file is complete: a cell in
        the store is a finished cell."""
        with self.transaction() as db:
            db.execute("DELETE FROM cells WHERE experiment_id = ? AND cell_key = ?",
                       (experiment_id, rec.cell_key))
            cur = db.execute(
                "INSERT INTO cells (experiment_id, cell_key, system, evalset, evalset_hash, "
                "level, chunker, retriever, config_json, run_path, run_hash, timings, extras, "
                "provenance, finished) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (experiment_id, rec.cell_key, rec.system, rec.evalset, rec.evalset_hash,
                 rec.level, rec.chunker, rec.retriever, _dump(rec.config), rec.run_path,
                 rec.run_hash, _dump(rec.timings), _dump(rec.extras), _dump(rec.provenance),
                 time.time()))
            cell_id = cur.lastrowid
            db.executemany("INSERT INTO scores VALUES (?, ?, ?, ?)",
                           [(cell_id, m, q, float(v)) for m, per in rec.scores.items()
                            for q, v in per.items()])
            db.executemany("INSERT OR IGNORE INTO queries VALUES (?, ?, ?)",
                           [(rec.evalset_hash, q, t) for q, t in query_texts.items()])

    def cells(self, experiment_id: int, keys: set[str] | None = None) -> list[CellRecord]:
        """Finished cells of an experiment (optionally only ``keys``), in finishing order."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT id, cell_key, system, evalset, evalset_hash, level, chunker, retriever, "
                "config_json, run_path, run_hash, timings, extras, provenance, finished "
                "FROM cells WHERE experiment_id = ? ORDER BY id", (experiment_id,)).fetchall()
            out = []
            for r in rows:
                if keys is not None and r[1] not in keys:
                    continue
                rec = CellRecord(r[1], r[2], r[3], r[4], r[5], r[6], r[7], json.loads(r[8]),
                                 r[9], r[10], json.loads(r[11]), json.loads(r[12]),
                                 json.loads(r[13]), finished=r[14])
                rec.scores = self._scores(db, r[0])
                out.append(rec)
        return out

    @staticmethod
    def _scores(db: sqlite3.Connection, cell_id: int) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for m, q, v in db.execute("SELECT measure, query_id, value FROM scores "
                                  "WHERE cell_id = ?", (cell_id,)):
            out.setdefault(m, {})[q] = v
        return out

    def query_texts(self, evalset_hash: str) -> dict[str, str]:
        with self._reading() as db:
            rows = db.execute("SELECT query_id, text FROM queries WHERE evalset_hash = ?",
                              (evalset_hash,)).fetchall()
        return dict(rows)


def _why(exc: BaseException, path: Path | None = None) -> str:
    """The cause of a SQLite or OS error, with what to do when the disk is full (SQLite
    reports some writes on a full device as a plain I/O error: the free space decides)."""
    code = getattr(exc, "sqlite_errorname", "")
    number = getattr(exc, "errno", None)
    if code == "SQLITE_FULL" or number in (errno.ENOSPC, errno.EDQUOT) or (
            code.startswith("SQLITE_IOERR") and path is not None and _nearly_full(path)):
        return "no space left on the device: free some space and run again"
    if code == "SQLITE_READONLY" or number in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{exc}: choose a store in a folder you can write to (--store)"
    if code == "SQLITE_CANTOPEN":
        where = "it is a folder: give a file name" if path is not None and path.is_dir() \
            else "check that its folder exists and you can write to it"
        return f"{exc}: {where} (--store)"
    return str(exc)


def _nearly_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < (1 << 20)
    except OSError:
        return False


def _dump(obj: Any) -> str:
    """JSON of a stored column, every secret the process holds redacted (header values,
    keys, URL passwords never reach the store). A stored cell whose settings held a secret
    then no longer matches a new cell's work key, so it is recomputed rather than reused:
    safe (keys are never computed from redacted settings, where two header values would
    collide)."""
    return redact(json.dumps(obj, sort_keys=True, default=str, ensure_ascii=False))
