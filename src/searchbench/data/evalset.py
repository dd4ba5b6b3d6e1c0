"""EvalSet: corpus + queries + judgments (+ evidence quotes) with provenance (ARCHITECTURE §5).

The native format is a folder::

    corpus.jsonl[.gz]  {"id", "title", "text", "metadata"}
    queries.jsonl      {"id", "text", "source", "generator", "verified", "no_answer"}
    qrels.tsv          query-id  doc-id  grade   (BEIR header accepted; TREC qrels too)
    evidence.jsonl     {"query_id", "doc_id", "grade", "quote"}   (optional)
    provenance.json    written by searchbench: where the set came from, loader notes and
                       flags (exclude_unjudged, ignore_identical_ids)   (optional)

Evidence quotes are resolved to character offsets in ``doc.text`` at load time; a quote
that is not an exact substring of its document is an error listing query and doc.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import itertools
import json
import os
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from .._util import atomic_folder, write_text
from ..errors import DataFormatError, SearchbenchWarning, user_stacklevel
from ._decode import decode_utf8, parse_json
from .jsonl import (
    iter_jsonl,
    read_corpus_jsonl,
    read_queries_jsonl,
    write_corpus_jsonl,
    write_jsonl,
    write_queries_jsonl,
)
from .qrels import Qrels
from .readers import read_qrels
from .run import Run
from .texts import Corpus, Issue, Issues, Queries

__all__ = ["EvalSet", "Evidence", "drop_identical_ids", "read_native", "source_paths",
           "write_native"]

NATIVE_FILES = ("corpus.jsonl", "queries.jsonl", "qrels.tsv", "evidence.jsonl")
PROVENANCE = "provenance.json"


@dataclass(frozen=True, slots=True)
class Evidence:
    """A judged quote: ``corpus[doc_id].text[start:end] == quote``."""

    query_id: str
    doc_id: str
    grade: int
    quote: str
    start: int = -1
    end: int = -1


@dataclass
class EvalSet:
    """An evaluation set; ``provenance`` records where it came from and what was changed.

    ``exclude_unjudged`` is set by loaders of collections whose topic files hold queries
    without judgments (CISI, CACM): those queries stay in ``queries`` but are not scored;
    search ``judged_queries``. ``ignore_identical_ids`` (ArguAna) asks evaluation to drop a
    retrieved doc whose id equals the query id; :meth:`prepare_run` applies it.
    """

    corpus: Corpus
    queries: Queries
    qrels: Qrels
    evidence: tuple[Evidence, ...] = ()
    name: str = "evalset"
    provenance: dict[str, Any] = field(default_factory=dict)
    exclude_unjudged: bool = False
    ignore_identical_ids: bool = False
    issues: Issues = field(default_factory=list)
    _hash: tuple[tuple[int, ...], str] | None = field(default=None, init=False, repr=False,
                                                      compare=False)

    def __repr__(self) -> str:
        return (f"EvalSet({self.name!r}: {len(self.corpus)} documents, {len(self.queries)} "
                f"queries, {len(self.qrels)} judgments, {len(self.evidence)} evidence quotes)")

    # -- judged / unjudged ---------------------------------------------------------------
    @property
    def judged_query_ids(self) -> list[str]:
        """Ids of queries (in query order) that have at least one judgment."""
        judged = set(self.qrels.query_ids.tolist())
        return [qid for qid in self.queries.ids if qid in judged]

    @property
    def unjudged_query_ids(self) -> list[str]:
        judged = set(self.qrels.query_ids.tolist())
        return [qid for qid in self.queries.ids if qid not in judged]

    @property
    def judged_queries(self) -> Queries:
        """The queries that are scored: those with judgments."""
        return self.queries.subset(self.judged_query_ids)

    def warn_unjudged(self) -> None:
        """Warn (once per call) how many queries are excluded for lack of judgments."""
        n = len(self.unjudged_query_ids)
        if n and self.exclude_unjudged:
            warnings.warn(
                f"{self.name}: {n} of {len(self.queries)} queries have no judgments and are "
                f"excluded from evaluation (not scored as 0); search es.judged_queries "
                f"({len(self.queries) - n} queries)", SearchbenchWarning,
                stacklevel=user_stacklevel())

    def prepare_run(self, run: Run) -> Run:
        """The run as this set is evaluated: identical query/doc ids dropped if asked."""
        return drop_identical_ids(run) if self.ignore_identical_ids else run

    # -- provenance ----------------------------------------------------------------------
    def content_hash(self) -> str:
        """SHA-256 of the normalised content (format independent).

        Cached until one of ``corpus``, ``queries``, ``qrels``, ``evidence`` is replaced.
        """
        key = tuple(id(x) for x in (self.corpus, self.queries, self.qrels, self.evidence))
        if self._hash is None or self._hash[0] != key:
            h = hashlib.sha256()
            for chunk in _hash_chunks(self):
                h.update(chunk)
            self._hash = (key, "sha256:" + h.hexdigest())
        return self._hash[1]

    def provenance_summary(self) -> dict[str, Any]:
        """Counts, query provenance shares, content hash and loader notes, JSON-ready."""
        n_q = len(self.queries)
        sources = self.queries.by_source()
        return {
            "name": self.name,
            **{k: v for k, v in self.provenance.items() if k != "notes"},
            "content_hash": self.content_hash(),
            "documents": len(self.corpus),
            "queries": n_q,
            "judged_queries": len(self.judged_query_ids),
            "judgments": len(self.qrels),
            "evidence": len(self.evidence),
            "query_sources": sources,
            "verified_queries": self.queries.n_verified(),
            "real_share": _share(n_q - sources.get("synthetic", 0), n_q),
            "synthetic_share": _share(sources.get("synthetic", 0), n_q),
            "verified_share": _share(self.queries.n_verified(), n_q),
            "no_answer_queries": len(self.queries.no_answer_ids()),
            "exclude_unjudged": self.exclude_unjudged,
            "ignore_identical_ids": self.ignore_identical_ids,
            "notes": list(self.provenance.get("notes", [])),
        }

    def write(self, folder: str | os.PathLike[str], *, compress: bool = False,
              overwrite: bool = False) -> Path:
        """Write the native format (see :func:`write_native`; a non-empty ``folder`` only
        with ``overwrite``)."""
        return write_native(self, folder, compress=compress, overwrite=overwrite)


def _share(n: int, total: int) -> float:
    return n / total if total else 0.0


def _hash_chunks(es: EvalSet) -> Iterator[bytes]:
    def meta(m: Any) -> str:
        return json.dumps(m, sort_keys=True, ensure_ascii=False, default=str) if m else ""

    for d in es.corpus:
        yield f"D\0{d.id}\0{d.title}\0{d.text}\0{meta(d.metadata)}\n".encode()
    for q in es.queries:
        marked = "\0no_answer" if q.no_answer else ""  # unmarked sets keep their hash
        yield (f"Q\0{q.id}\0{q.text}\0{q.source}\0{q.generator}\0{q.verified}\0"
               f"{meta(q.metadata)}{marked}\n").encode()
    qids = es.qrels.query_ids[es.qrels.query_codes()]
    dids = es.qrels.doc_vocab[es.qrels.doc_codes]
    for q, d, g in zip(qids.tolist(), dids.tolist(), es.qrels.grades.tolist(), strict=True):
        yield f"J\0{q}\0{d}\0{g}\n".encode()
    for e in es.evidence:
        yield f"E\0{e.query_id}\0{e.doc_id}\0{e.grade}\0{e.quote}\n".encode()


def drop_identical_ids(run: Run) -> Run:
    """Remove retrieved docs whose id equals the query id (BEIR/MTEB on ArguAna)."""
    qids = run.query_ids[run.query_codes()]
    dids = run.doc_vocab[run.doc_codes]
    keep = qids != dids
    if keep.all():
        return run
    return Run.from_columns(qids[keep].tolist(), dids[keep].tolist(), run.scores[keep],
                            name=run.name)


# -- evidence ---------------------------------------------------------------------------
def read_evidence(
    source: Any, corpus: Corpus, *, issues: Issues | None = None
) -> tuple[Evidence, ...]:
    """Read ``evidence.jsonl`` and resolve each quote to offsets in its document's text.

    A quote matches where the document holds the same words separated by any run of
    whitespace (a line break in the document may be a space in the quote, or two spaces
    one); see :func:`find_quote`. The resolved :class:`Evidence` keeps the document's own
    text of the span, so ``corpus[doc_id].text[start:end] == quote`` always holds.

    Quotes not found (or unknown docs) raise one :class:`DataFormatError` listing every
    (query, doc) concerned with the closest passage of the document, or are recorded in
    ``issues`` and skipped.
    """
    out: list[Evidence] = []
    problems: list[str] = []
    for where, obj in iter_jsonl(source):
        ev = _evidence(obj, where)
        doc = corpus.get(ev.doc_id)
        span = find_quote(doc.text, ev.quote) if doc is not None else None
        if span is None:
            why = "unknown document" if doc is None else "quote not found in the document text"
            hint = "" if doc is None else f" ({quote_mismatch(doc.text, ev.quote)})"
            problems.append(f"{where}: query {ev.query_id!r}, doc {ev.doc_id!r}: {why}: "
                            f"{_preview(ev.quote)!r}{hint}")
            continue
        start, end = span
        out.append(Evidence(ev.query_id, ev.doc_id, ev.grade, doc.text[start:end], start, end))
    if problems and issues is None:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise DataFormatError(
            f"{len(problems)} evidence quote(s) not found; expected substrings of the "
            "document text (whitespace runs may differ): " + "; ".join(problems[:5]) + more)
    if issues is not None:
        issues.extend(Issue("quote-not-found", p) for p in problems)
    return tuple(out)


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """``(start, end)`` of the first place where ``text`` holds ``quote``'s words separated
    by whitespace runs of any length and kind, or ``None``.

    Exact matches are found first; otherwise the quote's words are matched literally
    (``re.escape``) with ``\\s+`` between them. Case, punctuation and Unicode form must
    agree: only whitespace is tolerant.
    """
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote)
    words = quote.split()
    if not words:
        return None
    found = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (found.start(), found.end()) if found else None


def closest_passage(text: str, quote: str, width: int = 60) -> str:
    """The passage of ``text`` sharing the longest run of characters with ``quote``
    (whitespace collapsed), at most ``width`` characters: what a user probably meant."""
    flat = " ".join(text.split())
    wanted = " ".join(quote.split())
    match = difflib.SequenceMatcher(None, flat, wanted, autojunk=False).find_longest_match(
        0, len(flat), 0, len(wanted))
    if match.size == 0:
        return ""
    begin = max(0, match.a - match.b)
    return flat[begin:begin + min(width, max(len(wanted), 1))]


def quote_mismatch(text: str, quote: str, context: int = 20) -> str:
    """Where ``quote`` parts from ``text``: the closest passage and, aligned on it, the
    first character (whitespace collapsed) where the quote and the document differ, with
    ``context`` characters of each around it — so a typo deep in a long quote shows."""
    flat = " ".join(text.split())
    wanted = " ".join(quote.split())
    passage = closest_passage(text, quote)
    match = difflib.SequenceMatcher(None, flat, wanted, autojunk=False).find_longest_match(
        0, len(flat), 0, len(wanted))
    if match.size == 0:
        return "no passage of the document shares a character run with it"
    begin = match.a - match.b  # where the quote would start in the collapsed text
    i = next((j for j, ch in enumerate(wanted)
              if begin + j < 0 or begin + j >= len(flat) or flat[begin + j] != ch),
             len(wanted))
    lo = max(0, i - context)
    here = wanted[lo:i + context]
    there = flat[max(0, begin + lo):max(0, begin + i + context)]
    return (f"closest passage: {passage!r}; first difference at character {i + 1} of the "
            f"quote: it has {here!r} where the document has {there!r}")


def _preview(quote: str, n: int = 50) -> str:
    return quote if len(quote) <= n else quote[:n] + "…"


def _evidence(obj: dict[str, Any], where: str) -> Evidence:
    try:
        qid, did, quote = str(obj["query_id"]), str(obj["doc_id"]), obj["quote"]
    except KeyError as exc:
        raise DataFormatError(f"{where}: missing key {exc.args[0]!r}; expected query_id, "
                              "doc_id, grade, quote") from None
    grade = obj.get("grade", 1)
    if not isinstance(quote, str) or not quote.strip():
        raise DataFormatError(f"{where}: quote {quote!r}; expected a non-empty string")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise DataFormatError(f"{where}: grade {grade!r}; expected an integer")
    return Evidence(qid, did, grade, quote)


# -- native folder ----------------------------------------------------------------------
@overload
def find_file(folder: Path, stem: str, required: Literal[True] = True) -> Path: ...


@overload
def find_file(folder: Path, stem: str, required: bool) -> Path | None: ...


def find_file(folder: Path, stem: str, required: bool = True) -> Path | None:
    found = [folder / n for n in (stem, stem + ".gz") if (folder / n).is_file()]
    if len(found) > 1:
        raise DataFormatError(f"{folder}: both {stem} and {stem}.gz exist; expected one of them")
    if not found and required:
        raise DataFormatError(
            f"{folder}: no {stem}; expected a native evaluation set ({', '.join(NATIVE_FILES)}"
            " optional) — for a BEIR folder use 'beir:DIR'")
    return found[0] if found else None


def read_native(
    folder: str | os.PathLike[str], *, strict: bool = True, name: str | None = None
) -> EvalSet:
    """Load a native folder. ``strict=False`` records fixable problems in ``es.issues``."""
    root = Path(folder)
    if not root.is_dir():
        raise DataFormatError(f"{root}: not a folder; expected a native evaluation set folder")
    issues: Issues | None = None if strict else []
    corpus = read_corpus_jsonl(find_file(root, "corpus.jsonl"), issues=issues)
    queries = read_queries_jsonl(find_file(root, "queries.jsonl"), issues=issues)
    qrels_path = find_file(root, "qrels.tsv")
    building = _no_judgments(qrels_path)
    qrels = (Qrels.from_columns([], [], np.zeros(0, np.int64), source=str(qrels_path))
             if building else read_qrels_lenient(qrels_path, issues, read_qrels))
    ev_path = find_file(root, "evidence.jsonl", required=False)
    evidence = read_evidence(ev_path, corpus, issues=issues) if ev_path else ()
    saved = _read_provenance(root / PROVENANCE)
    prov = {**saved.get("provenance", {}), "format": "native", "path": str(root)}
    if saved.get("provenance"):
        prov["derived_from"] = {k: saved["provenance"].get(k) for k in ("format", "path")}
    if building:
        prov["notes"] = [*prov.get("notes", []), "qrels.tsv holds no judgments yet (a set "
                         "being built: pool, judge, then 'searchbench judge export')"]
    return EvalSet(corpus, queries, qrels, evidence, name=name or root.name or str(root),
                   provenance=prov, issues=issues or [],
                   exclude_unjudged=saved.get("exclude_unjudged", False),
                   ignore_identical_ids=saved.get("ignore_identical_ids", False))


def _no_judgments(path: Path) -> bool:
    """Whether a qrels file is empty or holds only the BEIR header: the state of a set
    being built (``evalset init`` writes it so), read as no judgments, not as an error."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace") as fh:
            lines = [ln for ln in itertools.islice(fh, 3) if ln.strip()]
    except (OSError, EOFError):
        return False  # the reader reports it with its own message
    return not lines or (len(lines) == 1 and lines[0].split("\t")[0].strip() == "query-id")


