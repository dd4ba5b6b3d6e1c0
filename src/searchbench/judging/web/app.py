"""The judging web app (Starlette, server-rendered Jinja2 pages, a little plain JavaScript).

Security model (docs/judging.md):

- every request that reads or changes labels is authenticated: a session cookie
  (``HttpOnly``, ``SameSite=Strict``, its id stored hashed) set after the annotator's
  token is posted from ``/login`` (the token travels in the URL *fragment*, which
  browsers never send to a server nor put in ``Referer``), or ``Authorization: Bearer
  TOKEN`` for scripts. Only ``/login`` and ``/static/*`` (no data) are public;
- state-changing requests with a cookie need the page's CSRF token in ``X-CSRF-Token``,
  an ``Origin`` equal to the app's own and ``Sec-Fetch-Site: same-origin`` when sent; a
  foreign ``Origin`` is refused on every POST;
- a loopback-bound app accepts only a loopback ``Host`` header (DNS rebinding);
- every response carries a strict Content-Security-Policy (``'self'`` scripts and styles
  only, no inline code), ``no-referrer``, ``nosniff``, ``frame-ancestors 'none'``;
- texts are escaped by Jinja2's autoescape; ids from requests are looked up in dictionaries,
  static files are served from a dictionary filled at start: no request reaches a path.
"""

from __future__ import annotations

import hmac
import json
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..._util import visible_name
from ...errors import DataFormatError, OutputError, SearchbenchError
from ..labels import GRADES, Judgment, Quote
from ..store import DamagedStoreError
from ._explore import explore_routes
from ._requests import BadRequest, item_number
from .context import JudgingContext, highlight

__all__ = ["SESSION_COOKIE", "cookie_name", "create_app"]

SESSION_COOKIE = "searchbench_session"
MAX_BODY = 256 * 1024
MAX_NOTE = 10_000
MAX_QUOTES = 50
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
_HEADERS = [(b"content-security-policy", CSP.encode()),
            (b"referrer-policy", b"no-referrer"),
            (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"),
            (b"cross-origin-opener-policy", b"same-origin"),
            (b"cross-origin-resource-policy", b"same-origin"),
            (b"cache-control", b"no-store")]
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".png": "image/png", ".svg": "image/svg+xml"}

Endpoint = Callable[[Request], Awaitable[Response]]
STORE_FAILURES = (DamagedStoreError, OutputError)  # a write or read of the store failed


@dataclass(frozen=True)
class Principal:
    """Who sent a request: the annotator, and the session's CSRF token (cookie sessions)."""

    name: str
    csrf: str | None


class SecurityHeaders:
    """ASGI middleware: security headers on every response; a loopback app refuses a
    non-loopback ``Host`` header (DNS rebinding)."""

    def __init__(self, app: ASGIApp, allowed_hosts: frozenset[str]) -> None:
        self.app, self.allowed_hosts = app, allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.allowed_hosts:
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            if host not in self.allowed_hosts:
                await _plain(400, "unexpected Host header")(scope, receive, self._wrap(send))
                return
        await self.app(scope, receive, self._wrap(send))

    @staticmethod
    def _wrap(send: Send) -> Send:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *[(k, v) for k, v in _HEADERS if k not in names]]
            await send(message)
        return send_with_headers


def cookie_name(request: Request) -> str:
    """The session cookie's name for this app: ``searchbench_session_<port>``. Browsers
    share cookies across the ports of a host, so two apps on one machine (``judge serve``
    and ``explore``) would otherwise replace each other's session."""
    port = request.url.port or (443 if request.url.scheme == "https" else 80)
    return f"{SESSION_COOKIE}_{port}"


