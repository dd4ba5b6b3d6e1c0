"""The one matplotlib setup: figures, style and saving, for every plot searchbench draws.

Figures are :class:`matplotlib.figure.Figure` objects, never pyplot state, so no GUI backend
is ever selected: ``savefig`` renders with Agg (PNG) or matplotlib's SVG/PDF backends.
Saved files are reproducible: text stays text in SVG (searchable, ``svg.fonttype = none``),
element ids come from a fixed salt and no creation date is written, so the same plot gives
the same bytes. matplotlib is imported on first use (``pip install 'searchbench[report]'``).
"""

from __future__ import annotations

import html
import io
import re
from typing import Any

from ..errors import require

__all__ = ["STYLE", "figure", "save", "svg_element"]

#: matplotlib rc settings applied while a figure is saved.
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "searchbench"}

_FORMATS = ("svg", "png", "pdf")


def figure(width: float, height: float, *, dpi: int = 100,
           layout: str | None = "constrained") -> Any:
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
    doctype dropped). ``label`` adds ``role="img"`` and an escaped ``aria-label``;
    ``fixed_size=False`` drops the width and height so the page's CSS sizes the plot."""
    text = svg.decode("utf-8") if isinstance(svg, bytes) else svg
    text = text[text.index("<svg"):]
    if label is not None:
        text = text.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label)}" ', 1)
    if not fixed_size:
        text = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", text, count=1)
    return text
