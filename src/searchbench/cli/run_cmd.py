"""``searchbench run``: produce a run with BM25, dense or hybrid retrieval (+ provenance)."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ._output import QUIET_OPTION, reported_warnings
from .main import app


class RetrieverKind(StrEnum):
    bm25 = "bm25"
    dense = "dense"
    hybrid = "hybrid"


@app.command("run")
def run_command(
    spec: str = typer.Argument(..., help="Evaluation set: pyref, beir:DIR, a native folder…"),
    retriever: RetrieverKind = typer.Option(RetrieverKind.bm25, "--retriever", "-r"),
    model: str = typer.Option("minilm", "--model", help="Encoder: minilm, static, "
                              "sentence-transformers:/path, model2vec:/path, openai:NAME."),
    metric: str = typer.Option("cos", "--metric", help="Dense similarity: cos, ip or l2."),
    backend: str = typer.Option("auto", "--backend", help="Exact search: auto, numpy, kernel "
                                "or faiss (same results up to float32 rounding)."),
    fusion: str = typer.Option("rrf", "--fusion", help="Hybrid fusion: rrf or weighted."),
    rrf_k: float = typer.Option(60.0, "--rrf-k", help="RRF constant k."),
    weight: float = typer.Option(0.5, "--weight", help="Weighted fusion: weight of BM25."),
    norm: str = typer.Option("minmax", "--norm", help="Weighted fusion: minmax or zscore."),
    chunk: str | None = typer.Option(None, "--chunk", help="tokens:SIZE[:OVERLAP], "
                                     "sentences:N[:OVERLAP] or recursive:MAX_TOKENS."),
    level: str = typer.Option("doc", "--level", help="doc (a doc ranks at its best chunk) "
                              "or chunk."),
    k: int = typer.Option(100, "-k", "--k", min=1, help="Results per query."),
    token_budget: int | None = typer.Option(None, "--token-budget", min=1, help="Cut each "
                                            "ranking to the results that fit N tokens."),
    output: Path | None = typer.Option(None, "-o", "--output", help="TREC run file to write "
                                       "(+ OUTPUT.json provenance); default: stdout."),
    k1: float = typer.Option(0.9, "--k1"),
    b: float = typer.Option(0.4, "--b"),
    bm25_method: str = typer.Option("lucene", "--bm25-method"),
    stopwords: str = typer.Option("en", "--stopwords", help="en or none."),
    stemmer: str = typer.Option("english", "--stemmer", help="Snowball language or none."),
    no_title: bool = typer.Option(False, "--no-title", help="Index text without title."),
    query_prefix: str = typer.Option("", "--query-prefix", help="e.g. 'query: '."),
    doc_prefix: str = typer.Option("", "--doc-prefix", help="e.g. 'passage: '."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Environment variable holding the API key."),
    retries: int = typer.Option(4, "--retries", min=0, help="Endpoint retries (backoff "
                                "1 s, 2 s, 4 s, …)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    tune_weight: bool = typer.Option(False, "--tune-weight", help="Weighted hybrid: pick "
                                     "BM25's weight on half the judged queries (nDCG@10), "
                                     "report it on both halves."),
    quiet: bool = QUIET_OPTION,
) -> None:
    """Retrieve for every query of SPEC and write a TREC run with a provenance sidecar.

    Example: searchbench run beir:../shared/data/beir/scifact -r hybrid --chunk tokens:256:32
    """
    import searchbench as sb
    from searchbench.retrieval import provenance as prov

    opts = locals()
    with reported_warnings(quiet):
        t0 = time.perf_counter()
        es = sb.load_evalset(spec, quiet=quiet)
        queries = es.judged_queries if es.exclude_unjudged else es.queries
        r = _build(opts)
        r.index(es.corpus, chunker=sb.retrieval.parse_chunker(chunk))
        sweep = _tune(r, es, queries, k, level) if tune_weight else None
        run = es.prepare_run(r.search(queries, k=k, level=level))
        counts = _token_counts(r, run, level)
        context = sb.retrieval.context_tokens(run, counts, k, queries.ids)
        if token_budget:
            run = sb.retrieval.budget_run(run, counts, token_budget)
            context["within_budget"] = sb.retrieval.context_tokens(run, counts, k, queries.ids)
        scores = _score(es, r, run, level)
    run.metadata["context_tokens"] = context
    extra = {"scores": scores, "wall_s": time.perf_counter() - t0}
    if sweep is not None:
        extra["weight_sweep"] = dataclasses.asdict(sweep)
        if not quiet:
            typer.echo(f"weight sweep: {sweep}")
    _write(run, output, prov.provenance(run, es, spec, extra), scores, context, quiet)


def _tune(r: Any, es: Any, queries: Any, k: int, level: str) -> Any:
    """Choose the weighted hybrid's BM25 weight on a tune split (sets ``r.weights``)."""
    import searchbench as sb
    from searchbench.errors import ConfigError

    if not isinstance(r, sb.retrieval.Hybrid) or r.fusion != "weighted":
        raise ConfigError("--tune-weight needs --retriever hybrid --fusion weighted")
    runs = tuple(x.search(queries, max(k, r.depth or 100), level) for x in r.retrievers)
    sweep = sb.retrieval.sweep_weights(runs, _qrels(es, r, level), "nDCG@10", norm=r.norm)
    r.weights = [sweep.weight, 1 - sweep.weight]
    return sweep