def _read_provenance(path: Path) -> dict[str, Any]:
    """The optional ``provenance.json`` written by :func:`write_native` ({} if absent)."""
    if not path.is_file():
        return {}

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"{path}: cannot be read ({exc.strerror or exc}); expected a "
                              "readable file") from None
    obj = parse_json(decode_utf8(data, str(path)), str(path),
                     "the object written by searchbench, or delete the file")
    if not isinstance(obj, dict) or not isinstance(obj.get("provenance", {}), dict):
        raise DataFormatError(f"{path}: expected a JSON object with a 'provenance' object")
    for key in ("exclude_unjudged", "ignore_identical_ids"):
        if not isinstance(obj.get(key, False), bool):
            raise DataFormatError(f"{path}: {key!r} is {obj[key]!r}; expected true or false")
    return obj


def read_qrels_lenient(path: Path | None, issues: Issues | None, reader) -> Qrels:
    try:
        return reader(path)
    except DataFormatError as exc:
        if issues is None or "duplicate" not in str(exc):
            raise
        issues.append(Issue("duplicate-judgment", str(exc)))
        return reader(path, keep="first")


def write_native(es: EvalSet, folder: str | os.PathLike[str], *, compress: bool = False,
                 overwrite: bool = False) -> Path:
    """Write ``es`` as a native folder, as a whole (see :func:`~searchbench._util.atomic_folder`).

    The files are written into a temporary sibling folder that then takes the target's
    place. A non-empty target is refused unless ``overwrite`` (then it is replaced as a
    whole: no file of the old set survives), and the set's own source folder or files
    (``provenance`` ``path``/``files``) are never written into or replaced.
    """
    target = Path(folder)
    with atomic_folder(target, overwrite=overwrite, protect=source_paths(es)) as tmp:
        _write_files(es, tmp, compress)
    return target


