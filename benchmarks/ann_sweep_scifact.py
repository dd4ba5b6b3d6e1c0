"""ANN sweep on a real corpus: SciFact (BEIR test split, 5,183 abstracts, 300 judged queries)
embedded with all-MiniLM-L6-v2, cosine. FAISS HNSW, hnswlib, FAISS IVF-Flat and IVF-PQ;
knn_recall@10, QPS, latency, memory and the relevance cost (ΔnDCG@10, ΔR@100 vs exact).

    HF_HUB_OFFLINE=1 python benchmarks/ann_sweep_scifact.py [--out DIR] [--repeats 5]

Writes ``sweep_<index>.json``, ``ann_report.html``, ``pareto_batch.svg`` and
``pareto_single.svg`` into ``--out`` (default ``benchmarks/_work/ann``) and prints the
Markdown tables. Same as ``searchbench ann sweep beir:DIR --index …`` per family.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SEARCHBENCH_TEST_DATA", HERE.parent.parent / "shared" / "data"))
GRIDS = {
    "hnsw": {"M": [8, 16, 32], "efSearch": [10, 16, 32, 64, 128, 256]},
    "hnswlib": {"M": [16], "efSearch": [10, 16, 32, 64, 128, 256]},
    "ivf": {"nlist": [64, 256], "nprobe": [1, 2, 4, 8, 16, 32]},
    "ivfpq": {"nlist": [64], "m": [48], "nbits": [8], "nprobe": [1, 4, 16, 64]},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "_work" / "ann")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--indexes", default=",".join(GRIDS))
    args = ap.parse_args()
    from searchbench.ann import SweepResult, embed_evalset, run_sweep
    from searchbench.ann.report import plot, render_html, render_markdown

    args.out.mkdir(parents=True, exist_ok=True)
    emb = embed_evalset(f"beir:{DATA / 'beir' / 'scifact'}", "minilm", quiet=True)
    results = []
    for name in args.indexes.split(","):
        res = run_sweep(emb.base, emb.queries, name, GRIDS[name], metric="cosine", k=10,
                        repeats=args.repeats, relevance=emb.relevance(), progress=print)
        res.meta["dataset"] = {"evalset": emb.name, "model": emb.model, "level": "document"}
        res.save(args.out / f"sweep_{name}.json")
        results.append(res)
    merged = SweepResult.merge(results)
    (args.out / "ann_report.html").write_text(
        render_html(merged, "SciFact × MiniLM: ANN indexes vs exact search"), encoding="utf-8")
    (args.out / "pareto_batch.svg").write_bytes(plot(merged, "qps_batch"))
    (args.out / "pareto_single.svg").write_bytes(plot(merged, "qps_single"))
    print(render_markdown(merged))


if __name__ == "__main__":
    main()
