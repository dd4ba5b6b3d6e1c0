"""MkDocs hook: fill the generated sections of the docs from the code.

A page marks a generated section with an HTML comment on a line of its own:
``<!-- generated: measures -->``, ``<!-- generated: vocab -->``, ``<!-- generated: cli -->``
or ``<!-- generated: api -->``.
Each is produced by ``docs/gen_<name>.py``'s ``<name>_markdown()``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SRC = DOCS.parent / "src"
MARKER = re.compile(r"^<!-- generated: (\w+) -->$", re.MULTILINE)


def load_generator(name: str):
    """The module ``docs/gen_<name>.py``, loaded by path (MkDocs plugins reset sys.path)."""
    path = DOCS / f"gen_{name}.py"
    if not path.is_file():
        raise ValueError(f"unknown generated section {name!r}: no {path}")
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    spec = importlib.util.spec_from_file_location(f"searchbench_docs_gen_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_page_markdown(markdown: str, **kwargs) -> str:
    return MARKER.sub(lambda m: getattr(load_generator(m.group(1)), f"{m.group(1)}_markdown")(),
                      markdown)
