"""Load an HTML file in headless Chromium (Debian's ``chromium``) and report what it saw.

The page is loaded from an instrumented copy: a first script records uncaught errors,
failed resource loads and ``console.error``/``console.warn`` calls, and after the load
event writes them — with the id, height and heading of every ``<section>`` — into the
DOM, which ``--dump-dom`` prints. Chromium's own console log (``--enable-logging``) is
captured too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]
INSTALL = "apt-get update && apt-get install -y chromium"

_PROBE = """<script>
(function () {
  var seen = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    seen.push(t && t !== window ? 'resource failed: ' + (t.src || t.href || t.tagName)
                                : 'error: ' + e.message);
  }, true);
  ['error', 'warn'].forEach(function (k) {
    var orig = console[k];
    console[k] = function () { seen.push(k + ': ' + Array.from(arguments).join(' '));
                               orig.apply(console, arguments); };
  });
  window.addEventListener('load', function () {
    var sections = Array.from(document.querySelectorAll('section')).map(function (s) {
      var h = s.querySelector('h2');
      return {id: s.id, height: s.getBoundingClientRect().height,
              heading: h ? h.textContent : '', svgs: s.querySelectorAll('svg').length};
    });
    var handlers = Array.from(document.querySelectorAll('*')).filter(function (el) {
      return Array.from(el.attributes).some(function (a) { return /^on/i.test(a.name); });
    }).map(function (el) { return el.outerHTML.slice(0, 200); });
    var page = {title: document.title, text: document.body.textContent,
                scripts: document.scripts.length - 1, handlers: handlers,
                links: Array.from(document.querySelectorAll('[href],[src],[action]')).map(
                  function (el) { return el.getAttribute('href') || el.getAttribute('src') ||
                                         el.getAttribute('action'); }),
                labels: Array.from(document.querySelectorAll('[aria-label]')).map(
                  function (el) { return el.getAttribute('aria-label'); }),
                svgText: Array.from(document.querySelectorAll('svg text')).map(
                  function (el) { return el.textContent; })};
    var pre = document.createElement('pre');
    pre.id = '__sb_probe';
    pre.textContent = JSON.stringify({errors: seen, sections: sections, page: page});
    document.body.appendChild(pre);
  });
})();
</script>"""


def chromium_path() -> str:
    """Path of chromium; fails in CI (SEARCHBENCH_TEST_DATA set) when missing, else skips."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    message = f"headless Chromium is not installed (needed to render the report): {INSTALL}"
    if os.environ.get("SEARCHBENCH_TEST_DATA"):
        pytest.fail(message)
    pytest.skip(message)


def load_page(html: Path, timeout: float = 60) -> dict:
    """``{"errors": [...], "sections": [...], "page": {...}, "console": [...]}`` of ``html``
    in Chromium. ``page`` holds what a script injection would change: the title, the body
    text, the number of scripts besides the probe, elements with ``on*`` attributes, every
    href/src/action, the aria-labels and the text of the SVG plots."""
    text = html.read_text(encoding="utf-8")
    probed = text.replace("<head>", "<head>" + _PROBE, 1)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / html.name
        page.write_text(probed, encoding="utf-8")
        done = subprocess.run(
            [chromium_path(), *FLAGS, f"--user-data-dir={tmp}/profile", "--enable-logging=stderr",
             "--v=0", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False)
    match = re.search(r'<pre id="__sb_probe">(.*?)</pre>', done.stdout, re.S)
    assert match, f"chromium printed no probe (exit {done.returncode}): {done.stderr[-2000:]}"
    import html as html_mod

    result = json.loads(html_mod.unescape(match.group(1)))
    result["console"] = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    return result


def screenshot(html: Path, out: Path, width: int = 1200, height: int = 2400) -> None:
    """A PNG of the top of the page (for docs/)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([chromium_path(), *FLAGS, f"--user-data-dir={tmp}/profile",
                        "--hide-scrollbars", f"--window-size={width},{height}",
                        f"--screenshot={out}", html.resolve().as_uri()],
                       capture_output=True, timeout=60, check=True)


#: What a tick or axis label must never show: TeX that mathtext-off left as written, or an
#: HTML/XML entity escaped twice (``&amp;lt;`` shows as ``&lt;``).
TEXT_ARTEFACT = r"\$|\\mathdefault|\\times|\^\{|&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);"

_AXES = """([artefact, tolerance]) => {
  const bad = new RegExp(artefact);
  const out = {axes: 0, labels: 0, problems: [], seen: []};
  document.querySelectorAll('svg').forEach((svg, n) => {
    const plot = svg.getAttribute('aria-label') || ('plot ' + (n + 1));
    svg.querySelectorAll('text').forEach((t) => {  // titles, legends, annotations too
      if (!t.closest('g[id^="matplotlib.axis"]') && bad.test(t.textContent)) {
        out.problems.push(plot + ': text ' + JSON.stringify(t.textContent));
      }
    });
    svg.querySelectorAll('g[id^="matplotlib.axis"]').forEach((axis) => {
      out.axes += 1;
      const texts = Array.from(axis.querySelectorAll('text'))
        .filter((t) => t.textContent.trim() && t.getBBox().width > 0);
      const ticks = [];
      texts.forEach((t) => {
        out.seen.push(t.textContent);
        if (bad.test(t.textContent)) {
          out.problems.push(plot + ' / ' + axis.id + ': label ' + JSON.stringify(t.textContent));
        }
        if (t.closest('g[id^="xtick"], g[id^="ytick"]')) {
          ticks.push({text: t.textContent, box: t.getBoundingClientRect()});
        }
      });
      out.labels += ticks.length;
      for (let i = 0; i < ticks.length; i++) {
        for (let j = i + 1; j < ticks.length; j++) {
          const a = ticks[i].box, b = ticks[j].box;
          if (a.left < b.right - tolerance && b.left < a.right - tolerance &&
              a.top < b.bottom - tolerance && b.top < a.bottom - tolerance) {
            out.problems.push(plot + ' / ' + axis.id + ': tick labels ' +
              JSON.stringify(ticks[i].text) + ' and ' + JSON.stringify(ticks[j].text) +
              ' overlap');
          }
        }
      }
    });
  });
  return out;
}"""


def plot_axes(html: Path, width: int = 1280, tolerance: float = 0.5) -> dict:
    """The axes of every SVG plot of ``html`` as headless Chromium draws them (Playwright
    driving Debian's chromium): ``{"axes": n, "labels": n tick labels, "seen": [text of
    every axis and tick label], "problems": [...]}``; a problem is a text of a plot (axis
    label, tick label, title, legend, annotation) showing TeX or an escaped entity, or two
    tick labels of one axis whose boxes overlap (by more than ``tolerance`` CSS pixels)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=FLAGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(html.resolve().as_uri())
            return page.evaluate(_AXES, [TEXT_ARTEFACT, tolerance])
        finally:
            browser.close()
