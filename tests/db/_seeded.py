"""Seeded data and reference checks shared by the engine tests (DuckDB, Redis, Milvus).

Reference answers come from :func:`searchbench.knn.exact_knn` (float64-verified numpy/faiss
exact search), never from the engine under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from searchbench.db import StoreHits
from searchbench.knn import exact_knn

# ids an engine must keep byte for byte: chunk ids, spaces, quotes, glob and URL characters
ODD_IDS = ["doc#0-120", "doc#120-240", "a b/ü#3-9", "it's \"quoted\"", "x*?[]:{}", "k=v&w"]


def corpus(n: int = 3000, dim: int = 64, seed: int = 7) -> tuple[list[str], np.ndarray]:
    """``n`` seeded Gaussian vectors (float32) and string ids ``d<i>#0-120`` (+ odd ones)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    ids = [f"d{i:05d}#0-120" for i in range(n - len(ODD_IDS))] + ODD_IDS
    return ids, vectors


def queries(vectors: np.ndarray, nq: int = 40, seed: int = 8) -> np.ndarray:
    """Queries near stored vectors (so neighbours are meaningful), float32."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(vectors), nq, replace=False)
    noise = rng.standard_normal((nq, vectors.shape[1])).astype(np.float32)
    return (vectors[rows] + 0.5 * noise).astype(np.float32)


def categories(n: int) -> list[dict[str, object]]:
    """Metadata: ``cat`` = "rare" for every 50th row (2 %), else "common"; ``n`` = row."""
    return [{"cat": "rare" if i % 50 == 0 else "common", "n": i} for i in range(n)]


def assert_exact(hits: StoreHits, ids: list[str], base: np.ndarray, q: np.ndarray, k: int,
                 metric: str, rows: np.ndarray | None = None, tol: float = 2e-5) -> None:
    """The engine's exact answer equals exact_knn: same ids (up to float32 near-ties) and
    distances within ``tol`` (relative to the distances' scale)."""
    subset = np.arange(len(base)) if rows is None else rows
    gt = exact_knn(base[subset], q, k, metric, extra=0)
    scale = max(1.0, float(np.abs(gt.distances).max()))
    for i in range(len(q)):
        want_ids = [ids[subset[j]] for j in gt.ids[i][:k]]
        got = hits.ids[i]
        assert len(got) == k, (i, got)
        np.testing.assert_allclose(hits.distances[i], gt.distances[i][:k], atol=tol * scale,
                                   rtol=0)
        # an id may differ only where two reference distances are within float32 noise
        for rank, (a, b) in enumerate(zip(got, want_ids, strict=True)):
            if a != b:
                d = gt.distances[i]
                near = np.abs(d - d[rank]) <= tol * scale
                assert a in {ids[subset[j]] for j in np.flatnonzero(near)} | set(want_ids), \
                    (i, rank, a, b)


def recall(hits: StoreHits, reference: StoreHits, k: int) -> float:
    """Mean |approximate ∩ exact| / k over the queries."""
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k
                          for a, b in zip(hits.ids, reference.ids, strict=True)]))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m searchbench ARGS`` with this checkout's sources first on the path."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def dense_reference(folder: Path) -> Path:
    """``run pyref -r dense --model static -k 10`` (exact numpy search), made once per
    pytest temporary root and shared by the engine modules."""
    path = folder / "pyref-dense-static.trec"
    if not path.is_file():
        part = folder / f"pyref-dense-static.{os.getpid()}.trec"
        done = cli("run", "pyref", "-r", "dense", "--model", "static", "-k", "10", "-o",
                   str(part), "-q")
        assert done.returncode == 0, done.stderr
        part.replace(path)
    return path


def check_cli_on_pyref(url: str, tmp_path: Path, reference: Path, build: list[str],
                       search: str, valid: str, secret: str | None = None) -> dict[str, Any]:
    """``db load``, ``run --retriever db`` at a search setting wide enough to be exact on
    pyref's 79 documents (so its ranking must equal the exact dense ``reference`` made with
    the same model), ``db describe`` and a bad parameter. Returns the run's sidecar."""
    first = cli("db", "load", "pyref", url, "--model", "static", "--index",
                "hnsw", *[a for p in build for a in ("--param", p)], "-q")
    assert first.returncode == 0, first.stderr
    assert "79 added, 0 already stored, 79 rows" in first.stdout, first.stdout
    out = tmp_path / "db.trec"
    ran = cli("run", "pyref", "--retriever", "db", "--db", url, "--db-param", search,
              "-k", "10", "-o", str(out), "-q")
    assert ran.returncode == 0, ran.stderr
    columns = [[line.split()[0:3:2] for line in p.read_text().splitlines()]
               for p in (out, reference)]
    assert columns[0] == columns[1]
    side = json.loads(Path(f"{out}.json").read_text())
    described = cli("db", "describe", url, "--json")
    assert described.returncode == 0, described.stderr
    assert json.loads(described.stdout)["count"] == 79
    bad = cli("run", "pyref", "-r", "db", "--db", url, "--db-param", "nonsense=3", "-o",
              str(tmp_path / "x.trec"))
    assert bad.returncode == 1 and bad.stderr.startswith("error: unknown search parameter")
    assert valid in bad.stderr and "Traceback" not in bad.stderr
    if secret is not None:
        for text in (first.stdout, first.stderr, ran.stdout, ran.stderr, described.stdout,
                     bad.stderr, out.read_text(), Path(f"{out}.json").read_text()):
            assert secret not in text
    return dict(side)
