"""An OpenAI-compatible ``POST {endpoint}/embeddings`` client (the transport:
:mod:`.http_client`, stdlib only).

Batches texts, retries timeouts, connection errors, HTTP 429 and 5xx with exponential
backoff (honouring a ``Retry-After`` of seconds or an HTTP date, bounded to 0–60 s; ``nan``
or a negative value counts as absent), and then fails with a clear :class:`BackendError`;
whatever was embedded before stays in the embedding cache.

The endpoint's answer is not trusted: ``timeout`` bounds the WHOLE exchange of one attempt
(connecting, redirects, headers and body, however slowly they trickle in), the body is
capped at :data:`MAX_BODY` bytes, every text must get exactly one vector (``index`` values
distinct and in range, no ``null`` embedding, one dimension for every batch).

The API key is read from an environment variable, sent only to the endpoint's own origin
(scheme, host and port): a redirect to another origin is refused, never followed with the
key. The key (and any password in the endpoint URL) is removed from every message, and
errors are raised without chained exceptions that could hold it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..errors import BackendError, ConfigError
from ._encoder import Encoder
from .http_client import MAX_BODY, Answer, HttpClient, public_url

__all__ = ["MAX_BODY", "OpenAIEncoder", "public_url"]


class OpenAIEncoder(Encoder):
    """Embeddings from an OpenAI-compatible HTTP endpoint."""

    def __init__(self, model: str, endpoint: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", batch_size: int = 64,
                 timeout: float = 60.0, retries: int = 4, backoff: float = 1.0,
                 dimensions: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if batch_size <= 0:
            raise ConfigError(f"batch_size={batch_size}: expected batch_size > 0")
        self.name = model
        base = endpoint or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.url = base.rstrip("/") + ("" if base.rstrip("/").endswith("/embeddings")
                                       else "/embeddings")
        self.client = HttpClient(self.url, secret_env=api_key_env, timeout=timeout,
                                 retries=retries, backoff=backoff,
                                 hint=f"check the model name and ${api_key_env}")
        self.api_key_env = api_key_env
        self.batch_size = self.cache_batch = batch_size
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.dimensions = dimensions
        self._dim: int | None = None

    @property
    def identity(self) -> str:
        dims = f":d{self.dimensions}" if self.dimensions else ""
        return f"openai:{public_url(self.url)}:{self.name}{dims}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "endpoint": public_url(self.url),
                "api_key_env": self.api_key_env}

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = [self._request(texts[i:i + self.batch_size])
               for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out) if out else np.empty((0, 0), dtype=np.float32)

    def _error(self, message: str) -> BackendError:
        return self.client.error(message)

    # -- one batch -----------------------------------------------------------------------
    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": batch}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        answer = self.client.post(json.dumps(body).encode("utf-8"))
        return self._vectors(answer, batch)

    # -- the answer ----------------------------------------------------------------------
    def _vectors(self, answer: Answer, batch: list[str]) -> np.ndarray:
        where = f"the embeddings endpoint {public_url(answer.url)}"
        vecs, problem = None, ""
        try:
            vecs = _parse(answer.body, len(batch), where)
        except BackendError as exc:
            problem = str(exc)
        if vecs is None:  # raised outside the handler: no chained exception to leak from
            raise self._error(problem)
        dim = vecs.shape[1]
        expected = self.dimensions or self._dim
        if expected is not None and dim != expected:
            raise self._error(
                f"{where} returned {dim}-dimensional embeddings, but "
                f"{'dimensions = ' if self.dimensions else 'earlier batches had '}"
                f"{expected}; one model must give one dimension (check the model name "
                "and the endpoint)")
        self._dim = dim
        return vecs


def _parse(raw: bytes, n: int, where: str) -> np.ndarray:
    """The ``n`` vectors of an OpenAI embeddings body, in text order (float32)."""
    try:
        items = json.loads(raw)["data"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise BackendError(f"{where} answered without an OpenAI embeddings body "
                           f"({type(exc).__name__}); expected {{'data': [{{'index': 0, "
                           "'embedding': [...]}}]}") from None
    if not isinstance(items, list) or len(items) != n:
        count = len(items) if isinstance(items, list) else "no list of"
        raise BackendError(f"{where} returned {count} embeddings for {n} texts; expected "
                           "one per text (an empty answer often means a proxy or login page "
                           "answered instead of the embeddings API: check the endpoint)")
    order = _indexes(items, n, where)
    rows = []
    for pos, item in enumerate(items):
        emb = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(emb, list) or not emb:
            raise BackendError(f"{where} returned no embedding (found {_kind(emb)}) for "
                               f"text #{order[pos]} of the batch; expected a list of numbers")
        rows.append(emb)
    dims = {len(r) for r in rows}
    if len(dims) > 1:
        raise BackendError(f"{where} returned embeddings of different dimensions "
                           f"({', '.join(map(str, sorted(dims)))}) in one answer")
    vecs: np.ndarray
    try:
        vecs = np.asarray(rows)
    except (ValueError, TypeError, OverflowError):
        vecs = np.asarray([], dtype=object)
    if vecs.dtype.kind not in "iuf" or vecs.ndim != 2:  # null, text, nested lists…
        raise BackendError(f"{where} returned an embedding holding something other than "
                           "numbers; expected lists of numbers")
    out = np.empty_like(vecs, dtype=np.float32)
    with np.errstate(over="ignore"):
        out[order] = vecs
    return out


def _indexes(items: list[Any], n: int, where: str) -> list[int]:
    """The text position of every item: its ``index`` (all distinct, 0 ≤ index < n), or
    the item's position when no item has one."""
    raw: list[Any] = [it.get("index") if isinstance(it, dict) else None for it in items]
    if all(i is None for i in raw):
        return list(range(n))
    seen: set[int] = set()
    for pos, i in enumerate(raw):
        bad = ("no index" if i is None else
               f"index {i!r}, not a whole number" if type(i) is not int else
               f"index {i}, outside 0…{n - 1}" if not 0 <= i < n else
               f"index {i} again" if i in seen else "")
        if bad:
            raise BackendError(f"{where}: item {pos} of the answer has {bad}; expected each "
                               f"index 0…{n - 1} exactly once, so vectors cannot be matched "
                               "to their texts")
        seen.add(i)
    return [int(i) for i in raw]


def _kind(value: Any) -> str:
    return "null" if value is None else "an empty list" if value == [] else type(
        value).__name__
