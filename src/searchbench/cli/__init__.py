"""The command-line interface: a thin Click layer over the library.

``searchbench`` runs :func:`run` (:mod:`.main`), a lazy group: each sub-command lives in its own
``*_cmd`` module and imports the library lazily, so a command loads only what it uses.
:func:`main` takes an argument list and returns the exit code (for tests and embedding).
"""

from __future__ import annotations

from .main import app, main, run

__all__ = ["app", "main", "run"]
