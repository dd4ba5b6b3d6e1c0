"""Whole-process subject: searchbench reads both TREC files and evaluates the five measures.

Besides the means, the JSON holds ``_phases``: seconds spent importing searchbench,
reading the qrels, reading the run and evaluating (measured inside the process).

    python run_searchbench.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import json
import sys
import time
from itertools import pairwise

START = time.perf_counter()
import searchbench as sb  # noqa: E402  (timed: the import is part of the work)

MEASURES = ["nDCG@10", "RR@10", "R@100", "AP", "P@5"]


def main(qrels_path: str, run_path: str) -> dict[str, object]:
    """Parse, evaluate and return the means keyed by canonical measure name."""
    marks = [START, time.perf_counter()]
    qrels = sb.Qrels.from_file(qrels_path)
    marks.append(time.perf_counter())
    run = sb.Run.from_file(run_path)
    marks.append(time.perf_counter())
    res = sb.evaluate(qrels, run, MEASURES)
    marks.append(time.perf_counter())
    phases = dict(zip(["import", "read qrels", "read run", "evaluate"],
                      [b - a for a, b in pairwise(marks)], strict=True))
    return {**{name: float(res.mean[name]) for name in MEASURES}, "_phases": phases}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
