"""``type = "db"`` retrievers: validated like every other spec (before any connection), the
URL's password never written anywhere (spec dicts, command lines, experiment configs)."""

from __future__ import annotations

import pytest

from searchbench.db import parse_store_url
from searchbench.errors import ConfigError
from searchbench.experiment.config import parse_config
from searchbench.retrieval.provenance import public_command
from searchbench.retrieval.spec import DbSpec, retriever_spec, spec_to_dict
from searchbench.vocab import RETRIEVER_TYPES

URL = "pgvector:///app?host=/run/pg&table=docs"


def test_db_is_a_retriever_type():
    assert "db" in RETRIEVER_TYPES


def test_params_are_typed_from_a_table_or_name_value_items():
    from_toml = retriever_spec("db", {"url": URL, "params": {"hnsw.ef_search": 40}})
    from_cli = retriever_spec("db", {"url": URL, "params": ["hnsw.ef_search=40"]})
    assert from_toml == from_cli == DbSpec(url=URL, params=(("hnsw.ef_search", 40),))


@pytest.mark.parametrize(("settings", "needle"), [
    ({"url": URL, "params": {"ef": 1}}, "unknown search parameter 'ef' for pgvector; valid: "
                                        "hnsw.ef_search, hnsw.iterative_scan"),
    ({"url": URL, "params": {"hnsw.iterative_scan": "sometimes"}},
     "expected one of off, relaxed_order, strict_order"),
    ({"url": URL, "params": ["hnsw.ef_search"]}, "expected NAME=VALUE"),
    ({"url": "nosuch://x"}, "unknown store engine 'nosuch'"),
    ({"url": ""}, "expected a non-empty string"),
    ({"url": URL, "metric": "cosine"}, "unknown key for a db retriever"),
])
def test_bad_settings_name_the_key(settings, needle):
    with pytest.raises(ConfigError, match=None) as err:
        retriever_spec("db", settings, key=lambda k: f"retrievers.pg.{k}")
    assert needle in str(err.value)


def test_spec_dict_and_command_line_never_hold_the_password():
    secret = "pgvector://me:hunter2@db.example:5432/app?table=docs&sslpassword=x2"
    spec = retriever_spec("db", {"url": secret})
    shown = spec_to_dict(spec)
    assert shown["url"] == "pgvector://me:***@db.example:5432/app?table=docs&sslpassword=***"
    assert parse_store_url(secret).public == shown["url"]
    argv = ["searchbench", "run", "pyref", "--db", secret, f"--db={secret}"]
    assert "hunter2" not in " ".join(public_command(argv))
    assert public_command(["--db", URL]) == ["--db", URL]  # nothing hidden: kept as given


def _config(url: str, **extra) -> dict:
    return {"evalset": "pyref", "retrievers": [
        {"name": "bm25", "type": "bm25"},
        {"name": "pg", "type": "db", "url": url, **extra},
        {"name": "hyb", "type": "hybrid", "of": ["bm25", "pg"]}]}


def test_experiment_tables_take_db_retrievers_and_hybrids_of_them():
    cfg = parse_config(_config(URL, params={"hnsw.ef_search": 64}), where="x.toml")
    pg = next(r for r in cfg.retrievers if r.name == "pg")
    assert pg.spec == DbSpec(url=URL, params=(("hnsw.ef_search", 64),))
    assert pg.settings["params"] == {"hnsw.ef_search": 64}
    hyb = next(r for r in cfg.retrievers if r.name == "hyb")
    assert hyb.spec.parts[1] == pg.spec


def test_experiment_refuses_a_password_in_the_config():
    with pytest.raises(ConfigError, match=r"x.toml: key 'retrievers.pg.url' holds a password"):
        parse_config(_config("pgvector://me:hunter2@/app?table=docs"), where="x.toml")


def test_sb_db_connect_is_reachable_from_the_top_package():
    import searchbench as sb

    assert sb.db.connect is __import__("searchbench.db", fromlist=["connect"]).connect


@pytest.mark.parametrize(("args", "needle"), [
    (["-r", "db"], "--retriever db needs --db URL"),
    (["-r", "bm25", "--db", URL], "--db, --db-param and --filter need --retriever db"),
    (["-r", "db", "--db", URL, "--db-param", "hnsw.ef_search"], "expected NAME=VALUE"),
])
def test_run_db_flags_are_checked_before_any_work(tmp_path, capsys, args, needle):
    from searchbench.cli.main import main

    usage = "NAME=VALUE" not in needle  # combinations: exit 2; a value the library refuses: 1
    assert main(["run", "pyref", *args, "-o", str(tmp_path / "x.trec")]) == (2 if usage else 1)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.trec").exists()


def test_list_params_shows_every_engine_even_one_that_fails_to_import(capsys):
    import json

    from searchbench.cli.main import main
    from searchbench.db import ENGINES, register_engine
    from searchbench.db.engines.pgvector import PgVectorStore

    register_engine("broken-engine", "searchbench.db.engines.no_such_adapter", "Nope")
    try:
        assert main(["db", "list-params", "--json"]) == 0
    finally:
        del ENGINES["broken-engine"]
    listed = {e["engine"]: e for e in json.loads(capsys.readouterr().out)}
    assert "adapter not importable" in listed["broken-engine"]["error"]
    pg = listed["pgvector"]
    assert [p["name"] for p in pg["params"]] == [p.name for p in PgVectorStore.params]
    assert {p["name"]: p["default"] for p in pg["params"]}["hnsw.ef_search"] == 40
    assert main(["db", "list-params", "nosuch"]) == 2  # a usage error
    assert "unknown store engine 'nosuch'" in capsys.readouterr().err
