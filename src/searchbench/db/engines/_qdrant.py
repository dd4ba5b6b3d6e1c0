"""The Qdrant mapping shared by ``qdrant-edge://`` (in-process shard) and ``qdrant://``
(server): metric names, score → distance, payload ↔ metadata, parameter names, filters and
the planner rule that decides whether the HNSW graph answers.

- **Distances**: Qdrant returns a *score*. ``Cosine`` and ``Dot`` are similarities
  (larger = closer): distance = 1 − score and −score. ``Euclid`` is the Euclidean distance
  (smaller = closer, not squared): distance = score².
- **Ids**: the edge shard keys points 0, 1, 2, ... through an :class:`IdMap` file; a
  server keeps no file beside the collection, so its point ids are :func:`point_uuid`
  (uuid5 of the string id) and the string is read back from the payload.
- **Payload**: every point carries ``sb_id`` (the string id), ``text`` when given, and the
  metadata fields at the top level (so Qdrant filters name them directly).
- **Planner**: a segment whose HNSW graph is built still scans exactly when it holds fewer
  vectors than ``full_scan_threshold`` KB / (4 × dim) bytes, or when a filter's estimated
  cardinality is below that number (Qdrant's ``HNSWIndex::search``); the adapters infer
  :attr:`StoreHits.index_used` from that rule, the index state and the filter's count.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigError, DataFormatError
from ..base import ParamSpec
from ._common import metadata_value

DISTANCES = {"cosine": "Cosine", "ip": "Dot", "l2": "Euclid"}  # searchbench → Qdrant
METRICS = {name: metric for metric, name in DISTANCES.items()}  # Qdrant → searchbench
ID_FIELD = "sb_id"
TEXT_FIELD = "text"
RESERVED = (ID_FIELD, TEXT_FIELD)

_HNSW_PARAMS = (
    ParamSpec("m", int, 16, "edges per node of the HNSW graph", when="build", low=2),
    ParamSpec("ef_construct", int, 100, "candidates kept while building the graph",
              when="build", low=4),
    ParamSpec("full_scan_threshold", int, 10000,
              "KB of vectors below which a segment (or a filter's matches) is scanned exactly "
              "instead of walking the graph", when="build", low=0),
)
_SEARCH_PARAMS = (
    ParamSpec("hnsw_ef", int, None, "candidates kept while searching (Qdrant's default: "
              "ef_construct; raised to k when smaller)", low=1),
    ParamSpec("indexed_only", bool, False,
              "search only segments whose index is built (skip unindexed rows)"),
    ParamSpec("acorn", bool, False, "ACORN filtered graph search (for selective filters)"),
)



def params(indexing_threshold: int, low: int, why: str) -> tuple[ParamSpec, ...]:
    """The build and search parameters of a Qdrant engine (server or edge shard), which
    differ only in the optimizer's ``indexing_threshold`` default: ``why`` says why."""
    threshold = ParamSpec("indexing_threshold", int, indexing_threshold,
                          f"optimizer: segments above this many KB get an HNSW graph ({why})",
                          when="build", low=low)
    return (*_HNSW_PARAMS, threshold, *_SEARCH_PARAMS)


# Fixed namespace: the same string id always gets the same point UUID (idempotent upserts).
ID_NAMESPACE = uuid.UUID("5b1c8c4e-2f5e-4d0e-9a43-7d1f3c0b6a21")


def point_uuid(doc_id: str) -> str:
    """The UUID a Qdrant *server* point gets for ``doc_id`` (uuid5: deterministic, so a
    re-run upserts the same points; the string itself is kept in the payload)."""
    return str(uuid.uuid5(ID_NAMESPACE, doc_id))


def to_distances(scores: Sequence[float], metric: str) -> np.ndarray:
    """Qdrant scores → searchbench distances (smaller = closer), float64."""
    s = np.asarray(scores, dtype=np.float64)
    if metric == "cosine":
        return 1.0 - s
    if metric == "ip":
        return -s
    return s * s


