"""What the web app serves: the evaluation set's texts, the items to judge, the store.

Requests name a query and a document by id; ids are looked up in these dictionaries and
never joined to a path, so no request reaches the file system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from ...data import Corpus, Qrels, Queries, Run
from ...errors import DataFormatError
from ..labels import PoolItem
from ..store import JudgmentStore

__all__ = ["ExploreData", "JudgingContext", "Segment", "highlight", "load_texts"]

# Words that say nothing about relevance: not highlighted.
_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "de", "do", "does", "for", "from", "has",
    "have", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this",
    "to", "was", "what", "when", "where", "which", "who", "why", "will", "with"))
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Segment:
    """A piece of a document's text as rendered: ``start`` is its offset in the text.

    ``kind``: ``text``, ``mark`` (a query term), ``br`` (a line break holding a carriage
    return; HTML turns ``\\r\\n`` into ``\\n``, so it gets its own element with its length)
    or ``nul`` (NUL characters, which HTML drops: shown as a symbol, counted by length).
    """

    kind: str
    start: int
    text: str
    evidence: bool = False


def query_terms(query: str) -> list[str]:
    """The query's words to highlight: lower-cased, two characters or more, no stopwords."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if len(word) > 1 and word not in _STOPWORDS:
            seen[word] = None
    return list(seen)


def _stem(term: str) -> str:
    """A crude prefix standing for the word's forms: ``cats`` → ``cat`` (matches ``cat``,
    ``cats``), ``sleeping`` → ``sleepi``... Longer words keep all but two characters."""
    if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        term = term[:-1]
    return term if len(term) <= 5 else term[: len(term) - 2]


def highlight(text: str, query: str,
              evidence: Iterable[tuple[int, int]] = ()) -> list[Segment]:
    """Split ``text`` into segments, words starting like a query term (any case, at most
    three more letters: ``cat`` marks ``cats``, not ``category``) as ``mark``.

    Concatenating the segments' texts gives ``text`` back exactly; the template escapes
    each segment, so the document's own markup is shown as text. Segments are also split at
    the ``evidence`` spans' ends; those inside a span have ``evidence=True``.
    """
    spans = sorted((max(0, a), min(len(text), b)) for a, b in evidence if a < b)
    segments = _segments(text, query)
    return _split_at_spans(segments, spans) if spans else segments


def _split_at_spans(segments: list[Segment], spans: list[tuple[int, int]]) -> list[Segment]:
    cuts = sorted({x for span in spans for x in span})
    out: list[Segment] = []
    for seg in segments:
        end = seg.start + len(seg.text)
        inner = [c for c in cuts if seg.start < c < end] if seg.kind != "br" else []
        bounds = [seg.start, *inner, end]
        for a, b in pairwise(bounds):
            inside = any(s <= a and b <= e for s, e in spans)
            out.append(Segment(seg.kind, a, seg.text[a - seg.start:b - seg.start], inside))
    return out


def _segments(text: str, query: str) -> list[Segment]:
    stems = sorted({_stem(t) for t in query_terms(query)}, key=len, reverse=True)
    pattern = (re.compile(r"\b(?:" + "|".join(re.escape(t) for t in stems) + r")\w{0,3}\b",
                          re.IGNORECASE) if stems else None)
    segments: list[Segment] = []
    for piece in re.finditer(r"\r\n?|\x00+|[^\r\x00]+", text):
        start, chunk = piece.start(), piece.group()
        if chunk[0] in "\r\x00":
            segments.append(Segment("br" if chunk[0] == "\r" else "nul", start, chunk))
            continue
        pos = 0
        for m in pattern.finditer(chunk) if pattern else ():
            if m.start() > pos:
                segments.append(Segment("text", start + pos, chunk[pos:m.start()]))
            segments.append(Segment("mark", start + m.start(), m.group()))
            pos = m.end()
        if pos < len(chunk):
            segments.append(Segment("text", start + pos, chunk[pos:]))
    return segments


