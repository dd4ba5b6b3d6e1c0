"""The one matplotlib setup: figures, style and saving, for every plot searchbench draws.

Figures are :class:`matplotlib.figure.Figure` objects, never pyplot state, so no GUI backend
is ever selected: ``savefig`` renders with Agg (PNG) or matplotlib's SVG/PDF backends.
Saved files are reproducible: text stays text in SVG (searchable, ``svg.fonttype = none``),
element ids come from a fixed salt and no creation date is written, so the same plot gives
the same bytes. matplotlib is imported on first use (``pip install 'searchbench[report]'``).
"""

from __future__ import annotations

import functools
import html
import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from ..errors import require
from .escape import visible_text

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["STYLE", "figure", "legend", "plain_text", "save", "svg_element"]

#: matplotlib rc settings applied while a figure is drawn (:func:`plain_text`) and saved:
#: text stays text in SVG, ids are reproducible, and mathtext is off, so a ``$`` in an
#: untrusted name is a dollar sign, not TeX.
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "searchbench",
                               "text.parse_math": False}

_Params = ParamSpec("_Params")
_Drawn = TypeVar("_Drawn")


def plain_text(plot: Callable[_Params, _Drawn]) -> Callable[_Params, _Drawn]:
    """Decorator: draw ``plot`` under :data:`STYLE` (text created inside is literal)."""
    @functools.wraps(plot)
    def wrapper(*args: _Params.args, **kwargs: _Params.kwargs) -> _Drawn:
        require("matplotlib", "report")
        from matplotlib import rc_context

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
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=dpi, layout=layout)


def save(fig: Any, fmt: str = "svg") -> bytes:
    """``fig`` as SVG, PNG or PDF bytes under :data:`STYLE` (no date: same plot, same
    bytes)."""
    if fmt not in _FORMATS:
        from ..errors import ConfigError

        raise ConfigError(f"plot format {fmt!r} is unknown; expected one of "
                          f"{', '.join(_FORMATS)}")
    from matplotlib import rc_context

    buf = io.BytesIO()
    with rc_context(STYLE):
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
