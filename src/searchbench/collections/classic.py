"""The classic test collections, loaded from a folder holding their files as published.

Each loader documents the quirks of its collection and records them in
``es.provenance["notes"]``; anomalies that are part of the published data (not a loading
error) are listed in ``es.provenance["known_issues"]`` so that ``evalset check`` reports
them as warnings. Counts below are those of ``../shared/data/README.md``.

=========  ======  =======  =========  ==========================================
name       docs    queries  judgments  files
=========  ======  =======  =========  ==========================================
cranfield  1,400   225      1,837      cran.all.1400, cran.qry, cranqrel
cisi       1,460   112/76   3,114      CISI.ALL, CISI.QRY, CISI.REL
med        1,033   30       696        MED.ALL (TREC-wrapped), MED.QRY, MED.REL
cacm       3,204   64/52    796        cacm.tar.gz (HTML), topics.cacm.txt, qrels.cacm.txt
vaswani    11,429  93       2,083      doc-text.trec, query-text.trec, qrels
=========  ======  =======  =========  ==========================================
"""

from __future__ import annotations

import html
import os
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..data import (
    Corpus,
    Document,
    EvalSet,
    Qrels,
    build_texts,
    read_qrels,
    read_smart_docs,
    read_smart_queries,
    read_trec_docs,
    read_trec_topics,
)
from ..errors import DataFormatError

__all__ = ["CLASSIC", "load_cacm", "load_cisi", "load_cranfield", "load_med", "load_trec",
           "load_vaswani"]


def _file(folder: str | os.PathLike[str], name: str, collection: str) -> Path:
    path = Path(folder) / name
    if not path.is_file():
        raise DataFormatError(
            f"{path}: missing; expected the {collection} files ({name}) in {folder}")
    return path


_INTEGER = re.compile(rb"-?[0-9]{1,18}")


def _int_table(path: Path, n_cols: int) -> tuple[np.ndarray, list[int]]:
    """The first ``n_cols`` integer columns and each row's line number (small files)."""
    raw = path.read_bytes().replace(b"\r", b"")
    rows = [(n, line.split()) for n, line in enumerate(raw.split(b"\n"), 1) if line.strip()]
    width = max(len(rows[0][1]), n_cols) if rows else n_cols
    for n, fields in rows:
        if len(fields) != width:
            raise DataFormatError(f"{path}:{n}: {len(fields)} fields; expected {width} "
                                  "whitespace-separated columns, as on the first line")
        bad = next((f for f in fields[:n_cols] if _INTEGER.fullmatch(f) is None), None)
        if bad is not None:  # at most 18 digits: int64 holds it
            raise DataFormatError(f"{path}:{n}: {bad.decode(errors='replace')!r} is not an "
                                  "integer; expected integer ids and codes")
    table = np.array([f[:n_cols] for _, f in rows], dtype=bytes).reshape(-1, n_cols)
    return table.astype(np.int64), [n for n, _ in rows]


def _evalset(name: str, folder: Any, corpus: Corpus, queries: Any, qrels: Qrels,
             notes: list[str], known: dict[str, str] | None = None, **kw: Any) -> EvalSet:
    prov = {"format": name, "path": str(folder), "notes": notes, "known_issues": known or {}}
    es = EvalSet(corpus, queries, qrels, name=name, provenance=prov, **kw)
    es.warn_unjudged()
    return es


def load_cranfield(folder: str | os.PathLike[str], *, source_doc_grade: int = 4) -> EvalSet:
    """Cranfield 1400 (SMART files, CRLF).

    Quirks handled:

    * ``cran.qry`` numbers its queries 001–365 with gaps while ``cranqrel`` numbers them
      1–225 in file order: query ids are **positions** (``"1"``…``"225"``); the ``.I``
      value is kept as ``metadata["record_id"]``.
    * ``cranqrel`` codes run the other way round from grades (1 = complete answer …
      4 = minimum interest): grade = 5 − code, so 1→4, 2→3, 3→2, 4→1.
    * Every query has exactly one line coded −1, undefined in ``cranqrel.readme``. On
      inspection it is the query's source document (the paper whose author posed the
      question: query 1 → doc 486 "similarity laws for aerothermoelastic testing"), so it
      becomes ``source_doc_grade`` (default 4, as a complete answer); pass 0 to treat it as
      judged non-relevant.
    * Documents 471 and 995 are empty in ``cran.all.1400`` as published (kept, so the count
      stays 1,400; ``evalset check`` warns).
    """
    corpus = read_smart_docs(_file(folder, "cran.all.1400", "Cranfield"))
    queries = read_smart_queries(_file(folder, "cran.qry", "Cranfield"), ids="position")
    path = _file(folder, "cranqrel", "Cranfield")
    table, lines = _int_table(path, 3)
    codes = table[:, 2]
    bad = np.flatnonzero(~np.isin(codes, [-1, 1, 2, 3, 4, 5]))
    if len(bad):
        raise DataFormatError(f"{path}:{lines[bad[0]]}: relevance code {codes[bad[0]]}; "
                              "expected -1 or 1..5")
    grades = np.where(codes == -1, source_doc_grade, 5 - codes)
    qrels = Qrels.from_columns(table[:, 0].astype(str).tolist(), table[:, 1].astype(str).tolist(),
                               grades, source=f"{folder}/cranqrel")
    notes = ["query ids are positions in cran.qry (1..225), .I kept as metadata record_id",
             "grade = 5 - cranqrel code (1->4 ... 4->1)",
             f"code -1 (the query's source document) -> grade {source_doc_grade}"]
    empty = [d.id for d in corpus if not d.text.strip() and not d.title.strip()]
    known = {"empty-text": f"documents {', '.join(empty)} are empty in cran.all.1400 as "
                           "published"} if empty else {}
    return _evalset("cranfield", folder, corpus, queries, qrels, notes, known)