def _find_file(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise DataFormatError(f"{folder}: no {stem} (or {stem}.gz); expected a native evaluation "
                          f"set folder (searchbench evalset init)")


def load_texts(evalset: Path) -> tuple[Corpus, Queries, Qrels | None]:
    """The corpus and queries of a native folder, and its qrels if it has any yet."""
    # lazy: loads data on first use
    from ...data import read_corpus_jsonl, read_qrels, read_queries_jsonl

    if not evalset.is_dir():
        raise DataFormatError(f"{evalset}: not a folder; expected a native evaluation set")
    corpus = read_corpus_jsonl(_find_file(evalset, "corpus.jsonl"))
    queries = read_queries_jsonl(_find_file(evalset, "queries.jsonl"))
    qrels_path = evalset / "qrels.tsv"
    if not qrels_path.is_file():
        return corpus, queries, None
    try:
        return corpus, queries, read_qrels(qrels_path)
    except DataFormatError:
        if _no_judgments(qrels_path):  # a set being built: `evalset init` writes a header
            return corpus, queries, None
        raise


def _no_judgments(path: Path) -> bool:
    """Whether ``path`` is empty or holds only the BEIR header line."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            lines = [line for line in fh.read(4096).splitlines() if line.strip()]
    except OSError:
        return False
    return not lines or (len(lines) == 1 and lines[0].split("\t")[0].strip() == "query-id")


def check_pool(pool: list[PoolItem], corpus: Corpus, queries: Queries, where: str) -> None:
    """Every pool item must name a query and a document of the set."""
    for n, item in enumerate(pool, 1):
        if item.query_id not in queries:
            raise DataFormatError(f"{where}:{n}: query {item.query_id!r} is not in the "
                                  f"evaluation set's queries.jsonl; expected a pool built "
                                  f"from this set (searchbench pool)")
        if item.doc_id not in corpus:
            raise DataFormatError(f"{where}:{n}: document {item.doc_id!r} is not in the "
                                  f"evaluation set's corpus; expected a pool built from this "
                                  f"set (searchbench pool)")


def judging_order(pool: list[PoolItem]) -> list[tuple[str, str]]:
    """Pool pairs grouped by query (queries in order of first appearance), each query's
    documents in pool order; duplicates dropped."""
    by_query: dict[str, dict[str, None]] = {}
    for item in pool:
        by_query.setdefault(item.query_id, {})[item.doc_id] = None
    return [(q, d) for q, docs in by_query.items() for d in docs]


@dataclass
class ExploreData:
    """Two runs compared per query (explore mode; the systems are shown by name)."""

    runs: list[Run]
    names: list[str]
    measure: str
    depth: int = 10


@dataclass
class JudgingContext:
    """Everything a request may read: texts by id, the items in judging order, the store."""

    evalset: Path
    corpus: Corpus
    queries: Queries
    store: JudgmentStore
    items: list[tuple[str, str]] = field(default_factory=list)
    qrels: Qrels | None = None
    explore: ExploreData | None = None
    secure: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    annotators: frozenset[str] | None = None  # who may sign in (None: every person)
    position: dict[tuple[str, str], int] = field(init=False)

    def __post_init__(self) -> None:
        self.position = {pair: i for i, pair in enumerate(self.items)}

    def lets_in(self, name: str | None) -> bool:
        """Whether this app serves ``name``: a person listed when it started (a person left
        out of ``--annotator`` keeps no access through an old token or session)."""
        return name is not None and (self.annotators is None or name in self.annotators)

    def may_judge(self, query_id: str, doc_id: str) -> bool:
        """Only pairs of the pool (or, exploring, of the runs' top documents) are judged."""
        if (query_id, doc_id) in self.position:
            return True
        return self.explore is not None and doc_id in self.explore_docs(query_id)

    def explore_docs(self, query_id: str) -> set[str]:
        """The documents the explored runs show for ``query_id``."""
        if self.explore is None:
            return set()
        return {d for run in self.explore.runs
                for d, _ in run.ranking(query_id)[: self.explore.depth]}
