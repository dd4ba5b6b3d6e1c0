"""LLM relevance judgments through an OpenAI-compatible chat endpoint (``judge llm``).

- **Prompt**: a packaged, versioned file (``prompts/umbrela-1.toml``: UMBRELA's 0–3 rubric,
  the query and passage fenced as data). Its version is part of the annotator name
  ``llm:<model>@<version>`` (:func:`~searchbench.judging.labels.llm_annotator`) and of the
  cache key, so labels from two prompt versions are never mixed.
- **Strict parsing** (:func:`parse_grade`): the answer must be one grade 0–3, alone or as
  ``##final score: N`` exactly once (several different scores, a grade out of range, prose
  without a score → a failure, counted and reported, never stored as a label).
- **Transport**: :class:`~searchbench.retrieval.HttpClient` (retries with backoff and
  ``Retry-After``, a deadline per attempt, bounded waits, the API key sent only to the
  endpoint's origin and never shown), ``concurrency`` requests at a time; the first
  request that fails stops the batch (pairs not asked yet are never sent).
- **Secrets**: the text of every answer is redacted for every secret the command holds
  before it is parsed, cached, stored or shown (an endpoint echoing the key gets
  ``[redacted]`` into nothing).
- **Cost**: prompt and completion tokens from the answers' ``usage``, summed.
- **Cache** (:class:`LlmCache`, SQLite): key = SHA-256 of (model, prompt version, query
  text, SHA-256 of the passage); a re-run asks the endpoint only for what is not cached,
  and the store gets no duplicate (its ``client_key`` is the cache key).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sqlite3
import threading
import tomllib
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlunsplit

from .._util.secrets import redact
from .._util.urls import split_url
from ..errors import ConfigError, DataFormatError, SearchbenchWarning, user_stacklevel
from ..retrieval import HttpClient
from .labels import Judgment, PoolItem, llm_annotator

__all__ = ["CACHE_FILE", "ChatClient", "Completion", "JudgeReport", "LlmCache", "LlmJudge",
           "Prompt", "Verdict", "generator_warning", "judge_pool", "load_prompt",
           "parse_grade", "passage_of"]

CACHE_FILE = "llm_cache.sqlite"
DEFAULT_PROMPT = "umbrela-1"
MAX_PASSAGE_CHARS = 6000
_FINAL = re.compile(r"(?im)^\s*#*\s*final\s+score\s*[:=]\s*(\S+?)\s*\.?\s*$")


# -- the prompt --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prompt:
    """A versioned prompt: ``system`` and ``user`` texts (``user`` has ``str.format``
    fields, e.g. ``{query}`` and ``{passage}``)."""

    version: str
    system: str
    user: str

    def messages(self, **fields: Any) -> list[dict[str, str]]:
        """The chat messages with ``fields`` filled in (values are never re-parsed)."""
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.user.format(**fields)}]


def load_prompt(name: str = DEFAULT_PROMPT) -> Prompt:
    """The packaged prompt ``name`` (``umbrela-1``, ``synth-1``) or a ``.toml`` path with
    the keys ``version``, ``system``, ``user``."""
    try:
        if name.endswith(".toml"):
            raw = Path(name).read_bytes()
        else:
            raw = resources.files("searchbench.judging").joinpath(
                f"prompts/{name}.toml").read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
        return Prompt(str(data["version"]), str(data["system"]), str(data["user"]))
    except (OSError, KeyError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"prompt {name!r}: cannot read it ({type(exc).__name__}: {exc}); "
                          f"expected a packaged prompt ({DEFAULT_PROMPT}) or a TOML file "
                          "with version, system and user") from None


def parse_grade(answer: str) -> int | None:
    """The grade 0–3 of a judge's answer, or None when it is not exactly one grade.

    Accepted: the grade alone (``"2"``), or lines of reasoning with ``##final score: 2``
    (one or more such lines, all giving the same grade)."""
    text = answer.strip()
    if re.fullmatch(r"[0-3]", text):
        return int(text)
    found = set(_FINAL.findall(text))
    if len(found) != 1:
        return None
    value = found.pop()
    return int(value) if re.fullmatch(r"[0-3]", value) else None


# -- the endpoint ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Completion:
    """One chat answer and its token counts (0 when the endpoint gave no ``usage``)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatClient:
    """``POST {endpoint}/chat/completions`` (OpenAI-compatible) at temperature 0."""

    def __init__(self, endpoint: str, model: str, *, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 120.0, retries: int = 4, backoff: float = 1.0,
                 max_tokens: int = 512) -> None:
        self.url = chat_url(endpoint)
        self.model, self.max_tokens = model, max_tokens
        self.http = HttpClient(self.url, secret_env=api_key_env, timeout=timeout,
                               retries=retries, backoff=backoff,
                               hint=f"check --model and ${api_key_env}")

    def complete(self, messages: list[dict[str, str]], where: str = "") -> Completion:
        """The answer's text; :class:`BackendError` naming the endpoint when the endpoint
        fails or answers without a chat completion."""
        where = where or f"POST {self.http.public}"
        body = {"model": self.model, "messages": messages, "temperature": 0,
                "max_tokens": self.max_tokens}
        answer = self.http.post(body, where)
        found, problem = None, ""
        try:
            found = _completion(answer.body)
        except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
            problem = f"{type(exc).__name__}"
        if found is None:
            raise self.http.error(f"{where}: the answer is not a chat completion ({problem}; "
                                  f"starts {answer.text(80)!r}); expected "
                                  "{'choices': [{'message': {'content': '...'}}]}")
        # the text is stored (cache, questions) and shown: no secret of ours in it, ever
        return dataclasses.replace(found, text=redact(found.text))


