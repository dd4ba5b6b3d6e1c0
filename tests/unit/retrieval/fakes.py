"""Test doubles: a hashed bag-of-words encoder and an OpenAI-compatible HTTP server."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from searchbench.retrieval.encoders import Encoder


class HashEncoder(Encoder):
    """Counts of words hashed into ``dim`` buckets; records every batch it embeds."""

    name = "hash"

    def __init__(self, dim: int = 64, fail_after: int | None = None, **kw) -> None:
        super().__init__(**kw)
        self.dim = dim
        self.calls: list[int] = []
        self.fail_after = fail_after

    @property
    def identity(self) -> str:
        return f"hash:{self.dim}"

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return out


def vector(text: str) -> list[float]:
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return rng.standard_normal(8).round(6).tolist()


class EmbeddingServer:
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
                data = [{"index": i, "embedding": vector(t)}
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

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
