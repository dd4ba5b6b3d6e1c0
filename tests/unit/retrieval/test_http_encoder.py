"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from searchbench.errors import BackendError
from searchbench.retrieval.http_encoder import OpenAIEncoder

KEY = "sk-test-secret-123"


def _vector(text: str) -> list[float]:
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return rng.standard_normal(8).round(6).tolist()


class _Server:
    """Answers /v1/embeddings; ``fail`` = statuses to return first; ``slow`` = delay (s)."""

    def __init__(self) -> None:
        self.fail: list[int] = []
        self.slow = 0.0
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"auth": self.headers.get("Authorization"), **body})
                if owner.slow:
                    time.sleep(owner.slow)
                if owner.fail:
                    self.send_response(owner.fail.pop(0))
                    self.end_headers()
                    self.wfile.write(b'{"error": "overloaded"}')
                    return
                data = [{"index": i, "embedding": _vector(t)}
                        for i, t in reversed(list(enumerate(body["input"])))]
                raw = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # client gave up (timeout test)
                    self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture()
def server():
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _encoder(server, tmp_path, **kw) -> OpenAIEncoder:
    kw = {"batch_size": 3, "backoff": 0.01, "timeout": 2.0, "retries": 2, **kw}
    return OpenAIEncoder("emb-small", endpoint=server.url, api_key_env="SB_TEST_KEY",
                         cache=tmp_path, **kw)


def test_batches_order_and_key(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SB_TEST_KEY", KEY)
    texts = [f"text {i}" for i in range(7)]
    out = _encoder(server, tmp_path).encode_documents(texts)
    np.testing.assert_allclose(out, np.asarray([_vector(t) for t in texts]), rtol=1e-6)
    assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
    assert all(r["auth"] == f"Bearer {KEY}" and r["model"] == "emb-small"
               for r in server.requests)


def test_retries_then_succeeds(server, tmp_path):
    server.fail = [503, 429]
    out = _encoder(server, tmp_path).encode_documents(["a", "b"])
    assert out.shape == (2, 8) and len(server.requests) == 3


def test_persistent_error_is_clear_keeps_cache_and_hides_key(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SB_TEST_KEY", KEY)
    enc = _encoder(server, tmp_path)
    enc.encode_documents(["a", "b", "c"])                 # first batch cached
    server.fail = [500] * 3                                # 1 try + 2 retries
    with pytest.raises(BackendError) as info:
        enc.encode_documents(["a", "b", "c", "d", "e", "f"])
    msg = str(info.value)
    assert "failed after 3 attempts" in msg and "HTTP 500" in msg and "kept in the cache" in msg
    assert KEY not in msg and KEY not in repr(info.value.__cause__)
    before = len(server.requests)
    enc.encode_documents(["a", "b", "c", "d", "e", "f"])  # resumes: only d, e, f sent
    assert [r["input"] for r in server.requests[before:]] == [["d", "e", "f"]]


def test_client_error_is_not_retried(server, tmp_path):
    server.fail = [401]
    with pytest.raises(BackendError, match=r"refused the request .*HTTP 401"):
        _encoder(server, tmp_path).encode_documents(["a"])
    assert len(server.requests) == 1


def test_timeout_retries_then_fails(server, tmp_path):
    server.slow = 0.5
    with pytest.raises(BackendError, match="failed after 2 attempts"):
        _encoder(server, tmp_path, timeout=0.1, retries=1).encode_documents(["x"])
