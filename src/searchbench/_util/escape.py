"""One rule for every name, id and text shown to a person (ARCHITECTURE §2.1).

Names and ids come from files, file names, configs and remote services; any of them may
hold characters that make what is shown differ from what is stored: control characters
(NUL, ESC, a newline that starts a forged ``error:`` line), bidi overrides (U+202E turns
``txt.exe`` into ``exe.txt``), line and paragraph separators (U+2028/9), zero-width and
other invisible characters (U+200B, U+2060, U+FEFF, Hangul fillers…), lone surrogates,
and two spellings of one letter (``é`` as U+00E9 or as ``e`` + U+0301).

- :data:`NAME_FORM`: names a person chooses and ids searchbench makes (annotator names,
  document ids from file names, query ids) are compared and stored in Unicode **NFC**
  (:func:`normal_name`).
- :func:`check_name`: a name the user chooses (an annotator) holding a hidden character
  is refused; :func:`is_hidden` is the one predicate of what "hidden" means.
- :func:`visible_name`, :func:`visible_text`, :func:`one_line`: names and texts that are
  not ours to refuse are shown with every hidden character as a Python-style escape
  (``a\\u202eb``, ``\\u001b``), so the value stays readable and distinct, on one line
  where it must be.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from ..errors import DataFormatError

__all__ = ["NAME_FORM", "check_name", "is_hidden", "normal_name", "one_line", "visible_name",
           "visible_text"]

NAME_FORM: Literal["NFC"] = "NFC"
"""The Unicode normalisation form of names and ids (composed: ``é`` is U+00E9)."""

# Default-ignorable and blank characters that str.isprintable() calls printable: Hangul
# fillers, combining grapheme joiner, Khmer inherent vowels, Mongolian and other variation
# selectors, the braille blank.
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10))) + "".join(map(chr, range(0xE0100, 0xE01F0))))

# Hidden in a text: everything hidden in a name except tab and newline (texts have lines)
# and the other space separators (U+00A0 in a title is no lie).
_TEXT_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f" + "".join(sorted(_INVISIBLE))
    + "]")


def is_hidden(ch: str) -> bool:
    """Whether the character ``ch`` would not show as itself: a control, format (bidi,
    zero-width), separator (line, paragraph, any space but U+0020), surrogate, private-use
    or unassigned character, or another invisible one (:data:`_INVISIBLE`)."""
    return not ch.isprintable() or ch in _INVISIBLE


def normal_name(name: str) -> str:
    """``name`` in :data:`NAME_FORM` (NFC)."""
    return name if name.isascii() else unicodedata.normalize(NAME_FORM, name)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible_name(value: object) -> str:
    """``str(value)`` on one line with every hidden character (:func:`is_hidden`: newline,
    tab, bidi overrides, zero-width characters, lone surrogates…) as an escape
    (``\\u000a``, ``\\u202e``): one line, one TSV field, no terminal escape."""
    text = str(value)
    if text.isprintable() and (text.isascii() or not any(c in _INVISIBLE for c in text)):
        return text
    return "".join(_escape(c) if is_hidden(c) else c for c in text)


def visible_text(value: object) -> str:
    """``str(value)`` with every hidden character but tab, newline and spaces (control
    characters, bidi controls, zero-width characters, U+2028/9, lone surrogates) as a
    ``\\uXXXX`` escape (text, no longer the characters themselves)."""
    return _TEXT_HIDDEN.sub(lambda m: _escape(m.group()), str(value))


def one_line(value: object) -> str:
    """:func:`visible_text` with every kind of line break (``\\r``, ``\\n``, U+2028, U+0085…)
    joined into spaces: a message that must stay one line (``error: ...``)."""
    return visible_text(" ".join(str(value).splitlines()))


def check_name(value: object, what: str) -> str:
    """``value`` as a name a person chose, in :data:`NAME_FORM`, or :class:`DataFormatError`
    when it is not a non-empty string or holds a hidden character (:func:`is_hidden`)."""
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(f"{what} {visible_name(repr(value))}; expected a non-empty name")
    name = normal_name(value)
    hidden = sorted({c for c in name if is_hidden(c)})
    if hidden:
        codes = ", ".join(f"U+{ord(c):04X}" for c in hidden)
        raise DataFormatError(
            f"{what} '{visible_name(name)}' holds characters that do not show as themselves "
            f"({codes}: line breaks, tabs, controls, bidi overrides, zero-width or other "
            f"invisible characters); expected a name that reads as it is")
    if name != name.strip():
        raise DataFormatError(f"{what} '{name}' starts or ends with a space; expected a name "
                              f"without surrounding spaces")
    return name
