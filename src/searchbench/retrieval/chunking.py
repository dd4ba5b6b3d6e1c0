"""Chunkers: split a document's text into spans that remember ``(doc_id, start, end)``.

Offsets are character offsets into ``Document.text`` (the title is not chunked; retrievers
prepend it to every chunk they index). Token counts use the encoder's tokenizer when a
retriever binds one, otherwise whitespace-separated words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "Chunk",
    "Chunker",
    "RecursiveChunker",
    "SentenceChunker",
    "TokenChunker",
    "parse_chunker",
    "whitespace_offsets",
]

Offsets = Callable[[str], list[tuple[int, int]]]
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A span ``text == document.text[start:end]`` of document ``doc_id``."""

    doc_id: str
    start: int
    end: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc_id}#{self.start}-{self.end}"


def parse_chunk_id(chunk_id: str) -> tuple[str, int, int]:
    """``"doc#12-40"`` -> ``("doc", 12, 40)``."""
    doc, sep, span = chunk_id.rpartition("#")
    a, dash, b = span.partition("-")
    if not (sep and dash and a.isdigit() and b.isdigit()):
        raise ConfigError(f"chunk id {chunk_id!r}: expected 'doc_id#start-end'")
    return doc, int(a), int(b)


def whitespace_offsets(text: str) -> list[tuple[int, int]]:
    """Character spans of whitespace-separated words (the default token counter)."""
    return [m.span() for m in _WORD.finditer(text)]


class Chunker(Protocol):
    """Anything with ``split(doc_id, text) -> list[Chunk]`` and ``describe() -> dict``."""

    @property
    def tokenizer(self) -> Offsets | None: ...

    def split(self, doc_id: str, text: str) -> list[Chunk]: ...

    def describe(self) -> dict[str, Any]: ...


def _make(doc_id: str, text: str, a: int, b: int) -> Chunk | None:
    """A chunk for ``text[a:b]`` with surrounding whitespace trimmed (None if empty)."""
    piece = text[a:b]
    lead = len(piece) - len(piece.lstrip())
    trail = len(piece.rstrip())
    if trail <= lead:
        return None
    return Chunk(doc_id, a + lead, a + trail, piece[lead:trail])


def _tokens(tokenizer: Offsets | None, text: str) -> list[tuple[int, int]]:
    spans = (tokenizer or whitespace_offsets)(text)
    return [(a, b) for a, b in spans if b > a]


_Chunker = TypeVar("_Chunker", bound="DataclassInstance")


@dataclass(frozen=True)
class _CountsTokens:
    """Base of the chunkers: the tokenizer their sizes are counted in (keyword-only;
    default: whitespace-separated words), and a copy that counts with another one."""

    tokenizer: Offsets | None = field(default=None, kw_only=True)
    tokenizer_name: str = field(default="words", kw_only=True)

    def with_tokenizer(self: _Chunker, tokenizer: Offsets, name: str = "custom") -> _Chunker:
        return replace(self, tokenizer=tokenizer, tokenizer_name=name)


def _check_window(chunker: str, unit: str, n: int, overlap: int) -> None:
    if n <= 0 or not 0 <= overlap < n:
        raise ConfigError(f"{chunker}({unit}={n}, overlap={overlap}): expected {unit} > 0 "
                          f"and 0 <= overlap < {unit}")


def _windows(doc_id: str, text: str, spans: list[tuple[int, int]], size: int,
             overlap: int) -> list[Chunk]:
    """Chunks of ``size`` consecutive spans (tokens, sentences), consecutive chunks sharing
    ``overlap`` of them (checked by :func:`_check_window`): the one window rule of the
    token and sentence chunkers."""
    out: list[Chunk] = []
    for i in range(0, max(len(spans) - overlap, 1), size - overlap):
        window = spans[i:i + size]
        if window and (c := _make(doc_id, text, window[0][0], window[-1][1])):
            out.append(c)
    return out


