"""Pooling speed: ``sb.pool`` over big runs (ARCHITECTURE §12.3).

Three runs × Q queries × 1,000 results each (distinct random doc ids from a corpus of
N documents), pooled at depth 20 with a tenth of every query's pool already judged.
Prints the time of the pool alone (runs built and checked untimed is NOT what is
measured: the whole ``sb.pool`` call is timed, run validation included) and the pool size.

    python benchmarks/pool_speed.py --queries 10000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import searchbench as sb
from searchbench.data import Corpus, Document, EvalSet, Qrels, Queries, Query, Run


def _run(rng: np.random.Generator, n_queries: int, n_docs: int, k: int, name: str) -> Run:
    docs = np.argsort(rng.random((n_queries, n_docs)), axis=1)[:, :k]
    qids = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), k)
    dids = np.array([f"d{i}" for i in range(n_docs)], dtype=object)[docs.ravel()]
    scores = np.tile(np.arange(k, 0, -1, dtype=np.float64), n_queries)
    return Run.from_columns(qids, dids, scores, name=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=5_000)
    parser.add_argument("--k", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    runs = [_run(rng, args.queries, args.docs, args.k, f"r{i}") for i in range(3)]
    corpus = Corpus([Document(f"d{i}", "") for i in range(args.docs)])
    queries = Queries([Query(f"q{i}", "") for i in range(args.queries)])
    first = runs[0].truncate(2)  # the top 2 of run 0 judged already
    judged = Qrels.from_columns(first.query_ids[first.query_codes()],
                                first.doc_vocab[first.doc_codes], np.ones(len(first), int))
    es = EvalSet(corpus, queries, judged)
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = sb.pool(es, runs, depth=20)
        best = min(best, time.perf_counter() - t0)
    entries = sum(len(r) for r in runs)
    print(f"{len(runs)} runs × {args.queries:,} queries × {args.k:,} results "
          f"({entries:,} entries), depth 20: {len(result.items):,} pairs to judge, "
          f"{result.already_judged:,} already judged; best of {args.repeat}: {best:.2f} s")


if __name__ == "__main__":
    main()