def payloads(ids: Sequence[str], texts: Sequence[str] | None,
             metadata: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """One payload per row: metadata fields, ``text`` and ``sb_id``."""
    out = []
    for i, doc_id in enumerate(ids):
        body: dict[str, Any] = {}
        for key, value in (metadata[i] if metadata is not None else {}).items():
            if key in RESERVED:
                raise DataFormatError(f"metadata of {doc_id!r}: field {key!r} is reserved "
                                      f"(searchbench stores {', '.join(RESERVED)}); rename it")
            body[str(key)] = metadata_value(value, doc_id, key)
        if texts is not None:
            body[TEXT_FIELD] = str(texts[i])
        body[ID_FIELD] = doc_id
        out.append(body)
    return out


def parse_filter(text: str) -> dict[str, Any]:
    """A Qdrant filter in its JSON form (``{"must": [{"key": "lang", "match": {"value":
    "en"}}]}``), checked to be a JSON object."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"Qdrant filter is not JSON ({exc}); expected e.g. "
                          '\'{"must": [{"key": "lang", "match": {"value": "en"}}]}\'') from None
    if not isinstance(data, dict) or not set(data) <= {"must", "should", "must_not",
                                                        "min_should"}:
        raise ConfigError("Qdrant filter: expected a JSON object with must / should / "
                          f"must_not / min_should, found {text[:80]!r}")
    return data


def threshold_points(full_scan_kb: int, dim: int) -> int:
    """Vectors below which Qdrant's planner scans exactly (its ``indexing_threshold``)."""
    return full_scan_kb * 1024 // (4 * dim)


def index_use(*, exact: bool, points: int, indexed: int, threshold: int,
              matching: int | None) -> tuple[bool, str]:
    """Whether the HNSW graph answered, and why (the planner rule, applied to the counts).

    ``matching`` is the exact number of points a filter lets through (None: no filter).
    """
    if exact:
        return False, "exact=True: every point scored"
    if indexed == 0:
        return False, (f"no HNSW graph built ({points} points, 0 indexed): every point scored "
                       "(build the index)")
    part = "" if indexed >= points else (f"; {points - indexed} rows added after the build "
                                         "are scanned exactly until the next build")
    if matching is None:
        if indexed < threshold:
            return False, (f"{indexed} indexed vectors < full_scan_threshold ({threshold} "
                           "vectors): the planner scans exactly")
        return True, f"HNSW graph ({indexed} of {points} points indexed){part}"
    if matching < threshold:
        return False, (f"the filter matches {matching} points < full_scan_threshold "
                       f"({threshold} vectors): the planner scans them exactly")
    return True, (f"filtered HNSW search: {matching} points match (≥ threshold {threshold})"
                  f"{part}")


def edge_filter(qe: Any, data: Mapping[str, Any]) -> Any:
    """The JSON filter as ``qdrant_edge.Filter`` objects (the subset listed in the docs)."""
    lists = {part: [_edge_condition(qe, c) for c in _conditions(data, part)]
             for part in ("must", "should", "must_not") if part in data}
    min_should = data.get("min_should")
    if min_should is not None:
        if not isinstance(min_should, dict) or "min_count" not in min_should:
            raise ConfigError("Qdrant filter: min_should needs conditions and min_count")
        lists["min_should"] = qe.MinShould(
            [_edge_condition(qe, c) for c in _conditions(min_should, "conditions")],
            int(min_should["min_count"]))
    return qe.Filter(**lists)


def _conditions(data: Mapping[str, Any], part: str) -> list[Any]:
    value = data.get(part)
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        raise ConfigError(f"Qdrant filter: {part} must be a list of conditions")
    return value


_MATCH = {"value": "MatchValue", "any": "MatchAny", "except": "MatchExcept",
          "text": "MatchText", "text_any": "MatchTextAny", "phrase": "MatchPhrase",
          "prefix": "MatchPrefix"}


def _edge_condition(qe: Any, cond: Any) -> Any:
    if not isinstance(cond, dict):
        raise ConfigError(f"Qdrant filter: expected a condition object, found {cond!r}")
    if set(cond) & {"must", "should", "must_not", "min_should"}:
        return edge_filter(qe, cond)
    if "is_empty" in cond or "is_null" in cond:
        kind = "is_empty" if "is_empty" in cond else "is_null"
        cls = qe.IsEmptyCondition if kind == "is_empty" else qe.IsNullCondition
        return cls(str(cond[kind]["key"]))
    if "nested" in cond:
        return qe.NestedCondition(str(cond["nested"]["key"]),
                                  edge_filter(qe, cond["nested"]["filter"]))
    if "key" not in cond:
        raise ConfigError(f"Qdrant filter: unsupported condition {json.dumps(cond)[:80]}; "
                          "supported: key + match (value, any, except, text, text_any, "
                          "phrase, prefix) or range (gt, gte, lt, lte), is_empty, is_null, "
                          "nested, and sub-filters")
    key = str(cond["key"])
    if "match" in cond:
        (kind, value), = cond["match"].items()
        if kind not in _MATCH:
            raise ConfigError(f"Qdrant filter: match {kind!r} unsupported; expected one of "
                              f"{', '.join(_MATCH)}")
        return qe.FieldCondition(key, match=getattr(qe, _MATCH[kind])(value))
    if "range" in cond:
        return qe.FieldCondition(key, range=qe.RangeFloat(**{
            b: float(v) for b, v in cond["range"].items() if b in ("gt", "gte", "lt", "lte")}))
    raise ConfigError(f"Qdrant filter: condition on {key!r} needs match or range")
