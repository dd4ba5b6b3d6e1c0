"""The judging store: every label, by whom, when, with its evidence, in one SQLite file.

``<evalset>/judging.sqlite`` in WAL mode with ``synchronous=FULL``: :meth:`JudgmentStore.record`
commits before it returns, so an acknowledged judgment survives ``kill -9`` of the process
(and a power cut). Labels are never overwritten: a new label for the same (annotator, query,
document) is a new row, :meth:`JudgmentStore.judgments` returns the latest, ``undo`` marks a
row undone (it stays in the history). Annotator tokens are stored only as SHA-256 hashes.

Several processes may share one store (the web app and ``judge llm`` at once): SQLite
serialises the writers; a writer waits up to ``busy_timeout`` for another.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._util import check_name, utc_now
from ..errors import DataFormatError, OutputError
from .labels import GRADES, AnnotatorKind, Judgment, Quote

__all__ = ["FULL_CHECK_BYTES", "SCHEMA_VERSION", "STORE_FILE", "DamagedStoreError", "JudgmentStore",
           "check_annotator_name", "hash_token"]

STORE_FILE = "judging.sqlite"
FULL_CHECK_BYTES = 32 * 2**20
"""Stores up to this size get SQLite's full ``integrity_check`` at start (about 3 s at the
limit, some 150,000 labels), larger ones its ``quick_check`` (about 0.3 s)."""
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('human', 'llm')),
    token_sha256 TEXT UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judgments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    query_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    annotator TEXT NOT NULL,
    grade INTEGER CHECK (grade IS NULL OR grade BETWEEN 0 AND 3),
    kind TEXT NOT NULL CHECK (kind IN ('human', 'llm')),
    note TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    client_key TEXT,
    undone_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS judgments_client_key
    ON judgments (annotator, client_key) WHERE client_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS judgments_pair ON judgments (annotator, query_id, doc_id, id);
CREATE TABLE IF NOT EXISTS sessions (
    id_sha256 TEXT PRIMARY KEY,
    annotator TEXT NOT NULL REFERENCES annotators (name) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evidence (
    judgment_id INTEGER NOT NULL REFERENCES judgments (id),
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (judgment_id, position)
);
"""

# Added to stores of schema version 1 when opened (an older searchbench ignores it).
_SIGNIN_LINKS = """
CREATE TABLE IF NOT EXISTS signin_links (
    key_sha256 TEXT PRIMARY KEY,
    annotator TEXT NOT NULL REFERENCES annotators (name) ON DELETE CASCADE,
    created_at TEXT NOT NULL
)"""

# The web apps serving this store now (rows of apps that died are cleaned at the next start).
_APPS = """
CREATE TABLE IF NOT EXISTS apps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    annotators TEXT NOT NULL,
    started_at TEXT NOT NULL
)"""

_TABLES = frozenset(("schema_version", "annotators", "judgments", "sessions", "evidence"))

_COLUMNS = "id, query_id, doc_id, annotator, grade, kind, note, source, created_at"


class DamagedStoreError(DataFormatError):
    """The store's file is damaged (SQLite finds malformed pages): nothing more is read
    from or written to it; the message says how to recover."""


