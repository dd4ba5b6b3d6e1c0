"""The one HTTP client of searchbench (stdlib only): POST JSON to an untrusted endpoint.

Used by the embeddings client (:mod:`.http_encoder`), the HTTP search retriever
(:mod:`.http_search`), the LLM judge and the question generator
(:mod:`searchbench.judging.llm`, :mod:`searchbench.judging.synth`).

- **Retries**: timeouts, connection errors, HTTP 408/409/425/429 and 5xx are retried with
  exponential backoff (``backoff · 2^attempt`` s), honouring a ``Retry-After`` of seconds or
  an HTTP date, bounded to 0–60 s (``nan`` or a negative value counts as absent); then one
  clear :class:`BackendError`.
- **Deadlines**: ``timeout`` bounds the WHOLE exchange of one attempt (connecting,
  redirects, headers and body, however slowly they trickle in); the body is capped at
  ``max_body`` bytes.
- **Credentials**: the secret is read from an environment variable at each request, sent
  only to the endpoint's own origin (scheme, host and port): a redirect to another origin is
  refused, never followed with it. The secret (and any password in the URL, any bearer
  token) is removed from every message, and errors are raised without chained exceptions
  that could hold it. :func:`public_url` is the form of a URL fit for messages and files.
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
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import BackendError, ConfigError

__all__ = ["MAX_BODY", "Answer", "HttpClient", "check_url", "public_url", "retry_after"]

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_REDIRECT_STATUS = {301, 302, 303, 307, 308}
_MAX_REDIRECTS = 5
_MAX_WAIT = 60.0
MAX_BODY = 256 * 2**20
_SECRET_QUERY = re.compile(r"(?i)key|token|secret|sig|pass|auth|cred")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass
class Answer:
    """A 2xx answer: status, headers, the whole body and the URL that gave it."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes
    url: str


class _Retry(Exception):
    """A failure worth another attempt (timeout, connection error, 429/5xx)."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.why, self.wait = why, wait


def check_url(url: str, what: str = "endpoint") -> str:
    """``url`` if it is an http(s) URL with a host, else :class:`ConfigError`."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what} {public_url(url)!r}: expected an http:// or https:// URL "
                          "with a host")
    return url


