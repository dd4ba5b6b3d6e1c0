"""The judging app in headless Chromium (Debian's package, driven by Playwright): judge with
the keyboard, select evidence, reload and find everything kept, hostile text stays text."""

from __future__ import annotations

import os
import shutil

import pytest

from searchbench.judging.labels import Quote
from searchbench.judging.store import JudgmentStore

from ._server import DOCS, make_evalset, start

pytestmark = pytest.mark.slow

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage"]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        message = "Debian's chromium is not installed (make browser)"
        if os.environ.get("SEARCHBENCH_TEST_DATA") or os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("judging-browser")
    folder, pool = make_evalset(root)
    server = start(["judge", "serve", str(folder), "--pool", str(pool), "--annotator", "alice",
                    "--annotator", "bob"])
    yield folder, server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        yield b
        b.close()


SELECT = """([needle]) => {
  const text = document.getElementById('doc-text');
  for (const el of text.children) {
    const i = el.textContent.indexOf(needle);
    if (i >= 0) {
      const range = document.createRange();
      range.setStart(el.firstChild, i);
      range.setEnd(el.firstChild, i + needle.length);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      return true;
    }
  }
  return false;
}"""


def test_judge_with_the_keyboard_select_evidence_and_reload(app, browser, tmp_path) -> None:
    folder, server = app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (problems.append("dialog: " + d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(server.url("alice"))
    page.wait_for_url("**/judge?i=0")
    assert "token" not in page.url                      # the fragment is gone
    assert page.inner_text("#query-text") == "where do cats sleep"
    assert page.locator("#doc-text mark").all_inner_texts()[:2] == ["cat", "Cats"]

    # evidence: select a passage (after a \r\n line break) and press e; type a note
    assert page.evaluate(SELECT, ["warm places"])
    page.keyboard.press("e")
    assert "warm places" in page.inner_text("#evidence")
    page.click("#note")
    page.keyboard.type("sleeps in sun 0123 jks")       # shortcuts are off while typing
    assert page.url.endswith("/judge?i=0")
    page.click("#grade-2")
    page.wait_for_url("**/judge?i=1")

    # the hostile document renders as text; nothing ran
    text = page.inner_text("#doc-text")
    assert "<script>document.title='pwned'</script>" in text
    assert "<img src=x onerror=alert(1)>" in text
    assert page.locator("#doc-text script, #doc-text img").count() == 0
    assert page.inner_text("#doc-title") == "Evil <b>title</b>"
    assert "pwned" not in page.title()
    page.keyboard.press("0")
    page.wait_for_url("**/judge?i=2")
    page.keyboard.press("s")                            # skip d3 ...
    page.wait_for_url("**/judge?i=3")
    page.keyboard.press("k")                            # back without judging
    page.wait_for_url("**/judge?i=2")
    assert page.inner_text("#current-label") == "Your label: skipped"
    with page.expect_navigation():
        page.keyboard.press("u")                        # ... undo the skip
    assert page.url.endswith("/judge?i=2")
    assert page.inner_text("#current-label") == "Not judged yet"
    page.keyboard.press("1")
    page.wait_for_url("**/judge?i=3")

    page.goto(server.base + "/judge?i=0")                # a reload: everything kept
    assert page.inner_text("#current-label") == "Your label: 2"
    assert page.input_value("#note") == "sleeps in sun 0123 jks"
    assert "warm places" in page.inner_text("#evidence")
    assert "".join(page.locator("#doc-text .ev").all_inner_texts()) == "warm places"
    assert page.inner_text("#progress-text") == "3 judged, 0 skipped of 6"
    page.screenshot(path=str(tmp_path / "judging-app.png"))
    if target := os.environ.get("SEARCHBENCH_DOCS_SCREENSHOT"):
        shutil.copy(tmp_path / "judging-app.png", target)
    assert problems == []
    context.close()

    d1 = next(d["text"] for d in DOCS if d["id"] == "d1")
    start_ = d1.index("warm places")
    with JudgmentStore(folder) as store:
        labels = {(j.query_id, j.doc_id): j for j in store.judgments(annotator="alice")}
        history = store.history()
    assert {k: j.grade for k, j in labels.items()} == {
        ("q1", "d1"): 2, ("q1", "d2"): 0, ("q1", "d3"): 1}
    assert labels[("q1", "d1")].evidence == (Quote(start_, start_ + 11, "warm places"),)
    assert labels[("q1", "d1")].note == "sleeps in sun 0123 jks"
    assert [r["judgment"].grade for r in history if r["undone_at"]] == [None]


def test_another_annotator_sees_nothing_of_alices_labels(app, browser) -> None:
    _, server = app
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url("bob"))
    page.wait_for_url("**/judge?i=0")
    assert page.inner_text("#current-label") == "Not judged yet"
    assert "bob" in page.inner_text("header")
    assert "alice" not in page.content()
    context.close()


def test_explore_judges_a_hole_inline(browser, tmp_path) -> None:
    folder, _ = make_evalset(tmp_path)
    (folder / "qrels.tsv").write_text("q1\t0\td1\t2\n")
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d1 1 2.0 A\nq1 Q0 d2 2 1.0 A\n")
    server = start(["explore", str(folder), "--runs", str(run), str(run), "--annotator", "eve"])
    try:
        context = browser.new_context()
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(server.url("eve"))
        page.wait_for_url("**/explore")
        page.click("a[href='/explore/query?q=q1']")
        page.wait_for_url("**/explore/query?q=q1")
        assert page.locator(".hit.hole").count() == 2          # d2 in both lists
        with page.expect_navigation():
            page.locator("button.inline-grade[data-doc-id='d2'][data-grade='1']").first.click()
        assert page.locator(".hit.hole").count() == 0
        evil = page.locator(".hit[data-doc-id='d2'] .doc-text").first.text_content()
        assert evil.startswith("<script>document.title='pwned'</script>")
        assert "pwned" not in page.title()
        assert problems == []
        context.close()
    finally:
        server.stop()
    with JudgmentStore(folder) as store:
        (label,) = store.judgments()
    assert (label.annotator, label.doc_id, label.grade, label.source) == ("eve", "d2", 1,
                                                                         "explore")
