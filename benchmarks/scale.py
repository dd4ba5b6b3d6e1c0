"""Scale: in-memory vs streaming vs Ray evaluation, embedding and sharded ground truth.

Three parts, each printing what it measured (results in benchmarks/README.md):

    python benchmarks/scale.py eval --queries 1000000 --dir /tmp/scale   # 10⁸ run lines
    python benchmarks/scale.py embed --texts 1024
    python benchmarks/scale.py groundtruth --base 1000000 --dim 384 --queries 100

``eval`` generates qrels and a run (``gen_trec.py``: ``--queries`` × 100 lines) plus the same
run as Parquet (converted in bounded memory), then runs ``searchbench eval`` three ways as
child processes under ``/usr/bin/time -v``: in memory, ``--stream``, and ``--engine ray``
(a local Ray started by the command) on the Parquet run. It reports wall time, the peak
resident memory of the largest process (for Ray: the driver or one worker; the object
store's shared memory is not in it) and whether the means are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
MEASURES = ["-m", "nDCG@10", "-m", "R@100", "-m", "RR@10", "-m", "AP"]


def _timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """``(wall s, CPU s, peak RSS MiB, stdout)`` of a child process under /usr/bin/time -v
    (CPU: user + system of the process and its waited-for children)."""
    done = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    rss = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1])
    wall = re.search(r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = (float(x) if x else 0.0 for x in wall.groups())
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr)[1])
              for kind in ("User", "System"))
    return hours * 3600 + minutes * 60 + seconds, cpu, rss / 1024, done.stdout


def _to_parquet(run: Path, out: Path) -> None:
    """The TREC run as Parquet (query_id, doc_id, score), streamed: bounded memory."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    reader = pacsv.open_csv(
        run, read_options=pacsv.ReadOptions(column_names=["query_id", "q0", "doc_id", "rank",
                                                          "score", "tag"],
                                            block_size=1 << 26),
        parse_options=pacsv.ParseOptions(delimiter=" "),
        convert_options=pacsv.ConvertOptions(include_columns=["query_id", "doc_id", "score"],
                                             column_types={"score": pa.float64()}))
    schema = pa.schema([("query_id", pa.string()), ("doc_id", pa.string()),
                        ("score", pa.float64())])
    with pq.ParquetWriter(out, schema) as writer:
        for batch in reader:
            writer.write_table(pa.Table.from_batches([batch]).cast(schema),
                               row_group_size=1 << 20)


