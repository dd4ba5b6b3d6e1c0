"""Reproduce published BEIR SciFact scores with searchbench's own retrievers.

    python benchmarks/reproduce_beir.py [--data ../shared/data] [--skip-dense]

Prints, side by side, the published nDCG@10 and ours for:
- BM25 (Lucene, k1=0.9, b=0.4, English stop words + Snowball, title + text) vs 0.676
  (bm25s authors' BEIR table);
- all-MiniLM-L6-v2 (packaged, exact cosine search, title + " " + text) vs 0.6451
  (MTEB leaderboard). Embedding the 5,183 documents takes ~10 min on 2 CPUs; embeddings go
  to the searchbench cache, so a second run takes seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import searchbench as sb
from searchbench.data.beir import read_beir

PUBLISHED = {"bm25": (0.676, 0.005, "bm25s BEIR table"),
             "minilm": (0.6451, 0.002, "MTEB leaderboard, all-MiniLM-L6-v2")}


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("numpy", "bm25s", "PyStemmer", "torch", "sentence-transformers", "faiss-cpu"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} -")
    return ", ".join(out)


def _row(name: str, retriever, es) -> None:
    t0 = time.perf_counter()
    retriever.index(es.corpus)
    t1 = time.perf_counter()
    run = retriever.search(es.queries, k=100)
    t2 = time.perf_counter()
    res = sb.evaluate(es.qrels, run, ["nDCG@10", "R@100"]).mean
    pub, tol, src = PUBLISHED[name]
    ok = "OK" if abs(res["nDCG@10"] - pub) <= tol else "MISMATCH"
    print(f"{name:8s} nDCG@10 ours {res['nDCG@10']:.4f}  published {pub:.4f} ({src}) "
          f"diff {res['nDCG@10'] - pub:+.4f} tol ±{tol} {ok} | R@100 {res['R@100']:.4f} | "
          f"index {t1 - t0:.1f}s search {t2 - t1:.2f}s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"))
    ap.add_argument("--skip-dense", action="store_true")
    args = ap.parse_args()
    es = read_beir(Path(args.data) / "beir" / "scifact")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python "
          f"{platform.python_version()}; {_versions()}")
    print(f"data: {es!r}")
    _row("bm25", sb.retrieval.BM25(), es)
    if not args.skip_dense:
        _row("minilm", sb.retrieval.Dense(sb.retrieval.encoder("minilm"), metric="cos"), es)


if __name__ == "__main__":
    main()
