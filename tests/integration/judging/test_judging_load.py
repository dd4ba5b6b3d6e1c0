"""20 annotators post 5,000 judgments concurrently to a real server on 127.0.0.1; the server
is killed with SIGKILL mid-stream and restarted (on a new free port). Clients retry a request
that got no answer with the same client key. Afterwards every acknowledged judgment is in
the store exactly once (and, since every client finishes, all 5,000 are)."""

from __future__ import annotations

import random
import signal
import threading
import time
from collections import Counter

import httpx
import pytest

from searchbench.judging.store import JudgmentStore

from ._server import make_evalset, start

pytestmark = pytest.mark.slow

ANNOTATORS = 20
TOTAL = 5000
KILL_AFTER = 2000          # acknowledged judgments before kill -9
DEADLINE = 120.0           # seconds: the test stops by itself whatever happens


class Clients:
    """The annotators' threads and what the server acknowledged to them."""

    def __init__(self, base: str, tokens: dict[str, str], docs: list[str]) -> None:
        self.base, self.tokens, self.docs = base, tokens, docs
        self.acked: dict[str, int] = {}
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.deadline = time.monotonic() + DEADLINE

    def run(self, name: str, n: int, seed: int) -> None:
        rng = random.Random(seed)
        headers = {"Authorization": f"Bearer {self.tokens[name]}"}
        with httpx.Client(headers=headers, timeout=10) as client:
            for i in range(n):
                key = f"{name}-{i}"
                body = {"query_id": "q2", "doc_id": rng.choice(self.docs),
                        "grade": rng.randint(0, 3), "client_key": key}
                self.post_until_acked(client, body)

    def post_until_acked(self, client: httpx.Client, body: dict) -> None:
        while time.monotonic() < self.deadline:
            try:
                r = client.post(f"{self.base}/api/judgment", json=body)
            except httpx.TransportError:      # the server is down: retry, same key
                time.sleep(0.05)
                continue
            if r.status_code != 200:
                self.errors.append(f"{r.status_code} {r.text[:200]}")
                return
            with self.lock:
                self.acked[body["client_key"]] = r.json()["id"]
            return
        self.errors.append("deadline reached")


def test_every_acknowledged_judgment_survives_kill_9_exactly_once(tmp_path) -> None:
    folder, pool = make_evalset(tmp_path, n_extra_docs=40)
    names = [f"a{i:02d}" for i in range(ANNOTATORS)]
    args = ["judge", "serve", str(folder), "--pool", str(pool)]
    for name in names:
        args += ["--annotator", name]
    server = start(args)
    clients = Clients(server.base, server.tokens, [f"x{i}" for i in range(40)])
    threads = [threading.Thread(target=clients.run, args=(n, TOTAL // ANNOTATORS, i))
               for i, n in enumerate(names)]
    restarted = None
    try:
        for t in threads:
            t.start()
        while len(clients.acked) < KILL_AFTER and time.monotonic() < clients.deadline:
            time.sleep(0.01)
        server.stop(signal.SIGKILL)                          # mid-stream
        acked_at_kill = len(clients.acked)
        restarted = start(args)                              # same store, same tokens
        clients.base = restarted.base                        # on a new free port
        assert restarted.tokens == {}                         # known annotators keep theirs
        assert set(restarted.links) == set(names)             # (and get a one-time link)
        for t in threads:
            t.join(timeout=max(1.0, clients.deadline - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "clients did not finish in time"
    finally:
        clients.deadline = 0.0
        server.stop(signal.SIGKILL)
        if restarted is not None:
            restarted.stop()
    assert clients.errors == []
    assert KILL_AFTER <= acked_at_kill < TOTAL
    with JudgmentStore(folder) as store:
        rows = store.history()
    keys = Counter(r["client_key"] for r in rows)
    assert [k for k, n in keys.items() if n > 1] == []       # nothing stored twice
    assert set(clients.acked) <= set(keys)                   # nothing acknowledged lost
    assert len(clients.acked) == TOTAL == len(rows)
    ids = {r["client_key"]: r["id"] for r in rows}
    assert all(ids[k] == jid for k, jid in clients.acked.items())
