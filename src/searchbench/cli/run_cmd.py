"""``searchbench run``: produce a run with BM25, dense, hybrid or vector-database retrieval
(+ provenance)."""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

import searchbench as sb
from searchbench._util import refuse_sources
from searchbench.errors import ConfigError
from searchbench.vocab import CALLABLE_TYPES, canonical_fusion, check_finite

from ._output import (
    METRIC_OPTION,
    QUIET_OPTION,
    UsageError,
    evalset_argument,
    output_option,
    paths,
    refuse_existing,
    reported_warnings,
    vocab_option,
)

POSITIVE = click.IntRange(min=1)


@click.command("run")
@evalset_argument("spec")
@vocab_option("bm25", "--retriever", "-r", concept="retriever type",
              help="bm25, dense, hybrid (bm25 + dense), db (your vector database, --db), "
              "http (a search service), or your own retriever: python, langchain, "
              "llamaindex, haystack (--target).")
@click.option("--model", default="minilm", help="Encoder: minilm, static, "
              "sentence-transformers:/path, model2vec:/path, openai:NAME, or minilm run "
              "by ONNX Runtime: onnx:minilm (float32: the same vectors as torch, nDCG@10 "
              "equal on pyref and SciFact) or onnx-int8:minilm (int8: other vectors, "
              "nDCG@10 +0.005 on pyref, -0.005 on SciFact; docs: Retrieval, Encoders).")
@METRIC_OPTION
@vocab_option("auto", "--backend", concept="backend",
              help="Exact search (same results up to float32 rounding).")
@vocab_option("rrf", "--fusion", concept="fusion", help="Hybrid fusion.")
@click.option("--rrf-k", default=60.0, help="RRF constant k (>= 0).")
@click.option("--weight", default=0.5, help="Weighted fusion: weight of BM25 in [0, 1] "
              "(dense gets 1 - weight).")
@vocab_option("minmax", "--norm", concept="normalisation",
              help="Weighted fusion: score normalisation.")
@click.option("--chunk", help="tokens:SIZE[:OVERLAP], sentences:N[:OVERLAP] or "
              "recursive:MAX_TOKENS; tokens are the model's tokens (dense, hybrid) or "
              "whitespace words (bm25).")
@vocab_option("doc", "--level", concept="level",
              help="doc (a doc ranks at its best chunk) or chunk.")
@click.option("-k", "--k", "k", default=100, type=POSITIVE, metavar="INTEGER",
              help="Results per query.")
@click.option("--token-budget", type=POSITIVE, metavar="INTEGER",
              help="Cut each ranking to the results that fit N tokens.")
@output_option("TREC run file to write (+ OUTPUT.json provenance); default: stdout.")
@click.option("--k1", default=0.9, help="BM25 k1 (>= 0).")
@click.option("--b", "b", default=0.4, help="BM25 b (0 to 1).")
@vocab_option("lucene", "--bm25-method", concept="BM25 method", help="BM25 variant.")
@vocab_option("en", "--stopwords", concept="stop words",
              help="Stop-word list (language code) or none.")
@vocab_option("english", "--stemmer", concept="stemmer", help="Snowball language or none.")
@click.option("--no-title", is_flag=True, help="Index text without title.")
@click.option("--query-prefix", default="", help="e.g. 'query: '.")
@click.option("--doc-prefix", default="", help="e.g. 'passage: '.")
@click.option("--endpoint", help="OpenAI-compatible base URL (openai: models); with -r http "
              "the search service's URL.")
@click.option("--api-key-env", default="OPENAI_API_KEY",
              help="Environment variable holding the API key.")
@click.option("--retries", default=4, type=click.IntRange(min=0), metavar="INTEGER",
              help="Endpoint retries (backoff 1 s, 2 s, 4 s, …).")
@click.option("--cache-dir", type=paths(), help="Embedding cache folder.")
@click.option("--request", "http_request", default='{"query": "{query}", "k": {k}}',
              metavar="JSON", show_default=False,
              help="-r http: JSON body template; the placeholders query, k "
              "and query_id in braces are filled in as JSON values (default: query and k).")
@click.option("--ids", "http_ids", default="$.hits[*].id", show_default=True,
              help="-r http: JSONPath of the ranked ids in the answer.")
@click.option("--scores", "http_scores", help="-r http: JSONPath of the scores (default: "
              "ranked by the service's order).")
@click.option("--header", "http_headers", multiple=True, metavar="'NAME: VALUE'",
              help="-r http: extra request header (repeatable).")
@click.option("--auth-env", help="-r http: environment variable holding the credential "
              "(sent as '--auth-header: --auth-scheme VALUE').")
