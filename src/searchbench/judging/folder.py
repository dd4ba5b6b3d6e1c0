"""Start an evaluation set from a folder of documents and add real queries to it.

``init_evalset(DIR, docs=FOLDER)`` writes ``DIR/corpus.jsonl`` from the Markdown, text,
HTML (and, with the ``pdf`` extra, PDF) files under FOLDER (ARCHITECTURE §12.1). Ids are
the files' relative POSIX paths, so re-running adds new files, updates changed ones and
reports removed ones without renumbering anything. ``add_queries(DIR, FILE)`` appends
queries (one per line, or JSON Lines) with stable ids that never collide. Every file is
written atomically; queries, judgments and the judging store already in DIR are kept.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import NAME_FORM, check_name, utc_now, visible_name, write_text
from ..data import Corpus, Document, Queries, Query
from ..errors import ConfigError, DataFormatError
from .files import FORMATS, convert_file, doc_id_for, sha256

__all__ = ["MAX_FILE_BYTES", "QUERY_SOURCE_ALIASES", "AddQueriesReport", "InitReport",
           "add_queries", "has_judgments", "init_evalset", "load_queries", "native_file",
           "parse_size", "read_provenance_file"]

MAX_FILE_BYTES = 50 * 2**20
"""Files larger than this (50 MiB) are skipped by ``evalset init`` with the reason: one
document that size is already far past what an annotator reads or a chunker should see
whole, and reading (and converting) it would hold several times its size in memory.
``--max-file-size`` / ``max_file_bytes`` changes it."""
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6,
          "mib": 2**20, "g": 10**9, "gb": 10**9, "gib": 2**30}

QUERY_SOURCE_ALIASES = {"real": "human"}
"""``--source real`` (questions people really asked: search logs, tickets) is stored as
``human``, the native vocabulary's word for a query a person wrote (ARCHITECTURE §5.1);
``logs`` stays available for queries taken from search logs."""
QUERY_SOURCES = ("human", "logs", "curated", "synthetic")


@dataclass
class InitReport:
    """What ``evalset init`` did: ids added, updated, unchanged, removed; files skipped."""

    folder: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    pruned: bool = False
    skipped: list[tuple[str, str]] = field(default_factory=list)
    documents: int = 0

    def to_text(self) -> str:
        corpus = self.folder / "corpus.jsonl"
        lines = [f"wrote {corpus}: {self.documents} documents ({len(self.added)} added, "
                 f"{len(self.updated)} updated, {self.unchanged} unchanged, "
                 f"{len(self.removed)} removed)"]
        if self.removed:
            what = ("dropped" if self.pruned else
                    "kept in the corpus (no longer found under the docs folder or not matched by "
                    "the glob; --prune drops them)")
            lines.append(f"removed files, {what}: {_examples(self.removed)}")
        lines += [f"skipped {visible_name(path)}: {why}" for path, why in self.skipped]
        return "\n".join(lines)


def _examples(items: Sequence[str], n: int = 5) -> str:
    more = f", … {len(items) - n} more" if len(items) > n else ""
    return ", ".join(visible_name(item) for item in items[:n]) + more


def native_file(folder: Path, stem: str) -> Path | None:
    """``folder/stem`` or ``folder/stem.gz`` (an error when both exist), or None."""
    found = [folder / n for n in (stem, stem + ".gz") if (folder / n).is_file()]
    if len(found) > 1:
        raise DataFormatError(f"{folder}: both {stem} and {stem}.gz exist; expected one of them")
    return found[0] if found else None


# -- evalset init -------------------------------------------------------------------------
def parse_size(text: str | int, what: str = "size") -> int:
    """Bytes from ``"50MB"``, ``"200 MiB"``, ``"1G"`` or a plain number of bytes (k, M, G
    are powers of 1000; KiB, MiB, GiB of 1024)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
        if found is None or found.group(2).lower() not in _UNITS:
            raise ConfigError(f"{what} {text!r}: expected a number of bytes with an optional "
                              "unit, e.g. 50MB, 200MiB or 1G")
        value, unit = float(found.group(1)), found.group(2).lower()
    size = int(value * _UNITS[unit])
    if size < 1:
        raise ConfigError(f"{what} {text!r}: expected at least 1 byte")
    return size


