"""Evaluation-set loading: time per shared collection, and peak memory of a large corpus.

Usage: python benchmarks/evalset_load.py [--data ../shared/data] [--mb 200]

Prints, for every shared collection, the load time through ``sb.load_evalset`` and the
counts; then writes a synthetic ``corpus.jsonl`` of ``--mb`` megabytes to a temp folder
and reports the peak traced memory of ``read_corpus_jsonl`` against the file size, side
by side with the naive ``read()`` + ``json.loads`` per line (which holds the file twice).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

import searchbench as sb
from searchbench.data.jsonl import read_corpus_jsonl

SPECS = ["cranfield:cranfield", "cisi:cisi", "med:med", "cacm:cacm", "vaswani:vaswani",
         "beir:beir/scifact", "beir:beir/arguana"]


def load_times(data: Path, repeat: int = 3) -> None:
    print(f"{'collection':<16}{'docs':>8}{'queries':>9}{'judgments':>11}{'load s (best of 3)':>21}")
    for spec in SPECS:
        prefix, folder = spec.split(":")
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                es = sb.load_evalset(f"{prefix}:{data / folder}")
            times.append(time.perf_counter() - t0)
        print(f"{folder:<16}{len(es.corpus):>8}{len(es.queries):>9}{len(es.qrels):>11}"
              f"{min(times):>21.3f}")


def _write_corpus(path: Path, megabytes: int) -> int:
    rng = np.random.default_rng(0)
    words = np.array(["the", "of", "search", "vector", "index", "recall", "query", "document",
                      "rank", "score", "embedding", "chunk", "model", "lexical", "dense"])
    with open(path, "w") as fh:
        i = 0
        while fh.tell() < megabytes * 1_000_000:
            text = " ".join(words[rng.integers(0, len(words), 300)])
            fh.write(json.dumps({"id": f"doc{i}", "title": f"title {i}", "text": text}) + "\n")
            i += 1
    return i


def _peak(fn) -> tuple[float, float, object]:
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, seconds, out


def _naive(path: Path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh.read().splitlines()]


def streaming(megabytes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        n = _write_corpus(path, megabytes)
        size = path.stat().st_size
        print(f"\nsynthetic corpus.jsonl: {size / 1e6:.0f} MB, {n} documents "
              "(tracemalloc slows both readers alike)")
        for name, fn in [("read_corpus_jsonl (streamed)", lambda: read_corpus_jsonl(path)),
                         ("read() + json.loads per line", lambda: _naive(path))]:
            peak, seconds, out = _peak(fn)
            print(f"{name:<32} peak {peak / 1e6:8.0f} MB = {peak / size:4.2f} x file   "
                  f"{seconds:6.1f} s")
            del out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(os.environ.get(
        "SEARCHBENCH_TEST_DATA", "../shared/data")))
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    print(f"searchbench {sb.__version__}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()} {os.cpu_count()} cores")
    load_times(args.data)
    streaming(args.mb)


if __name__ == "__main__":
    main()
