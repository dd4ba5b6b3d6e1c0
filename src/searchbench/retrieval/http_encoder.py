"""An OpenAI-compatible ``POST {endpoint}/embeddings`` client (stdlib only).

Batches texts, retries timeouts, connection errors, HTTP 429 and 5xx with exponential
backoff (honouring a numeric ``Retry-After``), and then fails with a clear
:class:`BackendError`; whatever was embedded before stays in the embedding cache. The API
key is read from an environment variable and never logged or put in an error message.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np

from ..errors import BackendError, ConfigError
from .encoders import Encoder

__all__ = ["OpenAIEncoder"]

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIEncoder(Encoder):
    """Embeddings from an OpenAI-compatible HTTP endpoint."""

    def __init__(self, model: str, endpoint: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", batch_size: int = 64,
                 timeout: float = 60.0, retries: int = 4, backoff: float = 1.0,
                 dimensions: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if batch_size <= 0 or retries < 0:
            raise ConfigError(f"batch_size={batch_size}, retries={retries}: expected "
                              "batch_size > 0 and retries >= 0")
        self.name = model
        base = endpoint or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.url = base.rstrip("/") + ("" if base.rstrip("/").endswith("/embeddings")
                                       else "/embeddings")
        self.api_key_env = api_key_env
        self.batch_size = self.cache_batch = batch_size
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.dimensions = dimensions

    @property
    def identity(self) -> str:
        dims = f":d{self.dimensions}" if self.dimensions else ""
        return f"openai:{self.url}:{self.name}{dims}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "endpoint": self.url, "api_key_env": self.api_key_env}

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = [self._request(texts[i:i + self.batch_size])
               for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out) if out else np.empty((0, 0), dtype=np.float32)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": batch}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        data = json.dumps(body).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.url, data=data, headers=self._headers())
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return _parse(resp.read(), len(batch), self.url)
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {_snippet(exc)}"
                if exc.code not in _RETRY_STATUS:
                    raise BackendError(f"{self.url} refused the request ({last}); check "
                                       f"the model name and ${self.api_key_env}") from None
                wait = _retry_after(exc) or self.backoff * 2 ** attempt
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
                wait = self.backoff * 2 ** attempt
            if attempt < self.retries:
                time.sleep(min(wait, 60.0))
        raise BackendError(f"{self.url} failed after {self.retries + 1} attempts ({last})")


def _parse(raw: bytes, n: int, url: str) -> np.ndarray:
    try:
        items = sorted(json.loads(raw)["data"], key=lambda d: d.get("index", 0))
        vecs = np.asarray([d["embedding"] for d in items], dtype=np.float32)
    except (ValueError, KeyError, TypeError) as exc:
        raise BackendError(f"{url} answered without an OpenAI embeddings body "
                           f"({type(exc).__name__}); expected {{'data': [{{'embedding': "
                           "[...]}}]}") from None
    if vecs.ndim != 2 or len(vecs) != n:
        raise BackendError(f"{url} returned {len(vecs)} embeddings for {n} texts")
    return vecs


def _snippet(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace")
    except OSError:
        text = ""
    return (text or exc.reason or "").strip().replace("\n", " ")[:200]


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
