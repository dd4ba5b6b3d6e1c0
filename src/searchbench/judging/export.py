"""Export the judging store into the evaluation set (ARCHITECTURE §12.5).

An *adjudication policy* turns the labels of each (query, document) pair into one grade:

- ``majority``: the most frequent grade among the people's labels (a tie goes to the
  lowest tied grade: a doubt is not relevance);
- ``mean``: the people's mean grade rounded half up (``⌊mean + ½⌋``);
- ``annotator:NAME``: NAME's label where NAME labelled the pair (NAME may be an LLM judge:
  then its labels are exported, by name), else the people's majority;
- ``humans-over-llm``: the people's majority where any person labelled the pair, else the
  majority of the LLM judges' labels.

``majority`` and ``mean`` never use LLM labels: LLM labels reach the qrels only through a
policy that names them, and every exported pair's provenance says which rule gave its grade
and which labels (annotator, kind, grade, time) it rests on. Skips (``grade=None``) are no
label. ``min_annotators`` leaves out pairs resting on fewer labels.

Export writes, each file atomically: ``qrels.tsv`` (pairs judged before and not in the
store are kept), ``evidence.jsonl`` (the quotes of the labels used, for relevant pairs),
``qrels.provenance.jsonl`` (one line per exported pair), ``queries.jsonl`` (a query with a
person's label becomes ``verified``) and ``provenance.json`` with the new content hash.
The files it replaces are first copied to ``history/<time>-<old hash>/`` and listed in
``provenance.json["history"]``: no exported version is lost.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._util import atomic_folder, normal_name, utc_now, write_text
from ..data import Qrels, read_qrels
from ..errors import ConfigError, DataFormatError
from .folder import has_judgments, load_queries, native_file, read_provenance_file
from .labels import Judgment, Quote
from .store import STORE_FILE, JudgmentStore

__all__ = ["POLICIES", "Adjudicated", "ExportReport", "adjudicate", "export",
           "store_judgments"]

POLICIES = ("majority", "mean", "annotator:NAME", "humans-over-llm")
PROVENANCE_FILE = "qrels.provenance.jsonl"
HISTORY = "history"
_REPLACED = ("qrels.tsv", "evidence.jsonl", PROVENANCE_FILE, "queries.jsonl",
             "provenance.json")


def store_judgments(folder: str | os.PathLike[str]) -> list[Judgment]:
    """The latest labels of ``folder/judging.sqlite`` ([] when there is no store)."""
    if not (Path(folder) / STORE_FILE).is_file():
        return []
    with JudgmentStore(folder, check=True) as store:  # a malformed file: silently wrong
        return store.judgments(latest=True)


@dataclass(frozen=True)
class Adjudicated:
    """One exported pair: its grade, the rule that gave it and the labels behind it."""

    query_id: str
    doc_id: str
    grade: int
    rule: str
    labels: tuple[Judgment, ...]

    def record(self, policy: str, exported_at: str) -> dict[str, Any]:
        return {"query_id": self.query_id, "doc_id": self.doc_id, "grade": self.grade,
                "policy": policy, "rule": self.rule, "exported_at": exported_at,
                "origin": "store",
                "labels": [{"annotator": j.annotator, "kind": j.kind, "grade": j.grade,
                            "created_at": j.created_at, "source": j.source} for j in self.labels]}


def _parse_policy(policy: str, judgments: Sequence[Judgment]) -> tuple[str, str | None]:
    if policy in ("majority", "mean", "humans-over-llm"):
        return policy, None
    if policy.startswith("annotator:") and policy[len("annotator:"):]:
        name = normal_name(policy[len("annotator:"):])  # names are stored in NFC
        known = sorted({j.annotator for j in judgments})
        if name not in known:
            raise ConfigError(f"--adjudicate {policy}: no annotator {name!r} in the store; "
                              f"expected one of {', '.join(known) or '(none)'}")
        return "annotator", name
    raise ConfigError(f"--adjudicate {policy!r}; expected one of {', '.join(POLICIES)}")


def _majority(grades: Sequence[int]) -> int:
    counts = np.bincount(np.asarray(grades, dtype=np.int64), minlength=4)
    return int(counts.argmax())  # argmax takes the first (lowest) of tied grades


def _mean(grades: Sequence[int]) -> int:
    return int(np.floor(np.mean(grades) + 0.5))


def _rule(policy: str, name: str | None, labels: list[Judgment]) -> tuple[str, list[Judgment]]:
    """Which rule applies to a pair and the labels it uses."""
    people = [j for j in labels if j.kind == "human"]
    if policy == "annotator":
        own = [j for j in labels if j.annotator == name]
        return (f"annotator:{name}", own) if own else ("majority of people", people)
    if policy == "humans-over-llm" and not people:
        return "majority of LLM judges", [j for j in labels if j.kind == "llm"]
    if policy == "mean":
        return "mean of people", people
    return "majority of people", people


def adjudicate(judgments: Sequence[Judgment], policy: str = "majority", *,
               min_annotators: int = 1) -> tuple[list[Adjudicated], dict[str, int]]:
    """One grade per (query, document) under ``policy`` (see the module docstring), and
    counts of the pairs left out (``too_few_labels``, ``llm_only``)."""
    if min_annotators < 1:
        raise ConfigError(f"--min-annotators {min_annotators}; expected 1 or more")
    kind, name = _parse_policy(policy, judgments)
    by_pair: dict[tuple[str, str], dict[str, Judgment]] = {}
    for j in judgments:
        if j.grade is not None:
            by_pair.setdefault((j.query_id, j.doc_id), {})[j.annotator] = j
        else:
            by_pair.get((j.query_id, j.doc_id), {}).pop(j.annotator, None)
    out: list[Adjudicated] = []
    left = {"too_few_labels": 0, "llm_only": 0}
    for (qid, did), labels in sorted(by_pair.items()):
        if not labels:
            continue
        rule, used = _rule(kind, name, list(labels.values()))
        if not used:
            left["llm_only"] += 1
            continue
        if len(used) < min_annotators and not rule.startswith("annotator:"):
            left["too_few_labels"] += 1
            continue
        grades = [int(j.grade) for j in used if j.grade is not None]
        grade = _mean(grades) if rule.startswith("mean") else _majority(grades)
        out.append(Adjudicated(qid, did, grade, rule, tuple(used)))
    return out, left


# -- export -----------------------------------------------------------------------------------
@dataclass
class ExportReport:
    """What ``judge export`` wrote."""

    folder: Path
    policy: str
    exported: int
    kept: int
    left_out: dict[str, int]
    content_hash: str
    previous_hash: str | None
    history: str | None
    verified_queries: int
    evidence: int
    grades: dict[int, int] = field(default_factory=dict)
    unchanged_since: str | None = None  # nothing written: the export of this time stands

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.__dict__.items() if k != "folder"},
                "folder": str(self.folder)}

    def to_text(self) -> str:
        grades = ", ".join(f"{g}: {n}" for g, n in sorted(self.grades.items()))
        lines = [f"wrote {self.folder / 'qrels.tsv'}: {self.exported + self.kept} judgments "
                 f"({self.exported} from the store by policy {self.policy}, {self.kept} kept "
                 f"from before; grades {grades or '-'}), {self.evidence} evidence quotes, "
                 f"{self.verified_queries} verified queries"]
        if any(self.left_out.values()):
            lines.append(f"left out: {self.left_out['too_few_labels']} pairs with too few "
                         f"labels, {self.left_out['llm_only']} pairs labelled only by LLM "
                         "judges (policy humans-over-llm or annotator:NAME exports them)")
        if self.unchanged_since is not None:
            lines[0] = lines[0].replace("wrote ", "unchanged ", 1)
            lines.append(f"nothing changed since the export of {self.unchanged_since} "
                         f"(content hash {self.content_hash}): nothing written, no history "
                         f"copy")
            return "\n".join(lines)
        lines.append(f"content hash: {self.previous_hash or '(none)'} → {self.content_hash}")
        if self.history:
            lines.append(f"previous version kept in {self.history}")
        return "\n".join(lines)


def export(folder: str | os.PathLike[str], judgments: Sequence[Judgment] | None = None, *,
           policy: str = "majority", min_annotators: int = 1) -> ExportReport:
    """Adjudicate ``judgments`` (default: the set's judging store) and write them into the
    set at ``folder`` with their provenance, keeping the previous version in ``history/``."""

    root = Path(folder)
    if native_file(root, "corpus.jsonl") is None:
        raise DataFormatError(f"{root}: no corpus.jsonl; expected an evaluation set folder")
    if judgments is None and not (root / "judging.sqlite").is_file():
        raise DataFormatError(f"{root}: no judging store (judging.sqlite) to export; judge "
                              f"the pool first (searchbench judge serve {root} --pool POOL)")
    labels = store_judgments(root) if judgments is None else list(judgments)
    adjudicated, left = adjudicate(labels, policy, min_annotators=min_annotators)
    if not adjudicated:
        raise DataFormatError(f"{root}: nothing to export: {len(labels)} labels give no pair "
                              f"under --adjudicate {policy} --min-annotators {min_annotators} "
                              f"({left['too_few_labels']} with too few labels, "
                              f"{left['llm_only']} labelled only by LLM judges)")
    saved = read_provenance_file(root / "provenance.json")
    now = utc_now()
    kept = _kept_qrels(root, {(a.query_id, a.doc_id) for a in adjudicated})
    evidence = _evidence(root, adjudicated, kept)
    queries, updated = _verified_queries(root, adjudicated)
    settings = {"policy": policy, "min_annotators": min_annotators,
                "exported": len(adjudicated), "kept": len(kept), "left_out": left}
    grades: dict[int, int] = {}
    for g in [a.grade for a in adjudicated] + list(kept.values()):
        grades[g] = grades.get(g, 0) + 1
    report = ExportReport(root, policy, len(adjudicated), len(kept), left, "",
                          saved.get("content_hash"), None, sum(q.verified for q in updated),
                          len(evidence), grades)
    if updated == queries and (since := _unchanged(root, saved, settings, adjudicated, kept,
                                                   evidence)):
        report.content_hash, report.unchanged_since = saved["content_hash"], since
        return report
    report.history = _keep_history(root, saved.get("content_hash"), now)
    if updated != queries:
        _write_queries(root, updated)
    _write_qrels(root, adjudicated, kept)
    _write_jsonl(root / "evidence.jsonl", evidence)
    _write_jsonl(root / PROVENANCE_FILE, _provenance_records(adjudicated, kept, policy, now))
    report.content_hash = _write_provenance(root, saved, {"at": now, **settings},
                                            report.history)
    return report


def _provenance_records(adjudicated: Sequence[Adjudicated], kept: dict[tuple[str, str], int],
                        policy: str, at: str) -> list[dict[str, Any]]:
    return ([a.record(policy, at) for a in adjudicated]
            + [{"query_id": q, "doc_id": d, "grade": g, "origin": "previous qrels.tsv"}
               for (q, d), g in sorted(kept.items())])


def _unchanged(root: Path, saved: dict[str, Any], settings: dict[str, Any],
               adjudicated: Sequence[Adjudicated], kept: dict[tuple[str, str], int],
               evidence: list[dict[str, Any]]) -> str | None:
    """The time of the last export when exporting now would write exactly what it wrote
    (same settings, labels, evidence and provenance, and the set unchanged since: its
    content hash), else ``None``."""
    from ..data import read_native  # lazy: loads data on first use

    last = saved.get("provenance", {}).get("export")
    if not isinstance(last, dict) or not isinstance(last.get("at"), str) or any(
            last.get(k) != v for k, v in settings.items()):
        return None
    if _read_jsonl(root / PROVENANCE_FILE) != _provenance_records(
            adjudicated, kept, settings["policy"], last["at"]):
        return None
    if _read_jsonl(root / "evidence.jsonl") != evidence:
        return None
    if saved.get("content_hash") != read_native(root).content_hash():
        return None
    return str(last["at"])


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    from ..data import iter_jsonl  # lazy: loads data on first use

    return [obj for _, obj in iter_jsonl(path)]


def _kept_qrels(root: Path, exported: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Judgments of the current ``qrels.tsv`` to keep: those not given by the store now and
    not given by the store at an earlier export (a label since undone must not linger)."""

    path = native_file(root, "qrels.tsv")
    if path is None or not has_judgments(path):
        return {}

    q = read_qrels(path)
    from_store = {(r["query_id"], r["doc_id"]) for r in _read_jsonl(root / PROVENANCE_FILE)
                  if r.get("origin") == "store"}
    pairs = zip(q.query_ids[q.query_codes()].tolist(), q.doc_vocab[q.doc_codes].tolist(),
                q.grades.tolist(), strict=True)
    return {(qid, did): int(g) for qid, did, g in pairs
            if (qid, did) not in exported and (qid, did) not in from_store}


def _evidence(root: Path, adjudicated: Sequence[Adjudicated],
              kept: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """Previous quotes of kept pairs, then the quotes of the labels used for each relevant
    exported pair (each quote once), with the exported grade."""
    out = [r for r in _read_jsonl(root / "evidence.jsonl")
           if (str(r.get("query_id")), str(r.get("doc_id"))) in kept]
    for a in adjudicated:
        if a.grade <= 0:
            continue
        seen: set[str] = set()
        quotes: list[Quote] = [q for j in a.labels for q in j.evidence]
        for quote in quotes:
            if quote.text.strip() and quote.text not in seen:
                seen.add(quote.text)
                out.append({"query_id": a.query_id, "doc_id": a.doc_id, "grade": a.grade,
                            "quote": quote.text})
    return out


def _verified_queries(root: Path, adjudicated: Sequence[Adjudicated]) -> tuple[list[Any],
                                                                               list[Any]]:
    """The set's queries, and them with every query a person labelled ``verified``."""

    queries = load_queries(root)
    by_people = {a.query_id for a in adjudicated if any(j.kind == "human" for j in a.labels)}
    return queries, [replace(q, verified=True) if q.id in by_people and not q.verified else q
                     for q in queries]


def _write_queries(root: Path, updated: list[Any]) -> None:
    from ..data import Queries, write_queries_jsonl  # lazy: loads data on first use

    write_queries_jsonl(native_file(root, "queries.jsonl") or root / "queries.jsonl",
                        Queries(updated))


def _write_qrels(root: Path, adjudicated: Sequence[Adjudicated],
                 kept: dict[tuple[str, str], int]) -> None:
    rows = [(a.query_id, a.doc_id, a.grade) for a in adjudicated]
    rows += [(q, d, g) for (q, d), g in kept.items()]
    qrels = Qrels.from_columns([r[0] for r in rows], [r[1] for r in rows],
                               np.array([r[2] for r in rows], dtype=np.int64))
    qrels.to_file(native_file(root, "qrels.tsv") or root / "qrels.tsv", format="beir")


def _write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def _keep_history(root: Path, old_hash: str | None, now: str) -> str | None:
    """Copy the files an export replaces into ``history/<time>-<old hash>/`` (atomically,
    as one folder); None when there is nothing to keep."""
    present = [root / n for n in _REPLACED if (root / n).is_file()]

    qrels = root / "qrels.tsv"
    if not qrels.is_file() or not has_judgments(qrels):
        return None  # the first export: no judged version to keep
    stamp = now.replace(":", "").replace("-", "")
    short = (old_hash or "sha256:unhashed").split(":", 1)[-1][:12]
    target = root / HISTORY / f"{stamp}-{short}"
    n = 1
    while target.exists():
        n += 1
        target = root / HISTORY / f"{stamp}-{short}-{n}"
    with atomic_folder(target) as tmp:
        for path in present:
            shutil.copy2(path, tmp / path.name)
    return target.relative_to(root).as_posix()


def _write_provenance(root: Path, saved: dict[str, Any], export_info: dict[str, Any],
                      history: str | None) -> str:
    """Write ``provenance.json`` with the new content hash (computed by reading the set
    back, so it is the hash any later load reports) and the history list."""
    from ..data import read_native  # lazy: loads data on first use

    es = read_native(root)
    content_hash = es.content_hash()
    out = dict(saved)
    past = list(out.get("history", []))
    if history is not None:
        past.append({"content_hash": saved.get("content_hash"), "folder": history,
                     "replaced_at": export_info["at"]})
    prov = dict(out.get("provenance", {}))
    prov["export"] = export_info
    out.update({"name": saved.get("name", root.resolve().name), "content_hash": content_hash,
                "provenance": prov, "history": past})
    write_text(root / "provenance.json", json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return content_hash
