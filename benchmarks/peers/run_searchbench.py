"""Whole-process subject: searchbench reads both TREC files and evaluates the five measures.

    python run_searchbench.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import json
import sys

import searchbench as sb

MEASURES = ["nDCG@10", "RR@10", "R@100", "AP@100", "P@10"]


def main(qrels_path: str, run_path: str) -> dict[str, float]:
    """Parse, evaluate and return the means keyed by canonical measure name."""
    qrels = sb.Qrels.from_file(qrels_path)
    run = sb.Run.from_file(run_path)
    res = sb.evaluate(qrels, run, MEASURES)
    return {name: float(res.mean[name]) for name in MEASURES}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
