"""The records every judging tool shares: a judgment, its evidence quote, a pool item.

One vocabulary for the judging store (``store.py``), the web app, the LLM judge, pooling,
agreement and export. Grades are 0–3 (UMBRELA-style: 0 irrelevant, 1 related, 2 highly
relevant, 3 perfectly relevant); ``grade=None`` records a skip.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

from .._util import write_text
from ..errors import DataFormatError

__all__ = [
    "GRADES",
    "AnnotatorKind",
    "Judgment",
    "PoolItem",
    "Quote",
    "llm_annotator",
    "read_pool",
    "write_pool",
]

GRADES: tuple[int, ...] = (0, 1, 2, 3)
AnnotatorKind = Literal["human", "llm"]


@dataclass(frozen=True)
class Quote:
    """An exact passage of the document: ``text == document_text[start:end]``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Judgment:
    """One label by one annotator. ``source``: ``pool`` (judging app), ``explore`` (a hole
    judged inline), ``llm`` (judge llm) or ``import``; ``created_at`` is ISO-8601 UTC."""

    query_id: str
    doc_id: str
    annotator: str
    grade: int | None
    kind: AnnotatorKind = "human"
    evidence: tuple[Quote, ...] = ()
    note: str = ""
    source: str = "pool"
    created_at: str = ""


def llm_annotator(model: str, prompt_version: str) -> str:
    """The annotator name of an LLM judge: ``llm:<model>@<prompt-version>``."""
    return f"llm:{model}@{prompt_version}"


@dataclass(frozen=True)
class PoolItem:
    """One (query, document) pair to judge, in judging order: documents retrieved by more
    runs first, then by best (smallest) rank among them."""

    query_id: str
    doc_id: str
    n_runs: int
    best_rank: int


def write_pool(path: str | os.PathLike[str], items: Iterable[PoolItem]) -> None:
    """Write ``pool.jsonl`` atomically, one item per line in judging order."""
    write_text(path, "".join(json.dumps(asdict(i), ensure_ascii=False) + "\n" for i in items))


def read_pool(path: str | os.PathLike[str]) -> list[PoolItem]:
    """Read a ``pool.jsonl``; a malformed line raises :class:`DataFormatError` (path:line)."""
    items: list[PoolItem] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    items.append(_pool_item(line, f"{path}:{n}"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{path}: cannot read the pool ({exc})") from None
    return items


def _pool_item(line: str, where: str) -> PoolItem:
    try:
        obj = json.loads(line)
        item = PoolItem(str(obj["query_id"]), str(obj["doc_id"]), int(obj["n_runs"]),
                        int(obj["best_rank"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise DataFormatError(f"{where}: expected a JSON object with query_id, doc_id, "
                              f"n_runs, best_rank ({exc})") from None
    return item
