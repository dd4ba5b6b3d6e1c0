"""``searchbench db``: load an evaluation set into your vector database, list each engine's
index knobs, describe a store. Search it with ``searchbench run --retriever db``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

import searchbench as sb

from ._output import (
    METRIC_OPTION,
    QUIET_OPTION,
    EvalsetFirst,
    UsageError,
    evalset_argument,
    format_option,
    paths,
    reported_warnings,
)

TEXT_OR_JSON = format_option("text", "json", default="text", help="text, or JSON.")


@click.group("db", no_args_is_help=True)
def db_app() -> None:
    """Load evaluation sets into vector databases and describe their indexes."""


def _pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{flag} {item!r}: expected NAME=VALUE, e.g. m=16")
        out[name.strip()] = value.strip()
    return out


@db_app.command("load", cls=EvalsetFirst)
@evalset_argument()
@click.argument("url", help="Store URL, e.g. 'pgvector:///app?host=/run/pg&table=docs'; "
                "{chunker} in the store's name (table=docs_{chunker}) names one store per "
                "chunker, as experiment configs do.")
@click.option("--model", default="minilm", help="Encoder: minilm, static, "
              "sentence-transformers:/path, model2vec:/path, openai:NAME.")
@click.option("--chunk", help="tokens:SIZE[:OVERLAP], sentences:N[:OVERLAP] or "
              "recursive:MAX_TOKENS (model tokens); ids are doc#start-end.")
@METRIC_OPTION
@click.option("--index", default="default", help="Index kind (pgvector: hnsw or ivfflat), "
              "'default' (the engine's first; none for sqlite-vec, which has no ANN "
              "index) or none.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Index build parameter, e.g. m=16 ef_construction=64 (repeatable; "
              "searchbench db list-params ENGINE).")
@click.option("--batch-size", default=1000, type=click.IntRange(min=1), metavar="INTEGER",
              help="Rows embedded and loaded per batch (each batch is kept if a later one "
              "fails).")
@click.option("--no-title", is_flag=True, help="Embed text without title.")
@click.option("--query-prefix", default="", help="e.g. 'query: ' (recorded for searches).")
@click.option("--doc-prefix", default="", help="e.g. 'passage: '.")
@click.option("--cache-dir", type=paths(), help="Embedding cache folder.")
@QUIET_OPTION
def load_command(evalset: str, url: str, model: str, chunk: str | None, metric: str,
                 index: str, params: tuple[str, ...], batch_size: int, no_title: bool,
                 query_prefix: str, doc_prefix: str, cache_dir: Path | None,
                 quiet: bool) -> None:
    """Embed an evaluation set's corpus (or chunks) and load it into a vector store,
    resumably; then build the index and record provenance.

    Example: searchbench db load pyref 'pgvector:///app?host=/run/pg&table=docs'
    --model minilm --index hnsw --param m=16 --param ef_construction=64
    """
    from searchbench.retrieval import load_store, store_url  # lazy: cli start-up (retrieval, numpy)

    build = _pairs(params, "--param")
    sb.retrieval.parse_chunker(chunk)  # a bad --chunk fails before any loading
    url = store_url(url, chunk, "URL")  # table=docs_{chunker}: this chunker's store
    with reported_warnings(quiet), sb.db.connect(url) as store:
        es = sb.load_evalset(evalset, quiet=quiet)
        got = load_store(store, es, model, chunk=chunk, metric=metric, index=index,
                         params=build, batch_size=batch_size, query_prefix=query_prefix,
                         doc_prefix=doc_prefix, with_title=not no_title,
                         cache=cache_dir if cache_dir is not None else True,
                         quiet=quiet or None)
    built = (f"; {got['index']} index built in {got['build_seconds']:.2f}s"
             if got["build_seconds"] is not None else
             f"; {got['index']} index kept" if got["index"] else
             "; no index" if type(store).index_kinds else
             f"; no ANN index ({type(store).engine} searches exactly)")
    click.echo(f"{store.url.public}: {got['added']} added, {got['skipped']} already stored, "
               f"{got['count']} rows ({got['units']} units of {es.name}) in "
               f"{got['load_seconds']:.2f}s{built}")


@db_app.command("list-params")
@click.argument("engine", required=False, help="One engine (URL scheme), e.g. pgvector.")
@TEXT_OR_JSON
def list_params_command(engine: str | None, output_format: str) -> None:
    """List each engine's index build and search parameters with defaults.

    Example: searchbench db list-params pgvector
    """
    from ..db import ENGINES, engine_class  # lazy: cli start-up (db, numpy)

    names = sorted(ENGINES) if engine is None else [engine]
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"unknown store engine {engine!r}; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    found: list[dict[str, Any]] = []
    for name in names:
        try:
            cls = engine_class(name)
        except ImportError as exc:  # the adapter module itself fails to import
            found.append({"engine": name, "error": f"adapter not importable ({exc})"})
            continue
        found.append({"engine": name, "extra": cls.extra, "summary": cls.summary,
                      "index_kinds": list(cls.index_kinds), "exact": cls.has_exact,
                      "params": [_param(p) for p in cls.params]})
    if output_format == "json":
        click.echo(json.dumps(found, indent=2))
        return
    click.echo("\n\n".join(_text(e) for e in found))


def _param(p: Any) -> dict[str, Any]:
    return {"name": p.name, "when": p.when, "type": p.kind.__name__, "default": p.default,
            "choices": list(p.choices) if p.choices else None, "low": p.low, "high": p.high,
            "help": p.help}


def _text(e: dict[str, Any]) -> str:
    if "error" in e:
        return f"{e['engine']}: {e['error']}"
    lines = [f"{e['engine']} (pip extra: searchbench[{e['extra']}]): {e['summary']}",
             f"  index kinds: {', '.join(e['index_kinds']) or 'none'}; exact search: "
             f"{'yes' if e['exact'] else 'no'}"]
    for when in ("build", "search"):
        ps = [p for p in e["params"] if p["when"] == when]
        lines.append(f"  {when} parameters:" + ("" if ps else " none"))
        for p in ps:
            rng = (f" one of {'|'.join(p['choices'])}" if p["choices"] else
                   f" [{_num(p['low'])}..{_num(p['high'])}]"
                   if p["low"] is not None or p["high"] is not None else "")
            lines.append(f"    {p['name']} ({p['type']}{rng}, default {p['default']}): "
                         f"{p['help']}")
    return "\n".join(lines)


def _num(x: float | None) -> str:
    return "" if x is None else (str(int(x)) if float(x).is_integer() else str(x))


@db_app.command("describe")
@click.argument("url", help="Store URL.")
@TEXT_OR_JSON
def describe_command(url: str, output_format: str) -> None:
    """Describe a store: engine, table, dimension, metric, count, indexes and provenance.

    Example: searchbench db describe 'pgvector:///app?host=/run/pg&table=docs'
    """
    with sb.db.connect(url, must_exist=True) as store:
        info = store.describe()
    if output_format == "json":
        click.echo(json.dumps(info, indent=2, default=str))
        return
    for key, value in info.items():
        shown = json.dumps(value, default=str) if isinstance(value, dict | list) else value
        click.echo(f"{key}: {shown}")
