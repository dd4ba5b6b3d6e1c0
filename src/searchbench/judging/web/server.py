"""Start the judging app: check the address, load the set and the pool, print one URL per
annotator, serve with uvicorn until Ctrl+C (or SIGTERM)."""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._util import keeping, visible_name
from ...errors import ConfigError, SearchbenchError, require
from ..labels import read_pool
from ..store import JudgmentStore, check_annotator_name
from .context import ExploreData, JudgingContext, check_pool, judging_order, load_texts

__all__ = ["ServeOptions", "bind", "is_loopback", "require_web", "serve"]


@dataclass(frozen=True)
class ServeOptions:
    """What ``judge serve`` / ``explore`` were asked for."""

    evalset: Path
    pool: Path | None = None
    annotators: tuple[str, ...] = ("annotator",)
    host: str = "127.0.0.1"
    port: int = 0
    allow_remote: bool = False
    certfile: Path | None = None
    keyfile: Path | None = None
    new_tokens: bool = False


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(opts: ServeOptions) -> None:
    """A non-loopback address only with ``--allow-remote``; TLS files come in pairs; no TLS
    on a remote address is a loud warning (tokens and labels would cross the network in
    clear text)."""
    if (opts.certfile is None) != (opts.keyfile is None):
        raise ConfigError("--certfile and --keyfile go together; give both for TLS")
    if is_loopback(opts.host):
        return
    if not opts.allow_remote:
        raise ConfigError(f"--host {opts.host} is not a loopback address: the app would be "
                          f"reachable from other machines; add --allow-remote (with "
                          f"--certfile/--keyfile for TLS) or use --host 127.0.0.1")
    if opts.certfile is None:
        bar = "!" * 78
        print(f"{bar}\nWARNING: serving on {opts.host} WITHOUT TLS: annotator tokens, session "
              f"cookies and\nlabels cross the network in clear text. Use --certfile/--keyfile."
              f"\n{bar}", file=sys.stderr, flush=True)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(256)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another "
                          f"--port or --host") from None
    return sock


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::"):
        return socket.gethostname()
    return f"[{host.strip('[]')}]" if ":" in host else host


@dataclass(frozen=True)
class Access:
    """How the listed annotators sign in: a new token each (``tokens``), or a fresh
    one-time sign-in link for those who keep theirs (``links``); ``revoked``: the people
    whose tokens, sessions and links this start ended; ``app_id``: this app in the store."""

    tokens: dict[str, str]
    links: dict[str, str]
    revoked: list[str]
    app_id: int


def register(store: JudgmentStore, names: tuple[str, ...], new_tokens: bool) -> Access:
    """Access for the listed annotators, and only them: a person left out of
    ``--annotator`` loses their token, sessions and links (unless another app running on
    this store serves them: :meth:`JudgmentStore.open_app`), and this app refuses anyone
    not listed (``JudgingContext.annotators``). New annotators (all, with ``new_tokens``;
    also one revoked before) get a token, the others a fresh one-time sign-in link."""
    known = store.annotators()
    names = tuple(dict.fromkeys(check_annotator_name(n) for n in names))  # NFC, all checked
    for name in names:                                                  # before any token
        if known.get(name) == "llm":
            raise ConfigError(f"annotator {name!r} is an LLM judge; choose another name")
    app_id, revoked = store.open_app(names)
    tokens = {name: store.add_annotator(name) for name in names
              if new_tokens or name not in known or not store.has_token(name)}
    links = {name: store.sign_in_link(name) for name in names if name not in tokens}
    return Access(tokens, links, revoked, app_id)


def require_web() -> None:
    """The web app's packages, or :class:`MissingDependencyError` naming the ``judge`` extra."""
    for module in ("starlette", "uvicorn", "jinja2"):
        require(module, "judge")


