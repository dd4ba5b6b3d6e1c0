"""Throughput and latency of the judging app: concurrent annotators posting judgments.

A synthetic native set (``--docs`` documents, one query pool over all of them) is written to
a temporary folder, ``searchbench judge serve`` starts on 127.0.0.1 (a free port) as a
subprocess, and ``--annotators`` threads post ``--judgments`` judgments in all, each over
its own keep-alive HTTP connection with a Bearer token. Every judgment is committed to
SQLite (WAL, synchronous=FULL) before its response returns, so the figures include the
fsync. Printed: judgments/s over the whole run (first request to last answer), latency
median / p95 / p99 / max, and the rows in the store (must equal the judgments posted).

    PYTHONPATH=src python benchmarks/judging_load.py [--annotators 20] [--judgments 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from searchbench.judging.store import JudgmentStore


def write_set(root: Path, n_docs: int) -> tuple[Path, Path]:
    folder = root / "set"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": f"document {i} about cats and dogs"}) + "\n"
        for i in range(n_docs)))
    (folder / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": "cats"}) + "\n")
    pool = root / "pool.jsonl"
    pool.write_text("".join(json.dumps({"query_id": "q1", "doc_id": f"d{i}", "n_runs": 1,
                                        "best_rank": i + 1}) + "\n" for i in range(n_docs)))
    return folder, pool


def start(folder: Path, pool: Path, names: list[str]) -> tuple[subprocess.Popen, str, dict]:
    args = [sys.executable, "-m", "searchbench", "judge", "serve", str(folder), "--pool",
            str(pool)]
    for name in names:
        args += ["--annotator", name]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    tokens: dict[str, str] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        if m := re.match(r"\s+(\S+)\s+\S+/login#token=(\S+)", line):
            tokens[m.group(1)] = m.group(2)
        if m := re.search(r"Serving at (\S+?)/ until", line):
            return proc, m.group(1), tokens
    raise SystemExit("the app did not start")


def annotate(base: str, token: str, n: int, n_docs: int, seed: int,
             latencies: list[float]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"},
                      timeout=30) as client:
        for i in range(n):
            body = {"query_id": "q1", "doc_id": f"d{rng.randrange(n_docs)}",
                    "grade": rng.randint(0, 3), "client_key": f"{seed}-{i}"}
            t0 = time.perf_counter()
            r = client.post("/api/judgment", json=body)
            latencies.append(time.perf_counter() - t0)
            r.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--judgments", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=200)
    args = parser.parse_args()
    names = [f"a{i:02d}" for i in range(args.annotators)]
    per = args.judgments // args.annotators
    with tempfile.TemporaryDirectory() as tmp:
        folder, pool = write_set(Path(tmp), args.docs)
        proc, base, tokens = start(folder, pool, names)
        try:
            lists: list[list[float]] = [[] for _ in names]
            threads = [threading.Thread(target=annotate, args=(base, tokens[n], per,
                                                                args.docs, i, lists[i]))
                       for i, n in enumerate(names)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait()
        with JudgmentStore(folder) as store:
            rows = store.count()
    lat = sorted(x for xs in lists for x in xs)
    q = statistics.quantiles(lat, n=100)
    print(f"{len(lat)} judgments by {len(names)} annotators in {wall:.2f} s: "
          f"{len(lat) / wall:.0f} judgments/s")
    print(f"latency ms: median {statistics.median(lat) * 1e3:.1f}, p95 {q[94] * 1e3:.1f}, "
          f"p99 {q[98] * 1e3:.1f}, max {lat[-1] * 1e3:.1f}")
    print(f"rows in the store: {rows} (posted {len(lat)})")


if __name__ == "__main__":
    main()
