"""Any search service over HTTP as a retriever: a JSON request template, JSONPath ids.

For every query, ``POST`` the request template to the endpoint with ``{query}``, ``{k}`` and
``{query_id}`` filled in, and read the ranked ids (and optionally scores) from the JSON
answer with JSONPath expressions (``$.hits[*].id``, ``$[*]._id``; the `jsonpath-ng`
library, extra ``http``)::

    sb.retrieval.HttpRetriever("http://127.0.0.1:8080/search",
                               request='{"q": "{query}", "size": {k}}',
                               ids="$.hits[*].id", scores="$.hits[*].score")

**Template filling is structural, never textual**: the template is parsed as JSON once;
a placeholder standing alone as a JSON value (``{k}`` or ``"{k}"``) becomes the value itself
(``k`` a number, ``query`` and ``query_id`` strings), a placeholder inside a string is
replaced in that string. A query holding quotes, backslashes or ``{k}`` is data: it can
neither break the JSON nor inject fields, and replacements are never scanned again.

**Scores**: without ``scores`` the service's order is the ranking and the score of rank r
(1-based) among n results is ``n − r + 1`` (recorded as ``scores: rank-derived`` in the
run's provenance). With scores, the run is ordered by them as trec_eval does.

The transport is :class:`~searchbench.retrieval.http_client.HttpClient` (retries with
``Retry-After``, a deadline per attempt, bounded waits, body cap, the secret of ``auth_env``
never sent after a redirect to another origin and never shown). Requests run
``concurrency`` at a time; the first query that fails stops the run (queries not sent yet
are never sent). Every failure is one :class:`BackendError` naming the endpoint (public
form) and the query; whatever of the answer it quotes (a body, an id) is redacted for every
secret the command holds (the credential, ``headers`` values, the URL's password) before
it is cut. ``headers`` values are never written: the provenance lists their names.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._util.secrets import hold, remote_text
from ..data import Queries, Run
from ..errors import BackendError, ConfigError, require
from .base import Retriever, check_level
from .http_client import HttpClient

__all__ = ["HttpRetriever", "fill_template", "header_dict", "parse_template"]

PLACEHOLDERS = ("query", "k", "query_id")
_IN_STRING = re.compile(r"\{(query_id|query|k)\}")
_MARK = "\x00searchbench:{}\x00"
MAX_SEARCH_BODY = 64 * 2**20
_CREDENTIAL_FIELD = re.compile(r"(?i)key|token|secret|pass|auth|cred")


def parse_template(text: str, key: str = "--request") -> Any:
    """The request template ``text`` as JSON, with bare placeholders (``{"k": {k}}``)
    turned into markers :func:`fill_template` replaces by values."""
    out, i, in_str = [], 0, False
    while i < len(text):
        ch = text[i]
        if in_str:
            out.append(text[i:i + 2] if ch == "\\" else ch)
            i += 2 if ch == "\\" else 1
            in_str = ch != '"'
            continue
        bare = next((p for p in PLACEHOLDERS if text.startswith(f"{{{p}}}", i)), None)
        if bare:
            out.append(json.dumps(_MARK.format(bare)))
            i += len(bare) + 2
            continue
        in_str = ch == '"'
        out.append(ch)
        i += 1
    try:
        template = json.loads("".join(out))
    except ValueError as exc:
        raise ConfigError(f"{key} {text!r} is not JSON ({exc}); expected e.g. "
                          '\'{"q": "{query}", "k": {k}}\' (placeholders {query}, {k}, '
                          "{query_id})") from None
    _hold_credentials(template)
    return template


def _hold_credentials(value: Any) -> None:
    """Hold the string values of credential-like fields of a template (``"api_key": "…"``,
    ``"token"``, ``"password"``…): secrets, redacted wherever the template is shown or
    written (the provenance records the template)."""
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, str) and _CREDENTIAL_FIELD.search(name) \
                    and "\x00" not in item and not _IN_STRING.search(item):  # no placeholder
                hold(item)
            _hold_credentials(item)
    elif isinstance(value, list):
        for item in value:
            _hold_credentials(item)


def fill_template(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` (from :func:`parse_template`) with the placeholders filled in."""
    if isinstance(template, dict):
        return {k: fill_template(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, values) for v in template]
    if not isinstance(template, str):
        return template
    for name in PLACEHOLDERS:
        if template in (_MARK.format(name), f"{{{name}}}"):
            return values[name]
    return _IN_STRING.sub(lambda m: str(values[m[1]]), template)


