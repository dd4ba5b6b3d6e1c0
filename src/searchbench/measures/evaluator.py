"""Evaluator and EvalResult: join a run with the qrels once, compute many measures."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.threads import cores, map_in_threads
from ..data import Qrels, Run, as_arrow_strings, lookup, lookup_sorted, utf8_column
from ..errors import DataFormatError, SearchbenchWarning, require, user_stacklevel
from ..vocab import canonical_missing
from ._kernels import Judged, compute
from .spec import Measure, parse_measures

if TYPE_CHECKING:
    import pyarrow as pa

    from ..data import IdIndex, JudgedEntries

__all__ = ["Combiner", "EvalResult", "Evaluator", "NoSharedQueriesError", "PartialResult",
           "aggregate", "evaluate"]

CHUNK_ENTRIES = 1 << 22
PAIR_INDEX_FROM = 1 << 16  # qrels doc ids from which runs read from files use an IdIndex


class NoSharedQueriesError(DataFormatError):
    """Under ``missing="skip"`` a run answers none of the qrels' queries.

    Nothing would be averaged: trec_eval 9 printed ``num_q 0`` and zeros, trec_eval 10
    stops with an error, and so does searchbench, naming both sides.
    """

    @classmethod
    def between(cls, run: str, qrels: str, run_ids: Sequence[str] | np.ndarray,
                qrels_ids: Sequence[str] | np.ndarray, run_count: int | None = None
                ) -> NoSharedQueriesError:
        """The error for run ``run`` and qrels ``qrels`` (names or paths) and their ids
        (``run_count``: how many run queries, when ``run_ids`` holds only a few)."""
        return cls(
            f"{run} shares no query id with {qrels} (run: {_some(run_ids, total=run_count)}; "
            f"qrels: "
            f"{_some(qrels_ids)}): with missing='skip' there is nothing to evaluate; check "
            "that the run was made for these qrels (query ids must match exactly), or use "
            "missing='zero' (CLI: --missing zero; trec_eval -c) to score every qrels query 0")


def _some(ids: Sequence[str] | np.ndarray, shown: int = 3, total: int | None = None) -> str:
    """``2 queries, e.g. 'q1', 'q2'``."""
    n = len(ids) if total is None else total
    head = ", ".join(repr(str(i)) for i in list(ids[:shown]))
    more = ", ..." if n > shown else ""
    count = f"{n} {'query' if n == 1 else 'queries'}"
    return count + (f", e.g. {head}{more}" if len(ids) else "")


@dataclass
class EvalResult:
    """Per-query and aggregate values of several measures for one run.

    ``scores[name]`` is aligned with ``query_ids``; ``mean[name]`` is the mean over those
    queries (counts such as ``NumRet`` are summed).
    """

    run_name: str
    measures: list[str]
    query_ids: np.ndarray
    scores: dict[str, np.ndarray]
    mean: dict[str, float]
    missing: str = "zero"
    n_missing: int = 0
    n_extra: int = 0
    _per_query: dict[str, dict[str, float]] | None = field(default=None, repr=False)

    @property
    def num_q(self) -> int:
        return len(self.query_ids)

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{measure: {query_id: value}}``."""
        if self._per_query is None:
            qids = self.query_ids.tolist()
            self._per_query = {
                name: dict(zip(qids, self.scores[name].tolist(), strict=True))
                for name in self.measures
            }
        return self._per_query

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """``{"run", "num_q", "measures": {name: value}, "per_query": {name: {qid: v}}}``."""
        out: dict[str, Any] = {"run": self.run_name, "num_q": self.num_q,
                               "measures": dict(self.mean)}
        if per_query:
            out["per_query"] = self.per_query
        return out

    def to_frame(self) -> Any:
        """A pandas DataFrame: one row per query (index ``query_id``), a column per measure.

        Needs pandas (``pip install 'searchbench[pandas]'``); without it this raises
        :class:`~searchbench.errors.MissingDependencyError`.
        """
        pd = require("pandas", "pandas")

        frame = pd.DataFrame({name: self.scores[name] for name in self.measures},
                             index=pd.Index(self.query_ids.astype(str), name="query_id"))
        return frame


