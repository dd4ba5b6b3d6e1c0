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


def _log_plot(lo, hi, width=7.5, axis="x"):
    fig = figure(width, 2.5)
    ax = fig.add_subplot()
    ax.plot([lo, hi], [lo, hi]) if axis == "both" else ax.plot(
        *([[lo, hi], [0.2, 0.8]] if axis == "x" else [[0.2, 0.8], [lo, hi]]))
    if axis in ("x", "both"):
        ax.set_xscale("log")
    if axis in ("y", "both"):
        ax.set_yscale("log")
    return fig


def _tick_texts(svg: bytes) -> list[str]:
    import re

    return re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode("utf-8"))


@pytest.mark.parametrize("lo, hi, axis, expected", [
    (60, 200, "x", {"60", "100", "200"}),  # the issue: 6×10¹ and 2×10² as TeX
    (1, 1e6, "y", {"1", "100", "10000", "1e+06"}),
    (0.002, 0.03, "x", {"0.01"}),
    (3e5, 4e7, "both", {"1e+06", "1e+07"}),
])
def test_log_axes_get_plain_tick_labels_not_tex(lo, hi, axis, expected):
    texts = _tick_texts(save(_log_plot(lo, hi, axis=axis)))
    assert expected <= set(texts), texts
    assert not [t for t in texts if "$" in t or "\\" in t or "{" in t], texts


def test_mathtext_formatters_are_replaced_in_every_axes():
    from matplotlib.ticker import LogFormatterSciNotation

    fig = _log_plot(10, 1000, axis="both")
    save(fig)
    for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis):
        for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
            assert not isinstance(formatter, LogFormatterSciNotation)
            assert "$" not in formatter(60.0) + formatter(100.0)


def test_overlapping_tick_labels_are_thinned_out():
    """On a narrow axis every minor label of a sub-decade log axis would collide: the ones
    that overlap a label already shown are hidden, majors kept first."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from searchbench._util.plots import plain_ticks

    unthinned = _log_plot(200, 900, width=0.9)
    plain_ticks(unthinned)
    unthinned.draw_without_rendering()
    every = [t.get_text() for t in unthinned.axes[0].xaxis.get_ticklabels(which="both")
             if t.get_text()]
    fig = _log_plot(200, 900, width=0.9)
    texts = _tick_texts(save(fig))
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    axis = fig.axes[0].xaxis
    lo, hi = axis.get_view_interval()
    shown = [t.label1 for t in axis.get_major_ticks() + axis.get_minor_ticks()
             if t.label1.get_visible() and t.label1.get_text() and lo <= t.get_loc() <= hi]
    assert {"200", "300", "400", "600"} <= set(every)  # matplotlib labels them all …
    assert [s.get_text() for s in shown] == ["200", "600"]  # … two fit, the rest hidden
    assert shown and set(texts) >= {s.get_text() for s in shown}
    boxes = [s.get_window_extent(renderer) for s in shown]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                if a.overlaps(b)]  # and do not overlap