@dataclass(frozen=True)
class TokenChunker(_CountsTokens):
    """Windows of ``size`` tokens, consecutive windows sharing ``overlap`` tokens."""

    size: int = 256
    overlap: int = 0

    def __post_init__(self) -> None:
        _check_window("TokenChunker", "size", self.size, self.overlap)

    def split(self, doc_id: str, text: str) -> list[Chunk]:
        return _windows(doc_id, text, _tokens(self.tokenizer, text), self.size, self.overlap)

    def describe(self) -> dict[str, Any]:
        return {"chunker": "tokens", "size": self.size, "overlap": self.overlap,
                "tokenizer": self.tokenizer_name}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans: a break after ``.``, ``!`` or ``?`` (and closing quotes) + space."""
    spans, a = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((a, m.start()))
        a = m.end()
    spans.append((a, len(text)))
    return [(x, y) for x, y in spans if text[x:y].strip()]


@dataclass(frozen=True)
class SentenceChunker(_CountsTokens):
    """Groups of ``n`` consecutive sentences, consecutive groups sharing ``overlap``."""

    n: int = 5
    overlap: int = 0

    def __post_init__(self) -> None:
        _check_window("SentenceChunker", "n", self.n, self.overlap)

    def split(self, doc_id: str, text: str) -> list[Chunk]:
        return _windows(doc_id, text, sentence_spans(text), self.n, self.overlap)

    def describe(self) -> dict[str, Any]:
        return {"chunker": "sentences", "n": self.n, "overlap": self.overlap}


@dataclass(frozen=True)
class RecursiveChunker(_CountsTokens):
    """Split on paragraphs, then lines, sentences, words until each piece has at most
    ``max_tokens`` tokens; then merge neighbours greedily back up to the limit."""

    max_tokens: int = 256

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ConfigError(f"RecursiveChunker(max_tokens={self.max_tokens}): expected > 0")

    def split(self, doc_id: str, text: str) -> list[Chunk]:
        toks = _tokens(self.tokenizer, text)
        starts = np.asarray([a for a, _ in toks], dtype=np.int64)

        def length(a: int, b: int) -> int:
            return int(np.searchsorted(starts, b) - np.searchsorted(starts, a))

        pieces = _recursive(text, 0, len(text), 0, length, self.max_tokens, toks)
        merged = _merge(pieces, length, self.max_tokens)
        return [c for a, b in merged if (c := _make(doc_id, text, a, b))]

    def describe(self) -> dict[str, Any]:
        return {"chunker": "recursive", "max_tokens": self.max_tokens,
                "tokenizer": self.tokenizer_name}


_SEPARATORS: tuple[Callable[[str, int, int], list[tuple[int, int]]], ...] = (
    lambda t, a, b: _split_on(t, a, b, re.compile(r"\n\s*\n")),
    lambda t, a, b: _split_on(t, a, b, re.compile(r"\n")),
    lambda t, a, b: [(a + x, a + y) for x, y in sentence_spans(t[a:b])],
)


def _split_on(text: str, a: int, b: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    out, pos = [], a
    for m in pattern.finditer(text, a, b):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, b))
    return [(x, y) for x, y in out if y > x]


def _recursive(text: str, a: int, b: int, level: int, length: Callable[[int, int], int],
               limit: int, toks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if length(a, b) <= limit:
        return [(a, b)]
    if level >= len(_SEPARATORS):  # last resort: windows of `limit` tokens
        inside = [t for t in toks if t[0] >= a and t[1] <= b]
        return [(w[0][0], w[-1][1]) for i in range(0, len(inside), limit)
                if (w := inside[i:i + limit])]
    parts = _SEPARATORS[level](text, a, b)
    if len(parts) <= 1:
        return _recursive(text, a, b, level + 1, length, limit, toks)
    out: list[tuple[int, int]] = []
    for x, y in parts:
        out.extend(_recursive(text, x, y, level + 1, length, limit, toks))
    return out


def _merge(pieces: list[tuple[int, int]], length: Callable[[int, int], int],
           limit: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        if out and length(out[-1][0], b) <= limit:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def parse_chunker(spec: str | None) -> Chunker | None:
    """``tokens:256:32``, ``sentences:5[:1]``, ``recursive:256`` or None/``none``."""
    if not spec or spec == "none":
        return None
    kind, *args = spec.split(":")
    try:
        nums = [int(x) for x in args]
    except ValueError:
        nums = None
    factories: dict[str, Callable[..., Chunker]] = {
        "tokens": TokenChunker, "sentences": SentenceChunker, "recursive": RecursiveChunker,
    }
    if kind not in factories or nums is None or not 1 <= len(nums) <= 2 - (kind == "recursive"):
        raise ConfigError(f"chunker {spec!r}: expected tokens:SIZE[:OVERLAP], "
                          "sentences:N[:OVERLAP] or recursive:MAX_TOKENS")
    return factories[kind](*nums)
