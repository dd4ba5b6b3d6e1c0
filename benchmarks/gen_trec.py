"""Generate a synthetic TREC qrels file and run file for the measures benchmark.

Per query: ``depth`` retrieved documents with strictly decreasing scores (no ties unless
``ties=True``), and 1–5 judged documents with grades 0–3 (at least one grade >= 1), about
90 % of them among the retrieved ones, more often near the top. Written vectorised, in
chunks of queries, so the 10⁸-line variant is generated in minutes with bounded memory.

    python benchmarks/gen_trec.py OUT_DIR --queries 10000 --depth 100
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

CHUNK = 20_000
MAX_JUDGED = 5
EXTRA_POSITIONS = 20  # judged positions beyond the run depth: judged but not retrieved
WRITE_OPTIONS = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")


@dataclass(frozen=True)
class Spec:
    """What to generate: sizes, corpus size, tie policy and seed."""

    n_queries: int
    depth: int = 100
    corpus: int = 10_000_000
    ties: bool = False
    seed: int = 0


def _strings(prefix: str, values: np.ndarray) -> pa.Array:
    """``prefix + str(value)`` for an integer array, vectorised through pyarrow."""
    digits = pa.array(values).cast(pa.string())
    return pa.compute.binary_join_element_wise(prefix, digits, "")


def _run_chunk(
    spec: Spec, rng: np.random.Generator, q0: int, n: int
) -> tuple[pa.Table, np.ndarray]:
    """Run lines for queries ``q0 .. q0+n-1`` and the (n, depth) doc-number matrix."""
    d = spec.depth
    base = rng.integers(0, spec.corpus, size=(n, 1))
    step = rng.integers(1, spec.corpus // d, size=(n, 1))
    docs = (base + np.arange(d) * step) % spec.corpus  # distinct within a query
    ranks = np.broadcast_to(np.arange(1, d + 1), (n, d))
    if spec.ties:
        scores = np.round(rng.random((n, d)), 1)
        scores = -np.sort(-scores, axis=1)
    else:
        scores = np.round(d - ranks + 0.9 * rng.random((n, d)), 4)
    qnums = np.repeat(np.arange(q0, q0 + n), d)
    table = pa.table({
        "qid": _strings("q", qnums),
        "iter": pa.array(np.full(n * d, "Q0")),
        "docid": _strings("D", docs.ravel()),
        "rank": pa.array(ranks.ravel()),
        "score": pa.array(scores.ravel()),
        "tag": pa.array(np.full(n * d, "gen")),
    })
    return table, docs


def _qrels_chunk(spec: Spec, rng: np.random.Generator, q0: int, docs: np.ndarray) -> pa.Table:
    """1–5 distinct judged docs per query, grades 0–3, the first one relevant."""
    n, d = docs.shape
    # weighted sampling without replacement (Efraimidis–Spirakis), favouring top ranks
    weights = 1.0 / np.sqrt(np.arange(1, d + EXTRA_POSITIONS + 1))
    keys = rng.random((n, d + EXTRA_POSITIONS)) ** (1.0 / weights)
    positions = np.argsort(-keys, axis=1)[:, :MAX_JUDGED]
    n_judged = rng.integers(1, MAX_JUDGED + 1, size=n)
    keep = np.arange(MAX_JUDGED) < n_judged[:, None]
    rows = np.repeat(np.arange(n), MAX_JUDGED).reshape(n, MAX_JUDGED)
    retrieved = positions < d
    unretrieved_doc = spec.corpus + (q0 + rows) * EXTRA_POSITIONS + (positions - d)
    doc = np.where(retrieved, docs[rows, np.minimum(positions, d - 1)], unretrieved_doc)
    grades = rng.integers(0, 4, size=(n, MAX_JUDGED))
    grades[:, 0] = np.maximum(grades[:, 0], 1)
    m = int(keep.sum())
    return pa.table({
        "qid": _strings("q", (q0 + rows)[keep]),
        "iter": pa.array(np.full(m, "0")),
        "docid": _strings("D", doc[keep]),
        "grade": pa.array(grades[keep]),
    })


def generate(spec: Spec, out_dir: Path) -> tuple[Path, Path]:
    """Write ``qrels.txt`` and ``run.trec`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = out_dir / "qrels.txt", out_dir / "run.trec"
    rng = np.random.default_rng(spec.seed)
    with open(run_path, "wb") as run_f, open(qrels_path, "wb") as qrels_f:
        for q0 in range(0, spec.n_queries, CHUNK):
            n = min(CHUNK, spec.n_queries - q0)
            run_table, docs = _run_chunk(spec, rng, q0, n)
            pacsv.write_csv(run_table, run_f, WRITE_OPTIONS)
            pacsv.write_csv(_qrels_chunk(spec, rng, q0, docs), qrels_f, WRITE_OPTIONS)
    return qrels_path, run_path


def main() -> None:
    """Command line: generate into OUT_DIR."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--ties", action="store_true", help="scores rounded to 0.1: many ties")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    spec = Spec(args.queries, args.depth, ties=args.ties, seed=args.seed)
    for path in generate(spec, args.out_dir):
        print(path)


if __name__ == "__main__":
    main()