def _build(o: dict[str, Any]) -> Any:
    """The retriever the options describe."""
    import searchbench as sb

    bm25 = sb.retrieval.BM25(k1=o["k1"], b=o["b"], method=o["bm25_method"],
                             stopwords=None if o["stopwords"] == "none" else o["stopwords"],
                             stemmer=None if o["stemmer"] == "none" else o["stemmer"],
                             with_title=not o["no_title"])
    if o["retriever"] == RetrieverKind.bm25:
        return bm25
    kw: dict[str, Any] = {"query_prefix": o["query_prefix"], "doc_prefix": o["doc_prefix"],
                          "quiet": o["quiet"] or None}
    if o["cache_dir"]:
        kw["cache"] = o["cache_dir"]
    if o["model"].startswith("openai:"):
        kw.update(endpoint=o["endpoint"], api_key_env=o["api_key_env"], retries=o["retries"])
    dense = sb.retrieval.Dense(sb.retrieval.encoder(o["model"], **kw), metric=o["metric"],
                               backend=o["backend"], with_title=not o["no_title"])
    if o["retriever"] == RetrieverKind.dense:
        return dense
    return sb.retrieval.Hybrid([bm25, dense], fusion=o["fusion"], rrf_k=o["rrf_k"],
                               weights=[o["weight"], 1 - o["weight"]], norm=o["norm"])


def _token_counts(r: Any, run: Any, level: str) -> dict[str, int]:
    """Tokens of every retrieved result (the encoder's tokenizer, else words)."""
    import numpy as np

    from searchbench.retrieval.chunking import whitespace_offsets

    enc = getattr(r, "encoder", None) or next(
        (x.encoder for x in getattr(r, "retrievers", []) if hasattr(x, "encoder")), None)
    count = enc.token_offsets if enc else whitespace_offsets
    texts = r.context_texts(level)
    used = run.doc_vocab[np.unique(run.doc_codes)].astype(str).tolist()
    return {i: len(count(texts[i])) for i in used}


def _score(es: Any, r: Any, run: Any, level: str) -> dict[str, float]:
    """nDCG@10 and R@100 at the run's level (chunk level: judged by evidence overlap)."""
    import searchbench as sb

    if not len(es.qrels):
        return {}
    return dict(sb.evaluate(_qrels(es, r, level), run, ["nDCG@10", "R@100"]).mean)


def _qrels(es: Any, r: Any, level: str) -> Any:
    """The judgments at the run's level (chunk level: by overlap with evidence spans)."""
    import searchbench as sb

    if level == "chunk" and r.units.chunks is not None:
        return sb.retrieval.chunk_qrels(r.units.chunks, es.qrels, es.evidence)
    return es.qrels


def _write(run: Any, output: Path | None, info: dict[str, Any], scores: dict[str, float],
           context: dict[str, float], quiet: bool) -> None:
    from searchbench.retrieval.provenance import write_sidecar

    meta = run.metadata
    if output is None:
        with tempfile.TemporaryDirectory() as tmp:
            run.to_file(Path(tmp) / "run.trec")
            sys.stdout.write((Path(tmp) / "run.trec").read_text(encoding="utf-8"))
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    run.to_file(output)
    side = write_sidecar(output, info)
    if quiet:
        return
    shown = "  ".join(f"{m} {v:.4f}" for m, v in scores.items())
    typer.echo(f"wrote {output} ({run.n_queries} queries, {len(run)} results, level "
               f"{meta['level']}) and {side}")
    budget = context.get("within_budget")
    cut = (f"; within {meta['token_budget']} tokens: {budget['results']:.1f} results, "
           f"{budget['mean']:.0f} tokens (mean over all {budget['queries']} queries; "
           f"{budget['empty']} got nothing)" if budget else "")
    typer.echo(f"{meta['retriever']}: {shown}  | context: {context['mean']:.0f} tokens "
               f"per query in the top {context['k']} (mean){cut}  | index "
               f"{sum(v for n, v in meta['timings'].items() if n.startswith('index_s')):.1f}s, "
               f"search {meta['timings'].get('search_s', 0.0):.1f}s")