@click.option("--auth-header", default="Authorization", show_default=True,
              help="-r http: header carrying the credential.")
@click.option("--auth-scheme", default="Bearer", show_default=True,
              help="-r http: prefix of the credential ('' for the bare value).")
@click.option("--concurrency", default=4, type=POSITIVE, metavar="INTEGER",
              help="-r http, --target: requests or calls in flight at once.")
@click.option("--timeout", type=float, help="-r http: seconds for one request (default 10); "
              "your own retriever: seconds for one call (default 60).")
@click.option("--target", metavar="MODULE:NAME", help="-r python|langchain|llamaindex|haystack: "
              "your retriever, or a factory returning it (the current folder is importable).")
@click.option("--kwargs", "target_kwargs", metavar="JSON", help="--target: keyword arguments "
              "for the factory, as a JSON object.")
@click.option("--id-from", metavar="WHERE", help="--target: where the evaluation set's "
              "document id is: id, ref_doc_id, metadata:KEY or python:MODULE:FUNCTION (a "
              "function of the result object; default: the framework's document id).")
@click.option("--batch-size", default=16, type=POSITIVE, metavar="INTEGER",
              help="--target: queries per call of a batch callable.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail",
              show_default=True, help="--target: a call that raises stops the run (fail) or "
              "leaves its queries empty, counted in a warning (skip).")
@click.option("--query-input", metavar="COMPONENT.FIELD", help="-r haystack: the pipeline "
              "input that takes the query (default: its one mandatory text input).")
@click.option("--db", "db_url", metavar="URL", help="--retriever db: the store, e.g. "
              "'pgvector:///app?host=/run/pg&table=docs' (see searchbench db load).")
@click.option("--db-param", "db_params", multiple=True, metavar="NAME=VALUE",
              help="--retriever db: a search parameter of the engine, e.g. "
              "hnsw.ef_search=40 (repeatable; searchbench db list-params).")
@click.option("--filter", "db_filter", metavar="EXPR", help="--retriever db: a filter in the "
              "engine's own syntax (pgvector: an SQL WHERE fragment on your table).")
@click.option("--tune-weight", is_flag=True, help="Weighted hybrid: pick BM25's weight on "
              "half the judged queries (nDCG@10), report it on both halves.")
@vocab_option("skip", "--unanswerable", concept="unanswerable policy",
              help="The summary scores: queries the set marks \"no_answer\": true are left "
                   "out ('skip') or scored as trec_eval does ('zero'); the count is printed "
                   "either way.")
