"""An OpenAI-compatible ``POST {endpoint}/embeddings`` client (stdlib only).

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

import base64
import contextlib
import email.utils
import http.client
import json
import math
import os
import re
import socket
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendError, ConfigError
from .encoders import Encoder

__all__ = ["MAX_BODY", "OpenAIEncoder"]

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_REDIRECT_STATUS = {301, 302, 303, 307, 308}
_MAX_REDIRECTS = 5
_MAX_WAIT = 60.0
MAX_BODY = 256 * 2**20
_SECRET_QUERY = re.compile(r"(?i)key|token|secret|sig|pass|auth|cred")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")


@dataclass
class _Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    url: str


class _Retry(Exception):
    """A failure worth another attempt (timeout, connection error, 429/5xx)."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.why, self.wait = why, wait


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
        if not (math.isfinite(timeout) and timeout > 0 and math.isfinite(backoff)
                and backoff >= 0):
            raise ConfigError(f"timeout={timeout}, backoff={backoff}: expected a finite "
                              "timeout > 0 and a finite backoff >= 0 (seconds)")
        self.name = model
        base = endpoint or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.url = base.rstrip("/") + ("" if base.rstrip("/").endswith("/embeddings")
                                       else "/embeddings")
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"endpoint {public_url(self.url)!r}: expected an http:// or "
                              "https:// URL with a host")
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

    # -- credentials ---------------------------------------------------------------------
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._key()
        if key and (not key.isprintable() or not key.isascii()):
            raise ConfigError(f"${self.api_key_env} holds a line break, a control or a "
                              "non-ASCII character; expected the API key alone (check how "
                              "it was exported)")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        """``text`` without the API key, the URL's password or any bearer token."""
        secrets = {self._key() or "", urllib.parse.urlsplit(self.url).password or ""}
        for secret in sorted(secrets - {""}, key=len, reverse=True):
            for form in {secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, ""),
                         urllib.parse.quote_plus(secret)}:
                text = text.replace(form, "[redacted]")
        return _BEARER.sub(r"\1[redacted]", text)

    def _error(self, message: str) -> BackendError:
        return BackendError(self._redact(message))

    # -- one batch -----------------------------------------------------------------------
    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": batch}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        data = json.dumps(body).encode("utf-8")
        where = f"POST {public_url(self.url)}"
        last = ""
        for attempt in range(self.retries + 1):
            answer, retry = None, None
            try:
                answer = self._exchange(data)
            except _Retry as exc:
                retry = exc
            if answer is not None:
                return self._vectors(answer, batch)
            last = retry.why if retry is not None else last
            if attempt < self.retries:
                wait = retry.wait if retry is not None and retry.wait is not None \
                    else self.backoff * 2 ** attempt
                time.sleep(min(max(wait, 0.0), _MAX_WAIT))
        raise self._error(f"{where} failed after {self.retries + 1} attempts ({last}); "
                          "check that the endpoint is up, or raise timeout/retries")

    def _exchange(self, data: bytes) -> _Answer:
        """POST ``data``, following same-origin redirects, within ``timeout`` seconds in
        total; a 2xx answer, :class:`_Retry`, or :class:`BackendError`."""
        deadline = time.monotonic() + self.timeout
        url = self.url
        for _ in range(_MAX_REDIRECTS + 1):
            answer = self._post_once(url, data, deadline)
            if answer.status in _REDIRECT_STATUS:
                url = self._redirect_target(answer)
                continue
            if 200 <= answer.status < 300:
                return answer
            why = f"HTTP {answer.status}: {_snippet(answer.body)}"
            if answer.status in _RETRY_STATUS:
                raise _Retry(self._redact(why), _retry_after(answer.headers))
            raise self._error(f"{public_url(answer.url)} refused the request ({why}); "
                              f"check the model name and ${self.api_key_env}")
        raise self._error(f"{public_url(self.url)} redirected more than {_MAX_REDIRECTS} "
                          "times; set the endpoint to the final URL")

    def _redirect_target(self, answer: _Answer) -> str:
        location = answer.headers.get("Location")
        if not location:
            raise self._error(f"{public_url(answer.url)} answered HTTP {answer.status} "
                              "without a Location; set the endpoint to the final URL")
        target = urllib.parse.urljoin(answer.url, location.strip())
        if _origin(target) != _origin(self.url):
            raise self._error(
                f"{public_url(answer.url)} redirected to another origin "
                f"({_origin_text(target)}); searchbench does not send the API key "
                f"(${self.api_key_env}) to another host, port or scheme: if that is the "
                "real endpoint, set the endpoint to it")
        return target

    def _post_once(self, url: str, data: bytes, deadline: float) -> _Answer:
        parts = urllib.parse.urlsplit(url)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Retry(f"no complete answer within the timeout of {self.timeout:g} s")
        headers = self._headers()  # a bad key is a ConfigError, not a network failure
        conn, path = _connection(parts, remaining, headers)
        timer = threading.Timer(remaining, _cut, (conn,))
        timer.daemon = True
        timer.start()
        failure, resp = "", None
        try:
            conn.request("POST", path, body=data, headers=headers)
            resp = conn.getresponse()
            body = _read_body(resp, deadline)
            if time.monotonic() < deadline:  # else the watchdog may have cut the body short
                return _Answer(resp.status, resp.headers, body, url)
            failure = "the deadline passed"
        except (OSError, http.client.HTTPException, ValueError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        finally:
            timer.cancel()
            if resp is not None:  # a body read only in part keeps the socket open
                resp.close()
            conn.close()
        if time.monotonic() >= deadline:
            failure = f"no complete answer within the timeout of {self.timeout:g} s"
        raise _Retry(self._redact(failure))

    # -- the answer ----------------------------------------------------------------------
    def _vectors(self, answer: _Answer, batch: list[str]) -> np.ndarray:
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


def _connection(parts: urllib.parse.SplitResult, timeout: float, headers: dict[str, str]
                ) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the endpoint, through the proxy of ``$https_proxy``/``$http_proxy``
    unless ``$no_proxy`` exempts the host (as urllib does), and the request target."""
    host, port = parts.hostname or "", parts.port
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    secure = parts.scheme == "https"
    proxy = None if urllib.request.proxy_bypass(host) else \
        urllib.request.getproxies().get(parts.scheme)
    if not proxy:
        kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        return kind(host, port, timeout=timeout), path
    via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    proxy_headers = {}
    if via.username:
        token = base64.b64encode(f"{urllib.parse.unquote(via.username)}:"
                                 f"{urllib.parse.unquote(via.password or '')}".encode()).decode()
        proxy_headers["Proxy-Authorization"] = f"Basic {token}"
    if secure:  # CONNECT tunnel: the proxy sees neither the key nor the texts
        conn = http.client.HTTPSConnection(via.hostname or "", via.port, timeout=timeout)
        conn.set_tunnel(host, port, headers=proxy_headers)
        return conn, path
    headers.update(proxy_headers)
    return http.client.HTTPConnection(via.hostname or "", via.port, timeout=timeout), \
        urllib.parse.urlunsplit(parts._replace(fragment=""))


def _cut(conn: http.client.HTTPConnection) -> None:
    """The deadline passed: shut the socket so a blocked read returns now."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read_body(resp: http.client.HTTPResponse, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() >= deadline:
            raise TimeoutError("the answer did not finish in time")
        chunk = resp.read1(1 << 16) if hasattr(resp, "read1") else resp.read(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY:
            raise ValueError(f"answer larger than {MAX_BODY >> 20} MiB")
        chunks.append(chunk)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _origin_text(url: str) -> str:
    scheme, host, port = _origin(url)
    return f"{scheme}://{host}:{port}"


def public_url(url: str) -> str:
    """``url`` without user name or password, and with the values of query parameters that
    look like credentials (``key``, ``token``, ``sig``…) replaced by ``[redacted]``."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        netloc = host + (f":{parts.port}" if parts.port else "")
    except ValueError:
        netloc = host
    query = urllib.parse.urlencode(
        [(k, "[redacted]" if _SECRET_QUERY.search(k) else v)
         for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)], safe="[]")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


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


def _snippet(body: bytes) -> str:
    return " ".join(body.decode("utf-8", "replace").split())[:200]


def _retry_after(headers: http.client.HTTPMessage | None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date), within 0–60 s; None
    when absent or not a sane value (``nan``, ``inf``, negative, garbage)."""
    value = headers.get("Retry-After") if headers else None
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
        seconds = max(seconds, 0.0)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, _MAX_WAIT)
