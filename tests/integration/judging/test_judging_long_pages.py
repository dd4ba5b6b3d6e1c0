"""Judging on long pages, in headless Chromium (Debian's package, driven by Playwright)
against a real server: the grade panel stays in view while a 20–300 KB document scrolls,
``n`` / ``N`` scroll to the next / previous highlighted query term, the last item leads to
a done page saying what to run next, a mistyped path gets the app's own 404 page."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ._server import start
from .test_judging_browser import FLAGS, chromium

pytestmark = pytest.mark.slow

FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed eiusmod tempor. "
QUERY = "kernel scheduler latency"


def _long_text(kilobytes: int, n_terms: int) -> str:
    """About ``kilobytes`` of filler with one query term in each of ``n_terms`` paragraphs,
    the first a fifth of the way down (nothing to see at the top)."""
    size = kilobytes * 1024
    head = FILLER * (size // 5 // len(FILLER))
    block = FILLER * ((size - len(head)) // n_terms // len(FILLER))
    terms = ("kernel", "scheduler", "latency")
    return head + "".join(f"\n\nParagraph {i}: the {terms[i % 3]} matters here.\n\n{block}"
                          for i in range(n_terms))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("long pages")  # a space: the export command quotes it
    folder = root / "set"
    folder.mkdir()
    docs = [{"id": "long300", "title": "A 300 KB page", "text": _long_text(300, 12)},
            {"id": "long20", "title": "A 20 KB page", "text": _long_text(20, 3)}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text(json.dumps({"id": "q1", "text": QUERY}) + "\n")
    pool = root / "pool.jsonl"
    pool.write_text("".join(json.dumps({"query_id": "q1", "doc_id": d["id"], "n_runs": 1,
                                        "best_rank": i + 1}) + "\n"
                            for i, d in enumerate(docs)))
    server = start(["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice"])
    yield folder, server
    server.stop()


@pytest.fixture
def page(app, request):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        yield page
        browser.close()
        if request.node.name != "test_judging_long_pages_mistyped_path_gets_the_apps_own_404":
            assert problems == []


def _sign_in(page, server) -> None:
    page.goto(server.url("alice"))
    page.wait_for_url(lambda url: "/login" not in url)


def _in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    view = page.viewport_size
    assert box is not None and view is not None
    return (box["y"] >= 0 and box["y"] + box["height"] <= view["height"]
            and box["x"] >= 0 and box["x"] + box["width"] <= view["width"])


def test_judging_long_pages_grade_panel_stays_in_view(app, page) -> None:
    _, server = app
    _sign_in(page, server)
    page.goto(server.base + "/judge?i=0")
    assert len(page.inner_text("#doc-text")) > 250_000
    for where in ("document.body.scrollHeight / 2", "document.body.scrollHeight"):
        page.evaluate(f"window.scrollTo(0, {where})")
        assert page.evaluate("window.scrollY") > 10_000
        assert _in_viewport(page, "aside.panel")
        for button in ("#grade-0", "#grade-3", "#skip", "#next-match"):
            assert _in_viewport(page, button), button
    assert page.evaluate("window.scrollY + window.innerHeight") >= page.evaluate(
        "document.body.scrollHeight") - 2  # really at the bottom


def test_judging_long_pages_match_keys_scroll_to_highlights(app, page) -> None:
    _, server = app
    _sign_in(page, server)
    page.goto(server.base + "/judge?i=0")
    marks = page.locator("#doc-text mark")
    n_marks = marks.count()
    assert n_marks >= 12
    assert page.inner_text("#match-status") == f"{n_marks} highlighted query terms"
    assert page.evaluate("window.scrollY") == 0
    offsets = []
    for k in range(3):
        page.keyboard.press("n")
        current = page.locator("#doc-text mark.current-match")
        assert current.count() == 1
        assert _in_viewport(page, "#doc-text mark.current-match")
        offsets.append((page.evaluate("window.scrollY"), int(current.get_attribute("data-o"))))
        assert page.inner_text("#match-status") == f"match {k + 1} of {n_marks}"
    assert offsets[0][0] > 10_000  # the first match is a fifth of 300 KB down
    assert [o for _, o in offsets] == sorted(o for _, o in offsets)
    assert offsets[0][1] == int(marks.first.get_attribute("data-o"))
    assert offsets[2][0] > offsets[1][0] > offsets[0][0]
    page.keyboard.press("N")  # back to the second
    assert page.inner_text("#match-status") == f"match 2 of {n_marks}"
    assert int(page.locator("mark.current-match").get_attribute("data-o")) == offsets[1][1]
    assert page.evaluate("window.scrollY") < offsets[2][0]
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # read on by hand ...
    page.keyboard.press("N")  # ... N: the last match above where the reader is
    assert page.inner_text("#match-status") == f"match {n_marks} of {n_marks}"
    assert _in_viewport(page, "mark.current-match")
    page.click("#next-match")  # the button does the same; past the last: the first again
    assert page.inner_text("#match-status") == f"match 1 of {n_marks}"


def test_judging_long_pages_after_the_last_item_a_done_page(app, page) -> None:
    folder, server = app
    _sign_in(page, server)
    page.goto(server.base + "/judge?i=0")
    page.keyboard.press("2")
    page.wait_for_url("**/judge?i=1")
    page.keyboard.press("1")  # the last item
    page.wait_for_url("**/done")
    text = page.inner_text("#done")
    assert "All 2 items done" in text
    export = f"searchbench judge export {shlex.quote(str(Path(folder).resolve()))}"
    assert page.inner_text("#export-command") == export
    assert "'" in export  # the temporary path has a space: quoted for the shell
    page.goto(server.base + "/")  # coming back: the done page, not the last item again
    page.wait_for_url("**/done")
    page.goto(server.base + "/judge?i=1")
    page.keyboard.press("j")  # next from the last item: done
    page.wait_for_url("**/done")


def test_judging_long_pages_mistyped_path_gets_the_apps_own_404(app, page) -> None:
    _, server = app
    _sign_in(page, server)
    for path in ("/judgee?i=0", "/jugde", "/judge/0", "/static/missing.css", "/done/x"):
        response = page.goto(server.base + path)
        assert response is not None and response.status == 404, path
        assert page.locator("#message").count() == 1, path
        assert "No such page here" in page.inner_text("#message")
        assert page.locator("a[href='/']").count() == 1  # a way back
        styled = page.evaluate("getComputedStyle(document.querySelector('.card')).borderRadius")
        assert styled == "8px"  # the app's own stylesheet, not a bare "Not Found"
    response = page.goto(server.base + "/judge?i=" + "9" * 5000)
    assert response is not None and response.status == 400
    assert "Bad request" in page.inner_text("#message")