def _size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def init_evalset(folder: str | os.PathLike[str], docs: str | os.PathLike[str], *,
                 glob: str | None = None, prune: bool = False,
                 max_file_bytes: int = MAX_FILE_BYTES) -> InitReport:
    """Write (or refresh) ``folder/corpus.jsonl`` from the files under ``docs``.

    ``glob`` selects files relative to ``docs`` (``**/*.md``; default: every file with a
    known suffix, :data:`~searchbench.judging.files.FORMATS`). Hidden files and folders
    are left out, symbolic links leading outside ``docs`` are refused (reported as
    skipped). Existing documents keep their place; new ones are appended in path order;
    documents whose file is gone are reported and kept unless ``prune``. Files larger
    than ``max_file_bytes`` (default :data:`MAX_FILE_BYTES`) are skipped with the reason,
    and no file is read past that size.
    """
    from ..data import read_corpus_jsonl, write_corpus_jsonl  # lazy: loads data on first use

    root, target = Path(docs), Path(folder)
    if not root.is_dir():
        raise ConfigError(f"--docs {root}: not a folder; expected the folder of documents")
    if target.resolve() == root.resolve():
        raise ConfigError(f"{target}: the evaluation set cannot be the docs folder itself; "
                          "give it its own folder")
    report = InitReport(target)
    existing_path = native_file(target, "corpus.jsonl")
    old = list(read_corpus_jsonl(existing_path)) if existing_path else []
    fresh = _documents(root, glob, report, skip=target, limit=max_file_bytes)
    _merge(old, fresh, report, prune)
    docs_out = _ordered(old, fresh, report, prune)
    report.documents = len(docs_out)
    if not docs_out:
        raise DataFormatError(f"{root}: no document found (glob {glob or 'default'}); expected "
                              f"files ending in {', '.join(sorted(FORMATS))}")
    target.mkdir(parents=True, exist_ok=True)
    write_corpus_jsonl(existing_path or target / "corpus.jsonl", Corpus(docs_out))
    if native_file(target, "queries.jsonl") is None:
        write_text(target / "queries.jsonl", "")
    if native_file(target, "qrels.tsv") is None:  # no judgments yet: the BEIR header only
        write_text(target / "qrels.tsv", "query-id\tcorpus-id\tscore\n")
    _note_provenance(target, root, {"glob": glob or "", "written_at": utc_now(),
                                    "documents": len(docs_out)})
    return report


def _documents(root: Path, glob: str | None, report: InitReport,
               skip: Path, limit: int) -> dict[str, Document]:
    real_root = root.resolve()
    real_skip = skip.resolve()
    out: dict[str, Document] = {}
    for path, rel in _walk(root, glob):
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            report.skipped.append((rel, "unknown kind of file; expected " +
                                   ", ".join(sorted(FORMATS))))
            continue
        real = path.resolve()
        if not real.is_relative_to(real_root):
            report.skipped.append((rel, f"a symbolic link leading outside {root} (refused)"))
            continue
        if real.is_relative_to(real_skip):
            continue
        if not real.is_file():  # reading a named pipe would wait for a writer forever
            report.skipped.append((rel, "not a regular file (a pipe, socket or device); "
                                        "expected a document file"))
            continue
        try:
            data = _read_bounded(real, limit)
        except OSError as exc:
            report.skipped.append((rel, f"cannot be read ({exc.strerror or exc})"))
            continue
        except MemoryError:
            report.skipped.append((rel, "too large for the memory available; split it, or "
                                        "lower --max-file-size"))
            continue
        if data is None:
            report.skipped.append((rel, f"{_size_text(real.stat().st_size)}, over the "
                                        f"{_size_text(limit)} limit for one document; "
                                        "split it, or raise the limit (--max-file-size)"))
            continue
        converted = convert_file(path, fmt, data)
        if converted.skipped:
            report.skipped.append((rel, converted.skipped))
            continue
        doc_id = doc_id_for(rel)
        if doc_id in out:
            _collision(root, out[doc_id].metadata["path"], rel, doc_id)
        out[doc_id] = Document(doc_id, converted.text, converted.title,
                               {"path": rel, "format": fmt, "sha256": sha256(data)})
    return out


def _collision(root: Path, first: str, second: str, doc_id: str) -> None:
    """Two files whose names differ only in their Unicode form (NFC ``é`` and NFD ``e`` +
    U+0301 look the same) would become one id: refused, naming both (as escapes, since
    they print alike)."""
    raise DataFormatError(f"{visible_name(root)}: files {first!a} and {second!a} "
                          f"both become document id '{doc_id}' (names are "
                          f"compared in Unicode {NAME_FORM} form, and they print alike); "
                          f"expected distinct names: rename one of them")


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path``, or None when it holds more than ``limit`` (never reading more
    than ``limit + 1`` bytes, even from a file that grows meanwhile)."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            return None
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def _walk(root: Path, glob: str | None) -> list[tuple[Path, str]]:
    """Files under ``root`` (symlinked folders not followed, hidden entries left out) as
    ``(path, relative POSIX path)``, sorted, filtered by ``glob``."""
    found: list[tuple[Path, str]] = []
    for current, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(current) / name
            rel = path.relative_to(root).as_posix()
            if glob is None and path.suffix.lower() not in FORMATS:
                continue
            if glob is not None and not _matches(rel, glob):
                continue
            found.append((path, rel))
    return sorted(found, key=lambda pair: pair[1])


