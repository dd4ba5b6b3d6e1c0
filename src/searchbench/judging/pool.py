"""Pooling: what to judge next, from the top of several runs (ARCHITECTURE §12.3).

The pool of depth d is the union over runs of each run's top d documents per query, minus
the (query, document) pairs already judged — in ``qrels.tsv`` and in the judging store.
It is ordered for judging: per query (in the order of ``queries.jsonl``), documents
retrieved by more runs first, then by best (smallest) rank among the runs, then by doc id.

For every run the result says how much of its top 10 is judged now and would be once the
pool is judged (Judged@10 = mean over the run's queries of |judged ∩ top 10| / 10), so a
user sees the pool closing the unjudged holes that make a run look worse than it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import progress
from ..data import Run, read_qrels
from ..errors import ConfigError, DataFormatError
from .export import store_judgments
from .folder import has_judgments, load_queries, native_file
from .labels import PoolItem, write_pool

__all__ = ["PoolResult", "RunCoverage", "check_runs", "judged_pairs", "pool"]

JUDGED_AT = 10


@dataclass(frozen=True)
class RunCoverage:
    """Judged@10 of one run before and after the pool is judged."""

    name: str
    queries: int
    judged_now: float
    judged_after: float


@dataclass
class PoolResult:
    """The pool in judging order, with its counts and each run's Judged@10."""

    items: list[PoolItem]
    depth: int
    candidates: int
    already_judged: int
    queries: int
    runs: list[RunCoverage] = field(default_factory=list)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write ``pool.jsonl`` (atomically, see :func:`~searchbench.judging.write_pool`)."""
        write_pool(path, self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"depth": self.depth, "items": len(self.items), "candidates": self.candidates,
                "already_judged": self.already_judged, "queries": self.queries,
                "runs": [r.__dict__ for r in self.runs]}

    def to_text(self) -> str:
        per_query = len(self.items) / self.queries if self.queries else 0.0
        lines = [f"pool depth {self.depth}: {self.candidates} (query, document) pairs from "
                 f"{len(self.runs)} runs, {self.already_judged} already judged, "
                 f"{len(self.items)} to judge ({per_query:.1f} per query over "
                 f"{self.queries} queries)"]
        width = max((len(r.name) for r in self.runs), default=3)
        lines.append(f"{'run':<{width}}  Judged@{JUDGED_AT} now → after judging the pool")
        lines += [f"{r.name:<{width}}  {r.judged_now:.3f} → {r.judged_after:.3f}  "
                  f"({r.queries} queries)" for r in self.runs]
        return "\n".join(lines)


def pool(evalset: Any, runs: Sequence[Run | str | os.PathLike[str]], *, depth: int = 20,
         judged: Iterable[tuple[str, str]] | None = None,
         output: str | os.PathLike[str] | None = None,
         quiet: bool | None = None) -> PoolResult:
    """The judging pool of ``runs`` at ``depth`` for an evaluation set.

    ``evalset``: a native folder (its ``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv`` if
    any and ``judging.sqlite`` if any) or an :class:`~searchbench.data.EvalSet`. ``judged``
    adds pairs to treat as judged. Runs naming documents missing from the corpus or
    queries missing from the set raise :class:`DataFormatError` with counts and examples.
    ``output`` writes ``pool.jsonl``. Reading the runs shows progress (``quiet``: none).
    """
    if not runs:
        raise ConfigError("pool needs at least one run (--runs a.trec b.trec); expected the "
                          "runs of the systems to judge")
    if depth < 1:
        raise ConfigError(f"depth {depth}; expected a positive integer")
    doc_ids, query_ids, done = _evalset_parts(evalset)
    loaded = _load_runs(runs, quiet)
    check_runs(loaded, doc_ids, query_ids)
    if judged is not None:
        done = [*done, *judged]
    result = _pool(loaded, query_ids, done, depth)
    if output is not None:
        result.write(output)
    return result


# -- inputs ---------------------------------------------------------------------------------
def _evalset_parts(evalset: Any) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Corpus ids, query ids (in file order) and judged pairs of a set or folder."""
    from ..data import EvalSet  # lazy: loads data on first use

    if isinstance(evalset, EvalSet):
        q = evalset.qrels
        pairs = list(zip(q.query_ids[q.query_codes()].tolist(),
                         q.doc_vocab[q.doc_codes].tolist(), strict=True))
        return evalset.corpus.ids, evalset.queries.ids, pairs
    from ..data import read_corpus_jsonl  # lazy: loads data on first use

    folder = Path(evalset)
    corpus_path = native_file(folder, "corpus.jsonl")
    if corpus_path is None:
        raise DataFormatError(f"{folder}: no corpus.jsonl; expected an evaluation set folder "
                              f"(searchbench evalset init {folder} --docs FOLDER)")
    queries = load_queries(folder)
    if not queries:
        raise DataFormatError(f"{folder}: no queries; add some first (searchbench evalset "
                              f"add-queries {folder} queries.txt --source real)")
    return (read_corpus_jsonl(corpus_path).ids, [q.id for q in queries],
            judged_pairs(folder))


