"""Helpers shared by some engine adapters of this package (the shared work itself is
:class:`~searchbench.db.base.VectorStore`'s): the record format, scalar metadata values,
the JSON *sidecar* for an engine that cannot hold searchbench's record with the collection,
and the gate for engine-wide search settings.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..._util import write_json
from ...errors import DataFormatError

SIDECAR_FORMAT = "searchbench-store/1"


def parse_record(raw: str | bytes | Mapping[str, Any], where: str, what: str
                 ) -> dict[str, Any]:
    """searchbench's record as an engine kept it (JSON text, or already a mapping) in
    ``what`` (e.g. "collection metadata"): checked to be a :data:`SIDECAR_FORMAT` record,
    ``format`` dropped; one written before the VectorStore hooks kept its provenance under
    ``store``."""
    try:
        record = json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)
    except ValueError as exc:
        raise DataFormatError(f"{where}: damaged searchbench {what} ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != SIDECAR_FORMAT:
        raise DataFormatError(f"{where}: expected {SIDECAR_FORMAT} {what}")
    record = {k: v for k, v in record.items() if k != "format"}
    if "store" in record:
        record["provenance"] = record.pop("store")
    return record


def size_on_disk(path: Path) -> int:
    """Bytes allocated below ``path`` (engines preallocate sparse files)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def first_line(exc: BaseException) -> str:
    """The first line of an engine's message (its own messages nest and repeat)."""
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def metadata_value(value: Any, doc_id: str, key: str) -> Any:
    """A metadata value engines can store as a scalar (str, int, float, bool)."""
    if isinstance(value, (str, int, float, bool)):
        return value
    raise DataFormatError(f"metadata of {doc_id!r}: field {key!r} is a {type(value).__name__}; "
                          "expected a string, number or boolean")


class Sidecar:
    """searchbench's record of one embedded collection, as JSON next to it (atomic writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        """The record, or None when the collection was not made by searchbench."""
        if not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataFormatError(f"{self.path}: not a searchbench store record ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
            raise DataFormatError(f"{self.path}: expected a {SIDECAR_FORMAT} record")
        return data

    def write(self, record: Mapping[str, Any]) -> None:
        write_json(self.path, dict(record, format=SIDECAR_FORMAT))


class SettingGate:
    """Concurrent searches under one engine-wide search setting (usearch's
    ``expansion_search``, Chroma's ``ef_search`` live on the index, not on the call).

    Searches asking for the setting in force run together; one asking for another value
    waits until they are done, then applies it. So a search never runs under a setting it
    did not ask for, and searches that agree (a sweep's clients) never wait."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._value: Any = None

    @contextmanager
    def using(self, value: Any, apply: Callable[[Any], None]) -> Iterator[None]:
        """Run the block with the setting ``value`` (None: the block does not depend on
        it). ``apply(value)`` is called when no search is running (it should do nothing
        when the engine already has the value) or when the value differs."""
        with self._cond:
            while value is not None and self._active and self._value != value:
                self._cond.wait()
            if value is not None and (not self._active or self._value != value):
                apply(value)
                self._value = value
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()