class HttpClient:
    """POST JSON bodies to ``url`` (see the module docstring).

    ``secret_env`` names the environment variable whose value goes in the ``secret_header``
    header (``scheme`` + value, e.g. ``Bearer <value>``; ``scheme=""`` sends the value
    alone); ``headers`` are extra headers sent as given (validated: no line breaks)."""

    def __init__(self, url: str, *, secret_env: str | None = None,
                 secret_header: str = "Authorization", scheme: str = "Bearer",
                 headers: Mapping[str, str] | None = None, timeout: float = 60.0,
                 retries: int = 4, backoff: float = 1.0, max_body: int = MAX_BODY,
                 hint: str = "check the endpoint") -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries={retries!r}: expected a whole number >= 0")
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0
                and isinstance(backoff, int | float) and math.isfinite(backoff)
                and backoff >= 0):
            raise ConfigError(f"timeout={timeout}, backoff={backoff}: expected a finite "
                              "timeout > 0 and a finite backoff >= 0 (seconds)")
        self.url = check_url(url)
        self.secret_env, self.secret_header, self.scheme = secret_env, secret_header, scheme
        self.extra_headers = _checked_headers(dict(headers or {}))
        if secret_env and not _HEADER_NAME.match(secret_header):
            raise ConfigError(f"auth header name {secret_header!r}: expected a header name "
                              "such as Authorization or X-API-Key")
        self.timeout, self.retries, self.backoff = float(timeout), retries, float(backoff)
        self.max_body, self.hint = max_body, hint

    # -- credentials ---------------------------------------------------------------------
    def secret(self) -> str | None:
        """The secret from ``$secret_env`` (None when unset or empty)."""
        return (os.environ.get(self.secret_env) or None) if self.secret_env else None

    def headers(self) -> dict[str, str]:
        """The request headers (a secret holding a line break or a control or non-ASCII
        character is a :class:`ConfigError` that does not show it)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   **self.extra_headers}
        key = self.secret()
        if key and (not key.isprintable() or not key.isascii()):
            raise ConfigError(f"${self.secret_env} holds a line break, a control or a "
                              "non-ASCII character; expected the secret alone (check how "
                              "it was exported)")
        if key:
            headers[self.secret_header] = f"{self.scheme} {key}" if self.scheme else key
        return headers

    def redact(self, text: str) -> str:
        """``text`` without the secret, the URL's password or any bearer token."""
        secrets = {self.secret() or "", urllib.parse.urlsplit(self.url).password or ""}
        for secret in sorted(secrets - {""}, key=len, reverse=True):
            for form in {secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, ""),
                         urllib.parse.quote_plus(secret)}:
                text = text.replace(form, "[redacted]")
        return _BEARER.sub(r"\1[redacted]", text)

    def error(self, message: str) -> BackendError:
        """A :class:`BackendError` with ``message`` redacted."""
        return BackendError(self.redact(message))

    @property
    def public(self) -> str:
        """The endpoint URL fit for messages and files."""
        return public_url(self.url)

    # -- one request, retried ------------------------------------------------------------
    def post(self, payload: object, where: str | None = None) -> Answer:
        """POST ``payload`` (JSON-encoded, or bytes as given): the 2xx :class:`Answer`, or
        :class:`BackendError` after ``retries + 1`` attempts; ``where`` starts messages."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        where = where or f"POST {self.public}"
        last = ""
        for attempt in range(self.retries + 1):
            answer, retry = None, None
            try:
                answer = self._exchange(data, where)
            except _Retry as exc:
                retry = exc
            if answer is not None:
                return answer
            last = retry.why if retry is not None else last
            if attempt < self.retries:
                wait = retry.wait if retry is not None and retry.wait is not None \
                    else self.backoff * 2 ** attempt
                time.sleep(min(max(wait, 0.0), _MAX_WAIT))
        raise self.error(f"{where} failed after {self.retries + 1} attempts ({last}); "
                         "check that the endpoint is up, or raise timeout/retries")

    def _exchange(self, data: bytes, where: str) -> Answer:
        """POST ``data``, following same-origin redirects, within ``timeout`` seconds in
        total; a 2xx answer, :class:`_Retry`, or :class:`BackendError`."""
        deadline = time.monotonic() + self.timeout
        url = self.url
        for _ in range(_MAX_REDIRECTS + 1):
            answer = self._post_once(url, data, deadline)
            if answer.status in _REDIRECT_STATUS:
                url = self._redirect_target(answer, where)
                continue
            if 200 <= answer.status < 300:
                return answer
            why = f"HTTP {answer.status}: {snippet(answer.body)}"
            if answer.status in _RETRY_STATUS:
                raise _Retry(self.redact(why), retry_after(answer.headers))
            moved = "" if answer.url == self.url else f" (at {public_url(answer.url)})"
            raise self.error(f"{where}: the endpoint{moved} refused the request ({why}); "
                             f"{self.hint}")
        raise self.error(f"{where}: {self.public} redirected more than {_MAX_REDIRECTS} "
                         "times; set the endpoint to the final URL")

    def _redirect_target(self, answer: Answer, where: str) -> str:
        location = answer.headers.get("Location")
        if not location:
            raise self.error(f"{where}: {public_url(answer.url)} answered HTTP {answer.status} "
                             "without a Location; set the endpoint to the final URL")
        target = urllib.parse.urljoin(answer.url, location.strip())
        if _origin(target) != _origin(self.url):
            what = f"the credentials (${self.secret_env})" if self.secret_env else \
                "credentials or headers"
            raise self.error(
                f"{where}: {public_url(answer.url)} redirected to another origin "
                f"({_origin_text(target)}); searchbench does not send {what} to another "
                "host, port or scheme: if that is the real endpoint, set the endpoint to it")
        return target

    def _post_once(self, url: str, data: bytes, deadline: float) -> Answer:
        parts = urllib.parse.urlsplit(url)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Retry(f"no complete answer within the timeout of {self.timeout:g} s")
        headers = self.headers()  # a bad secret is a ConfigError, not a network failure
        conn, path = _connection(parts, remaining, headers)
        timer = threading.Timer(remaining, _cut, (conn,))
        timer.daemon = True
        timer.start()
        failure, resp = "", None
        try:
            conn.request("POST", path, body=data, headers=headers)
            resp = conn.getresponse()
            body = _read_body(resp, deadline, self.max_body)
            if time.monotonic() < deadline:  # else the watchdog may have cut the body short
                return Answer(resp.status, resp.headers, body, url)
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
        raise _Retry(self.redact(failure))


def _checked_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not _HEADER_NAME.match(name) or not str(value).isprintable():
            raise ConfigError(f"header {name!r}: expected 'Name: value' with a token name "
                              "and a value without line breaks or control characters")
    return {n: str(v) for n, v in headers.items()}


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


def _read_body(resp: http.client.HTTPResponse, deadline: float, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() >= deadline:
            raise TimeoutError("the answer did not finish in time")
        chunk = resp.read1(1 << 16) if hasattr(resp, "read1") else resp.read(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise ValueError(f"answer larger than {_size(limit)}")
        chunks.append(chunk)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 2**20 else f"{n} bytes"


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


def snippet(body: bytes, size: int = 200) -> str:
    """The start of ``body`` as one line of printable text (for messages: a hostile
    server's control characters, e.g. terminal escapes, become ``?``)."""
    text = " ".join(body.decode("utf-8", "replace").split())[:size]
    return "".join(c if c.isprintable() else "?" for c in text)


def retry_after(headers: http.client.HTTPMessage | None) -> float | None:
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
