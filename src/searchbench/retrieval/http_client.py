"""The one HTTP client of searchbench (stdlib only): POST JSON to an untrusted endpoint.

Used by the embeddings client (:mod:`.http_encoder`), the HTTP search retriever
(:mod:`.http_search`), the LLM judge and the question generator
(:mod:`searchbench.judging.llm`, :mod:`searchbench.judging.synth`).

- **Retries**: timeouts, connection errors, HTTP 408/409/425/429 and 5xx are retried with
  exponential backoff (``backoff · 2^attempt`` s), honouring a ``Retry-After`` of seconds or
  an HTTP date (``nan`` or a negative value counts as absent); then one clear
  :class:`BackendError`.
- **The wait is bounded** (:data:`MAX_WAIT`, 60 s): the waits between the attempts of one
  request add up to at most 60 s, whatever the server says; a ``Retry-After`` asking for
  more than what is left fails the request at once (waiting less would only be refused
  again). A request therefore ends within ``(retries + 1) · timeout + 60`` seconds.
- **Batches stop at the first failure** (:meth:`HttpClient.run_all`, used by the HTTP
  retriever, the LLM judge and the question generator): the first request that fails stops
  the batch — requests not sent yet are never sent, waits end, connections in flight are
  shut — and its error is raised.
- **Deadlines**: ``timeout`` bounds the WHOLE exchange of one attempt (connecting,
  redirects, headers and body, however slowly they trickle in); the body is capped at
  ``max_body`` bytes.
- **Credentials**: the secret is read from an environment variable at each request, sent
  only to the endpoint's own origin (scheme, host and port): a redirect to another origin is
  refused, never followed with it. The secret (and any password in the URL, any bearer
  token) is removed from every message, and errors are raised without chained exceptions
  that could hold it. Every byte of an answer reaches a message only through
  :func:`~searchbench._util.secrets.remote_text` (redacted for every secret the process
  holds, then cut: :meth:`Answer.text`); the secrets are held the moment the client is made
  (header values, the URL's password) or reads them (the key).
  :func:`public_url` is the form of a URL fit for messages and files.
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from .._util.secrets import hold, hold_url, redact, remote_text
from .._util.urls import public_url, split_url
from ..errors import BackendError, ConfigError

__all__ = ["MAX_BODY", "MAX_WAIT", "Answer", "HttpClient", "check_url", "public_url",
           "retry_after"]

T = TypeVar("T")

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_REDIRECT_STATUS = {301, 302, 303, 307, 308}
_MAX_REDIRECTS = 5
MAX_WAIT = 60.0
MAX_BODY = 256 * 2**20
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass
class Answer:
    """A 2xx answer: status, headers, the whole body and the URL that gave it."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes
    url: str

    def text(self, limit: int = 200) -> str:
        """The start of the body, fit for a message (redacted, then cut)."""
        return remote_text(self.body, limit)


class _Retry(Exception):
    """A failure worth another attempt (timeout, connection error, 429/5xx)."""

    def __init__(self, why: str, wait: float | None = None) -> None:
        super().__init__(why)
        self.why, self.wait = why, wait


class _Stopped(BackendError):
    """The batch this request belongs to was stopped by another request's failure."""