def _jsonpath(expr: str, key: str) -> Any:
    require("jsonpath_ng", "http")
    from jsonpath_ng import parse  # lazy: the http extra

    try:
        return parse(expr)
    except Exception as exc:  # jsonpath-ng raises its own, untyped, parse errors
        raise ConfigError(f"{key} {expr!r} is not a JSONPath ({type(exc).__name__}: "
                          f"{exc}); expected e.g. '$.hits[*].id'") from None


class HttpRetriever(Retriever):
    """A search service over HTTP (see the module docstring); document level only."""

    name = "http"

    def __init__(self, endpoint: str, request: str = '{"query": "{query}", "k": {k}}',
                 ids: str = "$.hits[*].id", scores: str | None = None, *,
                 headers: Mapping[str, str] | Sequence[str] | None = None,
                 auth_env: str | None = None, auth_header: str = "Authorization",
                 auth_scheme: str = "Bearer", concurrency: int = 4, retries: int = 3,
                 timeout: float = 10.0, backoff: float = 0.5,
                 max_body: int = MAX_SEARCH_BODY) -> None:
        super().__init__()
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
                or concurrency < 1:
            raise ConfigError(f"concurrency={concurrency!r}: expected a whole number >= 1")
        self.client = HttpClient(endpoint, secret_env=auth_env, secret_header=auth_header,
                                 scheme=auth_scheme, headers=header_dict(headers),
                                 timeout=timeout, retries=retries, backoff=backoff,
                                 max_body=max_body,
                                 hint="check the endpoint, --request and the credentials")
        self.request_text, self.template = request, parse_template(request)
        self.ids_path, self.scores_path = ids, scores
        self._ids = _jsonpath(ids, "--ids")
        self._scores = _jsonpath(scores, "--scores") if scores else None
        self.concurrency = concurrency

    def config(self) -> dict[str, Any]:
        return {"retriever": "http", "endpoint": self.client.public,
                "request": self.request_text, "ids": self.ids_path,
                "scores": self.scores_path or "rank-derived (n - rank + 1; the service's "
                "order)", "headers": sorted(self.client.extra_headers),  # names only
                "auth_env": self.client.secret_env, "concurrency": self.concurrency,
                "retries": self.client.retries, "timeout_s": self.client.timeout}

    def _indexed_elsewhere(self) -> str:
        """The service holds the index, so a chunker is refused."""
        return (f"http retriever {self.client.public}: the service indexes the documents "
                "itself; it cannot be chunked here (drop --chunk)")

    def search(self, queries: Queries, k: int = 100, level: str = "doc") -> Run:
        units = self._require_index()
        if check_level(level, k) != "doc":
            raise ConfigError(f"http retriever {self.client.public}: level={level!r}; a "
                              "search service answers documents (level doc)")
        t0 = time.perf_counter()
        pairs = list(zip(queries.ids, queries.texts(), strict=True))
        answers = self.client.run_all(self.search_one, [(qid, text, k) for qid, text in pairs],
                                      self.concurrency)  # the first failure stops the rest
        q, d, s, dropped = _columns(answers, [qid for qid, _ in pairs])
        self._check_known(d, set(units.doc_ids))
        run = Run.from_columns(q, d, s, name=self.name)
        self.timings["search_s"] = time.perf_counter() - t0
        run.metadata.update(self.describe(), level="doc", k=k, timings=dict(self.timings),
                            duplicate_ids_dropped=dropped, skipped_empty_docs=0)
        return run

    def search_one(self, query_id: str, text: str, k: int) -> tuple[list[str], list[float]]:
        """The top ``k`` ``(ids, scores)`` of one query, in the service's order."""
        where = f"http retriever: POST {self.client.public} for query {query_id!r}"
        body = fill_template(self.template, {"query": text, "k": k, "query_id": query_id})
        answer = self.client.post(json.dumps(body).encode("utf-8"), where)
        problem, got = "", None
        try:
            got = self._extract(answer.body, where)
        except BackendError as exc:
            problem = str(exc)
        if got is None:  # raised outside the handler: no chained exception to leak from
            raise self.client.error(problem)
        ids, scores = got
        return ids[:k], scores[:k]

    def _extract(self, raw: bytes, where: str) -> tuple[list[str], list[float]]:
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise BackendError(f"{where}: the answer is not JSON ({type(exc).__name__}; "
                               f"starts {remote_text(raw, 80)!r}); expected a JSON body") from None
        ids = [m.value for m in self._ids.find(doc)]
        bad = [v for v in ids if isinstance(v, bool) or not isinstance(v, str | int)
               or (isinstance(v, str) and not v.strip())]
        if bad:
            raise BackendError(f"{where}: --ids {self.ids_path} found {_kind(bad[0])} among "
                               "the ids; expected non-empty strings or whole numbers")
        ids = [str(v) for v in ids]
        if self._scores is None:
            return ids, [float(len(ids) - r) for r in range(len(ids))]
        scores = [m.value for m in self._scores.find(doc)]
        if len(scores) != len(ids):
            raise BackendError(f"{where}: --ids {self.ids_path} found {len(ids)} values but "
                               f"--scores {self.scores_path} found {len(scores)}; expected "
                               "one score per id (check both paths)")
        bad = [v for v in scores if isinstance(v, bool) or not isinstance(v, int | float)
               or not math.isfinite(v)]
        if bad:
            raise BackendError(f"{where}: --scores {self.scores_path} found {_kind(bad[0])};"
                               " expected finite JSON numbers (or drop --scores to rank by "
                               "the service's order)")
        return ids, [float(v) for v in scores]

    def _check_known(self, doc_ids: list[str], known: set[str]) -> None:
        unknown = sorted(set(doc_ids) - known)
        if unknown:
            raise BackendError(
                f"http retriever {self.client.public}: {len(unknown)} returned ids are not "
                f"in the evaluation set's corpus (e.g. "
                f"{', '.join(remote_text(repr(u), 60) for u in unknown[:3])}); "
                "expected the corpus ids (check --ids, and that the service indexed this "
                "corpus)")