def load_cisi(folder: str | os.PathLike[str]) -> EvalSet:
    """CISI (SMART files, CRLF); ``CISI.REL`` is ``qid docid 0 0.0`` (binary).

    Only 76 of the 112 queries are judged: the other 36 stay in ``es.queries`` but are
    **excluded from evaluation** with a warning (``es.judged_queries`` are the ones to
    search), never scored as zero-recall queries. ``CISI.BLN`` (Boolean queries) is not
    used. Fields ``.A`` (one per author), ``.X`` (citations), ``.K``, ``.C`` go to metadata.
    """
    corpus = read_smart_docs(_file(folder, "CISI.ALL", "CISI"))
    queries = read_smart_queries(_file(folder, "CISI.QRY", "CISI"))
    table, _ = _int_table(_file(folder, "CISI.REL", "CISI"), 2)
    qrels = Qrels.from_columns(table[:, 0].astype(str).tolist(), table[:, 1].astype(str).tolist(),
                               np.ones(len(table), dtype=np.int64), source=f"{folder}/CISI.REL")
    return _unjudged_set("cisi", folder, corpus, queries, qrels,
                         ["every CISI.REL pair is relevant (grade 1)"])


def _unjudged_set(name: str, folder: Any, corpus: Corpus, queries: Any, qrels: Qrels,
                  notes: list[str]) -> EvalSet:
    judged = set(qrels.query_ids.tolist())
    n = sum(1 for q in queries.ids if q not in judged)
    notes.append(f"{n} of {len(queries)} queries have no judgments: excluded from evaluation")
    known = {"query-without-judgments": f"{n} queries are unjudged in the published "
                                        f"{name.upper()} qrels; they are excluded, not scored"}
    return _evalset(name, folder, corpus, queries, qrels, notes, known, exclude_unjudged=True)


def load_med(folder: str | os.PathLike[str]) -> EvalSet:
    """Medline (MED): ``MED.ALL`` is TREC-wrapped (``<DOC><DOCNO>MED-n</DOCNO>``), queries
    SMART (``MED.QRY``, CRLF), ``MED.REL`` TREC qrels against the ``MED-n`` docnos."""
    corpus = read_trec_docs(_file(folder, "MED.ALL", "MED"))
    queries = read_smart_queries(_file(folder, "MED.QRY", "MED"))
    qrels = read_qrels(_file(folder, "MED.REL", "MED"))
    return _evalset("med", folder, corpus, queries, qrels, ["doc ids are MED.ALL docnos"])


_PRE = re.compile(r"<pre>(.*?)</pre>", re.S | re.I)


def _cacm_doc(doc_id: str, page: str, where: str) -> Document:
    m = _PRE.search(page)
    if m is None:
        raise DataFormatError(f"{where}: no <pre> block; expected one CACM record in <pre>")
    blocks = [b.strip() for b in re.split(r"\n\s*\n", html.unescape(m.group(1))) if b.strip()]
    if not blocks:
        raise DataFormatError(f"{where}: empty <pre> block; expected a CACM record")
    title, rest = " ".join(blocks[0].split()), blocks[1:]
    cut = next((i for i, b in enumerate(rest) if re.match(r"CACM \w+, \d{4}$", b)), len(rest))
    meta: dict[str, Any] = {}
    tail = rest[cut:]
    if tail:
        meta["journal"] = tail[0]
    if len(tail) > 1:
        meta["authors"] = tail[1].split("\n")
    extra = [b for b in tail[2:] if not re.match(r"^(CA\d{6}|\d+\t\d+\t\d+)", b)]
    if extra:
        meta["keywords"] = "\n".join(extra)
    text = "\n".join(line.rstrip() for b in rest[:cut] for line in b.split("\n"))
    return Document(doc_id, text, title, meta)


