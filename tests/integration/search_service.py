"""A small real search service for the HTTP retriever's tests (stdlib ``http.server``).

``python search_service.py EVALSET`` indexes the evaluation set's corpus with BM25 and
serves on 127.0.0.1 (a free port, printed as the first line of stdout) until killed:

- ``POST /search``  ``{"q": TEXT, "k": N}`` → ``{"hits": [{"id", "score"}…], "query": TEXT}``
- ``POST /es``  ``{"query": {"match": {"text": TEXT}}, "size": N}`` →
  ``{"hits": {"hits": [{"_id", "_score"}…]}}`` (Elasticsearch's shape)
- ``POST /list``  ``{"q": TEXT, "k": N}`` → ``[{"id": …}…]`` (no scores)

With ``$SERVICE_TOKEN`` set every request needs ``Authorization: Bearer $SERVICE_TOKEN``
(else HTTP 401); with ``$SERVICE_TENANT`` set, ``X-Tenant: $SERVICE_TENANT`` (else 400).
Every request body is appended to ``$SERVICE_LOG`` (one JSON line) when set.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import searchbench as sb


def main(spec: str) -> None:
    es = sb.load_evalset(spec, quiet=True)
    bm25 = sb.retrieval.BM25().index(es.corpus)
    token, tenant = os.environ.get("SERVICE_TOKEN"), os.environ.get("SERVICE_TENANT")
    log = os.environ.get("SERVICE_LOG")

    def top(text: str, k: int) -> list[tuple[str, float]]:
        queries = sb.Queries.from_dict({"q": text})
        run = bm25.search(queries, k=k)
        return [(d, float(s)) for d, s in run.ranking("q")]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if log:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                return self.answer(401, {"error": "unauthorised"})
            if tenant and self.headers.get("X-Tenant") != tenant:
                return self.answer(400, {"error": "no tenant"})
            if self.path == "/es":
                hits = top(body["query"]["match"]["text"], body["size"])
                return self.answer(200, {"hits": {"hits": [{"_id": d, "_score": s}
                                                           for d, s in hits]}})
            hits = top(body["q"], body["k"])
            if self.path == "/list":
                return self.answer(200, [{"id": d} for d, _ in hits])
            self.answer(200, {"query": body["q"], "hits": [{"id": d, "score": s}
                                                           for d, s in hits]})

        def answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
