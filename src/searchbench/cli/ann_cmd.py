"""``searchbench ann``: exact ground truth, ANN parameter sweeps and their report.

knn_recall (agreement with exact search) is reported apart from relevance recall (R@k).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from .._util import refuse_sources, write_text
from ._output import (
    METRIC_OPTION,
    QUIET_OPTION,
    UsageError,
    console,
    evalset_argument,
    format_option,
    output_option,
    paths,
    refuse_existing,
    reported_warnings,
)


@click.group("ann", no_args_is_help=True)
def ann_app() -> None:
    """ANN index recall against exact search, sweeps and reports."""


def _at_least(n: int) -> dict[str, Any]:
    return {"type": click.IntRange(min=n), "metavar": "INTEGER"}


def _say(quiet: bool) -> Callable[[str], None]:
    err = console(stderr=True)
    return (lambda _m: None) if quiet else (lambda m: err.print(m))


@ann_app.command("groundtruth")
@click.option("--vectors", required=True, type=paths(), help="Corpus vectors: .npy, .fbin, "
              "ann-benchmarks .hdf5 (dataset 'train') or a searchbench embed folder.")
@click.option("--queries", required=True, type=paths(), help="Query vectors: .npy, .fbin, "
              ".hdf5 (dataset 'test') or a searchbench embed folder (its queries).")
@METRIC_OPTION
@click.option("-k", "k", default=100, **_at_least(1), help="Neighbours per query.")
@click.option("--extra", default=10, **_at_least(0),
              help="Neighbours kept beyond k, to resolve ties at position k.")
@output_option("Ground truth .npz to write.", default=Path("gt.npz"))
@click.option("--threads", **_at_least(1), help="Threads for the search (default: all cores).")
@click.option("--engine", default="auto", help="Candidate search: auto (faiss when "
              "installed), faiss or numpy; always verified in float64. 'ray': the corpus "
              "sharded over Ray workers (needs searchbench[ray]), the same result.")
@click.option("--shards", default=4, **_at_least(1),
              help="With --engine ray: corpus shards (row ranges), one Ray task each.")
@click.option("--address", metavar="ADDRESS",
              help="With --engine ray: the Ray cluster ('auto', host:6379, ray://host:10001);"
                   " default: a local Ray started for this command.")
@QUIET_OPTION
def groundtruth_command(vectors: Path, queries: Path, metric: str, k: int, extra: int,
                        output: Path, force: bool, threads: int | None, engine: str,
                        shards: int, address: str | None, quiet: bool) -> None:
    """Exact k nearest neighbours with provenance, as .npz: float32 candidates (faiss.knn
    or blocked numpy matmul), distances recomputed and verified in float64.

    Example: searchbench ann groundtruth --vectors corpus.npy --queries queries.npy
    --metric cosine -k 100 -o gt.npz
    """
    from ..ann import read_vectors  # lazy: cli start-up (ann, numpy)
    from ..knn import exact_knn  # lazy: cli start-up (knn, numpy)

    refuse_sources(output, [vectors, queries])  # the more telling message first
    refuse_existing(force, output)
    with reported_warnings(quiet):
        base = read_vectors(vectors, key="train")
        qv = read_vectors(queries, key="test")
        t0 = time.perf_counter()
        if engine == "ray":
            from ..distributed import sharded_knn  # lazy: cli start-up (distributed, numpy)

            source = vectors if vectors.suffix == ".npy" and vectors.is_file() else base
            gt = sharded_knn(source, qv, k, metric, extra=extra, shards=shards,
                             address=address, quiet=quiet or None)
        else:
            gt = exact_knn(base, qv, k, metric, extra=extra, threads=threads, engine=engine)
        gt.provenance.update(vectors=str(vectors), queries=str(queries))
        gt.save(output)
    _say(quiet)(f"{gt.n_queries} queries × {gt.depth} neighbours ({metric}) over "
                f"{base.shape[0]} vectors in {time.perf_counter() - t0:.2f}s")
    click.echo(str(output))


@ann_app.command("sweep")
@evalset_argument("dataset", required=False)
@click.option("--model", default="minilm", help="Encoder for the evaluation set.")
@click.option("--index", default="hnsw", help="hnsw, ivf, ivfpq (faiss) or hnswlib.")
@click.option("--param", multiple=True, metavar="NAME=V1,V2,…", help="NAME=V1,V2,… repeated, "
              "e.g. M=16,32 efSearch=16,64 nlist=256 nprobe=1,4 m=16 nbits=8.")
@METRIC_OPTION
@click.option("-k", "k", default=10, **_at_least(1), help="knn_recall@k.")
@click.option("--vectors", type=paths(), help="Raw corpus vectors instead of a set.")
@click.option("--queries", type=paths(), help="Raw query vectors.")
@click.option("--gt", "gt_path", type=paths(), help="Ground truth .npz (checked: metric, "
              "queries, corpus fingerprint).")
@click.option("--threads", **_at_least(1), help="Threads for batch search and builds "
              "(default: all cores).")
@click.option("--repeats", default=3, **_at_least(1), help="Batch runs per point, at least "
              "(more until the fastest 3 agree within 5 %, up to 4×); the best is reported.")
@click.option("--relevance/--no-relevance", default=True,
              help="ΔnDCG@10 and ΔR@100 vs exact on the judged queries.")
@output_option("Sweep JSON to write.", default=Path("sweep.json"))
@click.option("--db", "db_url", metavar="URL", help="Sweep your vector database's own search "
              "parameters instead, e.g. 'usearch://./idx?name=docs' (the collection must "
              "hold the evaluation set's corpus).")
@click.option("--filter", "filter_", metavar="EXPR", help="With --db: a filter in the "
              "store's own syntax; recall is then against its filtered exact search.")
@click.option("--concurrency", default=4, **_at_least(1), help="With --db: client threads "
              "for the concurrent QPS and latencies.")
@click.option("--expect-approximate/--expect-exact", default=None, help="With --db: whether "
              "the engine should answer approximately (default: when it declares an ANN "
              "index); exact answers then are flagged as silent exactness.")
@QUIET_OPTION
@click.pass_context
def sweep_command(ctx: click.Context, dataset: str | None, model: str, index: str,
                  param: tuple[str, ...], metric: str, k: int, vectors: Path | None,
                  queries: Path | None, gt_path: Path | None, threads: int | None,
                  repeats: int, relevance: bool, output: Path, force: bool,
                  db_url: str | None,
                  filter_: str | None, concurrency: int, expect_approximate: bool | None,
                  quiet: bool) -> None:
    """Sweep an ANN index: one build per build-parameter set, search parameters looped.

    EVALSET is embedded with --model; omit it with --vectors/--queries.

    Example: searchbench ann sweep pyref --model minilm --index hnsw --param M=16,32
    --param efSearch=16,32,64,128,256
    """
    from ..ann import index_spec as spec  # lazy: cli start-up (ann, numpy)
    from ..ann import parse_param, run_sweep  # lazy: cli start-up (ann, numpy)
    from ..knn import GroundTruth  # lazy: cli start-up (knn, numpy)

    refuse_sources(output, [p for p in (vectors, queries, gt_path) if p is not None])
    refuse_existing(force, output)
    if db_url is not None:
        _db_sweep(ctx, dataset, db_url, param, k, repeats, relevance, output, filter_,
                  concurrency, expect_approximate, quiet)
        return
    if filter_ is not None:
        raise UsageError("--filter applies to a database sweep: add --db URL")
    params = dict(parse_param(p) for p in param or [])
    spec(index).check(list(params))  # unknown names fail before any embedding
    gt = GroundTruth.load(gt_path) if gt_path else None
    say = _say(quiet)
    with reported_warnings(quiet):
        base, qv, ctx, about = _inputs(dataset, model, vectors, queries, relevance, quiet)
        result = run_sweep(base, qv, index, params, metric=metric, k=k, gt=gt,
                           threads=threads, repeats=repeats, relevance=ctx, progress=say,
                           quiet=quiet or None)
    result.meta["dataset"] = about
    result.save(output)
    click.echo(str(output))


def _db_sweep(ctx: click.Context, dataset: str | None, url: str, param: tuple[str, ...],
              k: int, repeats: int, relevance: bool, output: Path, filter_: str | None,
              concurrency: int, expect: bool | None, quiet: bool) -> None:
    """``ann sweep --db``: the store's search parameters, through its own client."""
    from ..ann import (  # lazy: cli start-up (ann, numpy)
        described,
        parse_db_param,
        run_db_sweep,
        search_grid,
        store_vectors,
    )
    from ..collections import load_evalset  # lazy: cli start-up (collections, numpy)
    from ..db import connect  # lazy: cli start-up (db, numpy)

    given = [n for n in ("index", "vectors", "queries", "gt_path", "threads", "metric")
             if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
    if given:
        flag = "--" + given[0].replace("gt_path", "gt")
        raise UsageError(f"{flag} does not apply with --db: the database holds the index, "
                          "the vectors and the metric")
    if not dataset:
        raise UsageError("--db needs the evaluation set whose corpus the collection holds "
                          "(pyref, beir:DIR, a folder)")
    params = dict(parse_db_param(p) for p in param)
    explicit = ctx.get_parameter_source("model") == ParameterSource.COMMANDLINE
    say = _say(quiet)
    with connect(url, must_exist=True) as store, reported_warnings(quiet):
        search_grid(store, params)  # unknown names fail before any embedding
        info = described(store)
        if filter_:  # so does a filter the engine rejects
            import numpy as np  # lazy: cli start-up (numpy)

            store.exact_search(np.ones((1, info["dim"]), np.float32), 1, filter=filter_)
        es = load_evalset(dataset, quiet=quiet)
        vec = store_vectors(store, es, ctx.params["model"] if explicit else None, quiet=quiet)
        say(f"{store.url.public}: {len(vec.unit_ids)} units ({vec.chunking}) of {es.name}")
        result = run_db_sweep(store, vec.queries, vec.unit_ids, params, base=vec.base, k=k,
                              filter=filter_, concurrency=concurrency, repeats=repeats,
                              relevance=vec.relevance() if relevance else None,
                              expect_approximate=expect, progress=say,
                              unit_docs=vec.unit_docs if vec.chunked else None,
                              quiet=quiet or None)
    result.meta["dataset"] = {"evalset": es.name, "spec": dataset, "model": vec.model,
                              "level": "chunk" if vec.chunked else "document",
                              "chunking": vec.chunking}
    result.save(output)
    click.echo(str(output))


def _inputs(dataset: str | None, model: str, vectors: Path | None, queries: Path | None,
            relevance: bool, quiet: bool) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Vectors (and a relevance context) from an evaluation set or from two files."""
    from ..ann import read_vectors  # lazy: cli start-up (ann, numpy)

    if vectors is not None or queries is not None:
        if vectors is None or queries is None or dataset:
            raise UsageError("give either an evaluation set or both --vectors and --queries")
        return (read_vectors(vectors, key="train"), read_vectors(queries, key="test"), None,
                {"vectors": str(vectors), "queries": str(queries)})
    if not dataset:
        raise UsageError("no data: give an evaluation set (pyref, beir:DIR, a folder) or "
                          "--vectors and --queries")
    from ..ann import embed_evalset  # lazy: cli start-up (ann, numpy)

    emb = embed_evalset(dataset, model, quiet=quiet)
    ctx = emb.relevance() if relevance else None
    return emb.base, emb.queries, ctx, {"evalset": emb.name, "spec": dataset,
                                        "model": emb.model, "level": "document"}


@ann_app.command("report")
@click.argument("sweeps", nargs=-1, required=True, type=paths(),
                help="One or more sweep JSON files.")
@output_option("HTML page (self-contained); an earlier page there is replaced, and said so.",
               default=Path("ann_report.html"), replaces_own=True)
@format_option("text", "markdown", default="text", flag_aliases={"--markdown": "markdown"},
               help="What to print besides the page's path: nothing more (text) or the "
                    "tables as Markdown.")
@click.option("--open", "open_", is_flag=True, help="Open the page in a browser.")
@click.option("--title", default="ANN sweep")
def report_command(sweeps: tuple[Path, ...], output: Path, output_format: str, open_: bool,
                   title: str) -> None:
    """Recall–QPS Pareto plot, table of all points and relevance-cost table.

    Example: searchbench ann report sweep.json --open
    """
    from ..ann import SweepResult, render_html, render_markdown  # lazy: cli start-up (ann, numpy)

    refuse_sources(output, sweeps)
    result = SweepResult.merge([SweepResult.load(p) for p in sweeps])
    again = output.exists()
    write_text(output, render_html(result, title))
    if output_format == "markdown":
        click.echo(render_markdown(result))
    click.echo(str(output))
    if again:
        click.echo(f"note: replaced the earlier {output}", err=True)
    if open_:
        import webbrowser  # lazy: cli start-up (webbrowser)

        webbrowser.open(output.resolve().as_uri())
