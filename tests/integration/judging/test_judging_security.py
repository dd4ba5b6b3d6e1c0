"""Security of the judging app over real HTTP to a real server on 127.0.0.1: authentication,
cross-site requests, annotators kept apart, path-like ids, Host header, headers."""

from __future__ import annotations

import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from searchbench.judging.store import JudgmentStore

from ._server import make_evalset, start


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("judging-security")
    folder, pool = make_evalset(root)
    server = start(["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice",
                    "--annotator", "bob"])
    yield folder, server
    server.stop()


def bearer(server, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[name]}"}


def judgment(grade: int = 2, doc: str = "d1", query: str = "q1", **kw) -> dict:
    return {"query_id": query, "doc_id": doc, "grade": grade, **kw}


def signed_in(server, name: str) -> tuple[httpx.Client, str]:
    """A browser-like client: signed in through /session, with the page's CSRF token."""
    client = httpx.Client(base_url=server.base, follow_redirects=False)
    r = client.post("/session", json={"token": server.tokens[name]},
                    headers={"Origin": server.base})
    assert r.status_code == 200, r.text
    page = client.get("/judge?i=0")
    csrf = page.text.split('name="csrf-token" content="')[1].split('"')[0]
    assert len(csrf) > 20
    return client, csrf


def test_unauthenticated_requests_are_refused(app) -> None:
    folder, server = app
    with httpx.Client(base_url=server.base) as c:
        page = c.get("/judge?i=0", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/login"
        assert "where do cats sleep" not in page.text
        assert c.get("/api/judgments").status_code == 401
        assert c.post("/api/judgment", json=judgment()).status_code == 401
        assert c.post("/api/judgment", json=judgment(),
                      headers={"Authorization": "Bearer not-a-token"}).status_code == 401
        assert c.post("/session", json={"token": "guess"},
                      headers={"Origin": server.base}).status_code == 401
        assert c.get("/api/judgments", headers={"Cookie": "searchbench_session=forged"}
                     ).status_code == 401
    with JudgmentStore(folder) as store:
        assert store.count() == 0


def test_forged_cross_site_posts_are_refused(app) -> None:
    folder, server = app
    client, csrf = signed_in(server, "alice")
    with closing(client):
        good = {"Origin": server.base, "X-CSRF-Token": csrf}
        forged = [
            {"Origin": "http://evil.example", "X-CSRF-Token": csrf},   # another site
            {"Origin": server.base},                                    # no CSRF token
            {"Origin": server.base, "X-CSRF-Token": csrf[:-1] + "x"},  # a wrong one
            {"X-CSRF-Token": csrf},                                     # no Origin
            {**good, "Sec-Fetch-Site": "cross-site"},
        ]
        for headers in forged:
            r = client.post("/api/judgment", json=judgment(3), headers=headers)
            assert r.status_code == 403, headers
        # an HTML form on another site can only send these content types: refused too
        r = client.post("/api/judgment", data={"query_id": "q1", "doc_id": "d1", "grade": "3"},
                        headers={"Origin": "null"})
        assert r.status_code == 403
        assert client.post("/api/undo", headers={"Origin": "http://evil.example",
                                                 "X-CSRF-Token": csrf}).status_code == 403
        r = client.post("/session", json={"token": server.tokens["alice"]},
                        headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        with JudgmentStore(folder) as store:
            assert store.judgments(annotator="alice") == []
        ok = client.post("/api/judgment", json=judgment(1, doc="d2"), headers=good)
        assert ok.status_code == 200, ok.text


def test_another_annotator_cannot_read_or_change_your_labels(app) -> None:
    folder, server = app
    with httpx.Client(base_url=server.base) as c:
        r = c.post("/api/judgment", json=judgment(3, doc="d3", annotator="bob"),
                   headers=bearer(server, "alice"))
        assert r.status_code == 200                       # "annotator" in a body is ignored
        mine = c.get("/api/judgments", headers=bearer(server, "bob")).json()
        assert all(j["doc_id"] != "d3" for j in mine)      # bob does not see alice's label
        page = c.get("/judge?i=2", headers=bearer(server, "bob")).text
        assert "Not judged yet" in page and "alice" not in page
        assert c.post("/api/undo", headers=bearer(server, "bob")).json()["undone"] is None
    alice, alice_csrf = signed_in(server, "alice")
    bob, _ = signed_in(server, "bob")
    with closing(alice), closing(bob):
        r = bob.post("/api/judgment", json=judgment(0, doc="d3"),
                     headers={"Origin": server.base, "X-CSRF-Token": alice_csrf})
        assert r.status_code == 403                        # alice's CSRF token is not bob's
    with JudgmentStore(folder) as store:
        (label,) = [j for j in store.judgments() if j.doc_id == "d3"]
    assert (label.annotator, label.grade) == ("alice", 3)


@pytest.mark.parametrize("path", [
    "/static/..%2F..%2F..%2Fetc%2Fpasswd", "/static/../app.py", "/static/%2e%2e/app.py",
    "/static/app.py", "/judge?i=../../etc/passwd", "/judge?i=-1", "/judge?i=99",
    "/../../etc/passwd", "/judge/../../../../etc/passwd",
])
def test_path_like_requests_are_harmless(app, path: str) -> None:
    _, server = app
    with httpx.Client(base_url=server.base) as c:
        r = c.get(path, headers=bearer(server, "alice"))
    assert r.status_code in (404, 400), (path, r.status_code)
    assert "root:" not in r.text and "import" not in r.text


def test_path_like_document_ids_are_only_looked_up(app, tmp_path: Path) -> None:
    folder, server = app
    with httpx.Client(base_url=server.base) as c:
        ok = c.post("/api/judgment", json=judgment(0, doc="../../etc/passwd", query="q2"),
                    headers=bearer(server, "alice"))
        assert ok.status_code == 200                       # a real id of this set: a label
        for bad in ("../../../etc/shadow", "/etc/passwd", "d1\x00", "q1/../d1"):
            r = c.post("/api/judgment", json=judgment(0, doc=bad, query="q2"),
                       headers=bearer(server, "alice"))
            assert r.status_code == 400 and "unknown query/document" in r.json()["error"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "corpus.jsonl", "judging.sqlite", "judging.sqlite-shm", "judging.sqlite-wal",
        "queries.jsonl"]


def test_evidence_must_be_the_documents_text_at_its_offsets(app) -> None:
    _, server = app
    with httpx.Client(base_url=server.base) as c:
        for quote in ({"start": 4, "end": 7, "text": "dog"}, {"start": 4, "end": 99,
                      "text": "cat"}, {"start": -1, "end": 2, "text": "Th"}):
            r = c.post("/api/judgment", json=judgment(2, evidence=[quote]),
                       headers=bearer(server, "alice"))
            assert r.status_code == 400, quote
        r = c.post("/api/judgment", json=judgment(2, evidence=[
            {"start": 4, "end": 7, "text": "cat"}]), headers=bearer(server, "alice"))
        assert r.status_code == 200


def test_every_response_carries_the_security_headers(app) -> None:
    _, server = app
    with httpx.Client(base_url=server.base) as c:
        for r in (c.get("/login"), c.get("/static/judge.js"), c.get("/judge?i=0"),
                  c.get("/nowhere"), c.get("/judge?i=0", headers=bearer(server, "alice"))):
            csp = r.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "default-src 'none'" in csp
            assert "unsafe-inline" not in csp
            assert r.headers["referrer-policy"] == "no-referrer"
            assert r.headers["x-content-type-options"] == "nosniff"
        page = c.get("/judge?i=0", headers=bearer(server, "alice")).text
    assert "<script>" not in page and "http" not in page.replace(server.base, "")


def test_a_foreign_host_header_is_refused(app) -> None:
    _, server = app
    with httpx.Client(base_url=server.base) as c:
        r = c.get("/login", headers={"Host": "evil.example"})
    assert r.status_code == 400


def test_a_non_loopback_host_needs_allow_remote(app) -> None:
    folder, _ = app
    done = subprocess.run([sys.executable, "-m", "searchbench", "judge", "serve", str(folder),
                           "--pool", str(folder.parent / "pool.jsonl"), "--host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("error: --host 0.0.0.0 is not a loopback address")
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