def check_url(url: str, what: str = "endpoint") -> str:
    """``url`` if it is an http(s) URL with a host, else :class:`ConfigError` (saying what
    is wrong without the URL's secrets)."""
    parts = split_url(url, what, "an http:// or https:// URL with a host")
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
        hold(*self.extra_headers.values())  # a header value is a secret like the key
        self.secret()
        if secret_env and not _HEADER_NAME.match(secret_header):
            raise ConfigError(f"auth header name {secret_header!r}: expected a header name "
                              "such as Authorization or X-API-Key")
        self.timeout, self.retries, self.backoff = float(timeout), retries, float(backoff)
        self.max_body, self.hint = max_body, hint
        self._stop = threading.Event()  # set: the current batch failed (see run_all)
        self._live: set[http.client.HTTPConnection] = set()
        self._live_lock = threading.Lock()

    # -- credentials ---------------------------------------------------------------------
    def secret(self) -> str | None:
        """The secret from ``$secret_env`` (None when unset or empty), held for redaction."""
        value = (os.environ.get(self.secret_env) or None) if self.secret_env else None
        hold(value)
        return value

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
        """``text`` without any secret the process holds (this client's key, header values
        and URL password among them): :func:`~searchbench._util.secrets.redact`."""
        self.secret()
        return redact(text)

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
        :class:`BackendError` after ``retries + 1`` attempts or when the waits would pass
        :data:`MAX_WAIT` in total; ``where`` starts messages."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        where = where or f"POST {self.public}"
        last, waited, stop = "", 0.0, self._stop
        for attempt in range(self.retries + 1):
            if stop.is_set():
                raise _Stopped(f"{where}: not sent, another request of the batch failed")
            answer, retry = None, None
            try:
                answer = self._exchange(data, where)
            except _Retry as exc:
                retry = exc
            if answer is not None:
                return answer
            if stop.is_set():  # cut short by another request's failure: not this one's
                raise _Stopped(f"{where}: stopped, another request of the batch failed")
            last = retry.why if retry is not None else last
            if attempt == self.retries:
                break
            asked = retry.wait if retry is not None else None
            pause = asked if asked is not None else self.backoff * 2 ** attempt
            if asked is not None and asked > MAX_WAIT - waited:
                raise self.error(
                    f"{where} failed: the endpoint asks to wait {asked:g} s before trying "
                    f"again (Retry-After), more than the {MAX_WAIT - waited:g} s left of "
                    f"the {MAX_WAIT:g} s searchbench waits per request ({last}); try later")
            pause = min(max(pause, 0.0), MAX_WAIT - waited)
            waited += pause
            if stop.wait(pause):
                raise _Stopped(f"{where}: stopped, another request of the batch failed")
        raise self.error(f"{where} failed after {self.retries + 1} attempts ({last}); "
                         "check that the endpoint is up, or raise timeout/retries")

    # -- many requests, stopped at the first failure --------------------------------------
    def run_all(self, fn: Callable[..., T], calls: Iterable[Sequence[Any]],
                concurrency: int) -> list[T]:
        """``[fn(*args) for args in calls]``, ``concurrency`` at a time, in order. The first
        call that raises stops the batch: calls not started are never started, waits end,
        this client's connections in flight are shut; its exception is raised."""
        stop = self._stop = threading.Event()
        first: list[BaseException] = []  # the failure that stopped the batch

        def guarded(args: Sequence[Any]) -> T:
            if stop.is_set():
                raise _Stopped("not sent, another request of the batch failed")
            try:
                return fn(*args)
            except BaseException as exc:
                with self._live_lock:
                    if not stop.is_set() and not isinstance(exc, _Stopped):
                        first.append(exc)
                self._halt(stop)  # before this worker can take the next call
                raise

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(guarded, args) for args in calls]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:  # Ctrl-C: stop everything, then let it through
                self._halt(stop)
                raise
            finally:
                if stop.is_set():
                    for f in futures:
                        f.cancel()
        self._stop = threading.Event()  # the next request or batch starts afresh
        if first:
            raise first[0]
        return [f.result() for f in futures]

    def _halt(self, stop: threading.Event) -> None:
        """Stop the batch of ``stop``: no new attempt, waits end, live sockets shut."""
        stop.set()
        with self._live_lock:
            for conn in list(self._live):
                _cut(conn)

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
            why = f"HTTP {answer.status}: {answer.text()}"
            if answer.status in _RETRY_STATUS:
                raise _Retry(why, retry_after(answer.headers))
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
                f"({remote_text(_origin_text(target), 120)}); searchbench does not send "
                f"{what} to another host, port or scheme: if that is the real endpoint, "
                "set the endpoint to it")
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
            conn.connect()  # a socket first, so that a batch's stop can shut it
            with self._live_lock:
                self._live.add(conn)
            if self._stop.is_set():  # stopped while connecting
                raise ConnectionAbortedError("stopped: another request of the batch failed")
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
            with self._live_lock:
                self._live.discard(conn)
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
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    hold_url(proxy)  # its credentials are secrets like the key
    via = urllib.parse.urlsplit(proxy)
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


def retry_after(headers: http.client.HTTPMessage | None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date; a past date is 0);
    None when absent or not a sane value (``nan``, ``inf``, negative, garbage). The caller
    bounds the wait (:data:`MAX_WAIT`)."""
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
    return seconds