def _matches(rel: str, pattern: str) -> bool:
    """Glob matching on relative POSIX paths: ``*`` stays within a folder, ``**/`` matches
    any number of folders (also none)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.fullmatch(out, rel) is not None or (
        "/" not in pattern and fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], pattern))


def _merge(old: list[Document], fresh: dict[str, Document], report: InitReport,
           prune: bool) -> None:
    old_ids = {d.id: d for d in old}
    for doc_id, doc in fresh.items():
        before = old_ids.get(doc_id)
        if before is None:
            report.added.append(doc_id)
        elif (before.text, before.title, dict(before.metadata)) != (
                doc.text, doc.title, dict(doc.metadata)):
            report.updated.append(doc_id)
        else:
            report.unchanged += 1
    report.removed = [d.id for d in old if d.id not in fresh and "path" in d.metadata]
    report.pruned = prune


def _ordered(old: list[Document], fresh: dict[str, Document], report: InitReport,
             prune: bool) -> list[Document]:
    gone = set(report.removed) if prune else set()
    kept = [fresh.get(d.id, d) for d in old if d.id not in gone]
    return kept + [fresh[i] for i in report.added]


def _note_provenance(folder: Path, docs: Path, documents: dict[str, Any]) -> None:
    """Record where the documents came from in ``provenance.json`` (other keys kept)."""
    path = folder / "provenance.json"
    saved = read_provenance_file(path)
    prov = dict(saved.get("provenance", {}))
    prov.update({"format": "files", "path": str(docs), "documents": documents})
    saved["provenance"] = prov
    saved.setdefault("name", folder.resolve().name)
    write_text(path, json.dumps(saved, indent=1, ensure_ascii=False) + "\n")


def read_provenance_file(path: Path) -> dict[str, Any]:
    """The saved ``provenance.json`` object ({} when absent)."""
    if not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"{path}: cannot be read as JSON ({exc}); expected the object "
                              "searchbench writes") from None
    if not isinstance(obj, dict):
        raise DataFormatError(f"{path}: expected a JSON object")
    return obj


# -- evalset add-queries ------------------------------------------------------------------
@dataclass
class AddQueriesReport:
    """What ``evalset add-queries`` did."""

    path: Path
    added: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    total: int = 0

    def to_text(self) -> str:
        lines = [f"wrote {self.path}: {len(self.added)} queries added "
                 f"({_examples(self.added) if self.added else 'none'}), {self.total} in all"]
        if self.duplicates:
            lines.append(f"skipped {len(self.duplicates)} duplicate(s): "
                         f"{_examples(self.duplicates)}")
        return "\n".join(lines)


def load_queries(folder: Path) -> list[Query]:
    """The queries of ``folder`` (an empty list when the file is empty or absent)."""
    from ..data import read_queries_jsonl  # lazy: loads data on first use

    path = native_file(folder, "queries.jsonl")
    if path is None or (path.suffix != ".gz" and not path.read_text("utf-8").strip()):
        return []
    return list(read_queries_jsonl(path))


def add_queries(folder: str | os.PathLike[str], source_file: str | os.PathLike[str], *,
                source: str = "human", generator: str | None = None) -> AddQueriesReport:
    """Append the queries of ``source_file`` to ``folder/queries.jsonl``.

    The file holds one query per line, or JSON Lines (``{"text": ...}`` with optional
    ``id``, ``source``, ``generator``, ``verified``, other keys → metadata). New ids are
    ``q<N>``, never one in use; a JSON id already in use with another text is an error. A
    query whose text (case, white space and end punctuation aside) is already there is
    reported and skipped.
    """
    from ..data import write_queries_jsonl  # lazy: loads data on first use

    src = QUERY_SOURCE_ALIASES.get(source, source)
    if src not in QUERY_SOURCES:
        raise ConfigError(f"--source {source!r}; expected real, "
                          f"{', '.join(QUERY_SOURCES)}")
    target = Path(folder)
    if native_file(target, "corpus.jsonl") is None:
        raise DataFormatError(f"{target}: no corpus.jsonl; run 'searchbench evalset init "
                              f"{target} --docs FOLDER' first")
    old = load_queries(target)
    report = AddQueriesReport(native_file(target, "queries.jsonl") or target / "queries.jsonl")
    seen = {_norm(q.text): q.id for q in old}
    ids = {q.id: q for q in old}
    new: list[Query] = []
    counter = len(old)
    for where, rec in _query_lines(Path(source_file)):
        text = rec["text"]
        if _norm(text) in seen:
            report.duplicates.append(f"{where} (= {seen[_norm(text)]})")
            continue
        qid = rec.get("id")
        if qid is not None and qid in ids:
            raise DataFormatError(f"{where}: id {qid!r} is already used by another query "
                                  f"({ids[qid].text[:40]!r}); expected a new id, or none")
        if qid is None:
            counter, qid = _next_id(counter, ids)
        query = Query(qid, text, rec.get("source", src), rec.get("generator", generator),
                      rec.get("verified", False), rec.get("metadata") or {},
                      rec.get("no_answer", False))
        ids[qid] = query
        seen[_norm(text)] = qid
        new.append(query)
        report.added.append(qid)
    report.total = len(old) + len(new)
    write_queries_jsonl(report.path, Queries([*old, *new]))
    return report


def _norm(text: str) -> str:
    """The form duplicates are found by: case, white space runs and the punctuation at the
    ends (``?``, ``.``, quotes…) aside."""
    return " ".join(text.casefold().split()).strip(" ?!.,;:'\"¿¡")


def _next_id(counter: int, used: dict[str, Any]) -> tuple[int, str]:
    while True:
        counter += 1
        if f"q{counter}" not in used:
            return counter, f"q{counter}"


def _query_lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(path:line, record)`` of every non-blank line: JSON Lines when the file ends in
    ``.jsonl`` or its first non-blank line starts with ``{``, else one query per line."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              "expected UTF-8") from None
    first = next((ln for ln in lines if ln.strip()), "")
    as_json = path.suffix == ".jsonl" or first.lstrip().startswith("{")
    out = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            where = f"{path}:{n}"
            out.append((where, _json_query(line, where) if as_json else {"text": line.strip()}))
    if not out:
        raise DataFormatError(f"{path}: no queries; expected one query per line or JSON Lines")
    return out


def _json_query(line: str, where: str) -> dict[str, Any]:
    from ..data import QUERY_SOURCES as NATIVE_SOURCES  # lazy: loads data on first use

    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise DataFormatError(f"{where}: invalid JSON ({exc}); expected "
                              '{"text": ...} per line') from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or \
            not obj["text"].strip():
        raise DataFormatError(f'{where}: expected a JSON object with a non-empty "text"')
    rec: dict[str, Any] = {"text": obj["text"].strip()}
    qid = obj.get("id", obj.get("_id"))
    if qid is not None:
        qid = check_name(str(qid), f"{where}: query id")  # NFC, nothing hidden
        if any(ch.isspace() for ch in qid):
            raise DataFormatError(f"{where}: id {qid!r}; expected a non-empty id without "
                                  "white space")
        rec["id"] = qid
    if "source" in obj:
        src = QUERY_SOURCE_ALIASES.get(obj["source"], obj["source"])
        if src not in NATIVE_SOURCES:
            raise DataFormatError(f"{where}: source {obj['source']!r}; expected real, "
                                  f"{', '.join(NATIVE_SOURCES)}")
        rec["source"] = src
    if "generator" in obj:
        rec["generator"] = None if obj["generator"] is None else str(obj["generator"])
    if isinstance(obj.get("verified"), bool):
        rec["verified"] = obj["verified"]
    if "no_answer" in obj:
        if not isinstance(obj["no_answer"], bool):
            raise DataFormatError(f"{where}: no_answer is {obj['no_answer']!r}; expected true "
                                  "(no document answers this query) or false")
        rec["no_answer"] = obj["no_answer"]
    known = {"id", "_id", "text", "source", "generator", "verified", "no_answer", "metadata"}
    meta = dict(obj["metadata"]) if isinstance(obj.get("metadata"), dict) else {}
    meta.update({k: v for k, v in obj.items() if k not in known})
    if meta:
        rec["metadata"] = meta
    return rec


def has_judgments(path: Path) -> bool:
    """Whether a qrels file holds more than a header (an empty qrels file is no error
    while a set is being built)."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8-sig") as fh:
        lines = [ln for ln in (fh.readline() for _ in range(2)) if ln.strip()]
    return bool(lines) and not (len(lines) == 1 and lines[0].split()[0] == "query-id")
