"""The one home for parsing a URL safely and for the form of a URL fit for messages and files.

:func:`split_url` is the only parser of user-given URLs (store URLs, HTTP endpoints, chat
endpoints): it holds the URL's secrets first (:func:`~searchbench._util.secrets.hold_url`),
and a URL it cannot parse is a :class:`~searchbench.errors.ConfigError` saying what is
wrong — an unmatched bracket, a port that is not a number — without echoing any part of
the URL that may be a secret (the standard library's own message quotes the text it took
for a port, which is often the password: ``user:Pa/ss@host`` → "port 'Pa'").
:func:`public_url` is the URL without user name and password and with credential-like
query values replaced.
"""

from __future__ import annotations

import urllib.parse

from ..errors import ConfigError
from .secrets import REDACTED, SECRET_QUERY, hold_url

__all__ = ["public_url", "split_url"]

_REASONS = (
    ("Port could not be cast", "what follows the last ':' of the host part is not a port "
     "number (a password holding '/', '?', '#' or '@' must be percent-encoded, e.g. '/' as "
     "%2F)"),
    ("Port out of range", "the port is outside 0-65535"),
    ("IPv6", "an unmatched '[' or ']' in the host"),
    ("NFKC", "the host holds characters that change under Unicode normalisation"),
)


def split_url(url: str, what: str = "URL", expected: str = "") -> urllib.parse.SplitResult:
    """``url`` split (its port checked); :class:`ConfigError` naming ``what`` and the
    problem, never the URL's user, password or query, when it cannot be parsed."""
    hold_url(url)
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port
    except ValueError as exc:
        reason = next((why for key, why in _REASONS if key in str(exc)), "it cannot be parsed")
        scheme = url.partition("://")[0] if "://" in url else ""
        shown = f" ({scheme}://…)" if scheme.isascii() and scheme.isalnum() else ""
        raise ConfigError(f"{what}{shown} is not a valid URL: {reason}"
                          + (f"; expected {expected}" if expected else "")) from None
    return parts


def public_url(url: str) -> str:
    """``url`` without user name or password, and with the values of query parameters that
    look like credentials (``key``, ``token``, ``sig``…) replaced by ``[redacted]``."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        netloc = host + (f":{parts.port}" if parts.port else "")
    except ValueError:
        netloc = host
    query = urllib.parse.urlencode(
        [(k, REDACTED if SECRET_QUERY.search(k) else v)
         for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)], safe="[]")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))