def _cacm_docs(archive: Path) -> Iterator[tuple[str, Document]]:
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            base = os.path.basename(member.name)
            if not (member.isfile() and base.endswith(".html")):
                continue
            fh = tar.extractfile(member)
            page = fh.read().decode("utf-8", errors="replace") if fh else ""
            where = f"{archive}:{member.name}"
            yield where, _cacm_doc(_cacm_id(base[: -len(".html")], where), page, where)


def _cacm_id(stem: str, where: str) -> str:
    """``CACM-0115`` -> ``CACM-115``: the qrels write the number without leading zeros."""
    m = re.fullmatch(r"CACM-(\d+)", stem)
    if m is None:
        raise DataFormatError(f"{where}: file name {stem!r}; expected CACM-<number>.html")
    return f"CACM-{int(m.group(1))}"


def load_cacm(folder: str | os.PathLike[str]) -> EvalSet:
    """CACM (Anserini's copy): one ``CACM-nnnn.html`` per document in ``cacm.tar.gz``.

    Each record sits in ``<pre>``: the first paragraph is the title, the abstract (absent
    for many records) runs to the ``CACM <Month>, <year>`` line, then authors, keywords,
    categories, an internal id line and citation triples. Title and abstract are kept;
    journal, authors and keywords go to metadata; the citation triples are dropped. Doc
    ids are the file names **without the zero padding** (``CACM-0115.html`` →
    ``CACM-115``), because ``qrels.cacm.txt`` writes them that way. Topics are in
    ``<DOC><DOCNO>`` form. Only 52 of the 64 topics are judged: the other 12 are excluded
    from evaluation with a warning.
    """
    archive = _file(folder, "cacm.tar.gz", "CACM")
    corpus = build_texts(Corpus, _cacm_docs(archive), name=str(archive))
    queries = read_trec_topics(_file(folder, "topics.cacm.txt", "CACM"))
    qrels = read_qrels(_file(folder, "qrels.cacm.txt", "CACM"))
    return _unjudged_set("cacm", folder, corpus, queries, qrels,
                         ["documents are the HTML records of cacm.tar.gz, citations dropped"])


def load_vaswani(folder: str | os.PathLike[str]) -> EvalSet:
    """NPL / Vaswani as shipped with Terrier: TREC SGML docs (``doc-text.trec``), topics
    (``query-text.trec``, titles in capitals, kept as published) and TREC ``qrels``."""
    corpus = read_trec_docs(_file(folder, "doc-text.trec", "Vaswani"))
    queries = read_trec_topics(_file(folder, "query-text.trec", "Vaswani"))
    qrels = read_qrels(_file(folder, "qrels", "Vaswani"))
    return _evalset("vaswani", folder, corpus, queries, qrels, ["Terrier's TREC conversion"])


def load_trec(docs: str | os.PathLike[str], topics: str | os.PathLike[str],
              qrels: str | os.PathLike[str], *, fields: tuple[str, ...] = ("title",),
              name: str | None = None) -> EvalSet:
    """Any TREC-style set: SGML documents, ``<top>`` topics (``fields`` form the query
    text, default the title) and TREC qrels. Spec: ``trec:DOCS,TOPICS,QRELS``."""
    corpus = read_trec_docs(docs)
    queries = read_trec_topics(topics, fields=fields)
    judgments = read_qrels(qrels)
    notes = [f"query text from topic fields {', '.join(fields)}"]
    es = _evalset(name or Path(docs).stem, Path(docs).parent, corpus, queries, judgments, notes)
    es.provenance.update(format="trec", files=[str(docs), str(topics), str(qrels)])
    return es


def _trec_spec(arg: str) -> EvalSet:
    parts = arg.split(",")
    if len(parts) != 3:
        raise DataFormatError(f"trec:{arg}: {len(parts)} paths; expected "
                              "trec:DOCS,TOPICS,QRELS (three comma-separated files)")
    return load_trec(*parts)


CLASSIC = {
    "cranfield": (load_cranfield, "Cranfield 1400 aeronautics abstracts (SMART files)"),
    "cisi": (load_cisi, "CISI library science (SMART files; 76 of 112 queries judged)"),
    "med": (load_med, "Medline MED (TREC-wrapped docs, SMART queries, TREC qrels)"),
    "cacm": (load_cacm, "CACM abstracts (HTML files in cacm.tar.gz; 52 of 64 judged)"),
    "vaswani": (load_vaswani, "NPL / Vaswani physics abstracts (TREC SGML, Terrier)"),
    "trec": (_trec_spec, "any TREC set: trec:DOCS,TOPICS,QRELS (SGML docs, <top> topics)"),
}
