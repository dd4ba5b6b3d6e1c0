"""BEIR folders: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``, ``qrels/<split>.tsv``.

As in BEIR's ``GenericDataLoader``, only the queries judged in the chosen split are kept
(``queries.jsonl`` usually holds every split); how many were left out is recorded in the
provenance. Query provenance (``source``, ``verified``, ``generator``) is read from a
query's ``metadata`` when present, so native → BEIR → native keeps it; otherwise BEIR
queries are ``source="human"``, not verified.

Evidence quotes have no place in BEIR: :func:`write_beir` writes them to a side file
``evidence.jsonl`` in the folder (the native format's ``{"query_id", "doc_id", "grade",
"quote"}`` lines), which BEIR's own tools ignore and :func:`read_beir` reads back (keeping
the quotes of the split's queries), so native → BEIR → native loses nothing.

ArguAna-style sets, where query ids are also document ids: BEIR and MTEB drop a retrieved
document whose id equals the query id. Pass ``ignore_identical_ids=True`` to do the same
(:meth:`EvalSet.prepare_run` applies it); the loader notes when the situation occurs.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from .._util import atomic_folder, safe_component
from ..errors import DataFormatError
from .evalset import (
    EvalSet,
    evidence_records,
    find_file,
    read_evidence,
    read_qrels_lenient,
    source_paths,
)
from .jsonl import (
    QUERY_SOURCES,
    read_corpus_jsonl,
    read_queries_jsonl,
    write_corpus_jsonl,
    write_jsonl,
    write_queries_jsonl,
)
from .readers import read_qrels
from .texts import EMPTY, Issues, Queries, Query

__all__ = ["read_beir", "write_beir"]


def read_beir(
    folder: str | os.PathLike[str],
    split: str = "test",
    *,
    strict: bool = True,
    name: str | None = None,
    ignore_identical_ids: bool = False,
) -> EvalSet:
    """Load a BEIR folder for one split (``qrels/<split>.tsv``)."""
    root = Path(folder)
    if not root.is_dir():
        raise DataFormatError(f"{root}: not a folder; expected a BEIR folder with corpus.jsonl")
    qrels_path = _split_path(root, split)
    issues: Issues | None = None if strict else []
    corpus = read_corpus_jsonl(find_file(root, "corpus.jsonl"), issues=issues)
    all_queries = read_queries_jsonl(find_file(root, "queries.jsonl"), issues=issues)
    qrels = read_qrels_lenient(qrels_path, issues, read_qrels)
    judged = set(qrels.query_ids.tolist())
    queries = Queries([_lift(q) for q in all_queries if q.id in judged])
    notes = [f"queries limited to the {len(queries)} judged in split {split!r} "
             f"({len(all_queries) - len(queries)} of queries.jsonl left out)"]
    evidence = _split_evidence(root, corpus, judged, issues, notes)
    shared = sum(1 for qid in queries.ids if qid in corpus)
    if shared:
        notes.append(f"{shared} query ids are also document ids (ArguAna-style); BEIR/MTEB "
                     f"drop such hits: ignore_identical_ids={ignore_identical_ids}")
    prov = {"format": "beir", "path": str(root), "split": split, "notes": notes}
    return EvalSet(corpus, queries, qrels, evidence, name=name or root.name, provenance=prov,
                   ignore_identical_ids=ignore_identical_ids, issues=issues or [])


def _split_evidence(root: Path, corpus: Any, judged: set[str], issues: Issues | None,
                    notes: list[str]) -> tuple[Any, ...]:
    """The quotes of the side file ``evidence.jsonl`` (if any) for the split's queries."""
    path = find_file(root, "evidence.jsonl", required=False)
    if path is None:
        return ()
    every = read_evidence(path, corpus, issues=issues)
    kept = tuple(e for e in every if e.query_id in judged)
    notes.append(f"{len(kept)} evidence quotes read from the side file {path.name}"
                 + (f" ({len(every) - len(kept)} for queries outside the split left out)"
                    if len(kept) < len(every) else ""))
    return kept


def _split_path(root: Path, split: str) -> Path:
    qdir = root / "qrels"
    for n in (f"{split}.tsv", f"{split}.tsv.gz"):
        if (qdir / n).is_file():
            return qdir / n
    have = sorted(p.name.split(".")[0] for p in qdir.glob("*.tsv*")) if qdir.is_dir() else []
    raise DataFormatError(
        f"{qdir / (split + '.tsv')}: no qrels for split {split!r}; expected one of the "
        f"splits present: {', '.join(have) or 'none (no qrels/ folder)'}")


def _lift(q: Query) -> Query:
    """Move provenance keys a BEIR writer stored in metadata back into the fields."""
    meta = dict(q.metadata)
    src = meta.pop("source", None)
    verified = meta.pop("verified", None)
    gen = meta.pop("generator", None)
    if src not in QUERY_SOURCES or not isinstance(verified, bool | None):
        return q
    return dataclasses.replace(q, source=src, verified=bool(verified),
                               generator=None if gen is None else str(gen),
                               metadata=meta or EMPTY)


def write_beir(es: EvalSet, folder: str | os.PathLike[str], split: str = "test", *,
               overwrite: bool = False) -> Path:
    """Write a BEIR folder as a whole: ``_id`` keys, ``qrels/<split>.tsv`` with header,
    and the evidence quotes (if any) in the side file ``evidence.jsonl``.

    Like :func:`~searchbench.data.evalset.write_native`: written into a temporary sibling
    folder that then takes the target's place; a non-empty target only with ``overwrite``
    (replaced as a whole), never the set's own source. ``split`` must be a plain name
    (:func:`~searchbench._util.safe_component`).
    """
    safe_component(split, "split")
    root = Path(folder)
    with atomic_folder(root, overwrite=overwrite, protect=source_paths(es)) as tmp:
        write_corpus_jsonl(tmp / "corpus.jsonl", es.corpus, beir=True)
        write_queries_jsonl(tmp / "queries.jsonl", es.queries, beir=True)
        es.qrels.to_file(tmp / "qrels" / f"{split}.tsv", format="beir")
        if es.evidence:
            write_jsonl(tmp / "evidence.jsonl", evidence_records(es.evidence))
    return root
