"""Store URLs: ``scheme://[user[:password]@]host[:port]/path?key=value&...`` parsed into a
:class:`StoreURL`, with the password and credential-like options kept out of every message
(the ``public`` form), and the registry of URL schemes → adapters."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Literal

from .._util.secrets import hold
from .._util.urls import split_url
from ..errors import ConfigError

__all__ = ["ENGINES", "LOCAL_ENGINES", "StoreURL", "parse_store_url", "register_engine",
           "without_secrets"]


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: ``scheme://[user[:password]@]host[:port]/path?key=value&...``.

    ``path`` is a filesystem path for embedded engines (``lancedb://./lance`` → ``./lance``)
    or a database name for servers. ``public`` is the URL with any password removed: the
    only form that may appear in messages, logs and files.
    """

    scheme: str
    host: str
    port: int | None
    path: str
    user: str | None
    password: str | None
    options: dict[str, str]
    public: str


def parse_store_url(url: str) -> StoreURL:
    """Parse ``url``; raises :class:`ConfigError` naming what is wrong (never the password:
    :func:`~searchbench._util.urls.split_url`, which also holds it for redaction)."""
    parts = split_url(url, "store URL", "e.g. 'pgvector:///app?host=/run/pg&table=docs'")
    port = parts.port
    hold(*(v for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
           if _SECRET_OPTION.search(k) and not k.lower().endswith("_env")))  # env: a name
    if not parts.scheme:
        raise ConfigError(f"store URL {_redacted(url)!r} has no scheme; expected one of "
                          f"{', '.join(sorted(ENGINES))}")
    options: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True,
                                             strict_parsing=False):
        if key in options:
            raise ConfigError(f"store URL {_redacted(url)!r}: option {key!r} given twice")
        options[key] = value
    path = urllib.parse.unquote(parts.netloc.split("@")[-1] if _embedded_path(parts) else "")
    path = path + urllib.parse.unquote(parts.path) if path else urllib.parse.unquote(parts.path)
    return StoreURL(parts.scheme.lower(), parts.hostname or "", port, path,
                    urllib.parse.unquote(parts.username) if parts.username else None,
                    urllib.parse.unquote(parts.password) if parts.password else None,
                    options, _redacted(url))


def _embedded_path(parts: urllib.parse.SplitResult) -> bool:
    """``lancedb://./lance`` puts ``.`` in the netloc: a relative path, not a host."""
    return parts.netloc in (".", "..") or parts.netloc.startswith("~")


_SECRET_OPTION = re.compile(r"(?i)key|token|secret|sig|pass|pwd|auth|cred")


def _redacted(url: str) -> str:
    """``url`` with the password (if any) and the values of credential-like options
    (``?password=``, ``api_key=``, ``token=``…) replaced by ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        secret_options = any(_SECRET_OPTION.search(k) for k, _ in pairs)
        if parts.password is None and not secret_options:
            return url
        netloc = parts.netloc
        if parts.password is not None:
            netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
        query = "&".join(f"{k}=***" if _SECRET_OPTION.search(k) else f"{k}={v}"
                         for k, v in pairs) if secret_options else parts.query
        # by hand: urlunsplit drops an empty host ("pgvector:///db" -> "pgvector:/db")
        return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
                + (f"#{parts.fragment}" if parts.fragment else ""))
    except ValueError:
        return "<unparsable URL>"


def without_secrets(text: str, url: StoreURL) -> str:
    """``text`` (an engine's message) with the URL's password and the values of its
    credential-like options (``api_key=``, ``token=``…) replaced by ``***``, before any
    cut."""
    secrets = [url.password or ""] + [v for k, v in url.options.items()
                                       if _SECRET_OPTION.search(k)]
    for secret in sorted((x for x in secrets if len(x) >= 3), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text



ENGINES: dict[str, tuple[str, str]] = {}  # scheme -> (module, class name), imported lazily
LOCAL_ENGINES: dict[str, str] = {}  # scheme -> "file" or "folder": what its URL path names


def register_engine(scheme: str, module: str, cls: str, *,
                    local: Literal["file", "folder"] | None = None) -> None:
    """Declare that ``scheme://`` URLs are served by ``module.cls`` (imported on first use);
    ``local``: the URL's path is a file or a folder on this machine that the engine creates
    on first open."""
    ENGINES[scheme] = (module, cls)
    if local:
        LOCAL_ENGINES[scheme] = local
