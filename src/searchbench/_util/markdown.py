"""The one Markdown renderer: escaped cells and pipe tables.

Every text that reaches Markdown output (names, query texts, ids, notes) passes through
:func:`md_text`, which makes it inert: HTML is escaped (a Markdown viewer renders raw HTML),
table pipes and the inline markup characters (``\\ ` * _ [ ] | ~``) are
backslash-escaped, and line breaks become spaces so
a value cannot start a new block or table row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["md_table", "md_text"]

_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")
_BARE_PIPE = re.compile(r"(?<!\\)\|")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def md_text(value: object) -> str:
    """``value`` as inert Markdown inline text (one line, no HTML, no markup)."""
    text = " ".join(str(value).split())
    text = "".join(_HTML.get(ch, ch) for ch in text)
    return _PUNCTUATION.sub(r"\\\1", text)


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]],
             align: str | None = None, *, escape: bool = True) -> str:
    """A GitHub pipe table. ``align`` holds one of ``l``/``r``/``c`` per column (default:
    all left). Cells are escaped with :func:`md_text` unless ``escape=False`` (for cells the
    caller built from already-escaped parts, e.g. ``**0.5000**`` or :func:`md_text` output):
    then only a pipe not already escaped is escaped, so no cell can split a row."""
    cell = md_text if escape else (lambda v: _BARE_PIPE.sub(r"\\|", str(v)))
    align = align or "l" * len(header)
    rule = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