def source_paths(es: EvalSet) -> list[str]:
    """The folder or files ``es`` was read from (from its provenance), to protect them."""
    prov = es.provenance
    found = [prov["path"]] if isinstance(prov.get("path"), str) else []
    found += [f for f in prov.get("files", []) if isinstance(f, str)]
    return found


def _write_files(es: EvalSet, folder: Path, compress: bool) -> list[str]:
    corpus_name = "corpus.jsonl.gz" if compress else "corpus.jsonl"
    write_corpus_jsonl(folder / corpus_name, es.corpus)
    write_queries_jsonl(folder / "queries.jsonl", es.queries)
    es.qrels.to_file(folder / "qrels.tsv", format="beir")
    names = [corpus_name, "queries.jsonl", "qrels.tsv"]
    if es.evidence:
        write_jsonl(folder / "evidence.jsonl", evidence_records(es.evidence))
        names.append("evidence.jsonl")
    saved = {"name": es.name, "content_hash": es.content_hash(), "provenance": es.provenance,
             "exclude_unjudged": es.exclude_unjudged,
             "ignore_identical_ids": es.ignore_identical_ids}
    write_text(folder / PROVENANCE, json.dumps(saved, indent=1, default=str) + "\n")
    return [*names, PROVENANCE]


def evidence_records(evidence: Iterable[Evidence]) -> Iterator[dict[str, Any]]:
    for e in evidence:
        yield {"query_id": e.query_id, "doc_id": e.doc_id, "grade": e.grade, "quote": e.quote}


def grade_counts(qrels: Qrels) -> dict[int, int]:
    """``{grade: number of judgments}``, sorted by grade."""
    values, counts = np.unique(qrels.grades.astype(np.int64), return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts, strict=True)}
