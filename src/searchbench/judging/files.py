"""Documents from files: Markdown, text, HTML (and PDF through the ``pdf`` extra).

Each file becomes one :class:`~searchbench.data.Document` whose text is what an indexer
would see: Markdown and plain text as they are, HTML as its visible text (scripts, styles
and other non-content elements dropped, block elements on their own lines), PDF as the text
``pypdf`` extracts page by page. The title is the first heading (``# ...`` or a Setext
heading, YAML front matter ``title:``; ``<title>`` or the first ``<h1>``; the PDF's title
field), else the file name without its suffix.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from .._util import is_hidden, normal_name

__all__ = ["FORMATS", "Converted", "convert_file", "doc_id_for"]

FORMATS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown",
    ".txt": "text", ".text": "text", ".rst": "text",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
}
def doc_id_for(relative: str) -> str:
    """The document id of a file: its path relative to the docs folder, POSIX separators,
    in Unicode NFC (``é.md`` typed as ``e`` + U+0301 is the id ``é.md`` with U+00E9), with
    white space, ``%`` and every hidden character (:func:`~searchbench._util.is_hidden`:
    controls, bidi and zero-width characters, U+2028/9, lone surrogates…) percent-encoded
    (UTF-8 bytes): ids cannot hold white space (qrels and runs split on it) and are shown to
    people. ``my notes/a b.md`` → ``my%20notes/a%20b.md``."""
    def unsafe(ch: str) -> bool:
        return ch == "%" or ch.isspace() or is_hidden(ch)

    return "".join("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
                   if unsafe(ch) else ch for ch in normal_name(relative))


@dataclass(frozen=True)
class Converted:
    """A file's text and title, or why it was skipped (``skipped`` is then set)."""

    text: str = ""
    title: str = ""
    skipped: str = ""


def convert_file(path: Path, fmt: str, data: bytes) -> Converted:
    """Convert the bytes of one file of format ``fmt`` (a value of :data:`FORMATS`)."""
    if fmt == "pdf":
        return _pdf(path, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Converted(skipped=f"not UTF-8 text (byte {exc.start}); save it as UTF-8")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if fmt == "html":
        return _html(text, path)
    title = _markdown_title(text) if fmt == "markdown" else ""
    return Converted(text, title or path.stem)


def sha256(data: bytes) -> str:
    """``sha256:<hex>`` of a file's bytes (kept in the document's metadata)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


# -- Markdown -------------------------------------------------------------------------------
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _markdown_title(text: str) -> str:
    """Front matter ``title:``, else the first level-1 heading, else the first heading."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for line in lines[1:]:
            if line.strip() in ("---", "..."):
                break
            if line.lower().startswith("title:"):
                return line[6:].strip().strip("'\"")
    first_any = ""
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        level, heading = _heading(line, lines[i + 1] if i + 1 < len(lines) else "")
        if level == 1:
            return heading
        if level and not first_any:
            first_any = heading
    return first_any


def _heading(line: str, following: str) -> tuple[int, str]:
    atx = _ATX.match(line)
    if atx:
        return len(atx.group(1)), atx.group(2).strip()
    setext = _SETEXT.match(following)
    if setext and line.strip() and not line.startswith(("    ", "\t")):
        return (1 if setext.group(1)[0] == "=" else 2), line.strip()
    return 0, ""


# -- HTML -----------------------------------------------------------------------------------
_DROP = frozenset({"script", "style", "noscript", "template", "svg", "math", "head",
                   "iframe", "object", "canvas"})
_BLOCK = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "details", "div",
                    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
                    "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol",
                    "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul"})


class _VisibleText(HTMLParser):
    """Collects the visible text, ``<title>`` and the first ``<h1>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.h1: list[str] = []
        self._dropped = 0
        self._in_title = False
        self._in_h1 = False
        self._h1_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _DROP:
            self._dropped += 1
        elif tag == "h1" and not self._h1_done:
            self._in_h1 = True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _DROP:
            self._dropped = max(0, self._dropped - 1)
        elif tag == "h1" and self._in_h1:
            self._in_h1, self._h1_done = False, True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._dropped:
            self.parts.append(data)
            if self._in_h1:
                self.h1.append(data)


def _html(text: str, path: Path) -> Converted:
    parser = _VisibleText()
    parser.feed(text)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    body = "\n".join(line for line in lines if line)
    title = " ".join("".join(parser.title).split()) or " ".join("".join(parser.h1).split())
    return Converted(body, title or path.stem)


# -- PDF ------------------------------------------------------------------------------------
def _pdf(path: Path, data: bytes) -> Converted:
    try:
        import pypdf  # lazy: the pdf extra
    except ImportError:
        return Converted(skipped="PDF text needs the pdf extra: pip install "
                                 "'searchbench[pdf]'")

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
        meta: Any = reader.metadata
        title = str(meta.title).strip() if meta is not None and meta.title else ""
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        return Converted(skipped=f"pypdf cannot read it ({type(exc).__name__}: {exc})")
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        return Converted(skipped="the PDF holds no extractable text (a scan? run OCR first)")
    return Converted(text, title or path.stem)
