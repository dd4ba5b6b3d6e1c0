"""Whole-process peer: pytrec_eval parses both files and evaluates the five measures.

pytrec_eval has no cutoff for reciprocal rank, so ``RR@10`` is ``recip_rank`` on each
query's top 10 (score descending, then doc id descending: trec_eval's order).

    python run_pytrec_eval.py QRELS RUN   -> JSON of the means on stdout
"""

from __future__ import annotations

import json
import sys

import pytrec_eval

MEASURES = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "AP": "map", "P@5": "P_5"}


def top_k(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    """Each query's first ``k`` documents in trec_eval's order."""
    return {
        qid: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k])
        for qid, docs in run.items()
    }


def mean(per_query: dict[str, dict[str, float]], name: str) -> float:
    """Plain mean of one measure over the evaluated queries."""
    return sum(v[name] for v in per_query.values()) / len(per_query)


def main(qrels_path: str, run_path: str) -> dict[str, float]:
    """Parse, evaluate and return the means keyed by searchbench's canonical names."""
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(run)
    out = {ours: mean(per_query, theirs) for ours, theirs in MEASURES.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top_k(run, 10))
    out["RR@10"] = mean(rr, "recip_rank")
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