@QUIET_OPTION
def run_command(
    spec: str,
    retriever: str,
    model: str,
    metric: str,
    backend: str,
    fusion: str,
    rrf_k: float,
    weight: float,
    norm: str,
    chunk: str | None,
    level: str,
    k: int,
    token_budget: int | None,
    output: Path | None,
    force: bool,
    k1: float,
    b: float,
    bm25_method: str,
    stopwords: str,
    stemmer: str,
    no_title: bool,
    query_prefix: str,
    doc_prefix: str,
    endpoint: str | None,
    api_key_env: str,
    retries: int,
    cache_dir: Path | None,
    http_request: str,
    http_ids: str,
    http_scores: str | None,
    http_headers: tuple[str, ...],
    auth_env: str | None,
    auth_header: str,
    auth_scheme: str,
    concurrency: int,
    timeout: float | None,
    target: str | None,
    target_kwargs: str | None,
    id_from: str | None,
    batch_size: int,
    on_error: str,
    query_input: str | None,
    db_url: str | None,
    db_params: tuple[str, ...],
    db_filter: str | None,
    tune_weight: bool,
    unanswerable: str,
    quiet: bool,
) -> None:
    """Retrieve for every query of EVALSET and write a TREC run with a provenance sidecar.

    Example: searchbench run beir:../shared/data/beir/scifact -r hybrid --chunk tokens:256:32
    """
    # lazy: cli start-up (retrieval, numpy)
    from searchbench.retrieval import run_provenance, sidecar_path

    chosen = cli_spec(retriever, bm25={"k1": k1, "b": b, "method": bm25_method,
                                       "stopwords": stopwords, "stemmer": stemmer,
                                       "with_title": not no_title},
                      dense={"model": model, "metric": metric, "backend": backend,
                             "query_prefix": query_prefix, "doc_prefix": doc_prefix,
                             "with_title": not no_title},
                      hybrid={"fusion": fusion, "rrf_k": rrf_k, "weight": weight, "norm": norm},
                      http={"endpoint": endpoint, "request": http_request, "ids": http_ids,
                            "scores": http_scores, "headers": http_headers,
                            "auth_env": auth_env, "auth_header": auth_header,
                            "auth_scheme": auth_scheme, "concurrency": concurrency,
                            "retries": retries, "timeout": 10.0 if timeout is None else timeout},
                      own={"target": target, "kwargs": _json_object(target_kwargs, "--kwargs"),
                           "id_from": id_from, "batch_size": batch_size,
                           "concurrency": concurrency, "on_error": on_error,
                           "query_input": query_input,
                           "timeout": 60.0 if timeout is None else timeout},
                      db=_db_settings(retriever, db_url, db_params, db_filter, model))
    sb.retrieval.parse_chunker(chunk)  # a bad --chunk fails before any loading
    if tune_weight and not (isinstance(chosen, sb.retrieval.HybridSpec)
                            and chosen.fusion == "weighted"):
        raise UsageError("--tune-weight needs --retriever hybrid --fusion weighted")
    with reported_warnings(quiet):
        t0 = time.perf_counter()
        es = sb.load_evalset(spec, quiet=quiet)
        _refuse_inputs(output, es)
        if output is not None:  # before any retrieval
            refuse_existing(force, output, sidecar_path(output))
        with sb.retrieval.Pipeline(es, quiet=quiet or None, cache=cache_dir, endpoint=endpoint,
                                   api_key_env=api_key_env, retries=retries,
                                   unanswerable=unanswerable) as pipe:
            # lazy: cli start-up (retrieval, numpy)
            from searchbench.retrieval import CallableSpec, HttpSpec

            if not quiet and not isinstance(chosen, HttpSpec | CallableSpec):
                # (a search service or your own retriever chunks, if at all, by itself)
                click.echo(f"chunks: {sb.retrieval.chunking_of(pipe.chunker(chosen, chunk))}",
                           err=True)
            sweep = None
            if tune_weight:
                chosen, sweep = pipe.tune_weights(chosen, chunk, level, k)
            res = pipe.run(chosen, chunk, level, k, token_budget=token_budget)
    extra = {"scores": res.scores, "wall_s": time.perf_counter() - t0}
    if res.coverage is not None:
        extra["judged"] = res.coverage.to_dict()
    if res.scored is not None:
        extra["queries"] = res.scored.to_dict()
    if sweep is not None:
        extra["weight_sweep"] = dataclasses.asdict(sweep)
        if not quiet:
            click.echo(f"weight sweep: {sweep}")
    _write(res, output, run_provenance(res.run, es, spec, extra), quiet)
    if res.scored is not None and output is not None and not quiet:
        for note in res.scored.notes():
            click.echo(f"note: {note}")


_FLAGS = {"k1": "--k1", "b": "--b", "method": "--bm25-method", "stopwords": "--stopwords",
          "stemmer": "--stemmer", "with_title": "--no-title", "model": "--model",
          "metric": "--metric", "backend": "--backend", "query_prefix": "--query-prefix",
          "doc_prefix": "--doc-prefix", "fusion": "--fusion", "rrf_k": "--rrf-k",
          "weights": "--weight", "norm": "--norm", "url": "--db", "params": "--db-param",
          "filter": "--filter", "id_from": "--id-from", "batch_size": "--batch-size",
          "on_error": "--on-error", "query_input": "--query-input"}


def _db_settings(kind: str, url: str | None, params: tuple[str, ...], flt: str | None,
                 model: str) -> dict[str, Any] | None:
    """The db retriever's settings (None unless ``--retriever db``); ``--model`` counts
    only when given on the command line (else the store's recorded model is used)."""
    if kind != "db":
        if url or params or flt:
            raise UsageError("--db, --db-param and --filter need --retriever db")
        return None
    if not url:
        raise UsageError("--retriever db needs --db URL, e.g. "
                          "'pgvector:///app?host=/run/pg&table=docs'")
    ctx = click.get_current_context()
    given = ctx.get_parameter_source("model") == click.core.ParameterSource.COMMANDLINE
    return {"url": url, "params": list(params), "filter": flt,
            "model": model if given else None}


