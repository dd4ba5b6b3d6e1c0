"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import numpy as np
import pytest

from searchbench.errors import BackendError
from searchbench.retrieval.http_encoder import OpenAIEncoder

from .fakes import EmbeddingServer as _Server
from .fakes import vector as _vector

KEY = "sk-test-secret-123"


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