def bench_eval(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    from gen_trec import Spec, generate

    folder = Path(args.dir)
    qrels, run = folder / "qrels.txt", folder / "run.trec"
    parquet = folder / "run.parquet"
    if not run.exists() or args.regenerate:
        t0 = time.perf_counter()
        generate(Spec(args.queries, 100, ties=True), folder)
        print(f"generated {args.queries} queries × 100 lines in {time.perf_counter() - t0:.0f}"
              f" s: {run.stat().st_size / 2**30:.2f} GiB")
    if not parquet.exists() or args.regenerate:
        _to_parquet(run, parquet)
    lines = args.queries * 100
    print(f"run: {lines:,} lines, {run.stat().st_size / 2**30:.2f} GiB text, "
          f"{parquet.stat().st_size / 2**30:.2f} GiB Parquet")
    base = [sys.executable, "-m", "searchbench", "eval", str(qrels)]
    ways = {"in memory": [*base, str(run)], "--stream": [*base, str(run), "--stream"],
            "--engine ray (Parquet)": [*base, str(parquet), "--engine", "ray"]}
    means = {}
    print(f"{'way':<24} {'wall s':>8} {'CPU s':>8} {'peak RSS MiB':>13}")
    for name, cmd in ways.items():
        key = "memory" if name == "in memory" else "stream" if "stream" in name else "ray"
        if (key == "ray" and args.no_ray) or (args.only and key not in args.only):
            continue
        wall, cpu, rss, out = _timed([*cmd, *MEASURES, "-f", "json", "--quiet"])
        means[name] = json.loads(out)["measures"]
        print(f"{name:<24} {wall:8.1f} {cpu:8.1f} {rss:13.0f}", flush=True)
    first = next(iter(means.values()))
    print("means:", first)
    print("identical means:", all(m == first for m in means.values()))


def _texts(n: int) -> list[str]:
    """``n`` passages of about 80 words cut from the built-in pyref corpus."""
    from searchbench.collections.registry import load_evalset

    words = " ".join(load_evalset("pyref").corpus.texts(True)).split()
    return [" ".join(words[(i * 80) % (len(words) - 80):][:80]) for i in range(n)]


def bench_embed(args: argparse.Namespace) -> None:
    import ray

    from searchbench.distributed import embed_corpus
    from searchbench.retrieval.encoders import encoder
    from searchbench.retrieval.shards import EmbeddingFolder

    texts = _texts(args.texts)
    ids = [f"t{i}" for i in range(len(texts))]
    enc = encoder(args.model, cache=False, quiet=True)
    enc.encode_documents(texts[:8])  # warm up
    t0 = time.perf_counter()
    single = enc.encode_documents(texts)
    local = time.perf_counter() - t0
    print(f"{len(texts)} texts of ~80 words, model {args.model}")
    print(f"single process: {local:.1f} s, {len(texts) / local:.1f} texts/s")
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = EmbeddingFolder(tmp, enc.identity)
            stats = embed_corpus(args.model, enc.identity, folder, "corpus", ids, texts,
                                 actors=args.actors, quiet=True)
            folder.write_manifest(corpus_rows=len(texts), queries_rows=0)
            from searchbench.retrieval.shards import read_embedded

            got = read_embedded(tmp)[0]
    finally:
        ray.shutdown()
    per_actor = stats.rate / stats.actors
    print(f"Ray local ({stats.actors} actors × {0.5} CPU): {stats.seconds:.1f} s, "
          f"{stats.rate:.1f} texts/s ({per_actor:.1f} per actor; pipeline start included)")
    print(f"max |Ray - single| = {float(np.abs(got - single).max()):.2e}")
    for n in (8, 32, 128):
        print(f"projected with {n} actors (one core or GPU each, same per-actor rate): "
              f"{per_actor * n:,.0f} texts/s")


def bench_groundtruth(args: argparse.Namespace) -> None:
    import ray

    from searchbench.distributed import sharded_knn
    from searchbench.knn import exact_knn

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"base-{args.base}x{args.dim}.npy"
    rng = np.random.default_rng(0)
    if not path.exists():
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                        shape=(args.base, args.dim))
        for at in range(0, args.base, 100_000):
            n = min(100_000, args.base - at)
            out[at:at + n] = rng.standard_normal((n, args.dim), dtype=np.float32)
        out.flush()
        del out
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    base = np.load(path, mmap_mode="r")
    t0 = time.perf_counter()
    single = exact_knn(base, queries, args.k, "cosine")
    t_single = time.perf_counter() - t0
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        sharded_knn(path, queries[:2], args.k, "cosine", shards=args.shards, quiet=True)  # warm
        t0 = time.perf_counter()
        sharded = sharded_knn(path, queries, args.k, "cosine", shards=args.shards, quiet=True)
        t_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
    print(f"{args.base:,} × {args.dim} corpus (float32, {path.stat().st_size / 2**30:.2f} GiB), "
          f"{args.queries} queries, top-{args.k} + 10, cosine")
    print(f"single process exact_knn: {t_single:.1f} s")
    print(f"Ray local, {args.shards} shards (Ray started, workers warm): {t_ray:.1f} s")
    print("identical ids:", np.array_equal(single.ids, sharded.ids),
          "identical distances:", np.array_equal(single.distances, sharded.distances))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    ev = sub.add_parser("eval")
    ev.add_argument("--queries", type=int, default=100_000)
    ev.add_argument("--dir", default="/tmp/searchbench-scale")
    ev.add_argument("--regenerate", action="store_true")
    ev.add_argument("--no-ray", action="store_true")
    ev.add_argument("--only", choices=["memory", "stream", "ray"], action="append",
                    help="run only these ways (repeatable)")
    em = sub.add_parser("embed")
    em.add_argument("--texts", type=int, default=1024)
    em.add_argument("--model", default="minilm")
    em.add_argument("--actors", type=int, default=None)
    gt = sub.add_parser("groundtruth")
    gt.add_argument("--base", type=int, default=1_000_000)
    gt.add_argument("--dim", type=int, default=384)
    gt.add_argument("--queries", type=int, default=100)
    gt.add_argument("-k", type=int, default=100)
    gt.add_argument("--shards", type=int, default=4)
    gt.add_argument("--dir", default="/tmp/searchbench-scale")
    args = parser.parse_args()
    {"eval": bench_eval, "embed": bench_embed, "groundtruth": bench_groundtruth}[args.part](args)


if __name__ == "__main__":
    main()
