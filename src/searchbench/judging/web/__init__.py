"""The judging web app: blind judging of a pool and explore mode (``searchbench judge serve``,
``searchbench explore``); needs the ``judge`` extra (starlette, uvicorn, jinja2).

The interface the command line uses: :func:`serve` with :class:`ServeOptions`,
:func:`require_web` (the extra is installed), :func:`explore_data` and :func:`load_texts`.
Every name loads its module on first use, so importing this package imports no starlette.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """Modules load on first use (the app's modules import starlette)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'searchbench.judging.web' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
