"""Retrieval speed, side by side in one process (numbers depend on the machine's load).

    python benchmarks/retrieval_speed.py [--data ../shared/data] [--texts 256] [--skip-embed]

1. BM25 on SciFact: searchbench's wrapper vs calling bm25s directly (index and query
   time; the wrapper must add < 10 %).
2. Exact dense search GFLOP/s (2·n_queries·n_docs·dim flops) of ``Dense.search`` with the
   numpy-blocked engine, the ann exact kernel and faiss flat, against a 4096×4096 float32
   matmul on the same machine.
3. Embedding throughput (texts/s) of the packaged MiniLM with torch, ONNX and int8 ONNX on
   the same SciFact texts, with each backend's cosine agreement to torch.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import searchbench as sb
from searchbench.data.beir import read_beir
from searchbench.retrieval.encoders import Encoder


def best_of(fn, repeat: int = 3) -> float:
    """Fastest wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bm25_overhead(es) -> None:
    import bm25s
    import Stemmer

    texts = es.corpus.texts(with_title=True)
    queries = es.queries.texts()
    stem = Stemmer.Stemmer("english")

    def direct_index():
        model = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
        model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False),
                    show_progress=False)
        return model

    model = direct_index()

    def direct_query():
        qt = bm25s.tokenize(queries, stopwords="en", stemmer=stem, show_progress=False)
        model.retrieve(qt, k=100, show_progress=False, n_threads=1)

    ours = sb.retrieval.BM25()
    ours.index(es.corpus)
    rows = [("index", best_of(direct_index), best_of(lambda: ours.index(es.corpus))),
            ("search k=100", best_of(direct_query),
             best_of(lambda: ours.search(es.queries, k=100)))]
    for what, d, o in rows:
        print(f"bm25 {what:13s} bm25s {d * 1000:8.1f} ms  searchbench {o * 1000:8.1f} ms  "
              f"overhead {100 * (o / d - 1):+6.1f} %")


class _Stored(Encoder):
    """Returns stored vectors by text (to time search without an encoder)."""

    name = "stored"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        super().__init__(cache=False)
        self.vectors = vectors

    @property
    def identity(self) -> str:
        return "stored"

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def exact_search_gflops(n_docs: int = 100_000, n_queries: int = 1_000, dim: int = 384) -> None:
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((n_docs, dim), dtype=np.float32)
    qs = rng.standard_normal((n_queries, dim), dtype=np.float32)
    a = rng.standard_normal((4096, 4096), dtype=np.float32)
    mm = best_of(lambda: a @ a)
    peak = 2 * 4096 ** 3 / mm / 1e9
    print(f"matmul 4096x4096 float32: {peak:7.1f} GFLOP/s (the machine's BLAS limit)")
    d_ids = [f"d{i}" for i in range(n_docs)]
    q_ids = [f"q{i}" for i in range(n_queries)]
    vecs = dict(zip(d_ids, docs, strict=True)) | dict(zip(q_ids, qs, strict=True))
    corpus = sb.Corpus.from_dict({i: i for i in d_ids})
    queries = sb.Queries.from_dict({i: i for i in q_ids})
    flops = 2 * n_docs * n_queries * dim
    for backend in ("numpy", "kernel", "faiss"):
        dense = sb.retrieval.Dense(_Stored(vecs), metric="ip", backend=backend,
                                   with_title=False).index(corpus)
        t = best_of(lambda d=dense: d.search(queries, k=100), repeat=2)
        print(f"exact search ip {n_queries}x{n_docs}x{dim} k=100 [{backend:6s}]: "
              f"{t:6.2f} s = {flops / t / 1e9:7.1f} GFLOP/s ({100 * flops / t / 1e9 / peak:.0f} "
              "% of matmul)")


def embedding_throughput(es, n: int) -> None:
    texts = es.corpus.texts(with_title=True)[:n]
    backends = [("torch", "minilm"), ("onnx", "onnx:minilm"), ("onnx-int8", "onnx-int8:minilm")]
    ref = None
    for label, spec in backends:
        enc = sb.retrieval.encoder(spec, cache=False)
        enc._embed(texts[:8])  # warm-up
        t0 = time.perf_counter()
        vecs = enc._embed(texts)
        dt = time.perf_counter() - t0
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        ref = vecs if ref is None else ref
        cos = (vecs * ref).sum(axis=1)
        print(f"embed {label:9s} {n / dt:7.1f} texts/s  cosine to torch: mean {cos.mean():.5f} "
              f"min {cos.min():.5f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"))
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--skip-embed", action="store_true")
    args = ap.parse_args()
    from searchbench._util import library_versions

    vers = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f}; {vers}")
    es = read_beir(Path(args.data) / "beir" / "scifact")
    bm25_overhead(es)
    exact_search_gflops()
    if not args.skip_embed:
        embedding_throughput(es, args.texts)


if __name__ == "__main__":
    main()
