"""Every key of an experiment TOML is validated when the config is loaded, with the CLI's
vocabulary: the message names the file, the key (``retrievers.bm25.k1``), the value found
and the valid values — and nothing runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from searchbench.errors import ConfigError
from searchbench.experiment import load_config
from searchbench.experiment.config import _TOP_KEYS
from searchbench.retrieval.spec import SPEC_KEYS

from ._data import write_set

NAN = math.nan


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _document(top: dict, retrievers: list[dict]) -> str:
    lines = [f"{k} = {_toml(v)}" for k, v in top.items()]
    for table in retrievers:
        lines.append("[[retrievers]]")
        lines += [f"{k} = {_toml(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


BM25 = {"name": "bm25", "type": "bm25"}
DENSE = {"name": "static", "type": "dense", "model": "static"}
HYBRID = {"name": "hyb", "type": "hybrid", "of": ["bm25", "static"]}

# key path -> (bad value, text the message must hold besides the key path)
TOP_BAD = [
    ("name", "", "''"), ("name", 3, "3"),
    ("evalset", 3, "3"), ("evalset", [], "empty"),
    ("k", 0, "0"), ("k", -5, "-5"), ("k", "ten", "'ten'"), ("k", True, "True"),
    ("levels", ["page"], "unknown level 'page'; expected one of doc, chunk"),
    ("levels", "doc", "'doc'"), ("levels", [], "[]"),
    ("measures", ["nDCG@ten"], "nDCG@ten"), ("measures", [], "empty"),
    ("chunkers", ["tokens:abc"], "tokens:SIZE"), ("chunkers", ["tokens:0"], "size=0"),
    ("baseline", "nobody", "'nobody'"),
    ("test", "anova", "unknown test 'anova'; expected one of randomization, t"),
    ("correction", "sidak", "unknown correction 'sidak'; expected one of holm"),
    ("seed", -1, "-1; expected an integer >= 0"), ("seed", 1.5, "1.5"),
    ("alpha", 0, "0; expected a number strictly between 0 and 1"), ("alpha", 1.5, "1.5"),
    ("alpha", NAN, "nan"), ("confidence", NAN, "nan"), ("confidence", 2, "2"),
    ("n_permutations", 0, "0; expected an integer >= 1"),
    ("n_permutations", 10**9, "1000000000"), ("n_permutations", 2.5, "2.5"),
    ("runs_dir", "", "''"), ("runs_dir", 3, "3"),
    ("unanswerable", "ignore", "unknown unanswerable policy 'ignore'; expected one of skip"),
    ("unanswerable", True, "key 'unanswerable'"),
    ("retrievers", "bm25", "'bm25'"), ("retrievers", [], "no [[retrievers]]"),
    ("retrievers", [3], "3"),
]
RETRIEVER_BAD = {
    "bm25": [
        ("k1", NAN, "nan; expected a finite number >= 0"), ("k1", -1, "-1"),
        ("k1", "x", "'x'"), ("b", 2, "2; expected a finite number >= 0 and <= 1"),
        ("b", NAN, "nan"), ("method", "magic", "unknown BM25 method 'magic'; expected one "
                                               "of lucene, robertson, atire, bm25l, bm25+"),
        ("stopwords", "klingon", "unknown stop words 'klingon'; expected one of en"),
        ("stopwords", 3, "3"), ("stemmer", "klingon", "unknown stemmer 'klingon'; expected "
                                                      "one of english"),
        ("stemmer", 3, "3"), ("with_title", "yes", "'yes'; expected true or false"),
    ],
    "dense": [
        ("model", "", "''"), ("model", 3, "3"),
        ("metric", "hamming", "unknown metric 'hamming'; expected one of cosine, ip, l2"),
        ("backend", "gpu", "unknown backend 'gpu'"), ("query_prefix", 3, "3"),
        ("doc_prefix", 3, "3"), ("with_title", "no", "'no'"),
    ],
    "hybrid": [
        ("of", ["bm25"], "['bm25']"), ("of", ["bm25", "nope"], "'nope'"),
        ("of", "bm25", "'bm25'"), ("of", ["bm25", "bm25"], "different names"),
        ("fusion", "borda", "unknown fusion 'borda'; expected one of rrf, weighted"),
        ("rrf_k", -1, "-1; expected a finite number >= 0"), ("rrf_k", NAN, "nan"),
        ("weights", [NAN, 1], "weights[0]' is nan"), ("weights", [1], "[1]"),
        ("weights", [-1, 2], "weights[0]' is -1; expected a finite number >= 0"),
        ("weights", [0, 0], "all zero"),
        ("weights", "x", "'x'"), ("norm", "l2", "unknown normalisation 'l2'; expected one "
                                                "of minmax, zscore"),
    ],
}
TABLES = {"bm25": BM25, "dense": DENSE, "hybrid": HYBRID}


def _write(tmp_path: Path, top: dict, retrievers: list[dict]) -> Path:
    write_set(tmp_path / "set")
    path = tmp_path / "exp.toml"
    path.write_text(_document({"evalset": "set", **top}, retrievers), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_the_sweep_covers_every_key():
    """A key added to the config without a bad-value case here fails this test."""
    assert {k for k, _, _ in TOP_BAD} == set(_TOP_KEYS)
    for kind, cases in RETRIEVER_BAD.items():
        assert {k for k, _, _ in cases} | {"of"} >= set(SPEC_KEYS[kind]), kind


@pytest.mark.parametrize(("key", "value", "needle"), TOP_BAD,
                         ids=[f"{k}={v!r}" for k, v, _ in TOP_BAD])
def test_every_top_level_key_is_checked(tmp_path, key, value, needle):
    top = {} if key == "retrievers" else {key: value}
    retrievers = [BM25] if key != "retrievers" else []
    path = _write(tmp_path, top, retrievers)
    if key == "retrievers":  # written as a plain key, not as tables
        path.write_text(f'evalset = "set"\nretrievers = {_toml(value)}\n', encoding="utf-8")
    msg = _error(path)
    assert msg.startswith(f"{path}: "), msg
    assert key in msg and needle in msg, msg


@pytest.mark.parametrize(("kind", "key", "value", "needle"),
                         [(kind, *case) for kind, cases in RETRIEVER_BAD.items()
                          for case in cases],
                         ids=[f"{kind}.{k}={v!r}" for kind, cases in RETRIEVER_BAD.items()
                              for k, v, _ in cases])
def test_every_retriever_key_is_checked(tmp_path, kind, key, value, needle):
    tables = [dict(BM25), dict(DENSE), dict(HYBRID)]
    target = next(t for t in tables if t["type"] == kind)
    target[key] = value
    if kind == "hybrid" and key == "weights":
        target["fusion"] = "weighted"
    msg = _error(_write(tmp_path, {}, tables))
    path = tmp_path / "exp.toml"
    assert msg.startswith(f"{path}: "), msg
    assert f"retrievers.{target['name']}.{key}" in msg and needle in msg, msg


def test_unknown_retriever_key_names_its_table_path(tmp_path):
    msg = _error(_write(tmp_path, {}, [{**BM25, "k3": 1.0}]))
    assert "key 'retrievers.bm25.k3': unknown key for a bm25 retriever" in msg
    assert "k1, b, method, stopwords, stemmer, with_title" in msg


@pytest.mark.parametrize(("setting", "want"), [
    ({"stemmer": "none"}, None), ({"stemmer": False}, None), ({"stemmer": True}, "english"),
    ({"stemmer": "English"}, "english"), ({"stopwords": "none"}, None),
    ({"stopwords": "english"}, "en"), ({"stopwords": True}, "en"),
])
def test_stemmer_and_stopwords_spellings_of_the_cli_are_accepted(tmp_path, setting, want):
    cfg = load_config(_write(tmp_path, {}, [{**BM25, **setting}]))
    key = next(iter(setting))
    spec = cfg.retrievers[0].spec
    assert getattr(spec, key) == want
    assert cfg.retrievers[0].settings[key] == want


def test_aliases_are_canonicalised_like_the_cli(tmp_path):
    tables = [{**BM25, "method": "BM25Plus"}, {**DENSE, "metric": "cos"},
              {**HYBRID, "fusion": "linear", "normalization": "z-score"}]
    cfg = load_config(_write(tmp_path, {"test": "permutation", "correction": "fdr",
                                        "levels": ["document"]}, tables))
    assert cfg.retrievers[0].spec.method == "bm25+"
    assert cfg.retrievers[1].settings["metric"] == "cosine"
    hyb = cfg.retrievers[2]
    assert (hyb.spec.fusion, hyb.spec.norm, hyb.spec.weights) == ("weighted", "zscore",
                                                                  (0.5, 0.5))
    assert hyb.settings["norm"] == "zscore" and "normalization" not in hyb.settings
    assert (cfg.test, cfg.correction, cfg.levels) == ("randomization", "bh", ["doc"])


def test_stemmer_none_runs_to_the_end(tmp_path):
    """``stemmer = "none"`` used to pass validation and fail after a cell was stored."""
    from searchbench.experiment import ResultsStore, run_experiment

    path = _write(tmp_path, {"n_permutations": 100},
                  [{**BM25, "stemmer": "none", "stopwords": "none"}])
    summary = run_experiment(load_config(path), quiet=True)
    assert len(summary.computed) == 1
    with ResultsStore(summary.store_path) as db:
        assert len(db.stored_measures(summary.experiment_id)) == 1


@pytest.mark.parametrize(("table", "top", "needle"), [
    ({**BM25, "method": "magic"}, {}, "retrievers.bm25.method"),
    ({**DENSE, "metric": "hamming"}, {}, "retrievers.static.metric"),
    ({**BM25, "k1": NAN}, {}, "retrievers.bm25.k1' is nan"),
    ({**BM25, "stopwords": "klingon"}, {}, "unknown stop words 'klingon'"),
    (BM25, {"alpha": 2.0}, "key 'alpha' is 2.0"),
    (BM25, {"seed": -3}, "key 'seed' is -3"),
    (BM25, {"n_permutations": 0}, "key 'n_permutations' is 0"),
])
def test_cli_refuses_before_any_work(tmp_path, capsys, table, top, needle):
    from searchbench.cli.main import main

    path = _write(tmp_path, top, [table])
    assert main(["experiment", "run", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: ") and needle in err[0], err
    assert not path.with_suffix(".sqlite").exists() and not (tmp_path / "runs").exists()


def test_hybrid_rrf_k_and_weights_fail_before_any_cell(tmp_path, capsys):
    from searchbench.cli.main import main

    tables = [BM25, {**BM25, "name": "b2", "k1": 1.2},
              {"name": "h", "type": "hybrid", "of": ["bm25", "b2"], "rrf_k": -1}]
    path = _write(tmp_path, {}, tables)
    assert main(["experiment", "run", str(path)]) == 1
    assert "retrievers.h.rrf_k' is -1" in capsys.readouterr().err
    tables[2] = {"name": "h", "type": "hybrid", "of": ["bm25", "b2"], "fusion": "weighted",
                 "weights": [NAN, 1]}
    path = _write(tmp_path, {}, tables)
    assert main(["experiment", "run", str(path)]) == 1
    assert "retrievers.h.weights[0]' is nan" in capsys.readouterr().err
    assert not path.with_suffix(".sqlite").exists()


def test_a_leading_utf8_bom_is_accepted_and_a_bom_inside_is_not(tmp_path):
    """Windows editors save UTF-8 with a byte-order mark: the config reads as without it."""
    path = _write(tmp_path, {"k": 7}, [BM25])
    text = path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + text)
    assert load_config(path).k == 7
    path.write_bytes(text + b"\xef\xbb\xbf")
    assert "not valid TOML" in _error(path)


DB = "sqlite-vec://./stores.db?table="


@pytest.mark.parametrize(("url", "needle"), [
    (DB + "docs-{chunker}", "table='docs-none' (for chunker 'none') is not a plain "
                            "identifier"),
    (DB + "9x{chunker}", "table='9xnone' (for chunker 'none') is not a plain identifier"),
    ("sqlite-vec://./{chunker}.db?table=docs", "{chunker} may only stand in the store's name"),
    (DB + "docs_{chunker}_{model}", "no other {...} field is known"),
    (DB + "d" + "x" * 70 + "_{chunker}", "at most 63"),
])
def test_a_store_name_template_must_yield_plain_identifiers(tmp_path, url, needle):
    """Checked for every chunker of the grid when the config is read: before any work."""
    path = _write(tmp_path, {"chunkers": ["none", "tokens:8:2"]},
                  [{"name": "mine", "type": "db", "url": url}])
    text = _error(path)
    assert "key 'retrievers.mine.url'" in text and needle in text


def test_a_db_retriever_with_several_chunkers_needs_one_store_per_chunker(tmp_path):
    path = _write(tmp_path, {"chunkers": ["none", "tokens:8:2"]},
                  [{"name": "mine", "type": "db", "url": DB + "docs"}])
    text = _error(path)
    assert "key 'retrievers.mine.url'" in text
    assert "table=docs_{chunker}" in text and "searchbench db load" in text
    one = _write(tmp_path, {"chunkers": ["tokens:8:2"]},
                 [{"name": "mine", "type": "db", "url": DB + "docs"}])
    assert load_config(one).retrievers[0].spec.url == DB + "docs"  # one chunker: one store
    ok = _write(tmp_path, {"chunkers": ["none", "tokens:8:2"]},
                [{"name": "mine", "type": "db", "url": DB + "docs_{chunker}"}])
    assert load_config(ok).retrievers[0].settings["url"] == DB + "docs_{chunker}"


def test_exact_db_search_takes_no_search_parameters(tmp_path):
    path = _write(tmp_path, {}, [{"name": "mine", "type": "db", "url": "usearch://./u?name=d",
                                  "exact": True, "params": {"expansion_search": 8}}])
    assert "exact search uses no index" in _error(path)


def test_the_load_key_is_missing_or_absent_and_only_on_a_db_retriever(tmp_path):
    """``load = "missing"`` is kept apart from the settings: it says how to get a store,
    not what a cell computes, so it changes no cell's identity."""
    table = {"name": "mine", "type": "db", "url": DB + "docs_{chunker}"}
    ok = load_config(_write(tmp_path, {}, [{**table, "load": "missing"}]))
    plain = load_config(_write(tmp_path, {}, [table]))
    assert ok.retrievers[0].load == "missing" and plain.retrievers[0].load is None
    assert ok.cells()[0].key("h") == plain.cells()[0].key("h")
    text = _error(_write(tmp_path, {}, [{**table, "load": "always"}]))
    assert "key 'retrievers.mine.load' is 'always'" in text and '"missing"' in text
    text = _error(_write(tmp_path, {}, [{**table, "load": True}]))
    assert "key 'retrievers.mine.load' is True" in text
    text = _error(_write(tmp_path, {}, [{"name": "b", "type": "bm25", "load": "missing"}]))
    assert "key 'retrievers.b.load'" in text and "only a db retriever" in text
