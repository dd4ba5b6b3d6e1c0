"""The report's SVG plots with hostile names: well-formed XML, names literal, no crash."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from searchbench._util import visible_text

NAMES = ['x" onload="alert(1)', "</svg><script>alert(2)</script>", "a\x00b", "esc\x1b[31m",
         "lone\ud800surrogate", "$\\frac{1}{0}$", "_hidden", "back\\1\\g<0>", "{{7*7}}",
         "&amp; &lt;"]
SVG = "{http://www.w3.org/2000/svg}"


class Cell(SimpleNamespace):
    pass


def _group() -> SimpleNamespace:
    cells = [Cell(system=n, retriever=n, chunker=f"chunk {n}", timings={"latency_ms": 1.0},
                  extras={"recall_curve": [0.5] * 100, "mean_unit_words": 10.0 + i,
                          "context_tokens": {"10": 100.0}},
                  scores={NAMES[0]: {"q": 0.1 * i}}) for i, n in enumerate(NAMES)]
    group = SimpleNamespace(cells=cells, main=NAMES[0], level="doc", query_ids=["q"],
                            comparison=SimpleNamespace(baseline=NAMES[1]))
    group.mean_ci = lambda s: (0.5, 0.4, 0.6)
    group.cell = lambda s: next(c for c in cells if c.system == s)
    return group


@pytest.mark.parametrize("plot", ["main_measure_svg", "recall_svg", "chunking_svg",
                                  "latency_svg", "delta_svg"])
def test_svg_is_well_formed_and_shows_names_literally(plot):
    pytest.importorskip("matplotlib")
    from searchbench.report import plots

    group = _group()
    args = (group, NAMES[2]) if plot == "delta_svg" else (group,)
    svg = getattr(plots, plot)(*args)
    root = ET.fromstring(svg)  # raises on an unescaped quote, '<' or a NUL
    handlers = [k for el in root.iter() for k in el.attrib if k.lower().startswith("on")]
    assert handlers == [] and not list(root.iter(f"{SVG}script"))
    text = " ".join("".join(el.itertext()) for el in root.iter(f"{SVG}text"))
    shown = {"main_measure_svg": NAMES, "latency_svg": NAMES, "recall_svg": NAMES,
             "chunking_svg": NAMES, "delta_svg": [NAMES[2], NAMES[1]]}[plot]
    for name in shown:
        assert visible_text(name) in text, name
    if plot == "delta_svg":
        assert root.get("aria-label") == visible_text(
            f"per-query delta of {NAMES[2]} against {NAMES[1]}")


def test_visible_text_keeps_text_and_shows_controls():
    assert visible_text("a\x00b\x1b\ud800 é\tz\n") == "a\\u0000b\\u001b\\ud800 é\tz\n"


def test_the_chunking_plot_names_the_word_unit_as_the_retrievers_do():
    from searchbench.report import plots
    from searchbench.retrieval.spec import WORDS

    assert plots.WORDS == WORDS  # a cell's token_unit is compared with it