def chat_url(endpoint: str) -> str:
    """``{endpoint}/chat/completions``, the path added before any query string
    (``…/deployments/NAME?api-version=…`` → ``…/NAME/chat/completions?api-version=…``)."""
    parts = split_url(endpoint.strip(), "--endpoint", "the chat endpoint's base URL, e.g. "
                      "https://api.openai.com/v1")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit(parts._replace(path=path))


def _completion(raw: bytes) -> Completion:
    doc = json.loads(raw)
    text = doc["choices"][0]["message"]["content"]
    if not isinstance(text, str):
        raise TypeError("content")
    usage = doc.get("usage") or {}
    return Completion(text, _count(usage.get("prompt_tokens")),
                      _count(usage.get("completion_tokens")))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# -- the cache ---------------------------------------------------------------------------------
class LlmCache:
    """Answers already paid for, in SQLite (``key -> grade, answer, tokens``); thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, "
                             "grade INTEGER, answer TEXT NOT NULL, prompt_tokens INTEGER, "
                             "completion_tokens INTEGER)")
        except sqlite3.DatabaseError as exc:
            raise DataFormatError(f"{self.path}: not an LLM cache ({exc}); delete it or pass "
                                  "another --cache") from None

    @staticmethod
    def key(model: str, version: str, query: str, passage: str) -> str:
        """SHA-256 of (model, prompt version, query, SHA-256 of the passage)."""
        doc = hashlib.sha256(passage.encode("utf-8")).hexdigest()
        return hashlib.sha256(json.dumps([model, version, query, doc]).encode()).hexdigest()

    def get(self, key: str) -> tuple[int, str] | None:
        with self._lock:
            row = self._db.execute("SELECT grade, answer FROM answers WHERE key=?",
                                   (key,)).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def put(self, key: str, grade: int, c: Completion) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                             (key, grade, c.text, c.prompt_tokens, c.completion_tokens))

    def close(self) -> None:
        self._db.close()


# -- judging -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """The judge's grade (None: the answer was not a grade), its answer, the cache key."""

    grade: int | None
    answer: str
    key: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LlmJudge:
    """Grade (query, passage) pairs 0–3 with ``prompt`` through ``client``."""

    def __init__(self, client: ChatClient, prompt: Prompt | None = None,
                 cache: LlmCache | None = None, concurrency: int = 4,
                 max_chars: int = MAX_PASSAGE_CHARS) -> None:
        if concurrency < 1 or max_chars < 1:
            raise ConfigError(f"concurrency={concurrency}, max_chars={max_chars}: expected "
                              "both >= 1")
        self.client, self.prompt = client, prompt or load_prompt()
        self.cache, self.concurrency, self.max_chars = cache, concurrency, max_chars

    @property
    def annotator(self) -> str:
        """``llm:<model>@<prompt version>``."""
        return llm_annotator(self.client.model, self.prompt.version)

    def grade(self, query: str, passage: str, label: str = "") -> Verdict:
        """One verdict (from the cache when there)."""
        passage = passage[:self.max_chars]
        key = LlmCache.key(self.client.model, self.prompt.version, query, passage)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None:
            return Verdict(hit[0], hit[1], key, True)
        where = f"judge llm: POST {self.client.http.public}" + (f" for {label}" if label else "")
        c = self.client.complete(self.prompt.messages(query=query, passage=passage), where)
        grade = parse_grade(c.text)
        if grade is not None and self.cache:
            self.cache.put(key, grade, c)  # only real grades: nonsense is asked again
        return Verdict(grade, c.text, key, False, c.prompt_tokens, c.completion_tokens)

    def grade_many(self, pairs: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """Verdicts of ``(query, passage, label)`` triples, ``concurrency`` at a time."""
        return self.client.http.run_all(self.grade, pairs, self.concurrency)


@dataclass
class JudgeReport:
    """What ``judge llm`` did: labels stored, answers from the cache, failures, tokens."""

    annotator: str
    stored: int = 0
    cached: int = 0
    requested: int = 0
    already: int = 0
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # qid, doc, answer
    prompt_tokens: int = 0
    completion_tokens: int = 0
    grades: dict[int, int] = field(default_factory=dict)

    def cost(self, price_in: float = 0.0, price_out: float = 0.0) -> float:
        """Cost at ``price_in``/``price_out`` per million prompt/completion tokens."""
        return (self.prompt_tokens * price_in + self.completion_tokens * price_out) / 1e6


def passage_of(doc: Any) -> str:
    """The text a judge reads: title and text."""
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


def judge_pool(es: Any, items: Iterable[PoolItem], judge: LlmJudge, store: Any, *,
               max_items: int | None = None, batch: int = 32,
               progress: Callable[[int], None] | None = None) -> JudgeReport:
    """Judge the pool ``items`` of the evaluation set ``es`` and record every real grade in
    ``store`` as ``Judgment(kind="llm", source="llm", annotator=judge.annotator)``, batch by
    batch (a failure later keeps what was recorded). Pairs this annotator already labelled
    are skipped; a pool naming a query or document missing from ``es`` is refused first."""
    items = list(items)
    _check_pool(es, items)
    report = JudgeReport(judge.annotator)
    done = {(j.query_id, j.doc_id) for j in store.judgments(annotator=judge.annotator)}
    todo = [i for i in items if (i.query_id, i.doc_id) not in done]
    report.already = len(items) - len(todo)
    todo = todo[:max_items] if max_items is not None else todo
    if todo and judge.annotator not in store.annotators():
        store.add_annotator(judge.annotator, "llm")  # its token is never used
    for start in range(0, len(todo), max(batch, 1)):
        chunk = todo[start:start + max(batch, 1)]
        pairs = [(es.queries[i.query_id].text, passage_of(es.corpus[i.doc_id]),
                  f"query {i.query_id!r}, document {i.doc_id!r}") for i in chunk]
        for item, v in zip(chunk, judge.grade_many(pairs), strict=True):
            _account(report, v)
            if v.grade is None:
                report.failed.append((item.query_id, item.doc_id, v.answer))
                continue
            store.record(Judgment(item.query_id, item.doc_id, judge.annotator, v.grade,
                                  kind="llm", source="llm"), client_key=v.key)
            report.stored += 1
            report.grades[v.grade] = report.grades.get(v.grade, 0) + 1
        if progress:
            progress(len(chunk))
    return report


def _account(report: JudgeReport, v: Verdict) -> None:
    if v.cached:
        report.cached += 1
    else:
        report.requested += 1
    report.prompt_tokens += v.prompt_tokens
    report.completion_tokens += v.completion_tokens


def _check_pool(es: Any, items: list[PoolItem]) -> None:
    missing_q = sorted({i.query_id for i in items if i.query_id not in es.queries})
    missing_d = sorted({i.doc_id for i in items if i.doc_id not in es.corpus})
    if missing_q or missing_d:
        raise DataFormatError(
            f"the pool names {len(missing_q)} queries and {len(missing_d)} documents that are "
            f"not in the evaluation set (e.g. {', '.join(map(repr, (missing_q + missing_d)[:3]))});"
            " expected the pool made from this set (searchbench pool)")


def generator_warning(es: Any, model: str, query_ids: Iterable[str] | None = None) -> str | None:
    """The pitfall-2 warning when ``model`` also generated (some of) the queries, else None;
    also emitted as a :class:`SearchbenchWarning`."""
    wanted = set(query_ids) if query_ids is not None else None
    same = [q.id for q in es.queries if q.generator and _same_model(q.generator, model)
            and (wanted is None or q.id in wanted)]
    if not same:
        return None
    text = (f"THE JUDGE IS THE GENERATOR: {model!r} also generated {len(same)} of these "
            f"queries (e.g. {same[0]!r}). Its labels on its own questions measure the model, "
            "not your search (pitfall 2): judge them with people or another model, and "
            "report them apart")
    warnings.warn(text, SearchbenchWarning, stacklevel=user_stacklevel())
    return text


def _same_model(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return s.strip().lower().removeprefix("llm:").split("@")[0]
    return norm(a) == norm(b)