def cli_spec(kind: str, *, bm25: dict[str, Any], dense: dict[str, Any],
             hybrid: dict[str, Any], http: dict[str, Any] | None = None,
             db: dict[str, Any] | None = None, own: dict[str, Any] | None = None) -> Any:
    """The :data:`~searchbench.retrieval.spec.RetrieverSpec` of the ``run`` flags: the same
    spec an experiment table with the same settings gives (``-r hybrid`` fuses the bm25
    and dense settings; ``--weight w`` gives weights ``(w, 1 - w)`` to weighted fusion)."""
    from searchbench.retrieval import retriever_spec  # lazy: cli start-up (retrieval, numpy)

    def key(name: str) -> str:
        return _FLAGS.get(name, f"--{name.replace('_', '-')}")

    lexical = retriever_spec("bm25", bm25, key=key)  # every flag is checked, used or not
    semantic = retriever_spec("dense", dense, key=key)
    settings = {n: v for n, v in hybrid.items() if n != "weight"}
    w = check_finite(hybrid["weight"], "--weight", minimum=0, maximum=1)
    if canonical_fusion(settings["fusion"]) == "weighted":
        settings["weights"] = [w, 1 - w]
    fused = retriever_spec("hybrid", settings, parts=(lexical, semantic), key=key)
    if kind == "http":
        return _http_spec(http or {}, key)
    if kind == "db" and db is not None:
        return retriever_spec("db", db, key=key)
    own = own or {}
    if kind in CALLABLE_TYPES:
        if not own.get("target"):
            raise UsageError(f"-r {kind} needs --target MODULE:NAME (your retriever or a "
                              "factory returning it, e.g. myapp.search:build_retriever)")
        return retriever_spec(kind, {n: v for n, v in own.items() if v is not None}, key=key)
    if own.get("target") or own.get("kwargs") or own.get("id_from") or own.get("query_input"):
        raise UsageError("--target, --kwargs, --id-from and --query-input need --retriever "
                          "python, langchain, llamaindex or haystack")
    return {"bm25": lexical, "dense": semantic, "hybrid": fused}[kind]


def _json_object(text: str | None, flag: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object (None when not given)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{flag} {text!r} is not JSON ({exc}); expected an object such as "
                          "'{\"top_k\": 5}'") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag} {text!r}: expected a JSON object of keyword arguments")
    return value


def _http_spec(flags: dict[str, Any], key: Any) -> Any:
    """The http spec of the ``run`` flags (``--header 'N: V'`` → a headers table)."""
    # lazy: cli start-up (retrieval, numpy)
    from searchbench.retrieval import header_dict, retriever_spec

    if not flags.get("endpoint"):
        raise UsageError("-r http needs --endpoint URL (the search service, e.g. "
                          "http://127.0.0.1:8080/search)")
    settings = {n: v for n, v in flags.items() if v is not None}
    settings["headers"] = header_dict(list(flags.get("headers") or ()))
    return retriever_spec("http", settings, key=key)


def _refuse_inputs(output: Path | None, es: Any) -> None:
    """Refuse, before any retrieval, a run or sidecar path that is (inside) the set's source."""
    from searchbench.data import source_paths  # lazy: cli start-up (data, numpy)
    from searchbench.retrieval import sidecar_path  # lazy: cli start-up (retrieval, numpy)

    if output is not None:
        for target in (output, sidecar_path(output)):
            refuse_sources(target, source_paths(es))


def _write(res: Any, output: Path | None, info: dict[str, Any], quiet: bool) -> None:
    from searchbench.retrieval import write_run_and_sidecar  # lazy: cli start-up (retrieval, numpy)

    run, context = res.run, res.context
    meta = run.metadata
    if output is None:
        with tempfile.TemporaryDirectory() as tmp:
            run.to_file(Path(tmp) / "run.trec")
            sys.stdout.write((Path(tmp) / "run.trec").read_text(encoding="utf-8"))
        return
    side = write_run_and_sidecar(run, output, info)  # both files or neither
    if quiet:
        return
    shown = "  ".join(f"{m} {v:.4f}" for m, v in res.scores.items())
    flag = f" ({res.flag()})" if res.flag() else ""
    click.echo(f"wrote {output} ({run.n_queries} queries, {len(run)} results, level "
               f"{meta['level']}) and {side}")
    budget = context.get("within_budget")
    cut = (f"; within {meta['token_budget']} tokens: {budget['results']:.1f} results, "
           f"{budget['mean']:.0f} tokens (mean over all {budget['queries']} queries; "
           f"{budget['empty']} got nothing)" if budget else "")
    click.echo(f"{meta['retriever']}: {shown}{flag}  | context: {context['mean']:.0f} tokens "
               f"({meta.get('token_unit', 'tokens')}) "
               f"per query in the top {context['k']} (mean){cut}  | index "
               f"{sum(v for n, v in meta['timings'].items() if n.startswith('index_s')):.1f}s, "
               f"search {meta['timings'].get('search_s', 0.0):.1f}s")
