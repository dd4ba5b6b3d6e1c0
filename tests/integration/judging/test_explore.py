"""``searchbench explore``: per-query differences (hand-computed nDCG@10, linear gains as in
trec_eval), biggest loss first, holes judged inline into the same store."""

from __future__ import annotations

import re
from math import log2

import httpx
import pytest

from searchbench.judging.store import JudgmentStore

from ._server import make_evalset, start


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore")
    folder, _ = make_evalset(root)
    (folder / "qrels.tsv").write_text("q1\t0\td1\t2\nq1\t0\td3\t0\nq2\t0\td3\t2\n")
    (root / "a.trec").write_text("q1 Q0 d1 1 3.0 A\nq1 Q0 d2 2 2.0 A\n"
                                 "q2 Q0 d3 1 1.0 A\nq2 Q0 d4 2 0.5 A\n")
    (root / "b.trec").write_text("q1 Q0 d2 1 3.0 B\nq1 Q0 d3 2 2.0 B\nq1 Q0 d1 3 1.0 B\n"
                                 "q2 Q0 d4 1 1.0 B\nq2 Q0 d3 2 0.5 B\nq2 Q0 nowhere 3 0.1 B\n")
    server = start(["explore", str(folder), "--runs", str(root / "a.trec"),
                    str(root / "b.trec"), "-m", "nDCG@10", "--annotator", "eve"])
    yield folder, server
    server.stop()


def table(html: str) -> list[tuple[str, str]]:
    """(query id, Δ cell) in page order."""
    return re.findall(r'q=(\w+)">\w+</a></td>\s*<td>[^<]*</td>\s*'
                      r'<td class="num">[^<]*</td>\s*<td class="num">[^<]*</td>\s*'
                      r'<td class="num[^"]*">([^<]+)</td>', html)


def test_queries_sorted_by_biggest_loss_and_holes_judged_inline(app) -> None:
    folder, server = app
    auth = {"Authorization": f"Bearer {server.tokens['eve']}"}
    with httpx.Client(base_url=server.base, headers=auth) as c:
        page = c.get("/explore").text
        # q1: A = d1(2) first = ideal -> 1; B = d2, d3, d1(2 at rank 3) -> (2/log2 4)/2 = 0.5
        # q2: A = d3(2) first -> 1; B = d4, d3(2 at rank 2) -> (2/log2 3)/2
        assert table(page) == [("q1", f"{0.5 - 1:+.4f}"), ("q2", f"{1 / log2(3) - 1:+.4f}")]
        assert "a.trec" in page and "b.trec" in page        # not blind: systems named
        detail = c.get("/explore/query", params={"q": "q1"}).text
        assert detail.count('data-doc-id="d2" data-grade="3"') == 2   # a hole in both lists
        assert "not in the corpus" in c.get("/explore/query", params={"q": "q2"}).text
        r = c.post("/api/judgment", json={"query_id": "q1", "doc_id": "d2", "grade": 3,
                                          "source": "explore"})
        assert r.status_code == 200
        # q1 now: A = d1(2), d2(3): 2 + 3/log2 3; B = d2(3), d3(0), d1(2): 3 + 2/log2 4;
        # ideal 3 + 2/log2 3
        ideal = 3 + 2 / log2(3)
        delta = (3 + 2 / log2(4)) / ideal - (2 + 3 / log2(3)) / ideal
        assert table(c.get("/explore").text) == [("q2", f"{1 / log2(3) - 1:+.4f}"),
                                                 ("q1", f"{delta:+.4f}")]
        bad = c.post("/api/judgment", json={"query_id": "q1", "doc_id": "d4", "grade": 1,
                                            "source": "explore"})
        assert bad.status_code == 400                       # not shown for q1: refused
        assert c.get("/explore/query", params={"q": "../etc"}).status_code == 404
    with JudgmentStore(folder) as store:
        (label,) = store.judgments()
    assert (label.annotator, label.doc_id, label.grade, label.source) == ("eve", "d2", 3,
                                                                         "explore")


def test_an_unknown_measure_is_one_error_line(app, tmp_path) -> None:
    import subprocess
    import sys

    folder, _ = app
    run = folder.parent / "a.trec"
    done = subprocess.run([sys.executable, "-m", "searchbench", "explore", str(folder),
                           "--runs", str(run), str(run), "-m", "nDCG@ten"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("error: ")
    assert len(done.stderr.strip().splitlines()) == 1
