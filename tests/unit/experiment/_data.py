"""A tiny native evaluation set (with evidence quotes) and a BM25-only config over it."""

from __future__ import annotations

import json
from pathlib import Path

DOCS = {
    "d1": "Python lists are mutable sequences. Use append to add an item at the end. "
          "Use pop to remove the last item.",
    "d2": "A dictionary maps keys to values. Keys must be hashable. Use get to read a "
          "key with a default value.",
    "d3": "Exceptions are raised with raise and handled with try and except. A finally "
          "clause always runs.",
    "d4": "A generator function uses yield. Generators produce values lazily, one at a "
          "time, when iterated.",
    "d5": "Strings are immutable sequences of characters. Use join to concatenate many "
          "strings efficiently.",
}
QUERIES = {"q1": "how do I add an item to a list", "q2": "read a dict key with a default",
           "q3": "handle an exception", "q4": "lazy values with yield",
           "q5": "concatenate strings quickly", "q6": "remove last element of list"}
QRELS = [("q1", "d1", 2), ("q1", "d5", 0), ("q2", "d2", 2), ("q3", "d3", 1),
         ("q4", "d4", 2), ("q5", "d5", 1), ("q6", "d1", 1), ("q6", "d2", 0)]
EVIDENCE = [("q1", "d1", 2, "Use append to add an item at the end."),
            ("q2", "d2", 2, "Use get to read a key with a default value."),
            ("q3", "d3", 1, "handled with try and except"),
            ("q4", "d4", 2, "A generator function uses yield."),
            ("q5", "d5", 1, "Use join to concatenate many strings efficiently."),
            ("q6", "d1", 1, "Use pop to remove the last item.")]

CONFIG = """name = "tiny"
evalset = "set"
chunkers = ["none", "tokens:8:2"]
levels = ["doc", "chunk"]
measures = ["nDCG@10", "RR@10", "R@10"]
baseline = "bm25"
n_permutations = 200

[[retrievers]]
name = "bm25"
type = "bm25"

[[retrievers]]
name = "bm25-plain"
type = "bm25"
stemmer = false
stopwords = false

[[retrievers]]
name = "hybrid"
type = "hybrid"
of = ["bm25", "bm25-plain"]
"""


def write_set(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w") as fh:
        for i, t in DOCS.items():
            fh.write(json.dumps({"id": i, "title": "", "text": t}) + "\n")
    with (folder / "queries.jsonl").open("w") as fh:
        for i, t in QUERIES.items():
            fh.write(json.dumps({"id": i, "text": t, "source": "human",
                                 "verified": True}) + "\n")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    with (folder / "evidence.jsonl").open("w") as fh:
        for q, d, g, quote in EVIDENCE:
            fh.write(json.dumps({"query_id": q, "doc_id": d, "grade": g, "quote": quote}) + "\n")
    return folder


