"""Whole-process peer: ir_measures reads both TREC files and evaluates the five measures.

    python run_ir_measures.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import json
import sys

import ir_measures
from ir_measures import AP, RR, P, R, nDCG

MEASURES = [nDCG @ 10, RR @ 10, R @ 100, AP, P @ 5]


def main(qrels_path: str, run_path: str) -> dict[str, float]:
    """Parse, evaluate and return the means keyed by their (shared) canonical names."""
    qrels = ir_measures.read_trec_qrels(qrels_path)
    run = ir_measures.read_trec_run(run_path)
    means = ir_measures.calc_aggregate(MEASURES, qrels, run)
    return {str(m): float(v) for m, v in means.items()}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
