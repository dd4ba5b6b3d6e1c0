"""A loopback OpenAI-compatible chat endpoint for the LLM judge and synth tests.

A real HTTP server (a thread on 127.0.0.1, a free port) answering ``POST
/v1/chat/completions``. By default:

- a judge prompt (``<<<QUERY … QUERY>>>`` and ``<<<PASSAGE … PASSAGE>>>``) gets
  ``##final score: N`` with N = the number of distinct query words (lower case, split on
  non-letters) found in the passage, capped at 3 — :func:`expected_grade`;
- a question-generation prompt gets ``{"questions": [...]}`` from ``questions[passage]``
  (a dict the test fills), else ``["what is <first three words of the passage>?"]``.

``plan`` is a list of faults consumed one per request before the default answer:
``"429"`` (with ``Retry-After: 0.2``), ``"500"``, ``"bad-json"`` (a body that is not JSON),
``"no-choices"``, ``"nonsense"`` (a completion that is not a grade), ``"slow"`` (headers,
then nothing for 3 s).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def expected_grade(query: str, passage: str) -> int:
    return min(len(words(query) & words(passage)), 3)


def _between(text: str, start: str, end: str) -> str:
    a = text.index(start) + len(start)
    return text[a:text.index(end, a)].strip("\n")


class ChatStub:
    def __init__(self) -> None:
        self.plan: list[str] = []
        self.questions: dict[str, list[str]] = {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner.lock:
                    owner.requests.append({"auth": self.headers.get("Authorization"),
                                           "path": self.path, **body})
                    fault = owner.plan.pop(0) if owner.plan else None
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner.answer(self, body, fault)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def content(self, prompt: str) -> str:
        if "<<<QUERY" in prompt:
            query = _between(prompt, "<<<QUERY\n", "\nQUERY>>>")
            passage = _between(prompt, "<<<PASSAGE\n", "\nPASSAGE>>>")
            return f"M: 2\nT: 2\n##final score: {expected_grade(query, passage)}"
        passage = _between(prompt, "<<<PASSAGE\n", "\nPASSAGE>>>")
        default = [f"what is {' '.join(passage.split()[:3])}?"]
        return json.dumps({"questions": self.questions.get(passage, default)})

    def answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], fault: str | None) -> None:
        if fault == "429":
            return send(h, 429, {"error": "rate"}, {"Retry-After": "0.2"})
        if fault == "500":
            return send(h, 500, {"error": "boom"})
        if fault == "bad-json":
            return send(h, 200, raw=b"{not json")
        if fault == "no-choices":
            return send(h, 200, {"choices": []})
        if fault == "slow":
            h.send_response(200)
            h.send_header("Content-Length", "100")
            h.end_headers()
            time.sleep(3)
            return None
        text = "Relevant, I would say." if fault == "nonsense" else \
            self.content(body["messages"][-1]["content"])
        return send(h, 200, {"choices": [{"message": {"role": "assistant", "content": text}}],
                             "usage": {"prompt_tokens": 100, "completion_tokens": 7}})


def send(h: BaseHTTPRequestHandler, status: int, payload: Any = None,
         headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
    data = raw if raw is not None else json.dumps(payload).encode()
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