def _plain(status: int, text: str) -> Response:
    return Response(text, status_code=status, media_type="text/plain; charset=utf-8")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class JudgingApp:
    """The routes; one instance per served evaluation set."""

    def __init__(self, ctx: JudgingContext) -> None:
        import jinja2  # lazy: the report extra

        self.ctx = ctx
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("searchbench.judging.web", "templates"),
            autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
            lstrip_blocks=True)
        self.env.filters["visible"] = visible_name  # ids and names: hidden characters escaped
        self.static = _load_static()

    # -- authentication ----------------------------------------------------------------
    def principal(self, request: Request) -> Principal | None:
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            name = self.ctx.store.annotator(auth[7:].strip())
            return Principal(name, None) if self.ctx.lets_in(name) and name else None
        found = self.ctx.store.session(request.cookies.get(cookie_name(request), ""))
        return Principal(*found) if found and self.ctx.lets_in(found[0]) else None

    def cross_site(self, request: Request, who: Principal | None) -> str | None:
        """Why a state-changing request is refused as cross-site, or ``None``."""
        origin = request.headers.get("origin")
        own = f"{'https' if self.ctx.secure else 'http'}://{request.headers.get('host', '')}"
        if origin is not None and origin != own:
            return f"cross-site request refused (Origin {origin})"
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "cross-site request refused (Sec-Fetch-Site)"
        if who is not None and who.csrf is not None:  # a cookie: the page's token too
            sent = request.headers.get("x-csrf-token", "")
            if origin is None or not hmac.compare_digest(sent.encode(), who.csrf.encode()):
                return "missing or wrong CSRF token"
        return None

    def page(self, handler: Callable[[Request, Principal], Awaitable[Response]]) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            try:
                who = await run_in_threadpool(self.principal, request)
                if who is None:
                    return RedirectResponse("/login", status_code=303)
                return await handler(request, who)
            except BadRequest as exc:
                return self.message(str(exc), 400)
            except STORE_FAILURES as exc:  # never a page built on a store that failed
                return self.message(f"The judging store failed: {exc}", 503)
        return endpoint

    def api(self, handler: Callable[[Request, Principal], Awaitable[Response]],
            changes_state: bool = True) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            try:
                who = await run_in_threadpool(self.principal, request)
                if who is None:
                    return _error(401, "not authenticated: open the URL printed for you")
                if changes_state and (why := self.cross_site(request, who)):
                    return _error(403, why)
                return await handler(request, who)
            except STORE_FAILURES as exc:  # not stored: never acknowledged (a 503)
                return _error(503, f"not stored: {exc}")
            except SearchbenchError as exc:
                return _error(400, str(exc))
        return endpoint

    def message(self, text: str, status: int, csrf: str = "") -> HTMLResponse:
        """The app's own page for a message (errors, the end of the pool)."""
        return self.render("message.html.j2", {"message": text, "csrf": csrf}, status)

    # -- public ------------------------------------------------------------------------
    async def login(self, request: Request) -> Response:
        return self.render("login.html.j2", {})

    async def open_session(self, request: Request) -> Response:
        if why := self.cross_site(request, None):
            return _error(403, why)
        try:
            body = await _json_body(request)
        except SearchbenchError as exc:
            return _error(400, str(exc))
        token = body.get("token") if isinstance(body, dict) else None
        name = await run_in_threadpool(self.ctx.store.redeem, str(token or ""))
        if name is None or not self.ctx.lets_in(name):
            return _error(401, "unknown token: open the URL printed when the app started")
        session_id, _ = await run_in_threadpool(self.ctx.store.open_session, name)
        response = JSONResponse({"annotator": name})
        response.set_cookie(cookie_name(request), session_id, httponly=True, samesite="strict",
                            secure=self.ctx.secure, path="/")
        return response

    async def static_file(self, request: Request) -> Response:
        found = self.static.get(request.path_params["name"])
        if found is None:
            return self.message("No such page here.", 404)
        content, media_type = found
        return Response(content, media_type=media_type,
                        headers={"cache-control": "no-cache"})

    # -- pages -------------------------------------------------------------------------
    async def home(self, request: Request, who: Principal) -> Response:
        if not self.ctx.items and self.ctx.explore is not None:
            return RedirectResponse("/explore", status_code=303)
        if not self.ctx.items:
            return self.message("The pool is empty: nothing to judge.", 200, who.csrf or "")
        done = await run_in_threadpool(self.own_labels, who.name)
        first = next((i for i, pair in enumerate(self.ctx.items) if pair not in done), None)
        return RedirectResponse("/done" if first is None else f"/judge?i={first}",
                                status_code=303)

    async def done_page(self, request: Request, who: Principal) -> Response:
        """After the last item: what this annotator did, what is left, what to run next."""
        labels = await run_in_threadpool(self.own_labels, who.name)
        left = [i for i, pair in enumerate(self.ctx.items) if pair not in labels]
        n_skipped = sum(1 for pair, j in labels.items()
                        if j.grade is None and pair in self.ctx.position)
        evalset = shlex.quote(str(self.ctx.evalset.resolve()))
        return self.render("done.html.j2", {
            "annotator": who.name, "csrf": who.csrf or "", "total": len(self.ctx.items),
            "n_judged": len(self.ctx.items) - len(left) - n_skipped, "n_skipped": n_skipped,
            "left": left[:20], "n_left": len(left),
            "export": f"searchbench judge export {evalset}",
            "agreement": f"searchbench judge agreement {evalset}"})

    async def not_found(self, request: Request, exc: Exception) -> Response:
        """The app's own page for a path or method it does not serve (no data in it)."""
        status = getattr(exc, "status_code", 404)
        if request.url.path.startswith(("/api/", "/session", "/logout")):
            return _error(status, "no such endpoint" if status == 404 else "method not allowed")
        text = ("No such page here." if status == 404 else "This page is not served that way.")
        return self.message(text, status)

    async def server_error(self, request: Request, exc: Exception) -> Response:
        """A failure the app did not expect: a short page or JSON, no traceback sent."""
        if request.url.path.startswith(("/api/", "/session", "/logout")):
            return _error(500, "internal error: not stored")
        return self.message("Internal error: the app could not answer this request.", 500)

    async def judge_page(self, request: Request, who: Principal) -> Response:
        i = item_number(request, len(self.ctx.items))
        if not 0 <= i < len(self.ctx.items):
            return self.message(f"No item {i}: this pool has items 0 to "
                                f"{len(self.ctx.items) - 1}.", 404, who.csrf or "")
        labels = await run_in_threadpool(self.own_labels, who.name)
        return self.render("judge.html.j2", self.judge_view(i, labels, who))

    def judge_view(self, i: int, labels: dict[tuple[str, str], Judgment],
                   who: Principal) -> dict[str, Any]:
        qid, did = self.ctx.items[i]
        query, doc = self.ctx.queries[qid], self.ctx.corpus[did]
        in_query = [j for j, (q, _) in enumerate(self.ctx.items) if q == qid]
        own = labels.get((qid, did))
        n_skipped = sum(1 for j in labels.values() if j.grade is None)
        segments = highlight(doc.text, query.text,
                             [(q.start, q.end) for q in own.evidence] if own else ())
        return {
            "annotator": who.name, "csrf": who.csrf or "", "i": i,
            "total": len(self.ctx.items), "n_judged": len(labels) - n_skipped,
            "n_skipped": n_skipped, "query": query, "doc": doc,
            "segments": segments,
            "doc_in_query": in_query.index(i) + 1, "docs_in_query": len(in_query),
            "query_number": len({q for q, _ in self.ctx.items[: i + 1]}),
            "queries": len({q for q, _ in self.ctx.items}),
            "own": own, "grades": GRADES, "n_marks": sum(s.kind == "mark" for s in segments),
            "evidence_json": json.dumps([q.__dict__ for q in own.evidence] if own else []),
        }

    def own_labels(self, annotator: str) -> dict[tuple[str, str], Judgment]:
        """This annotator's latest label per pair (never anyone else's: blind)."""
        return {(j.query_id, j.doc_id): j for j in self.ctx.store.judgments(annotator=annotator)}

    def render(self, template: str, values: dict[str, Any], status: int = 200) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(template).render(**values),
                            status_code=status)

    # -- API ---------------------------------------------------------------------------
    async def post_judgment(self, request: Request, who: Principal) -> Response:
        body = await _json_body(request)
        judgment, client_key = self.parse_judgment(body, who.name)
        jid = await run_in_threadpool(self.ctx.store.record, judgment, client_key)
        pos = self.ctx.position.get((judgment.query_id, judgment.doc_id))
        nxt = pos + 1 if pos is not None and pos + 1 < len(self.ctx.items) else None
        return JSONResponse({"id": jid, "next": nxt})

    def parse_judgment(self, body: Any, annotator: str) -> tuple[Judgment, str | None]:
        """A judgment from a request body, checked against the pool and the document."""
        if not isinstance(body, dict):
            raise DataFormatError("expected a JSON object")
        qid, did = body.get("query_id"), body.get("doc_id")
        if not (isinstance(qid, str) and isinstance(did, str) and self.ctx.may_judge(qid, did)):
            raise DataFormatError("unknown query/document pair: not in what is judged here")
        if did not in self.ctx.corpus:  # a run (explore) may name one: nothing to judge
            raise DataFormatError(f"document {did!r} is not in the corpus: it cannot be "
                                  f"judged here")
        grade, note, key = body.get("grade"), body.get("note", ""), body.get("client_key")
        if grade is not None and (type(grade) is not int or grade not in GRADES):
            raise DataFormatError(f"grade {grade!r}; expected one of {list(GRADES)} or null")
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise DataFormatError(f"note: expected a string of at most {MAX_NOTE} characters")
        if key is not None and not (isinstance(key, str) and 0 < len(key) <= 128):
            raise DataFormatError("client_key: expected a string of 1 to 128 characters")
        source = "explore" if body.get("source") == "explore" and self.ctx.explore else "pool"
        quotes = self.parse_quotes(body.get("evidence", []), self.ctx.corpus[did].text)
        return Judgment(qid, did, annotator, grade, "human", quotes, note, source), key

    @staticmethod
    def parse_quotes(raw: Any, text: str) -> tuple[Quote, ...]:
        """Evidence quotes, each verified: ``quote == text[start:end]``."""
        if not isinstance(raw, list) or len(raw) > MAX_QUOTES:
            raise DataFormatError(f"evidence: expected a list of at most {MAX_QUOTES} quotes")
        quotes = []
        for q in raw:
            start, end = (q.get("start"), q.get("end")) if isinstance(q, dict) else (None, None)
            quote = q.get("text") if isinstance(q, dict) else None
            if not (type(start) is int and type(end) is int and 0 <= start < end <= len(text)
                    and isinstance(quote, str) and text[start:end] == quote):
                raise DataFormatError("evidence: a quote is not the document's text at its "
                                      "offsets (expected text == document[start:end])")
            quotes.append(Quote(start, end, quote))
        return tuple(quotes)

    async def post_undo(self, request: Request, who: Principal) -> Response:
        undone = await run_in_threadpool(self.ctx.store.undo, who.name)
        if undone is None:
            return JSONResponse({"undone": None, "position": None})
        pos = self.ctx.position.get((undone.query_id, undone.doc_id))
        return JSONResponse({"undone": {"query_id": undone.query_id, "doc_id": undone.doc_id,
                                        "grade": undone.grade}, "position": pos})

    async def get_judgments(self, request: Request, who: Principal) -> Response:
        labels = await run_in_threadpool(self.ctx.store.judgments, annotator=who.name)
        return JSONResponse([{"query_id": j.query_id, "doc_id": j.doc_id, "grade": j.grade,
                              "evidence": [q.__dict__ for q in j.evidence], "note": j.note,
                              "source": j.source} for j in labels])

    async def logout(self, request: Request, who: Principal) -> Response:
        await run_in_threadpool(self.ctx.store.close_session,
                                request.cookies.get(cookie_name(request), ""))
        response = JSONResponse({"ok": True})
        response.delete_cookie(cookie_name(request), path="/")
        return response


