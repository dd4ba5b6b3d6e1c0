"""String ids for engines that key rows by integers (Qdrant, usearch, Milvus...).

An :class:`IdMap` assigns 0, 1, 2, ... to string ids in load order and is persisted as JSON
beside the collection (atomically, after each loaded batch), so ids round-trip exactly
across processes and resumed loads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .._util import write_json
from ..errors import DataFormatError

__all__ = ["IdMap"]

_FORMAT = "searchbench-idmap/1"


class IdMap:
    """Bijection string id ↔ int64 key. ``path`` None keeps it in memory only."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.ids: list[str] = []
        self.keys: dict[str, int] = {}
        if self.path is not None and self.path.exists():
            self._read(self.path)

    def _read(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and data.get("format") == _FORMAT
            ids = data["ids"] if ok else None
        except (OSError, ValueError, KeyError) as exc:
            raise DataFormatError(f"{path}: not a searchbench id map ({exc})") from None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) \
                or len(set(ids)) != len(ids):
            raise DataFormatError(f"{path}: expected {_FORMAT} with a list of distinct "
                                  "string ids")
        self.ids = ids
        self.keys = {s: i for i, s in enumerate(ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.keys

    def assign(self, ids: Iterable[str]) -> np.ndarray:
        """Keys of ``ids``, giving new ids the next free keys (not yet saved)."""
        out = []
        for doc_id in ids:
            key = self.keys.get(doc_id)
            if key is None:
                key = len(self.ids)
                self.keys[doc_id] = key
                self.ids.append(doc_id)
            out.append(key)
        return np.asarray(out, dtype=np.int64)

    def lookup(self, keys: Sequence[int] | np.ndarray) -> list[str]:
        """String ids of integer ``keys`` (an unknown key raises :class:`DataFormatError`)."""
        try:
            return [self.ids[int(k)] for k in keys]
        except IndexError:
            raise DataFormatError(f"the engine returned a key the id map of {self.path} "
                                  "does not hold; the collection and its map disagree") from None

    def save(self) -> None:
        """Write the map atomically (no-op without a path)."""
        if self.path is not None:
            write_json(self.path, {"format": _FORMAT, "ids": self.ids}, indent=None)
