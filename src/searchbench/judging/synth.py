"""Synthetic questions with guards (``searchbench synth``).

For each document, ``per_doc`` chunks (spread over the document; the whole document
without a chunker) are sent to an OpenAI-compatible chat endpoint with the packaged,
versioned prompt ``prompts/synth-1.toml``, which asks for questions as JSON. Every question
keeps its chunk as evidence (an exact quote with character offsets into the document).

Guards, in this order, each counted in :class:`SynthReport`:

1. **malformed** — the answer is not ``{"questions": [strings]}`` (a fenced JSON block is
   accepted), or a question is empty or longer than 300 characters;
2. **copy** — a near-copy of the source: the share of the question's word n-grams
   (``ngram`` words, lower case) found verbatim in the chunk is ``>= copy_threshold``;
3. **duplicate** — cosine similarity ``>= dup_threshold`` with an earlier kept question or
   with a query already in the set (embeddings of the project's encoders, e.g. ``minilm``);
4. **unanswerable** — the LLM judge (:mod:`.llm`, UMBRELA prompt) grades the chunk for the
   question below ``min_grade``; a kept question's evidence gets that grade.

Every kept question is ``source: synthetic``, ``generator: <model>``, ``verified: false``
(a person must judge it). :func:`append_to_evalset` adds them, their qrels and evidence to
a native evaluation-set folder (idempotent: ids are content hashes).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import progress as steps
from .._util import write_text
from ..errors import ConfigError, DataFormatError
from ..retrieval import chunker_for
from .llm import ChatClient, LlmJudge, Prompt, load_prompt

__all__ = ["SynthQuestion", "SynthReport", "append_to_evalset", "copy_overlap",
           "generate_questions", "parse_questions", "write_questions"]

MAX_QUESTION = 300
_WORD = re.compile(r"\w+")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


@dataclass(frozen=True)
class SynthQuestion:
    """A kept question and its evidence: ``document.text[start:end] == quote``."""

    id: str
    text: str
    doc_id: str
    start: int
    end: int
    quote: str
    grade: int
    generator: str
    prompt_version: str
    checked_by: str = ""

    def record(self) -> dict[str, Any]:
        """The ``synth.jsonl`` line: a ``queries.jsonl`` record plus its evidence."""
        return {"id": self.id, "text": self.text, "source": "synthetic",
                "generator": self.generator, "verified": False,
                "metadata": {"prompt_version": self.prompt_version,
                             "checked_by": self.checked_by},
                "evidence": {"doc_id": self.doc_id, "start": self.start, "end": self.end,
                             "grade": self.grade, "quote": self.quote}}


@dataclass
class SynthReport:
    """How many chunks were asked, questions generated, kept and dropped by each guard."""

    chunks: int = 0
    generated: int = 0
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("malformed", "copy", "duplicate", "unanswerable"), 0))
    prompt_tokens: int = 0
    completion_tokens: int = 0


def parse_questions(answer: str) -> list[str] | None:
    """The questions of a generator answer ``{"questions": [...]}``, or None."""
    text = answer.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(q, str) for q in items):
        return None
    return [" ".join(q.split()) for q in items]


def copy_overlap(question: str, source: str, n: int = 3) -> float:
    """Share of the question's word ``n``-grams (lower case) found verbatim in ``source``
    (questions shorter than ``n`` words: their words): 0 = none, 1 = all copied."""
    q, s = _WORD.findall(question.lower()), _WORD.findall(source.lower())
    size = min(n, len(q))
    if size == 0:
        return 0.0
    grams = {tuple(q[i:i + size]) for i in range(len(q) - size + 1)}
    source_grams = {tuple(s[i:i + size]) for i in range(len(s) - size + 1)}
    return len(grams & source_grams) / len(grams)


@dataclass
class _Candidate:
    text: str
    doc_id: str
    start: int
    end: int
    quote: str


def _chunks(es: Any, chunk: str | None, per_doc: int) -> list[tuple[Any, int, int, int]]:
    """``(doc, start, end, n_questions)``: ``per_doc`` picks spread over each document."""
    chunker = chunker_for(chunk, None) if chunk else None
    out = []
    for doc in es.corpus:
        if not doc.text.strip():
            continue
        spans = [(c.start, c.end) for c in chunker.split(doc.id, doc.text)] if chunker \
            else [(0, len(doc.text))]
        spans = spans or [(0, len(doc.text))]
        picks: dict[tuple[int, int], int] = {}
        for j in range(per_doc):
            span = spans[j * len(spans) // per_doc]
            picks[span] = picks.get(span, 0) + 1
        out += [(doc, a, b, n) for (a, b), n in picks.items()]
    return out


def generate_questions(es: Any, client: ChatClient, judge: LlmJudge, encoder: Any, *,
                       per_doc: int = 1, chunk: str | None = None,
                       prompt: Prompt | None = None, ngram: int = 3,
                       copy_threshold: float = 0.5, dup_threshold: float = 0.9,
                       min_grade: int = 2, max_chars: int = 6000,
                       progress: Callable[[int], None] | None = None,
                       quiet: bool | None = None
                       ) -> tuple[list[SynthQuestion], SynthReport]:
    """Generate, guard and return the kept questions of ``es`` (see the module docstring).
    ``progress(1)`` is called after each chunk is asked; a progress bar (``quiet``: none)
    shows the requests."""
    _check(per_doc, ngram, copy_threshold, dup_threshold, min_grade)
    prompt = prompt or load_prompt("synth-1")
    report = SynthReport()
    candidates: list[_Candidate] = []
    picks = _chunks(es, chunk, per_doc)
    with steps(len(picks), f"asking {client.model} for questions", quiet,
               unit="chunks") as asked:
        for pick in picks:
            _ask(pick, client, prompt, max_chars, ngram, copy_threshold, report, candidates)
            asked(1)
            if progress:
                progress(1)
    candidates = _distinct(candidates, [q.text for q in es.queries], encoder, dup_threshold,
                           report)
    with steps(len(candidates), "checking that the questions are answerable", quiet,
               unit="questions") as checked:
        kept = _answerable(candidates, judge, min_grade, max_chars, report, client.model,
                           prompt.version)
        checked(len(candidates))
    report.kept = len(kept)
    return kept, report


def _ask(pick: tuple[Any, int, int, int], client: ChatClient, prompt: Prompt,
         max_chars: int, ngram: int, copy_threshold: float, report: SynthReport,
         candidates: list[_Candidate]) -> None:
    """Ask for ``n`` questions about one chunk; keep the well-formed, non-copied ones."""
    doc, start, end, n = pick
    quote = doc.text[start:end]
    report.chunks += 1
    where = f"synth: POST {client.http.public} for document {doc.id!r}"
    c = client.complete(prompt.messages(n=n, passage=quote[:max_chars]), where)
    report.prompt_tokens += c.prompt_tokens
    report.completion_tokens += c.completion_tokens
    found = parse_questions(c.text)
    if found is None:
        report.dropped["malformed"] += n
        return
    for text in found:
        report.generated += 1
        if not text or len(text) > MAX_QUESTION:
            report.dropped["malformed"] += 1
        elif copy_overlap(text, quote, ngram) >= copy_threshold:
            report.dropped["copy"] += 1
        else:
            candidates.append(_Candidate(text, doc.id, start, end, quote))


def _check(per_doc: int, ngram: int, copy_threshold: float, dup_threshold: float,
           min_grade: int) -> None:
    if per_doc < 1 or ngram < 1 or not 0 < copy_threshold <= 1 or not 0 < dup_threshold <= 1 \
            or min_grade not in (0, 1, 2, 3):
        raise ConfigError(f"per_doc={per_doc}, ngram={ngram}, copy_threshold={copy_threshold}"
                          f", dup_threshold={dup_threshold}, min_grade={min_grade}: expected "
                          "per_doc, ngram >= 1, thresholds in (0, 1], min_grade 0-3")


def _distinct(cands: list[_Candidate], existing: Sequence[str], encoder: Any,
              threshold: float, report: SynthReport) -> list[_Candidate]:
    """Greedy: a candidate survives when its cosine similarity with every existing query
    and every earlier survivor is below ``threshold``."""
    if not cands:
        return []
    vecs = np.asarray(encoder.encode_queries([c.text for c in cands] + list(existing)),
                      dtype=np.float64)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    unit = vecs / np.where(norms > 0, norms, 1.0)
    sims = unit[:len(cands)] @ unit.T  # candidates x (candidates + existing)
    kept: list[int] = []
    for i in range(len(cands)):
        against = kept + list(range(len(cands), unit.shape[0]))
        if against and sims[i, against].max() >= threshold:
            report.dropped["duplicate"] += 1
        else:
            kept.append(i)
    return [cands[i] for i in kept]


def _answerable(cands: list[_Candidate], judge: LlmJudge, min_grade: int, max_chars: int,
                report: SynthReport, model: str, version: str) -> list[SynthQuestion]:
    verdicts = judge.grade_many([(c.text, c.quote[:max_chars], f"question {c.text!r}")
                                 for c in cands])
    kept = []
    for c, v in zip(cands, verdicts, strict=True):
        report.prompt_tokens += v.prompt_tokens
        report.completion_tokens += v.completion_tokens
        if v.grade is None or v.grade < min_grade:
            report.dropped["unanswerable"] += 1
            continue
        digest = hashlib.sha256(json.dumps([model, c.doc_id, c.start, c.end, c.text])
                                .encode()).hexdigest()[:12]
        kept.append(SynthQuestion(f"synth-{digest}", c.text, c.doc_id, c.start, c.end,
                                  c.quote, v.grade, model, version, judge.annotator))
    return kept


def write_questions(path: str | Path, questions: Sequence[SynthQuestion],
                    overwrite: bool = False) -> None:
    """Write ``synth.jsonl`` atomically (an existing file only with ``overwrite``)."""
    write_text(path, "".join(json.dumps(q.record(), ensure_ascii=False) + "\n"
                             for q in questions), overwrite=overwrite)


def append_to_evalset(folder: str | Path, questions: Sequence[SynthQuestion]) -> int:
    """Append the questions not yet in the native set ``folder`` to ``queries.jsonl``,
    their evidence grades to ``qrels.tsv`` and their quotes to ``evidence.jsonl`` (each
    file replaced atomically); returns how many were added."""
    root = Path(folder)
    files = {n: root / n for n in ("queries.jsonl", "qrels.tsv", "evidence.jsonl")}
    if not files["queries.jsonl"].is_file() or not files["qrels.tsv"].is_file():
        raise ConfigError(f"{root}: --append needs a native evaluation-set folder with "
                          "queries.jsonl and qrels.tsv")
    present = _query_ids(files["queries.jsonl"])
    new = [q for q in questions if q.id not in present]
    if not new:
        return 0
    rec = {q.id: {k: v for k, v in q.record().items() if k != "evidence"} for q in new}
    _append(files["evidence.jsonl"], [json.dumps(
        {"query_id": q.id, "doc_id": q.doc_id, "grade": q.grade, "quote": q.quote},
        ensure_ascii=False) for q in new])
    trec = _is_trec(files["qrels.tsv"])
    _append(files["qrels.tsv"], [f"{q.id} 0 {q.doc_id} {q.grade}" if trec else
                                 f"{q.id}\t{q.doc_id}\t{q.grade}" for q in new])
    _append(files["queries.jsonl"], [json.dumps(rec[q.id], ensure_ascii=False) for q in new])
    return len(new)


def _query_ids(path: Path) -> set[str]:
    ids = set()
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    ids.add(str(json.loads(line)["id"]))
                except (ValueError, KeyError, TypeError):
                    raise DataFormatError(f"{path}:{n}: expected a JSON object with an id")\
                        from None
    return ids


def _is_trec(path: Path) -> bool:
    """Whether the qrels file has TREC's four columns (else BEIR's three)."""
    first = next((line for line in path.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.startswith("query-id")), "")
    return len(first.split()) == 4


def _append(path: Path, lines: list[str]) -> None:
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    write_text(path, old + "".join(line + "\n" for line in lines))

