"""The one plot setup: reproducible bytes, text kept as text, an escaped accessible label."""

from __future__ import annotations

import pytest

from searchbench._util.plots import figure, save, svg_element
from searchbench.errors import ConfigError

pytest.importorskip("matplotlib")


def _fig():
    fig = figure(3, 2)
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1, 0, 2], label="bm25")
    ax.set_xlabel("recall")
    return fig


def test_same_plot_same_bytes_and_text_stays_text():
    first, second = save(_fig(), "svg"), save(_fig(), "svg")
    assert first == second  # no date, fixed id salt
    assert b"<dc:date>" not in first
    assert b">recall<" in first  # svg.fonttype none: a <text> element, not glyph paths


def test_png_is_a_png():
    assert save(_fig(), "png").startswith(b"\x89PNG\r\n\x1a\n")


def test_unknown_format_is_refused():
    with pytest.raises(ConfigError, match="svg, png, pdf"):
        save(_fig(), "gif")


def test_svg_element_escapes_the_label_and_can_drop_the_size():
    svg = svg_element(save(_fig()), 'run "a" <b>', fixed_size=False)
    head = svg[:svg.index(">")]
    assert svg.startswith('<svg role="img" aria-label="run &quot;a&quot; &lt;b&gt;" ')
    assert " width=" not in head and " height=" not in head
    assert ' width="' in svg_element(save(_fig()))[:200]
