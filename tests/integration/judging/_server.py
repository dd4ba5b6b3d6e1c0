"""A real judging app in a subprocess on 127.0.0.1 (a free port), stopped by its pid."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

DOCS = [
    {"id": "d1", "title": "Cats at home",
     "text": "The cat sat on the mat.\r\nCats like warm places and sleep a lot in the sun."},
    {"id": "d2", "title": "Evil <b>title</b>",
     "text": "<script>document.title='pwned'</script> and <img src=x onerror=alert(1)> cat food"},
    {"id": "d3", "title": "", "text": "Dogs bark at night. A dog is a loyal animal."},
    {"id": "d4", "title": "Birds", "text": "Birds sing in the morning.\nSome birds migrate."},
    {"id": "../../etc/passwd", "title": "path-like id", "text": "nothing to see here"},
]
QUERIES = [{"id": "q1", "text": "where do cats sleep"}, {"id": "q2", "text": "dog behaviour"}]
POOL = [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d3"), ("q2", "d4"),
        ("q2", "../../etc/passwd")]


def make_evalset(root: Path, n_extra_docs: int = 0) -> tuple[Path, Path]:
    """A small native set (with hostile texts) and its pool; ``n_extra_docs`` more
    documents, all in q2's pool (for the load test)."""
    folder = root / "set"
    folder.mkdir()
    docs = DOCS + [{"id": f"x{i}", "text": f"extra document {i}"} for i in range(n_extra_docs)]
    pool = POOL + [("q2", f"x{i}") for i in range(n_extra_docs)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    pool_path = root / "pool.jsonl"
    pool_path.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "n_runs": 1,
                                             "best_rank": i + 1}) + "\n"
                                 for i, (q, d) in enumerate(pool)))
    return folder, pool_path


@dataclass
class Server:
    """A running app: its process, base URL and the tokens it printed."""

    proc: subprocess.Popen
    base: str
    tokens: dict[str, str] = field(default_factory=dict)  # new tokens printed at start
    links: dict[str, str] = field(default_factory=dict)  # one-time links of known annotators
    output: list[str] = field(default_factory=list)
    pump: threading.Thread | None = None

    def url(self, name: str) -> str:
        return f"{self.base}/login#token={self.tokens[name]}"

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.pump is not None:
            self.pump.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start(args: list[str], timeout: float = 30) -> Server:
    """``python -m searchbench ARGS`` (serve or explore), waiting for its URL lines; a
    thread keeps reading its output (so the pipe never fills)."""
    proc = subprocess.Popen([sys.executable, "-m", "searchbench", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=os.environ.copy())
    server = Server(proc, "")
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    server.pump = threading.Thread(target=pump, daemon=True)
    server.pump.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        server.output.append(line)
        if m := re.match(r"\s+(\S+)\s+(https?://[^/]+)/login#token=(\S+)", line):
            found = server.tokens if "(new token)" in line else server.links
            found[m.group(1)] = m.group(3)
        if m := re.search(r"Serving at (https?://\S+?)/ until", line):
            server.base = m.group(1)
            return server
    server.stop(signal.SIGKILL)
    raise AssertionError("the app did not start:\n" + "".join(server.output))