def judged_pairs(folder: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The (query, doc) pairs judged in ``folder``: every line of ``qrels.tsv`` and every
    pair of the judging store a person graded (a skip is not a judgment; an LLM judge's
    label is not a person's: export leaves LLM-only pairs out unless asked)."""

    root = Path(folder)
    pairs: list[tuple[str, str]] = []
    qrels_path = native_file(root, "qrels.tsv")
    if qrels_path is not None and has_judgments(qrels_path):
        q = read_qrels(qrels_path)
        pairs += zip(q.query_ids[q.query_codes()].tolist(), q.doc_vocab[q.doc_codes].tolist(),
                     strict=True)

    pairs += [(j.query_id, j.doc_id) for j in store_judgments(root)
              if j.grade is not None and j.kind == "human"]
    return pairs


def _load_runs(runs: Sequence[Run | str | os.PathLike[str]],
               quiet: bool | None = None) -> list[Run]:
    loaded: list[Run] = []
    with progress(len(runs), "pooling: reading runs", quiet, unit="runs") as done:
        for r in runs:
            loaded.append(r if isinstance(r, Run) else
                          Run.from_file(r, name=Path(r).name))
            done(1)
    names = [r.name for r in loaded]
    for i, r in enumerate(loaded):  # the report names runs; two "run"s need telling apart
        if names.count(r.name) > 1:
            r.name = f"{r.name}#{i + 1}"
    return loaded


def check_runs(runs: Sequence[Run], doc_ids: Sequence[str], query_ids: Sequence[str]) -> None:
    """Refuse runs naming documents missing from the corpus or queries missing from the set
    (:class:`DataFormatError` with counts and examples: a run made on another corpus)."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    corpus = pa.array(list(doc_ids), type=pa.string())
    known_q = set(query_ids)
    for run in runs:
        vocab = run.doc_vocab_arrow().cast(pa.string())
        missing = pc.invert(pc.is_in(vocab, value_set=corpus)).to_numpy(zero_copy_only=False)
        if missing.any():
            docs = vocab.to_numpy(zero_copy_only=False)
            bad = set(docs[missing].tolist())
            ids = run.doc_ids_arrow().to_numpy(zero_copy_only=False)
            n_entries = int(np.isin(ids, list(bad)).sum())
            raise DataFormatError(
                f"{run.name}: {n_entries} of {len(run)} entries name {len(bad)} documents "
                f"missing from the corpus (e.g. {_examples(sorted(bad))}); expected runs "
                "over this set's corpus.jsonl — was the run made on another corpus?")
        unknown = [q for q in run.query_ids.tolist() if q not in known_q]
        if unknown:
            raise DataFormatError(
                f"{run.name}: {len(unknown)} of {run.n_queries} queries are not in the set "
                f"(e.g. {_examples(unknown)}); expected runs of this set's queries.jsonl")


def _examples(items: Sequence[str], n: int = 3) -> str:
    return ", ".join(repr(i) for i in items[:n]) + (", …" if len(items) > n else "")


# -- the pool -------------------------------------------------------------------------------
@dataclass
class _Entries:
    """Every run's top entries as parallel arrays: query code, doc code, rank, run."""

    query: np.ndarray
    doc: np.ndarray
    rank: np.ndarray
    run: np.ndarray
    query_vocab: np.ndarray
    doc_vocab: np.ndarray

    def keys(self) -> np.ndarray:
        return self.query.astype(np.int64) * len(self.doc_vocab) + self.doc


def _entries(runs: Sequence[Run], depth: int) -> _Entries:
    """Codes are ranks in the sorted query and doc vocabularies (so code order is id
    order); strings are encoded by Arrow, never compared as Python objects."""
    import pyarrow as pa  # lazy: loads pyarrow on first use
    import pyarrow.compute as pc  # lazy: loads pyarrow on first use

    tops = [run.truncate(depth) for run in runs]
    q_vocab = np.unique(np.concatenate([t.query_ids.astype(object) for t in tops]))
    q_codes = [np.searchsorted(q_vocab, t.query_ids.astype(object))[t.query_codes()]
               for t in tops]
    docs = pa.concat_arrays([t.doc_ids_arrow().cast(pa.string()) for t in tops])
    encoded = docs.dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    d_code = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    d_vocab = np.array(encoded.dictionary.take(pa.array(order)).to_pylist(), dtype=object)
    return _Entries(np.concatenate(q_codes).astype(np.int64), d_code,
                    np.concatenate([t.ranks() + 1 for t in tops]),
                    np.concatenate([np.full(len(t), i, dtype=np.int32)
                                    for i, t in enumerate(tops)]), q_vocab, d_vocab)


def _pair_keys(entries: _Entries, query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """Keys of the (query, doc) pairs in the entries' code space (pairs outside it
    dropped)."""
    if not len(query_ids):
        return np.zeros(0, dtype=np.int64)
    qi = np.searchsorted(entries.query_vocab, query_ids).clip(0, len(entries.query_vocab) - 1)
    di = np.searchsorted(entries.doc_vocab, doc_ids).clip(0, len(entries.doc_vocab) - 1)
    ok = (entries.query_vocab[qi] == query_ids) & (entries.doc_vocab[di] == doc_ids)
    return qi[ok].astype(np.int64) * len(entries.doc_vocab) + di[ok]


def _pool(runs: Sequence[Run], query_ids: Sequence[str],
          judged: Sequence[tuple[str, str]], depth: int) -> PoolResult:
    entries = _entries(runs, max(depth, JUDGED_AT))
    keys = entries.keys()
    judged_keys = _pair_keys(entries, np.array([p[0] for p in judged], dtype=object),
                             np.array([p[1] for p in judged], dtype=object))
    in_depth = entries.rank <= depth
    pair_keys, first, inverse = np.unique(keys[in_depth], return_index=True,
                                          return_inverse=True)
    inverse = inverse.ravel()
    n_runs = np.bincount(inverse, minlength=len(pair_keys))
    best = np.full(len(pair_keys), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, inverse, entries.rank[in_depth])
    todo = ~np.isin(pair_keys, judged_keys)
    order_of_query = {q: i for i, q in enumerate(query_ids)}
    q_pos = np.array([order_of_query[q] for q in entries.query_vocab.tolist()], dtype=np.int64)
    q_code = entries.query[in_depth][first]
    d_code = entries.doc[in_depth][first]
    pick = np.flatnonzero(todo)
    order = pick[np.lexsort((d_code[pick], best[pick], -n_runs[pick], q_pos[q_code[pick]]))]
    items = [PoolItem(q, d, n, b) for q, d, n, b in zip(
        entries.query_vocab[q_code[order]].tolist(), entries.doc_vocab[d_code[order]].tolist(),
        n_runs[order].tolist(), best[order].tolist(), strict=True)]
    coverage = _coverage(runs, entries, keys, judged_keys, pair_keys[todo])
    return PoolResult(items, depth, len(pair_keys), int((~todo).sum()),
                      len(np.unique(q_code)), coverage)


def _coverage(runs: Sequence[Run], entries: _Entries, keys: np.ndarray,
              judged_keys: np.ndarray, pool_keys: np.ndarray) -> list[RunCoverage]:
    """Judged@10 per run now and after judging the pool: per query |judged ∩ top 10| / 10,
    averaged over the queries the run answers."""
    top = entries.rank <= JUDGED_AT
    now = np.isin(keys, judged_keys) & top
    after = now | (np.isin(keys, pool_keys) & top)
    n_q = len(entries.query_vocab)
    out = []
    for i, run in enumerate(runs):
        mine = entries.run == i
        queries = np.unique(entries.query[mine])
        per_now = np.bincount(entries.query[mine & now], minlength=n_q)[queries] / JUDGED_AT
        per_after = np.bincount(entries.query[mine & after], minlength=n_q)[queries] / JUDGED_AT
        out.append(RunCoverage(run.name, len(queries),
                               float(per_now.mean()) if len(queries) else 0.0,
                               float(per_after.mean()) if len(queries) else 0.0))
    return out
