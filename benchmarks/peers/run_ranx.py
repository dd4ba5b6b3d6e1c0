"""Whole-process peer: ranx reads both TREC files and evaluates the five measures.

The numba cache location comes from ``NUMBA_CACHE_DIR`` (a fresh directory = cold).

    python run_ranx.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import json
import sys

from ranx import Qrels, Run, evaluate

MEASURES = {"nDCG@10": "ndcg@10", "RR@10": "mrr@10", "R@100": "recall@100",
            "AP": "map", "P@5": "precision@5"}


def main(qrels_path: str, run_path: str) -> dict[str, float]:
    """Parse, evaluate and return the means keyed by searchbench's canonical names."""
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    means = evaluate(qrels, run, list(MEASURES.values()))
    return {ours: float(means[theirs]) for ours, theirs in MEASURES.items()}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
