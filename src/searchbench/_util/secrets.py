"""The one home of redaction: every secret the process holds, and the text of remote services.

A secret is **held** the moment it enters searchbench: an API key read from its environment
variable, a ``--header`` value, the password (and credential-like query values) of an
endpoint or store URL, a proxy's credentials (:func:`hold`, :func:`hold_url`). Held secrets
live for the whole process.

:func:`redact` removes every held secret from a text — as it is and in the forms a service
or a file may echo it (JSON-escaped, URL-encoded, HTML-escaped, base64 of ``user:password``;
any case) — and also **any piece of 8 or more characters of it**, so a secret cut in half by
a service is still removed; bearer and basic credentials (``Bearer …``, ``Basic …``) are
removed whatever they hold. Values shorter than :data:`MIN_SECRET` characters cannot be
told from ordinary text and are not searched for.

:func:`remote_text` is the only way a byte a remote service returned reaches a message, a
log, a sidecar or a report: decoded, redacted, made one printable line, and only then cut.
:func:`redacted` applies :func:`redact` to every string of a JSON-like object (sidecars,
stored provenance).
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import urllib.parse
from typing import Any

__all__ = [
    "MIN_SECRET",
    "REDACTED",
    "forget_all",
    "held",
    "hold",
    "hold_url",
    "redact",
    "redacted",
    "remote_text",
]

REDACTED = "[redacted]"
MIN_SECRET = 4
_PIECE = 8  # a run of this many characters of a secret is redacted wherever it appears
_SCHEMES = re.compile(r"(?i)\b(bearer|basic)(\s+)[^\s\"'<>,;)}\]]{4,}")
SECRET_QUERY = re.compile(r"(?i)key|token|secret|sig|pass|pwd|auth|cred")

_lock = threading.Lock()
_held: set[str] = set()
_pieces: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # (whole forms, 8-char pieces)


def hold(*values: str | None) -> None:
    """Remember ``values`` as secrets of this process (empty and ``None`` ignored)."""
    global _pieces
    new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET} - _held
    if not new:
        return
    with _lock:
        _held.update(new)
        forms = {f.lower() for s in _held for f in _forms(s)}
        # a form of 8+ characters is covered by its pieces; shorter ones are matched whole
        whole = tuple(f for f in forms if MIN_SECRET <= len(f) < _PIECE)
        pieces = {f[i:i + _PIECE] for f in forms if len(f) >= _PIECE
                  for i in range(len(f) - _PIECE + 1)}
        _pieces = (whole, tuple(sorted(pieces)))


def held() -> frozenset[str]:
    """The secrets this process holds (a copy)."""
    return frozenset(_held)


def forget_all() -> None:
    """Forget every held secret: a process that runs one command after another (a test
    run, a notebook) starts each with only its own secrets."""
    global _pieces
    with _lock:
        _held.clear()
        _pieces = ((), ())


def hold_url(url: str | None) -> None:
    """Hold the password and the credential-like query values (``key``, ``token``,
    ``password``…) of ``url``, and base64 of ``user:password`` (basic auth). A password
    the parser misreads (``user:Pa/ss@host`` splits at the ``/``) is held as written."""
    if not url:
        return
    rest = url.partition("://")[2]
    userinfo = rest.rpartition("@")[0]
    if ":" in userinfo:  # as written, whatever the parser makes of it
        raw = userinfo.partition(":")[2]
        hold(raw, urllib.parse.unquote(raw))
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return
    if password:
        plain_user, plain = urllib.parse.unquote(user or ""), urllib.parse.unquote(password)
        basic = base64.b64encode(f"{plain_user}:{plain}".encode()).decode()
        hold(password, plain, basic)
    hold(*(v for k, v in query if SECRET_QUERY.search(k)))


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` may be echoed back: as is, JSON-escaped (ASCII or not),
    URL-encoded, HTML-escaped, base64."""
    return {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
            urllib.parse.quote(secret, ""), urllib.parse.quote_plus(secret),
            html.escape(secret), base64.b64encode(secret.encode()).decode().rstrip("=")}


def redact(text: str) -> str:
    """``text`` without any held secret (any form, any case, any piece of 8+ characters)
    and without the value of a bearer/basic credential."""
    whole, pieces = _pieces
    if whole or pieces:
        low = text.lower()
        if len(low) != len(text):  # a character whose lower case is longer: match as is
            low = text
        spans = [(i, i + len(f)) for f in whole for i in _find_all(low, f)]
        spans += [(i, i + _PIECE) for p in pieces for i in _find_all(low, p)]
        text = _replace_spans(text, spans)
    return _SCHEMES.sub(rf"\1\2{REDACTED}", text)


def _find_all(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with every span (overlapping ones merged) replaced by one marker."""
    if not spans:
        return text
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, at = [], 0
    for a, b in merged:
        out += [text[at:a], REDACTED]
        at = b
    out.append(text[at:])
    return "".join(out)


def remote_text(data: bytes | str, limit: int = 200) -> str:
    """The start of what a remote service sent, fit for a message: decoded (UTF-8, bad
    bytes replaced), every held secret redacted, one line of printable characters (a
    hostile server's terminal escapes become ``?``), and only then cut to ``limit``
    characters (``…`` marks the cut)."""
    head = data[:16 * limit + 4096]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    text = redact(text)
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    text = redact(text)  # a secret split by a control character or a line break
    if len(text) <= limit and len(head) == len(data):
        return text
    start = text.rfind("[", max(limit - len(REDACTED), 0), limit)
    if start >= 0 and text.startswith(REDACTED, start):  # never cut the marker itself
        limit = start + len(REDACTED)
    return text[:limit] + "…"


def redacted(obj: Any) -> Any:
    """A copy of a JSON-like object with :func:`redact` applied to every string (keys too)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redacted(k): redacted(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redacted(v) for v in obj]
    return obj