def serve(opts: ServeOptions, explore: ExploreData | None = None) -> None:
    """Serve the app for ``opts`` (explore mode with ``explore``) until interrupted."""
    require_web()
    check_address(opts)
    corpus, queries, qrels = load_texts(opts.evalset)
    items: list[tuple[str, str]] = []
    if opts.pool is not None:
        pool = read_pool(opts.pool)
        check_pool(pool, corpus, queries, str(opts.pool))
        items = judging_order(pool)
    store = JudgmentStore(opts.evalset, check=True)  # never serve a malformed store
    with contextlib.ExitStack() as cleanup:  # undone in reverse order, whatever happens
        cleanup.callback(store.close)
        sock = bind(opts.host, opts.port)
        cleanup.callback(sock.close)
        access = register(store, opts.annotators, opts.new_tokens)
        cleanup.callback(_close_app, store, access.app_id)
        ctx = JudgingContext(opts.evalset, corpus, queries, store, items, qrels, explore,
                             secure=opts.certfile is not None,
                             allowed_hosts=_allowed_hosts(opts.host, sock.getsockname()[1]),
                             annotators=frozenset([*access.tokens, *access.links]))
        _run(opts, sock, ctx, access)


def _close_app(store: JudgmentStore, app_id: int) -> None:
    with contextlib.suppress(SearchbenchError):  # a store that failed meanwhile
        store.close_app(app_id)


def _allowed_hosts(host: str, port: int) -> frozenset[str]:
    """``Host`` headers a loopback app accepts (DNS rebinding); none checked otherwise."""
    if not is_loopback(host):
        return frozenset()
    return frozenset(f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", host.lower()))


def _run(opts: ServeOptions, sock: socket.socket, ctx: JudgingContext, access: Access) -> None:
    import uvicorn  # lazy: the judge extra

    from .app import create_app  # lazy: starlette loads once require_web checked the extra

    port = sock.getsockname()[1]
    base = f"{'https' if ctx.secure else 'http'}://{_url_host(opts.host)}:{port}"
    config = uvicorn.Config(create_app(ctx), log_level="warning", access_log=False,
                            lifespan="off", server_header=False, timeout_graceful_shutdown=2,
                            ssl_certfile=str(opts.certfile) if opts.certfile else None,
                            ssl_keyfile=str(opts.keyfile) if opts.keyfile else None)

    with keeping(f"every label given is stored in {ctx.store.path}",
                 "run the same command again to go on"):  # the CLI says what was kept
        _announce(opts, ctx, access, base)
        _run_until_ctrl_c(uvicorn.Server(config), sock)


def _run_until_ctrl_c(server: Any, sock: socket.socket) -> None:
    """Run uvicorn's ``server`` on ``sock``; Ctrl-C at any moment - even while uvicorn is
    still starting and not yet listening for it - asks it to stop cleanly (its
    ``should_exit``), and is raised again as :class:`KeyboardInterrupt` once it stopped (a
    stop inside asyncio's start-up would leave a coroutine and an event loop behind)."""
    if threading.current_thread() is not threading.main_thread():  # no signals there
        server.run(sockets=[sock])
        return
    pressed: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        pressed.append(signum)
        server.should_exit = True

    previous = signal.signal(signal.SIGINT, stop)
    try:
        server.run(sockets=[sock])  # uvicorn hands its own Ctrl-C back to `stop`
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        raise KeyboardInterrupt


def _announce(opts: ServeOptions, ctx: JudgingContext, access: Access, base: str) -> None:
    """The start-up lines (``judge serve`` and ``explore`` alike): one sign-in URL per
    listed annotator, the people revoked, where the labels go."""
    what = (f"explore mode ({' vs '.join(map(visible_name, ctx.explore.names))}, "
            f"{ctx.explore.measure})" if ctx.explore
            else f"{len(ctx.items)} (query, document) pairs to judge")
    print(f"searchbench judging app for {visible_name(opts.evalset)}: {what}; labels go to "
          f"{visible_name(ctx.store.path)}")
    names = [*access.tokens, *access.links]
    width = max(len(n) for n in names)
    for name in names:
        if name in access.tokens:
            print(f"  {name:<{width}}  {base}/login#token={access.tokens[name]}  (new token)")
        else:
            print(f"  {name:<{width}}  {base}/login#token={access.links[name]}  (a fresh "
                  f"sign-in link, good once; the URL printed when {name} was added still "
                  f"works; --new-tokens replaces it)")
    if access.revoked:
        print(f"Revoked (not listed with --annotator): {', '.join(access.revoked)}: their "
              f"URLs and sessions no longer work; their labels are kept (list a name again "
              f"to give it a new URL).")
    print(f"Each URL signs one annotator in: send it to that person only. Serving at {base}/ "
          f"until Ctrl+C.", flush=True)