class Evaluator:
    """Build once from qrels and measures; evaluate many runs.

    ``missing="zero"`` (default, trec_eval ``-c``) scores qrels queries absent from the
    run as 0; ``"skip"`` averages over the queries in both (trec_eval 9's default without
    ``-c``). Under ``"skip"`` a run sharing no query with the qrels raises
    :class:`NoSharedQueriesError` (trec_eval 10 refuses it too) instead of ``num_q 0``.
    Scores rank as 64-bit doubles, as in trec_eval 10; trec_eval 9 and pytrec_eval store
    them as 32-bit floats, so scores that differ only beyond float precision tie there.
    ``depth`` keeps the top ``depth`` documents of each query (trec_eval ``-M``).
    """

    def __init__(self, qrels: Qrels, measures: str | Measure | Sequence[str | Measure],
                 *, missing: str = "zero", depth: int | None = None) -> None:
        missing = canonical_missing(missing)
        if depth is not None and depth <= 0:
            raise DataFormatError(f"depth {depth} must be a positive integer")
        self.qrels = qrels
        self.measures = parse_measures(measures)
        self.missing = missing
        self.depth = depth
        n_docs = max(len(qrels.doc_vocab), 1)
        q = qrels.query_codes()
        self._keys = q.astype(np.int64) * n_docs + qrels.doc_codes
        # by query, then grade descending, ties in doc order: lexsort's order as one int64
        # key (query * span + top - grade), ~10× faster
        grades = qrels.grades.astype(np.int64)
        top = int(grades.max()) if len(grades) else 0
        span = top - int(grades.min()) + 1 if len(grades) else 1
        order = np.argsort(q.astype(np.int64) * span + (top - grades), kind="stable")
        self._ideal_grades = qrels.grades[order].astype(np.int16)
        self._ideal_query = q[order]
        self._ideal_rank = np.arange(len(q)) - qrels.offsets[q[order]]
        self._arrow_vocab: pa.Array | None = None  # qrels doc ids as Arrow, on first use
        self._pairs: IdIndex | None = None  # built for the first run read from a file
        self._row_ids: tuple[np.ndarray, bytes] | None = None  # each qrels row's doc id
        self._query_vocab: pa.Array | None = None  # qrels query ids as Arrow, for partial()

    @property
    def _doc_vocab(self) -> pa.Array:
        """The qrels doc ids as an Arrow array (compact qrels: as they are), built once."""
        if self._arrow_vocab is None:
            vocab = self.qrels.doc_vocab
            self._arrow_vocab = vocab if not isinstance(vocab, np.ndarray) \
                else as_arrow_strings(vocab).combine_chunks()
        return self._arrow_vocab

    def _doc_map(self, run: Run) -> np.ndarray | None:
        """Qrels doc code of each run doc code (None: the run holds no codes)."""
        if not (run.has_doc_codes or run.compiled_ids):
            return None
        vocab = self.qrels.doc_vocab
        return run.vocab_codes_in(vocab if isinstance(vocab, np.ndarray) else self._doc_vocab)

    def _judged_entries(self, run: Run, run_to_qrels: np.ndarray) -> JudgedEntries | None:
        """The entries judged for their query, when the run's doc ids are the compiled
        reader's (looked up in C, once: each query's among its own qrels rows); None
        otherwise."""
        if not (run.compiled_entries and isinstance(self.qrels.doc_vocab, np.ndarray)):
            return None  # (before the rows' ids are built: other runs never need them)
        known = run_to_qrels >= 0
        at = np.where(known, run_to_qrels, 0)
        first_row = np.where(known, self.qrels.offsets[at], 0)
        end_row = np.where(known, self.qrels.offsets[at + 1], 0)
        if self._row_ids is None:  # the doc id of each qrels row, built once
            self._row_ids = utf8_column(self.qrels.doc_vocab, self.qrels.doc_codes)
        return run.judged_entries(first_row, end_row, self._row_ids)

    def _prepare(self, run: Run, run_to_qrels: np.ndarray) -> _RunJoin:
        """What every chunk of ``run`` shares: its queries' qrels queries, the count each
        retrieved, and how its entries are found among the qrels."""
        n_ret = np.zeros(self.qrels.n_queries)  # documents retrieved per qrels query
        judged_query = run_to_qrels >= 0
        n_ret[run_to_qrels[judged_query]] = np.diff(run.offsets)[judged_query]
        doc_map = self._doc_map(run)
        hits = self._judged_entries(run, run_to_qrels) if doc_map is None else None
        return _RunJoin(run, run_to_qrels, n_ret, doc_map, hits)

    def _chunk_values(self, join: _RunJoin, lo: int, hi: int
                      ) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        """The qrels queries of run queries ``lo:hi`` and each measure's values for them
        (None: the qrels know none of them)."""
        touched = join.run_to_qrels[lo:hi]
        touched = touched[touched >= 0]
        if not len(touched):
            return None
        judged, first = self._join(join, lo, hi)
        return touched, {m.name: compute(judged, m)[touched - first] for m in self.measures}

    def evaluate(self, run: Run) -> EvalResult:
        """Evaluate one run: every measure, every query.

        The run is processed in chunks of whole queries (about ``CHUNK_ENTRIES`` entries
        each), so temporary arrays stay bounded however long the run is.
        """
        if self.depth is not None:
            run = run.truncate(self.depth)
        qrels = self.qrels

        run_to_qrels = lookup_sorted(qrels.query_ids, run.query_ids)
        present = np.zeros(qrels.n_queries, dtype=bool)
        present[run_to_qrels[run_to_qrels >= 0]] = True
        if self.missing == "skip" and not present.any():
            raise NoSharedQueriesError.between(
                f"run {run.name!r}", f"the qrels {qrels.source or '<qrels>'}",
                run.query_ids, qrels.query_ids)
        join = self._prepare(run, run_to_qrels)
        empty = self._judged(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int16),
                             join.n_ret)
        values = {m.name: compute(empty, m) for m in self.measures}  # queries not retrieved

        def chunk(bounds: tuple[int, int]) -> None:  # each chunk writes its own queries
            found = self._chunk_values(join, *bounds)
            if found is not None:
                for name, v in found[1].items():
                    values[name][found[0]] = v

        # numpy releases the GIL in the heavy steps: chunks go to the cores (the ids of a
        # run without codes are looked up through one IdIndex, built on first use: in turn)
        threads = cores() if join.doc_map is not None or join.hits is not None else 1
        map_in_threads(chunk, _query_chunks(run.offsets, CHUNK_ENTRIES), threads)
        n_missing, n_extra = int((~present).sum()), int((run_to_qrels < 0).sum())
        _warn(run.name, n_missing, n_extra, self.missing)
        keep = present if self.missing == "skip" else np.ones_like(present)
        scores = {name: v[keep] for name, v in values.items()}
        mean = {m.name: aggregate(scores[m.name], m) for m in self.measures}
        return EvalResult(run.name, [m.name for m in self.measures], qrels.query_ids[keep],
                          scores, mean, self.missing, n_missing, n_extra)

    def partial(self, run: Run) -> PartialResult:
        """Per-query values of the queries of ``run`` (a part of a run holding *complete*
        query groups) that the qrels know; combine parts with :class:`Combiner`.

        Each query's values depend on its own entries only, so the parts of a run split
        between queries combine into exactly :meth:`evaluate`'s result.
        """
        if self.depth is not None:
            run = run.truncate(self.depth)

        if self._query_vocab is None:  # converted once, not once per part
            self._query_vocab = as_arrow_strings(self.qrels.query_ids).combine_chunks()
        run_to_qrels = lookup(self._query_vocab, run.query_ids)
        join = self._prepare(run, run_to_qrels)
        queries: list[np.ndarray] = []
        values: dict[str, list[np.ndarray]] = {m.name: [] for m in self.measures}
        for lo, hi in _query_chunks(run.offsets, CHUNK_ENTRIES):
            found = self._chunk_values(join, lo, hi)
            if found is not None:
                queries.append(found[0])
                for name, v in found[1].items():
                    values[name].append(v)
        extra = run.query_ids[run_to_qrels < 0]
        return PartialResult(
            np.concatenate(queries) if queries else np.zeros(0, np.int64),
            {k: np.concatenate(v) if v else np.zeros(0) for k, v in values.items()},
            len(extra), extra[:3].tolist())

    def _join(self, join: _RunJoin, lo: int, hi: int) -> tuple[Judged, int]:
        """Entries of run queries ``lo:hi`` judged in the qrels for their query, as a
        :class:`Judged` over the qrels queries those run queries hold (``first`` to
        ``last``), and ``first``: its query ``i`` is qrels query ``first + i``. (A chunk's
        kernels then cost what its queries hold, not what the whole qrels hold.)

        Only judged entries matter to any measure (the count retrieved comes from
        ``n_ret``): a compiled run's are found in C (``join.hits``); any other run is
        filtered to docs that appear in the qrels at all before anything else.
        """
        mapped = join.run_to_qrels[lo:hi]
        mapped = mapped[mapped >= 0]
        first, end = int(mapped.min()), int(mapped.max()) + 1
        if join.hits is not None:
            hits = join.hits
            i, j = np.searchsorted(hits.query, [lo, hi])
            entry_q = join.run_to_qrels[hits.query[i:j]]
            rank, grade = hits.rank[i:j], self.qrels.grades[hits.row[i:j]].astype(np.int16)
        else:
            entry_q, rank, docs = self._found_docs(join, lo, hi)
            rows = slice(int(self.qrels.offsets[first]), int(self.qrels.offsets[end]))
            grade, found = self._grades(entry_q, docs, rows)
            entry_q, rank, grade = entry_q[found], rank[found], grade[found]
        return self._judged(entry_q, rank, grade, join.n_ret, first, end), first

    def _found_docs(self, join: _RunJoin, lo: int, hi: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of run queries ``lo:hi`` whose query the qrels know and whose doc
        they judge for some query: each one's qrels query, rank and qrels doc code.
        ``join.doc_map`` maps run doc codes to qrels doc codes; without it the entries'
        ids are looked up."""
        run, run_to_qrels = join.run, join.run_to_qrels
        a, b = int(run.offsets[lo]), int(run.offsets[hi])
        if join.doc_map is None:
            from ..data import IdIndex, from_numpy, lookup  # lazy: loads pyarrow on first use
        if join.doc_map is not None:
            docs = join.doc_map[run.doc_codes[a:b]]
        elif len(self._doc_vocab) < PAIR_INDEX_FROM:
            # a small qrels vocabulary: index_in's hash table is built at once and in cache
            docs = lookup(self._doc_vocab, run.doc_ids_arrow().slice(a, b - a))
        else:  # (qrels query, doc id) of each entry found among the qrels'
            if self._pairs is None:
                self._pairs = IdIndex(self._doc_vocab.take(from_numpy(self.qrels.doc_codes)),
                                      self.qrels.query_codes())
            query = np.repeat(run_to_qrels[lo:hi], np.diff(run.offsets[lo:hi + 1]))
            at = self._pairs.find(run.doc_ids_arrow().slice(a, b - a), query)
            docs = np.where(at >= 0, self.qrels.doc_codes[at], -1)
        pos = np.flatnonzero(docs >= 0)
        starts = run.offsets[lo:hi + 1]
        # each entry's run query within the chunk (a pass over the chunk's entries costs
        # less than a binary search per found entry)
        run_q = np.repeat(np.arange(hi - lo, dtype=np.int32), np.diff(starts))[pos]
        entry_q = run_to_qrels[lo:hi][run_q]
        keep = entry_q >= 0
        pos, run_q, entry_q = pos[keep], run_q[keep], entry_q[keep]
        return entry_q, pos + a - starts[run_q], docs[pos]

    def _judged(self, entry_q: np.ndarray, rank: np.ndarray, grade: np.ndarray,
                n_ret: np.ndarray, first: int = 0, end: int | None = None) -> Judged:
        """The :class:`Judged` of qrels queries ``first:end`` (default: all), given their
        run entries found in the qrels: each one's qrels query, rank and grade."""
        end = self.qrels.n_queries if end is None else end
        rows = slice(int(self.qrels.offsets[first]), int(self.qrels.offsets[end]))
        return Judged(
            query=entry_q - first, rank=rank, grade=grade, judged=grade >= 0,
            qrels_grades=self._ideal_grades[rows], qrels_query=self._ideal_query[rows] - first,
            qrels_rank=self._ideal_rank[rows], n_queries=end - first, n_ret=n_ret[first:end],
        )

    def _grades(self, entry_q: np.ndarray, docs: np.ndarray, rows: slice
                ) -> tuple[np.ndarray, np.ndarray]:
        """Grade of each (query, doc) entry among the qrels ``rows`` and whether it is
        there (the rows of the entries' queries: keys sorted by query, then doc)."""
        n_docs = max(len(self.qrels.doc_vocab), 1)
        keys = entry_q.astype(np.int64) * n_docs + docs
        known = self._keys[rows]
        pos = np.searchsorted(known, keys)
        pos = np.minimum(pos, max(len(known) - 1, 0))
        found = (docs >= 0) & (len(known) > 0)
        if len(known):
            found &= known[pos] == keys
        grades = self.qrels.grades[rows]
        grade = np.where(found, grades[pos] if len(known) else 0, 0)
        return grade.astype(np.int16), found


@dataclass
class _RunJoin:
    """One run as the evaluator joins it with the qrels (:meth:`Evaluator._prepare`):
    each run query's qrels query (-1: unknown), the count retrieved per qrels query, and
    either the run's doc codes mapped to qrels doc codes or (a compiled run) its entries
    judged for their query; both None: the entries' ids are looked up chunk by chunk."""

    run: Run
    run_to_qrels: np.ndarray
    n_ret: np.ndarray
    doc_map: np.ndarray | None
    hits: JudgedEntries | None


@dataclass
class PartialResult:
    """The values of some queries of a run: ``query`` (qrels query indices) and, per
    measure, one value per query; ``n_extra`` run queries the qrels lack (a few of them in
    ``extra_ids``). Plain arrays: picklable, so parts can come from other processes."""

    query: np.ndarray
    values: dict[str, np.ndarray]
    n_extra: int
    extra_ids: list[str]


class Combiner:
    """Assemble the :class:`PartialResult` parts of one run into its :class:`EvalResult`.

    Queries no part holds get the values of a query with nothing retrieved, as in
    :meth:`Evaluator.evaluate`; the missing/extra warnings, the ``missing`` policy and the
    means (``np.mean`` over the same per-query array) are :meth:`~Evaluator.evaluate`'s,
    so the result is identical to evaluating the whole run at once. A query in two parts
    is an error (the parts must split the run between queries).
    """

    def __init__(self, evaluator: Evaluator, name: str) -> None:
        self.evaluator = evaluator
        self.name = name
        ev = evaluator
        nothing = ev._judged(np.zeros(0, np.int32), np.zeros(0, np.int64),
                             np.zeros(0, np.int16), np.zeros(ev.qrels.n_queries))
        self.values = {m.name: compute(nothing, m) for m in ev.measures}
        self.present = np.zeros(ev.qrels.n_queries, dtype=bool)
        self.n_extra = 0
        self.extra_ids: list[str] = []

    def add(self, part: PartialResult, where: str = "") -> None:
        """Take one part's values (``where`` names it in the error for a repeated query)."""
        again = self.present[part.query]
        if again.any():
            qid = self.evaluator.qrels.query_ids[part.query[np.argmax(again)]]
            raise DataFormatError(f"{where or self.name}: query {qid!r} is in two parts of "
                                  "the run; expected each query's entries in one part")
        self.present[part.query] = True
        for name, v in part.values.items():
            self.values[name][part.query] = v
        self.n_extra += part.n_extra
        self.extra_ids = (self.extra_ids + part.extra_ids)[:3]

    def result(self) -> EvalResult:
        """The run's result (raises :class:`NoSharedQueriesError` as ``evaluate`` does)."""
        ev, present = self.evaluator, self.present
        if ev.missing == "skip" and not present.any():
            raise NoSharedQueriesError.between(
                f"run {self.name!r}", f"the qrels {ev.qrels.source or '<qrels>'}",
                np.asarray(self.extra_ids, dtype=object), ev.qrels.query_ids, self.n_extra)
        n_missing = int((~present).sum())
        _warn(self.name, n_missing, self.n_extra, ev.missing)
        keep = present if ev.missing == "skip" else np.ones_like(present)
        scores = {name: v[keep] for name, v in self.values.items()}
        mean = {m.name: aggregate(scores[m.name], m) for m in ev.measures}
        return EvalResult(self.name, [m.name for m in ev.measures], ev.qrels.query_ids[keep],
                          scores, mean, ev.missing, n_missing, self.n_extra)


def evaluate(qrels: Qrels, run: Run, measures: str | Measure | Sequence[str | Measure],
             *, missing: str = "zero", depth: int | None = None) -> EvalResult:
    """Evaluate ``run`` against ``qrels``; see :class:`Evaluator` for the policies."""
    return Evaluator(qrels, measures, missing=missing, depth=depth).evaluate(run)


def _query_chunks(offsets: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of whole queries holding at most ``size`` entries (or one query)."""
    n, chunks, lo = len(offsets) - 1, [], 0
    while lo < n:
        hi = int(np.searchsorted(offsets, offsets[lo] + size, side="right")) - 1
        hi = min(max(hi, lo + 1), n)
        chunks.append((lo, hi))
        lo = hi
    return chunks


def aggregate(values: np.ndarray, m: Measure) -> float:
    """The value over all queries of one measure: a count measure sums, others average."""
    if m.is_count:
        return float(values.sum())
    return float(values.mean()) if len(values) else 0.0


def _warn(name: str, n_missing: int, n_extra: int, missing: str) -> None:
    if n_missing:
        policy = "scored 0 (missing='zero', trec_eval -c)" if missing == "zero" else \
            "left out of the mean (missing='skip')"
        warnings.warn(f"run {name!r}: {n_missing} qrels queries have no results; {policy}",
                      SearchbenchWarning, stacklevel=user_stacklevel())
    if n_extra:
        warnings.warn(f"run {name!r}: {n_extra} queries are not in the qrels and are ignored",
                      SearchbenchWarning, stacklevel=user_stacklevel())
