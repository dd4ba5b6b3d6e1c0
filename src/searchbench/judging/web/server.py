"""Start the judging app: check the address, load the set and the pool, print one URL per
annotator, serve with uvicorn until Ctrl+C (or SIGTERM)."""

from __future__ import annotations

import ipaddress
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError, require
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


def register(store: JudgmentStore, names: tuple[str, ...],
             new_tokens: bool) -> dict[str, str | None]:
    """Tokens of new annotators (and of all, with ``new_tokens``); ``None`` for an annotator
    kept with the token printed when it was added."""
    known = store.annotators()
    for name in names:  # all checked before any is added: no token is made and lost
        check_annotator_name(name)
        if known.get(name) == "llm":
            raise ConfigError(f"annotator {name!r} is an LLM judge; choose another name")
    return {name: store.add_annotator(name) if new_tokens or name not in known else None
            for name in dict.fromkeys(names)}


def require_web() -> None:
    """The web app's packages, or :class:`MissingDependencyError` naming the ``judge`` extra."""
    for module in ("starlette", "uvicorn", "jinja2"):
        require(module, "judge")


def serve(opts: ServeOptions, explore: ExploreData | None = None) -> None:
    """Serve the app for ``opts`` (explore mode with ``explore``) until interrupted."""
    require_web()
    import uvicorn

    from .app import create_app

    check_address(opts)
    corpus, queries, qrels = load_texts(opts.evalset)
    items: list[tuple[str, str]] = []
    if opts.pool is not None:
        pool = read_pool(opts.pool)
        check_pool(pool, corpus, queries, str(opts.pool))
        items = judging_order(pool)
    store = JudgmentStore(opts.evalset)
    tokens = register(store, opts.annotators, opts.new_tokens)
    sock = bind(opts.host, opts.port)
    port = sock.getsockname()[1]
    allowed = frozenset() if not is_loopback(opts.host) else frozenset(
        f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", opts.host.lower()))
    ctx = JudgingContext(opts.evalset, corpus, queries, store, items, qrels, explore,
                         secure=opts.certfile is not None, allowed_hosts=allowed)
    base = f"{'https' if ctx.secure else 'http'}://{_url_host(opts.host)}:{port}"
    config = uvicorn.Config(create_app(ctx), log_level="warning", access_log=False,
                            lifespan="off", server_header=False, timeout_graceful_shutdown=2,
                            ssl_certfile=str(opts.certfile) if opts.certfile else None,
                            ssl_keyfile=str(opts.keyfile) if opts.keyfile else None)
    from ..._util import keeping

    try:  # Ctrl-C stops the app, then is raised again: the CLI says what was kept
        with keeping(f"every label given is stored in {ctx.store.path}",
                     "run the same command again to go on"):
            _announce(opts, ctx, tokens, base)
            _run_until_ctrl_c(uvicorn.Server(config), sock)
    finally:
        sock.close()
        store.close()


def _run_until_ctrl_c(server: Any, sock: socket.socket) -> None:
    """Run uvicorn's ``server`` on ``sock``; Ctrl-C at any moment - even while uvicorn is
    still starting and not yet listening for it - asks it to stop cleanly (its
    ``should_exit``), and is raised again as :class:`KeyboardInterrupt` once it stopped (a
    stop inside asyncio's start-up would leave a coroutine and an event loop behind)."""
    import signal
    import threading

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


def _announce(opts: ServeOptions, ctx: JudgingContext, tokens: dict[str, str | None],
              base: str) -> None:
    what = (f"explore mode ({' vs '.join(ctx.explore.names)}, {ctx.explore.measure})"
            if ctx.explore else f"{len(ctx.items)} (query, document) pairs to judge")
    print(f"searchbench judging app for {opts.evalset}: {what}; labels go to "
          f"{ctx.store.path}")
    width = max(len(n) for n in tokens)
    for name, token in tokens.items():
        where = (f"{base}/login#token={token}" if token is not None else
                 f"same token as before: {base}/login#token=<the token printed when "
                 f"{name} was added> (--new-tokens prints new ones)")
        print(f"  {name:<{width}}  {where}")
    print(f"Each URL signs one annotator in: send it to that person only. Serving at {base}/ "
          f"until Ctrl+C.", flush=True)
