"""The judging web app: blind judging of a pool and explore mode (``searchbench judge serve``,
``searchbench explore``); needs the ``judge`` extra (starlette, uvicorn, jinja2).

The interface the command line uses: :func:`serve` with :class:`ServeOptions`,
:func:`require_web` (the extra is installed), :func:`explore_data` and :func:`load_texts`.
Every name loads its module on first use, so importing this package imports no starlette.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy import lazy_exports

if TYPE_CHECKING:  # the names loaded on first use (_LAZY), for type checkers
    from ._explore import explore_data
    from .context import load_texts
    from .server import ServeOptions, require_web, serve

_LAZY = {
    "load_texts": ".context",
    "explore_data": "._explore",
    "ServeOptions": ".server", "require_web": ".server", "serve": ".server",
}

__all__ = [
    "ServeOptions",
    "explore_data",
    "load_texts",
    "require_web",
    "serve",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