def header_dict(headers: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """``{"X-Tenant": "a"}`` from ``["X-Tenant: a"]`` (or a mapping, returned as is)."""
    if headers is None:
        return {}
    if isinstance(headers, Mapping):
        hold(*map(str, headers.values()))
        return dict(headers)
    out: dict[str, str] = {}
    for item in headers:
        name, sep, value = item.partition(":")
        hold(value.strip())  # a header value is a secret: never shown, never written
        if not sep or not name.strip():
            raise ConfigError(f"--header {name.strip()[:40]!r}…: expected 'Name: value'"
                              if sep else "--header: expected 'Name: value' (a name, a "
                              "colon, the value)")
        out[name.strip()] = value.strip()
    return out


def _columns(answers: list[tuple[list[str], list[float]]], qids: list[str]
             ) -> tuple[list[str], list[str], list[float], int]:
    """Flat run columns; a repeated id within one query keeps its first (best) place."""
    q: list[str] = []
    d: list[str] = []
    s: list[float] = []
    dropped = 0
    for qid, (ids, scores) in zip(qids, answers, strict=True):
        seen: set[str] = set()
        for doc, score in zip(ids, scores, strict=True):
            if doc in seen:
                dropped += 1
                continue
            seen.add(doc)
            q.append(qid)
            d.append(doc)
            s.append(score)
    return q, d, s, dropped


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return repr(value)
    return f"{type(value).__name__} {remote_text(json.dumps(value), 40)}" if isinstance(
        value, str | bool | list | dict) else type(value).__name__