async def _json_body(request: Request) -> Any:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise DataFormatError("expected Content-Type: application/json")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise DataFormatError(f"request body over {MAX_BODY} bytes")
    try:
        return json.loads(body)
    except ValueError:
        raise DataFormatError("expected a JSON body") from None


def _load_static() -> dict[str, tuple[bytes, str]]:
    """The packaged static files by name, read once (requests only look names up)."""
    folder = resources.files("searchbench.judging.web").joinpath("static")
    out = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            out[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return out


def create_app(ctx: JudgingContext) -> Starlette:
    """The ASGI app serving ``ctx`` (judging and, with ``ctx.explore``, explore pages)."""
    web = JudgingApp(ctx)
    routes = [
        Route("/login", web.login),
        Route("/session", web.open_session, methods=["POST"]),
        Route("/static/{name}", web.static_file),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/", web.page(web.home)),
        Route("/judge", web.page(web.judge_page)),
        Route("/done", web.page(web.done_page)),
        Route("/api/judgment", web.api(web.post_judgment), methods=["POST"]),
        Route("/api/undo", web.api(web.post_undo), methods=["POST"]),
        Route("/api/judgments", web.api(web.get_judgments, changes_state=False)),
        Route("/logout", web.api(web.logout), methods=["POST"]),
    ]
    if ctx.explore is not None:
        routes += explore_routes(web)
    return Starlette(routes=routes,
                     middleware=[Middleware(SecurityHeaders, allowed_hosts=ctx.allowed_hosts)],
                     exception_handlers={404: web.not_found, 405: web.not_found,
                                         500: web.server_error})
