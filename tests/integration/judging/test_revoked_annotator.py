"""A revoked annotator keeps no access: ``judge serve`` restarted without a name ends that
name's token, browser sessions and sign-in links (real server, real HTTP); listing the
name again gives a new token, never the old one back; the people another running app on
the same store serves keep theirs; a restarted app prints a fresh one-time sign-in link
for a known annotator (``judge serve`` and ``explore`` alike)."""

from __future__ import annotations

import re

import httpx

from searchbench.judging.store import JudgmentStore

from ._server import make_evalset, start


def _session(server, secret: str) -> tuple[httpx.Client, str]:
    """A browser-like client signed in with ``secret``, and its page's CSRF token."""
    client = httpx.Client(base_url=server.base, follow_redirects=False)
    r = client.post("/session", json={"token": secret}, headers={"Origin": server.base})
    assert r.status_code == 200, r.text
    page = client.get("/judge?i=0")
    assert page.status_code == 200
    return client, page.text.split('name="csrf-token" content="')[1].split('"')[0]


def _post(client: httpx.Client, base: str, csrf: str, grade: int) -> httpx.Response:
    return client.post("/api/judgment", json={"query_id": "q1", "doc_id": "d1", "grade": grade},
                       headers={"Origin": base, "X-CSRF-Token": csrf})


def test_revoked_annotator_keeps_no_access_after_a_restart(tmp_path) -> None:
    folder, pool = make_evalset(tmp_path)
    serve = ["judge", "serve", str(folder), "--pool", str(pool)]
    first = start([*serve, "--annotator", "alice", "--annotator", "mallory", "--port", "0"])
    try:
        mallory, csrf = _session(first, first.tokens["mallory"])
        assert _post(mallory, first.base, csrf, 3).status_code == 200
        cookie = dict(mallory.cookies)
        mallory.close()
    finally:
        first.stop()

    again = start([*serve, "--annotator", "alice"])
    try:
        text = "".join(again.output)
        assert "Revoked (not listed with --annotator): mallory" in text
        with httpx.Client(base_url=again.base, follow_redirects=False) as c:
            origin = {"Origin": again.base}
            assert c.post("/session", json={"token": first.tokens["mallory"]},
                          headers=origin).status_code == 401
            bearer = {"Authorization": f"Bearer {first.tokens['mallory']}"}
            assert c.post("/api/judgment", json={"query_id": "q1", "doc_id": "d1",
                                                 "grade": 0}, headers=bearer).status_code == 401
            assert c.get("/api/judgments", headers=bearer).status_code == 401
        # her old browser session (the cookie of the first app, sent to the same port name)
        port_cookie = {k.rsplit("_", 1)[0] + "_" + again.base.rsplit(":", 1)[1]: v
                       for k, v in cookie.items()}
        with httpx.Client(base_url=again.base, cookies=port_cookie,
                          follow_redirects=False) as c:
            assert c.get("/judge?i=0").status_code == 303
            assert c.post("/api/judgment", json={"query_id": "q1", "doc_id": "d1", "grade": 0},
                          headers={"Origin": again.base}).status_code == 401
        # alice: her first token still works, and the fresh link works once
        (line,) = [x for x in again.output if x.strip().startswith("alice")]
        assert "fresh sign-in link, good once" in line
        link = re.search(r"#token=(\S+)", line).group(1)
        assert link != first.tokens["alice"]
        _session(again, link)[0].close()
        with httpx.Client(base_url=again.base) as c:
            assert c.post("/session", json={"token": link},
                          headers={"Origin": again.base}).status_code == 401  # used up
        alice, csrf = _session(again, first.tokens["alice"])
        assert _post(alice, again.base, csrf, 2).status_code == 200
        alice.close()
    finally:
        again.stop()
    with JudgmentStore(folder) as store:  # her labels are kept
        assert [(j.annotator, j.grade) for j in store.judgments()] == [("mallory", 3),
                                                                        ("alice", 2)]
        assert not store.has_token("mallory") and store.has_token("alice")
        assert store._db.execute("SELECT COUNT(*) FROM sessions WHERE annotator='mallory'"
                                 ).fetchone()[0] == 0  # her sessions are gone from the store

    back = start([*serve, "--annotator", "alice", "--annotator", "mallory"])
    try:  # listed again: a new token; the old one stays dead
        assert back.tokens["mallory"] != first.tokens["mallory"]
        with httpx.Client(base_url=back.base) as c:
            assert c.post("/session", json={"token": first.tokens["mallory"]},
                          headers={"Origin": back.base}).status_code == 401
        _session(back, back.tokens["mallory"])[0].close()
    finally:
        back.stop()


def test_revoked_annotator_rule_spares_people_another_running_app_serves(tmp_path) -> None:
    folder, pool = make_evalset(tmp_path)
    judging = start(["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice"])
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d1 1 1.0 A\n")
    try:
        alice, csrf = _session(judging, judging.tokens["alice"])
        exploring = start(["explore", str(folder), "--runs", str(run), str(run),
                           "--annotator", "eve"])
        try:
            assert "Revoked" not in "".join(exploring.output)
            assert _post(alice, judging.base, csrf, 1).status_code == 200  # still signed in
            with httpx.Client(base_url=exploring.base) as c:  # but not let into explore
                assert c.post("/session", json={"token": judging.tokens["alice"]},
                              headers={"Origin": exploring.base}).status_code == 401
        finally:
            exploring.stop()
        alice.close()
    finally:
        judging.stop()
    again = start(["explore", str(folder), "--runs", str(run), str(run), "--annotator", "eve"])
    try:  # the judging app stopped: now alice is revoked, and explore prints eve's link
        text = "".join(again.output)
        assert "Revoked (not listed with --annotator): alice" in text
        (line,) = [x for x in again.output if x.strip().startswith("eve")]
        assert f"{again.base}/login#token=" in line and "fresh sign-in link" in line
        _session_explore = httpx.Client(base_url=again.base, follow_redirects=False)
        link = re.search(r"#token=(\S+)", line).group(1)
        assert _session_explore.post("/session", json={"token": link},
                                     headers={"Origin": again.base}).status_code == 200
        assert _session_explore.get("/explore").status_code == 200
        _session_explore.close()
    finally:
        again.stop()