def hash_token(token: str) -> str:
    """SHA-256 hex digest of an annotator token (the only form the store keeps)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class JudgmentStore:
    """The labels of one evaluation set (``<evalset>/judging.sqlite``; a ``.sqlite`` path is
    used as is).

    Thread-safe: one connection guarded by a lock (SQLite serialises writers anyway).
    A store written by a newer searchbench raises :class:`DataFormatError`.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0,
                 check: bool = False) -> None:
        p = Path(path)
        self.path = p / STORE_FILE if p.is_dir() or not p.suffix else p
        if not self.path.parent.is_dir():
            raise DataFormatError(f"{self.path.parent}: not a folder; expected the evaluation "
                                  f"set folder that holds {STORE_FILE}")
        self._lock = threading.RLock()
        self.damaged: DamagedStoreError | None = None  # set on the first malformed page seen
        try:
            self._db = sqlite3.connect(self.path, timeout=busy_timeout,
                                       check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise DataFormatError(f"{self.path}: cannot open the judging store ({exc})") from None
        try:
            if check and self.path.stat().st_size:  # before anything is written to it
                self.check_integrity()
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise DataFormatError(f"{self.path}: not a judging store ({exc}); expected a "
                                  f"SQLite file written by searchbench") from None
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------
    def _setup(self) -> None:
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")  # a commit is on disk when it returns
        db.execute("PRAGMA foreign_keys=ON")
        with self._transaction():
            version = self._version()
            if version is None:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif version > SCHEMA_VERSION:
                raise DataFormatError(
                    f"{self.path}: judging store schema version {version}, this searchbench "
                    f"reads up to version {SCHEMA_VERSION}; upgrade searchbench "
                    f"(pip install -U searchbench) to open it")
            db.execute(_SIGNIN_LINKS)
            db.execute(_APPS)

    def _version(self) -> int | None:
        tables = {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_version" not in tables:
            if tables - {"sqlite_sequence"}:
                raise DataFormatError(f"{self.path}: an SQLite file without a schema_version "
                                      f"table; expected a judging store written by searchbench")
            return None
        row = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = int(row[0]) if row and row[0] is not None else None
        missing = sorted(_TABLES - tables)
        if version is not None and version <= SCHEMA_VERSION and missing:
            raise DataFormatError(f"{self.path}: damaged judging store (no table "
                                  f"{', '.join(missing)}); expected a store written by "
                                  f"searchbench: restore it from a backup")
        return version

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; a damaged file raises :class:`DataFormatError`."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.OperationalError as exc:  # locked too long, I/O error
                raise OutputError(f"cannot read {self.path}: {exc}") from None
            except sqlite3.DatabaseError as exc:  # a malformed file
                raise self._mark_damaged(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self.damaged is not None:  # never write into a file known to be malformed
                raise self.damaged
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:  # disk full, read-only, locked too long
                raise OutputError(f"cannot write {self.path}: {exc}") from None
            except sqlite3.DatabaseError as exc:  # a malformed file
                raise self._mark_damaged(exc) from None

    def _mark_damaged(self, exc: sqlite3.DatabaseError | str) -> DamagedStoreError:
        """The error for a malformed file, remembered: every later write is refused."""
        self.damaged = _damaged(self.path, exc)
        return self.damaged

    def check_integrity(self) -> None:
        """SQLite's ``PRAGMA integrity_check`` over the whole file (every page, record and
        index entry, each index against its table; about 0.1 s per MB) — for a file over
        :data:`FULL_CHECK_BYTES` its ``quick_check`` (the same without comparing indexes
        with their tables, ten times faster). A damaged store raises
        :class:`DamagedStoreError`. ``JudgmentStore(..., check=True)`` runs it before
        anything is written (``judge serve``, ``explore``, ``judge llm`` and, through
        ``store_judgments``, every reader: no label is acknowledged into, or exported from,
        a malformed file). SQLite keeps no checksums: a flipped byte inside a value that no
        index holds (a note) cannot be seen by any check."""
        size = self.path.stat().st_size if self.path.is_file() else 0
        pragma = "integrity_check" if size <= FULL_CHECK_BYTES else "quick_check"
        with self._reading() as db:
            rows = [str(r[0]) for r in db.execute(f"PRAGMA {pragma}(5)").fetchall()]
        if rows != ["ok"]:
            raise self._mark_damaged("; ".join(rows)[:300])

    def close(self) -> None:
        """Close the connection (a WAL checkpoint happens on the last close)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> JudgmentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- annotators --------------------------------------------------------------------
    def add_annotator(self, name: str, kind: AnnotatorKind = "human") -> str:
        """Register ``name`` (or give it a new token) and return its token, shown only now.

        The store keeps only the token's SHA-256; an earlier token of ``name`` stops working.
        """
        name = check_annotator_name(name)
        if kind not in ("human", "llm"):
            raise DataFormatError(f"annotator kind {kind!r}; expected 'human' or 'llm'")
        token = secrets.token_urlsafe(24)
        with self._transaction() as db:
            row = db.execute("SELECT kind FROM annotators WHERE name=?", (name,)).fetchone()
            if row and row[0] != kind:
                raise DataFormatError(f"annotator {name!r} is registered as {row[0]!r}, not "
                                      f"{kind!r}; human and LLM labels are never mixed")
            db.execute("INSERT INTO annotators (name, kind, token_sha256, created_at) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                       "token_sha256=excluded.token_sha256",
                       (name, kind, hash_token(token), utc_now()))
            db.execute("DELETE FROM sessions WHERE annotator=?", (name,))  # old ones end
        return token

    def sign_in_link(self, name: str) -> str:
        """A fresh sign-in key for a known annotator, good for one sign-in (the store keeps
        its SHA-256; an earlier unused key of ``name`` stops working). The annotator's token
        is unchanged: this is how a restarted app says how to sign in again."""
        key = secrets.token_urlsafe(24)
        with self._transaction() as db:
            db.execute("DELETE FROM signin_links WHERE annotator=?", (name,))
            db.execute("INSERT INTO signin_links VALUES (?, ?, ?)",
                       (hash_token(key), name, utc_now()))
        return key

    def redeem(self, secret: str) -> str | None:
        """The annotator signing in with ``secret``: their token, or a sign-in link's key
        (used up by this call); ``None`` for anything else."""
        name = self.annotator(secret)
        if name is not None or not secret:
            return name
        with self._transaction() as db:
            row = db.execute("SELECT annotator FROM signin_links WHERE key_sha256=?",
                             (hash_token(secret),)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM signin_links WHERE key_sha256=?", (hash_token(secret),))
        return str(row[0])

    def open_app(self, names: Iterable[str]) -> tuple[int, list[str]]:
        """Register a web app serving ``names`` and end the access of every other person no
        running app on this machine serves: their token (NULL), browser sessions and sign-in
        links stop working; their labels stay; listing them again gives a new token.
        Returns ``(app id, names revoked now)``; :meth:`close_app` when the app stops."""
        host, keep = socket.gethostname(), set(names)
        with self._transaction() as db:
            for app_id, pid, served in db.execute(
                    "SELECT id, pid, annotators FROM apps WHERE host=?", (host,)).fetchall():
                if _alive(int(pid)):
                    keep.update(json.loads(served))
                else:  # an app killed without closing
                    db.execute("DELETE FROM apps WHERE id=?", (app_id,))
            rows = db.execute(
                "SELECT name FROM annotators a WHERE kind='human' AND (token_sha256 IS NOT "
                "NULL OR EXISTS (SELECT 1 FROM sessions s WHERE s.annotator=a.name) OR "
                "EXISTS (SELECT 1 FROM signin_links k WHERE k.annotator=a.name)) "
                "ORDER BY name").fetchall()
            revoked = [str(r[0]) for r in rows if r[0] not in keep]
            for name in revoked:
                db.execute("UPDATE annotators SET token_sha256=NULL WHERE name=?", (name,))
                db.execute("DELETE FROM sessions WHERE annotator=?", (name,))
                db.execute("DELETE FROM signin_links WHERE annotator=?", (name,))
            cur = db.execute("INSERT INTO apps (host, pid, annotators, started_at) VALUES "
                             "(?, ?, ?, ?)", (host, os.getpid(), json.dumps(sorted(set(names))),
                                              utc_now()))
        return int(cur.lastrowid or 0), revoked

    def close_app(self, app_id: int) -> None:
        """The app ``app_id`` stopped: its annotators no longer keep others' access alive."""
        with self._transaction() as db:
            db.execute("DELETE FROM apps WHERE id=?", (app_id,))

    def has_token(self, name: str) -> bool:
        """Whether ``name`` has a working token (not revoked)."""
        with self._reading():
            row = self._db.execute("SELECT token_sha256 IS NOT NULL FROM annotators WHERE "
                                   "name=?", (name,)).fetchone()
        return bool(row and row[0])

    def annotator(self, token: str) -> str | None:
        """The name whose token this is, or ``None``."""
        if not token:
            return None
        with self._reading():
            row = self._db.execute("SELECT name FROM annotators WHERE token_sha256=?",
                                   (hash_token(token),)).fetchone()
        return str(row[0]) if row else None

    def annotators(self) -> dict[str, AnnotatorKind]:
        """Every registered annotator and its kind (``human`` or ``llm``)."""
        with self._reading():
            rows = self._db.execute("SELECT name, kind FROM annotators ORDER BY name").fetchall()
        return {str(n): k for n, k in rows}

    # -- browser sessions (web app) ---------------------------------------------------
    def open_session(self, annotator: str) -> tuple[str, str]:
        """A new browser session of ``annotator``: ``(session_id, csrf_token)``. The store
        keeps the session id's SHA-256 only; sessions survive a restart of the app."""
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self._transaction() as db:
            db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?)",
                       (hash_token(session_id), annotator, csrf, utc_now()))
        return session_id, csrf

    def session(self, session_id: str) -> tuple[str, str] | None:
        """``(annotator, csrf_token)`` of a session, or ``None``."""
        if not session_id:
            return None
        with self._reading():
            row = self._db.execute("SELECT annotator, csrf FROM sessions WHERE id_sha256=?",
                                   (hash_token(session_id),)).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def close_session(self, session_id: str) -> None:
        """Forget a session (log out)."""
        with self._transaction() as db:
            db.execute("DELETE FROM sessions WHERE id_sha256=?", (hash_token(session_id),))

    # -- judgments ---------------------------------------------------------------------
    def record(self, judgment: Judgment, client_key: str | None = None) -> int:
        """Store ``judgment`` and return its id once it is committed to disk.

        ``client_key`` makes a retry idempotent: a second call with the same annotator and
        key stores nothing and returns the first id. An empty ``created_at`` becomes now.
        """
        _validate(judgment)
        judgment = dataclasses.replace(judgment,
                                       annotator=check_annotator_name(judgment.annotator))
        with self._transaction() as db:
            if client_key is not None:
                row = db.execute("SELECT id FROM judgments WHERE annotator=? AND client_key=?",
                                 (judgment.annotator, client_key)).fetchone()
                if row:
                    return int(row[0])
            self._check_kind(db, judgment)
            cur = db.execute(
                "INSERT INTO judgments (query_id, doc_id, annotator, grade, kind, note, source,"
                " created_at, client_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (judgment.query_id, judgment.doc_id, judgment.annotator, judgment.grade,
                 judgment.kind, judgment.note, judgment.source,
                 judgment.created_at or utc_now(), client_key))
            jid = int(cur.lastrowid or 0)
            db.executemany('INSERT INTO evidence (judgment_id, position, start, "end", text) '
                           "VALUES (?, ?, ?, ?, ?)",
                           [(jid, i, q.start, q.end, q.text)
                            for i, q in enumerate(judgment.evidence)])
        return jid

    def _check_kind(self, db: sqlite3.Connection, judgment: Judgment) -> None:
        row = db.execute("SELECT kind FROM annotators WHERE name=?",
                         (judgment.annotator,)).fetchone()
        if row and row[0] != judgment.kind:
            raise DataFormatError(f"annotator {judgment.annotator!r} is registered as "
                                  f"{row[0]!r}; this judgment says kind={judgment.kind!r}")

    def undo(self, annotator: str) -> Judgment | None:
        """Undo ``annotator``'s latest judgment not undone yet and return it (``None`` if
        there is none). The row stays in the history, marked undone; the label before it
        (if any) becomes the latest again."""
        with self._transaction() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM judgments WHERE annotator=? AND "
                             "undone_at IS NULL ORDER BY id DESC LIMIT 1",
                             (annotator,)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE judgments SET undone_at=? WHERE id=?", (utc_now(), row[0]))
            return self._with_evidence(db, [row])[0][1]

    def judgments(self, latest: bool = True, *, annotator: str | None = None,
                  query_id: str | None = None, kind: AnnotatorKind | None = None,
                  include_skips: bool = True) -> list[Judgment]:
        """Judgments in recording order.

        ``latest=True``: the latest label per (annotator, query, document), undone labels
        excluded. ``latest=False``: every label not undone (the history). Filters narrow
        by annotator, query and kind; ``include_skips=False`` drops skips (grade ``None``).
        """
        return [j for _, j in self.judgments_with_ids(latest, annotator=annotator,
                                                        query_id=query_id, kind=kind,
                                                        include_skips=include_skips)]

    def judgments_with_ids(self, latest: bool = True, *, annotator: str | None = None,
                           query_id: str | None = None, kind: AnnotatorKind | None = None,
                           include_skips: bool = True) -> list[tuple[int, Judgment]]:
        """Like :meth:`judgments`, each with its row id."""
        where, args = ["j.undone_at IS NULL"], []
        for column, value in (("annotator", annotator), ("query_id", query_id),
                              ("kind", kind)):
            if value is not None:
                where.append(f"j.{column}=?")
                args.append(value)
        if not include_skips:
            where.append("j.grade IS NOT NULL")
        if latest:
            where.append("j.id = (SELECT MAX(l.id) FROM judgments l WHERE l.annotator="
                         "j.annotator AND l.query_id=j.query_id AND l.doc_id=j.doc_id AND "
                         "l.undone_at IS NULL)")
        sql = (f"SELECT {', '.join('j.' + c for c in _COLUMNS.split(', '))} FROM judgments j "
               f"WHERE {' AND '.join(where)} ORDER BY j.id")
        with self._reading():
            rows = self._db.execute(sql, args).fetchall()
            return self._with_evidence(self._db, rows)

    def history(self) -> list[dict[str, Any]]:
        """Every row ever recorded, undone ones included (``undone_at`` set), oldest first."""
        with self._reading():
            rows = self._db.execute(f"SELECT {_COLUMNS}, client_key, undone_at FROM judgments "
                                    "ORDER BY id").fetchall()
            pairs = self._with_evidence(self._db, [r[:9] for r in rows])
        return [{"id": jid, "judgment": j, "client_key": r[9], "undone_at": r[10]}
                for (jid, j), r in zip(pairs, rows, strict=True)]

    def count(self) -> int:
        """Number of rows recorded (history, undone ones included)."""
        with self._reading():
            return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    @staticmethod
    def _with_evidence(db: sqlite3.Connection,
                       rows: list[tuple[Any, ...]]) -> list[tuple[int, Judgment]]:
        quotes: dict[int, list[Quote]] = {}
        if rows:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS _ids (id INTEGER PRIMARY KEY)")
            db.execute("DELETE FROM _ids")
            db.executemany("INSERT INTO _ids VALUES (?)", [(r[0],) for r in rows])
            for jid, start, end, text in db.execute(
                    'SELECT e.judgment_id, e.start, e."end", e.text FROM evidence e '
                    "JOIN _ids ON _ids.id = e.judgment_id ORDER BY e.judgment_id, e.position"):
                quotes.setdefault(jid, []).append(Quote(start, end, text))
        return [(r[0], Judgment(query_id=r[1], doc_id=r[2], annotator=r[3], grade=r[4],
                                kind=r[5], evidence=tuple(quotes.get(r[0], ())), note=r[6],
                                source=r[7], created_at=r[8])) for r in rows]


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (signal 0 probes without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _damaged(path: Path, exc: sqlite3.DatabaseError | str) -> DamagedStoreError:
    folder = path.parent
    return DamagedStoreError(
        f"{path}: damaged judging store ({exc}); nothing is read from or written to it. "
        f"To recover: move it aside, then restore a backup copy of {path.name}, or salvage "
        f"its readable rows with `sqlite3 {path} .recover | sqlite3 {folder / 'recovered.sqlite'}`"
        f" and move that into place; the labels of the last export are in "
        f"{folder / 'qrels.tsv'} and {folder / 'qrels.provenance.jsonl'} (earlier ones in "
        f"{folder / 'history'})")


def check_annotator_name(name: object) -> str:
    """An annotator's name in NFC form (:func:`~searchbench._util.check_name`): it is shown
    in terminals and pages, so a name with a line break, a bidi override, a zero-width or
    another hidden character (which could forge the start-up URL list or pass for another
    name) is refused."""
    return check_name(name, "annotator name")


def _check_text(value: object, what: str) -> None:
    if not isinstance(value, str) or not value or "\x00" in value:
        raise DataFormatError(f"{what} {value!r}; expected a non-empty string without NUL")


def _validate(j: Judgment) -> None:
    """Reject a judgment the store must not keep (bad grade, kind, quote offsets)."""
    for value, what in ((j.query_id, "query id"), (j.doc_id, "document id"),
                        (j.annotator, "annotator name"), (j.source, "source")):
        _check_text(value, what)
    if j.grade is not None and (isinstance(j.grade, bool) or j.grade not in GRADES):
        raise DataFormatError(f"grade {j.grade!r} for query {j.query_id!r}, document "
                              f"{j.doc_id!r}; expected one of {list(GRADES)} or None (skip)")
    if j.kind not in ("human", "llm"):
        raise DataFormatError(f"kind {j.kind!r}; expected 'human' or 'llm'")
    for q in j.evidence:
        if not (isinstance(q.start, int) and isinstance(q.end, int) and 0 <= q.start < q.end
                and len(q.text) == q.end - q.start):
            raise DataFormatError(f"evidence quote [{q.start}:{q.end}] of {len(q.text)} "
                                  f"characters for document {j.doc_id!r}; expected "
                                  f"0 <= start < end and end - start == len(text)")
