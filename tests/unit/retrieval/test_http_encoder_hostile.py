"""The embeddings client against a hostile endpoint: a real HTTP server on 127.0.0.1.

Each test gives the stub server one behaviour (redirect to another origin, an error body
echoing the Authorization header, NaN vectors, duplicate indexes, null embeddings, a body
trickled byte by byte, a bad ``Retry-After``…) and checks that the client fails with one
clear :class:`BackendError` naming the endpoint, never sends the key to another origin and
never lets the key appear in a message, a chained exception or a log record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from searchbench.errors import BackendError, ConfigError
from searchbench.retrieval.http_encoder import OpenAIEncoder

KEY = "sk-hostile-secret-8d1f"
Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


class Stub:
    """One loopback HTTP server; ``behaviour(handler, body)`` answers every POST."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or answer_vectors
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                owner.requests.append({"auth": self.headers.get("Authorization"),
                                       "path": self.path, **body})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner.behaviour(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def send(handler: BaseHTTPRequestHandler, status: int, payload: Any = None,
         headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
    data = raw if raw is not None else json.dumps(payload).encode()
    handler.send_response(status)
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def vec(text: str, dim: int = 4) -> list[float]:
    return [float(len(text) + j) for j in range(dim)]


def answer_vectors(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    send(handler, 200, {"data": [{"index": i, "embedding": vec(t)}
                                 for i, t in enumerate(body["input"])]})


@pytest.fixture()
def stubs() -> Iterator[Callable[..., Stub]]:
    made: list[Stub] = []

    def make(behaviour: Behaviour | None = None) -> Stub:
        made.append(Stub(behaviour))
        return made[-1]
    yield make
    for s in made:
        s.close()


@pytest.fixture()
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SB_HOSTILE_KEY", KEY)
    return KEY


def encoder(url: str, tmp_path: Any = None, **kw: Any) -> OpenAIEncoder:
    kw = {"batch_size": 4, "backoff": 0.0, "timeout": 5.0, "retries": 0, **kw}
    return OpenAIEncoder("m", endpoint=url, api_key_env="SB_HOSTILE_KEY",
                         cache=tmp_path if tmp_path is not None else False, **kw)


def chain(exc: BaseException) -> str:
    """Every message, repr and chained exception of ``exc``."""
    parts = []
    seen: BaseException | None = exc
    while seen is not None:
        parts += [str(seen), repr(seen), repr(seen.args)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def fails(enc: OpenAIEncoder, texts: list[str], caplog: pytest.LogCaptureFixture,
          match: str) -> str:
    with caplog.at_level(logging.DEBUG), pytest.raises(BackendError, match=match) as info:
        enc.encode_documents(texts)
    everything = chain(info.value) + "\n" + caplog.text
    assert KEY not in everything
    assert "\n" not in str(info.value)
    return str(info.value)


# -- credentials ----------------------------------------------------------------------------
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_to_another_port_is_refused_without_sending_the_key(stubs, key, caplog,
                                                                      status):
    other = stubs()  # another port on the same host is another origin
    first = stubs(lambda h, b: send(h, status, {}, {"Location": other.url + "/embeddings"}))
    message = fails(encoder(first.url), ["a"], caplog, "another origin")
    assert f"127.0.0.1:{first.port}" in message and str(other.port) in message
    assert other.requests == []
    assert [r["auth"] for r in first.requests] == [f"Bearer {key}"]


def test_redirect_to_another_host_name_is_refused(stubs, key, caplog):
    first = stubs(lambda h, b: send(h, 307, {}, {
        "Location": "http://attacker.example:8080/steal?token=" + KEY}))
    message = fails(encoder(first.url), ["a"], caplog, "another origin")
    assert "attacker.example" in message


def test_same_origin_redirect_is_followed_with_the_body(stubs, key):
    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if h.path == "/v1/embeddings":
            send(h, 308, {}, {"Location": "/v2/embeddings"})
        else:
            answer_vectors(h, body)
    stub = stubs(behaviour)
    out = encoder(stub.url).encode_documents(["ab", "c"])
    np.testing.assert_array_equal(out, np.asarray([vec("ab"), vec("c")], np.float32))
    assert [r["path"] for r in stub.requests] == ["/v1/embeddings", "/v2/embeddings"]
    assert all(r["input"] == ["ab", "c"] for r in stub.requests)


def test_redirect_loop_is_bounded(stubs, key, caplog):
    stub = stubs(lambda h, b: send(h, 307, {}, {"Location": "/v1/embeddings"}))
    fails(encoder(stub.url), ["a"], caplog, "redirected more than")


@pytest.mark.parametrize("status", [400, 401, 403, 500])
def test_error_body_echoing_the_key_is_redacted(stubs, key, caplog, status):
    def echo(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        auth = h.headers.get("Authorization", "")
        text = (f'{{"error": "bad credentials {auth}", "got": {json.dumps(auth)}, '
                f'"raw": "{KEY}", "quoted": "{KEY.replace("-", "%2D")}"}}')
        send(h, status, raw=text.encode())
    message = fails(encoder(stubs(echo).url), ["a"], caplog, f"HTTP {status}")
    assert "[redacted]" in message


def test_key_in_the_endpoint_url_is_never_shown(stubs, key, caplog):
    stub = stubs(lambda h, b: send(h, 401, {"error": "no"}))
    url = stub.url.replace("127.0.0.1", f"user:{KEY}@127.0.0.1") + f"?api_key={KEY}&v=1"
    enc = encoder(url)
    assert KEY not in enc.identity and KEY not in json.dumps(enc.describe())
    fails(enc, ["a"], caplog, "refused the request")


# -- the answer ------------------------------------------------------------------------------
def _items(body: dict[str, Any], index: Callable[[int], Any] = lambda i: i,
           emb: Callable[[int, str], Any] = lambda i, t: vec(t)) -> dict[str, Any]:
    return {"data": [{"index": index(i), "embedding": emb(i, t)}
                     for i, t in enumerate(body["input"])]}


@pytest.mark.parametrize(("index", "found"), [
    (lambda i: 0, "index 0 again"),
    (lambda i: i + 1, "outside"),
    (lambda i: -1, "outside"),
    (lambda i: "0" if i == 0 else i, "not a whole number"),
    (lambda i: 1.0 * i, "not a whole number"),
    (lambda i: True if i == 1 else i, "not a whole number"),
    (lambda i: None if i == 1 else i, "no index"),
])
def test_indexes_must_name_each_text_once(stubs, key, caplog, index, found):
    stub = stubs(lambda h, b: send(h, 200, _items(b, index=index)))
    fails(encoder(stub.url), ["a", "bb", "ccc"], caplog, found)


def test_items_without_index_are_taken_in_order_and_reordered_ones_are_sorted(stubs, key):
    stub = stubs(lambda h, b: send(h, 200, {"data": [{"embedding": vec(t)}
                                                     for t in b["input"]]}))
    out = encoder(stub.url).encode_documents(["a", "bb"])
    np.testing.assert_array_equal(out, np.asarray([vec("a"), vec("bb")], np.float32))
    back = stubs(lambda h, b: send(h, 200, {"data": list(reversed(_items(b)["data"]))}))
    out = encoder(back.url).encode_documents(["a", "bb", "ccc"])
    np.testing.assert_array_equal(out, np.asarray([vec(t) for t in ["a", "bb", "ccc"]],
                                                  np.float32))


@pytest.mark.parametrize(("emb", "found"), [
    (lambda i, t: None, "null"),
    (lambda i, t: [], "empty list"),
    (lambda i, t: "0.1,0.2", "str"),
    (lambda i, t: [0.1, None, 0.3, 0.4], "other than numbers"),
    (lambda i, t: vec(t, 4 + i), "different dimensions"),
])
def test_missing_or_malformed_embeddings_are_clear(stubs, key, caplog, emb, found):
    stub = stubs(lambda h, b: send(h, 200, _items(b, emb=emb)))
    message = fails(encoder(stub.url), ["a", "bb"], caplog, found)
    assert "returned 2 embeddings for 2 texts" not in message


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_vectors_name_the_text_and_are_never_cached(stubs, key, caplog, tmp_path,
                                                               bad):
    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        rows = [vec(t) for t in body["input"]]
        text = json.dumps({"data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]})
        if "poison" in body["input"]:
            spot = json.dumps(rows[body["input"].index("poison")])
            text = text.replace(spot, spot.replace("6.0", bad, 1))
        send(h, 200, raw=text.encode())
    stub = stubs(behaviour)
    enc = encoder(stub.url, tmp_path, batch_size=2)
    # embedded longest first, two at a time: "poison" comes in the second batch
    message = fails(enc, ["aaaaaaa", "bbbbbbb", "ccccccc", "poison"], caplog, "NaN or infinity")
    assert "text #3" in message and "'poison'" in message  # its place in the caller's list
    cached = [np.load(p)["vectors"] for p in tmp_path.rglob("shard-*.npz")]
    assert len(cached) == 1 and np.isfinite(cached[0]).all()  # the first batch only


def test_dimension_changing_between_batches_is_an_error(stubs, key, caplog):
    calls = []

    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        calls.append(1)
        send(h, 200, _items(body, emb=lambda i, t: vec(t, 4 if len(calls) == 1 else 6)))
    fails(encoder(stubs(behaviour).url, batch_size=2), ["a", "b", "c"], caplog,
          "6-dimensional .* earlier batches had 4")


def test_requested_dimensions_are_checked(stubs, key, caplog):
    fails(encoder(stubs().url, dimensions=8), ["a"], caplog, "dimensions = 8")


@pytest.mark.parametrize("payload", [{"data": []}, {"data": None}, {}, [], "x"])
def test_zero_embeddings_after_a_redirect_name_the_final_endpoint(stubs, key, caplog,
                                                                   payload):
    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if h.path == "/v1/embeddings":
            send(h, 302, {}, {"Location": "/login"})
        else:
            send(h, 200, payload)
    stub = stubs(behaviour)
    message = fails(encoder(stub.url), ["a", "b"], caplog, "embeddings")
    assert f"127.0.0.1:{stub.port}/login" in message


def test_not_json_and_deep_json_are_clear(stubs, key, caplog):
    fails(encoder(stubs(lambda h, b: send(h, 200, raw=b"<html>login</html>")).url), ["a"],
          caplog, "without an OpenAI embeddings body")
    deep = b"[" * 100000 + b"]" * 100000
    fails(encoder(stubs(lambda h, b: send(h, 200, raw=deep)).url), ["a"], caplog,
          "without an OpenAI embeddings body")


# -- time ------------------------------------------------------------------------------------
@pytest.mark.parametrize("length", [True, False])  # without: the body ends when closed
def test_timeout_bounds_a_trickled_body(stubs, key, caplog, length):
    stop = threading.Event()

    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        data = json.dumps(_items(body)).encode()
        h.send_response(200)
        if length:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for byte in data:  # one byte per 0.2 s: the whole body would take minutes
            if stop.wait(0.2):
                return
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
    stub = stubs(trickle)
    started = time.monotonic()
    try:
        fails(encoder(stub.url, timeout=1.0), ["a", "b"], caplog, "within the timeout")
    finally:
        stop.set()
    # generous bound (loaded machine): the old client needed len(body) × 0.2 s ≈ 20 s
    assert time.monotonic() - started < 10 * 1.0


def test_timeout_bounds_trickled_headers(stubs, key, caplog):
    stop = threading.Event()

    def trickle(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for i in range(1000):
            if stop.wait(0.2):
                return
            h.wfile.write(f"X-Slow-{i}: 1\r\n".encode())
            h.wfile.flush()
    stub = stubs(trickle)
    started = time.monotonic()
    try:
        fails(encoder(stub.url, timeout=1.0), ["a"], caplog, "within the timeout")
    finally:
        stop.set()
    assert time.monotonic() - started < 10 * 1.0


@pytest.mark.parametrize("value", ["nan", "-5", "inf", "-inf", "1e400", "soon", "",
                                   "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_unusable_retry_after_falls_back_to_backoff(stubs, key, value):
    answers = [429]

    def behaviour(h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if answers:
            answers.pop()
            send(h, 429, {"error": "slow down"}, {"Retry-After": value})
        else:
            answer_vectors(h, body)
    stub = stubs(behaviour)
    out = encoder(stub.url, retries=1, backoff=0.01).encode_documents(["a"])
    assert out.shape == (1, 4) and len(stub.requests) == 2


def test_retry_after_is_bounded(monkeypatch):
    from email.message import Message

    from searchbench.retrieval import http_client

    def after(value: str) -> float | None:
        headers = Message()
        headers["Retry-After"] = value
        return http_client.retry_after(headers)
    assert after("nan") is None and after("-5") is None and after("inf") is None
    assert after("2") == 2.0 and after("100000") == 100000.0  # the client bounds the wait
    assert after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: now


@pytest.mark.parametrize("bad", [KEY + "\r\nX-Injected: 1", KEY + "\n", "ключ" + KEY])
def test_a_key_that_would_inject_headers_is_refused_without_showing_it(stubs, monkeypatch,
                                                                       bad):
    monkeypatch.setenv("SB_HOSTILE_KEY", bad)
    stub = stubs()
    with pytest.raises(ConfigError, match="SB_HOSTILE_KEY") as info:
        encoder(stub.url).encode_documents(["a"])
    assert KEY not in chain(info.value) and stub.requests == []


def test_bad_settings_are_config_errors():
    for kw in ({"timeout": float("nan")}, {"timeout": 0}, {"backoff": -1.0}):
        with pytest.raises(ConfigError):
            encoder("http://127.0.0.1:9/v1", **kw)
    with pytest.raises(ConfigError, match="http"):
        encoder("file:///etc/passwd")


def test_http_proxy_from_the_environment_is_used(stubs, key, monkeypatch):
    proxy = stubs()  # answers like the endpoint; records the absolute request target
    for name in ("no_proxy", "NO_PROXY", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://u:p%40ss@127.0.0.1:{proxy.port}")
    out = encoder("http://embeddings.invalid:8000/v1").encode_documents(["ab"])
    assert out.shape == (1, 4)
    [seen] = proxy.requests
    assert seen["path"] == "http://embeddings.invalid:8000/v1/embeddings"
