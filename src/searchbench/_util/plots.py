"""The one matplotlib setup: figures, style and saving, for every plot searchbench draws.

Figures are :class:`matplotlib.figure.Figure` objects, never pyplot state, so no GUI backend
is ever selected: ``savefig`` renders with Agg (PNG) or matplotlib's SVG/PDF backends.
Saved files are reproducible: text stays text in SVG (searchable, ``svg.fonttype = none``),
element ids come from a fixed salt and no creation date is written, so the same plot gives
the same bytes. matplotlib is imported on first use (``pip install 'searchbench[report]'``).

Mathtext is off (:data:`STYLE`), so every tick label is plain text: :func:`save` replaces
matplotlib's TeX-producing log formatters (``$\\mathdefault{6\\times10^{1}}$``) with
:func:`plain_log_formatter` (``60``, ``200``, ``1e+06``) and hides the tick labels that would
overlap a label already shown on the same axis (major labels first), for every plot.
"""

from __future__ import annotations

import functools
import html
import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from ..errors import ConfigError, require
from .escape import visible_text

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["LABEL_GAP", "STYLE", "figure", "legend", "plain_log_formatter", "plain_text",
           "plain_ticks", "save", "svg_element", "thin_tick_labels"]

#: matplotlib rc settings applied while a figure is drawn (:func:`plain_text`) and saved:
#: text stays text in SVG, ids are reproducible, and mathtext is off, so a ``$`` in an
#: untrusted name is a dollar sign, not TeX.
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "searchbench",
                               "text.parse_math": False, "axes.formatter.use_mathtext": False}
#: Space (points) kept between two tick labels of one axis; closer labels are thinned out.
LABEL_GAP = 2.0

_Params = ParamSpec("_Params")
_Drawn = TypeVar("_Drawn")


def plain_text(plot: Callable[_Params, _Drawn]) -> Callable[_Params, _Drawn]:
    """Decorator: draw ``plot`` under :data:`STYLE` (text created inside is literal)."""
    @functools.wraps(plot)
    def wrapper(*args: _Params.args, **kwargs: _Params.kwargs) -> _Drawn:
        require("matplotlib", "report")
        from matplotlib import rc_context  # lazy: the report extra

        with rc_context(STYLE):
            return plot(*args, **kwargs)
    return wrapper


def legend(ax: Any, **kwargs: Any) -> None:
    """A legend of every labelled line, labels passed explicitly (matplotlib otherwise drops
    labels starting with ``_``, so a system named ``_x`` would vanish)."""
    lines = [line for line in ax.get_lines() if line.get_label()]
    ax.legend(lines, [line.get_label() for line in lines], **kwargs)

_FORMATS = ("svg", "png", "pdf")


def figure(width: float, height: float, *, dpi: int = 100,
           layout: Literal["constrained", "compressed", "tight"] | None = "constrained"
           ) -> Any:
    """A new ``Figure`` of ``width`` × ``height`` inches (no pyplot, no global state)."""
    require("matplotlib", "report")
    from matplotlib.figure import Figure  # lazy: the report extra

    return Figure(figsize=(width, height), dpi=dpi, layout=layout)


def save(fig: Any, fmt: str = "svg") -> bytes:
    """``fig`` as SVG, PNG or PDF bytes under :data:`STYLE` (no date: same plot, same
    bytes)."""
    if fmt not in _FORMATS:
        raise ConfigError(f"plot format {fmt!r} is unknown; expected one of "
                          f"{', '.join(_FORMATS)}")
    from matplotlib import rc_context  # lazy: the report extra

    buf = io.BytesIO()
    with rc_context(STYLE):
        plain_ticks(fig)
        thin_tick_labels(fig)
        fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()


def svg_element(svg: bytes | str, label: str | None = None, fixed_size: bool = True) -> str:
    """The ``<svg>`` element of a saved SVG, ready to inline in HTML (the XML prolog and
    doctype dropped). ``label`` adds ``role="img"`` and an ``aria-label`` escaped for an
    HTML attribute (control characters shown as escapes: :func:`visible_text`);
    ``fixed_size=False`` drops the width and height so the page's CSS sizes the plot."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    text = text[text.index("<svg"):]
    if label is not None:
        aria = html.escape(visible_text(label), quote=True)
        text = text.replace("<svg ", f'<svg role="img" aria-label="{aria}" ', 1)
    if not fixed_size:
        text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    return text


@functools.cache
def _plain_log_class() -> type:
    from matplotlib.ticker import LogFormatter  # lazy: the report extra

    class PlainLogFormatter(LogFormatter):
        """matplotlib's log formatter without TeX: ``60``, ``200``, ``0.01``, ``1e+06``
        (it labels the same ticks as the default log formatter)."""

        def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
            return f"{x:g}"

    return PlainLogFormatter


def plain_log_formatter(like: Any = None) -> Any:
    """A log-axis tick formatter writing plain numbers, never TeX; ``like`` (a matplotlib
    ``LogFormatter``) gives the base, which ticks get labels and the symlog threshold."""
    cls = _plain_log_class()
    if like is None:
        return cls()
    return cls(base=like._base, labelOnlyBase=like.labelOnlyBase,
               minor_thresholds=like.minor_thresholds, linthresh=like._linthresh)


def plain_ticks(fig: Any) -> None:
    """Make every tick formatter of ``fig`` write plain text: log axes get
    :func:`plain_log_formatter`, scalar formatters stop using mathtext (with mathtext off
    their TeX would be shown as written, ``$\\mathdefault{…}$``)."""
    from matplotlib.ticker import LogFormatter, ScalarFormatter  # lazy: the report extra

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                found = get()
                if isinstance(found, LogFormatter) and \
                        not isinstance(found, _plain_log_class()):
                    put(plain_log_formatter(found))
                elif isinstance(found, ScalarFormatter):
                    found.set_useMathText(False)


def thin_tick_labels(fig: Any, gap: float = LABEL_GAP) -> None:
    """Hide the tick labels of ``fig`` that would overlap another label of their axis
    (drawn once with Agg to measure them): major labels are kept first, in axis order, then
    the minor labels that fit between them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: the report extra

    canvas = FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    fig.draw(renderer)
    pad = gap * fig.dpi / 72
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            kept: list[Any] = []
            for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
                for label in _shown_labels(axis, ticks):
                    box = label.get_window_extent(renderer).padded(pad / 2)
                    if any(box.overlaps(other) for other in kept):
                        label.set_visible(False)
                    else:
                        kept.append(box)


def _shown_labels(axis: Any, ticks: list[Any]) -> list[Any]:
    """The visible, non-empty first labels of ``ticks`` whose tick lies in the axis' view."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    return [t.label1 for t in ticks
            if t.label1.get_visible() and t.label1.get_text()
            and lo - span <= t.get_loc() <= hi + span]
