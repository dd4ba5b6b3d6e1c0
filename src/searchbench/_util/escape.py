"""Text for places that must not receive raw control characters (plots, SVG, labels).

Names and texts from evaluation sets and configs may hold control characters (NUL, ESC…)
or lone surrogates: invalid in XML/SVG, a crash in matplotlib, a terminal escape in a
console. :func:`visible_text` shows them as Python-style escapes, so the value stays
readable and distinct ("a\\x00b"), and every other character is kept.
"""

from __future__ import annotations

import re

__all__ = ["visible_text"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_text(value: object) -> str:
    """``str(value)`` with lone surrogates as ``\\udXXX`` and control characters other
    than tab and newline as ``\\xNN`` (text, no longer the characters themselves)."""
    text = str(value).encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
