"""The main measure split by query provenance (ARCHITECTURE §6, §12.6).

A set mixing real questions with synthetic ones measures two things: how the systems serve
people, and how they match the generator's phrasing. :func:`provenance_split` gives each
system's mean of the main measure on the real and the synthetic queries, on the verified
and the unverified ones, so a lead built only on synthetic queries shows. Query
provenance is ``{query_id: (source, verified)}`` (``source`` of ARCHITECTURE §5.1:
``synthetic`` is synthetic, every other source is real).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ProvenanceRow", "provenance_of", "provenance_shares", "provenance_split"]

GROUPS = ("real", "synthetic", "verified", "unverified")


def provenance_of(queries: Any) -> dict[str, tuple[str, bool]]:
    """``{query_id: (source, verified)}`` from a :class:`~searchbench.data.Queries` (or
    any iterable of records with ``id``, ``source``, ``verified``) or such a mapping."""
    if queries is None:
        return {}
    if isinstance(queries, Mapping):
        return {str(q): (str(v[0]), bool(v[1])) for q, v in queries.items()}
    return {q.id: (q.source, bool(q.verified)) for q in queries}


def _masks(query_ids: np.ndarray,
           provenance: Mapping[str, tuple[str, bool]]) -> dict[str, np.ndarray]:
    known = [provenance.get(q) for q in query_ids.tolist()]
    synthetic = np.array([k is not None and k[0] == "synthetic" for k in known], dtype=bool)
    verified = np.array([k is not None and k[1] for k in known], dtype=bool)
    has = np.array([k is not None for k in known], dtype=bool)
    return {"real": has & ~synthetic, "synthetic": synthetic, "verified": verified,
            "unverified": has & ~verified}


def provenance_shares(query_ids: np.ndarray,
                      provenance: Mapping[str, tuple[str, bool]]) -> dict[str, int]:
    """How many of ``query_ids`` are real, synthetic, verified, unverified (and ``total``)."""
    if not provenance:
        return {}
    masks = _masks(query_ids, provenance)
    return {**{g: int(m.sum()) for g, m in masks.items()}, "total": len(query_ids)}


@dataclass(frozen=True)
class ProvenanceRow:
    """The mean of ``measure`` per system over the queries of one provenance group."""

    group: str
    queries: int
    means: dict[str, float]


def provenance_split(query_ids: np.ndarray, scores: Mapping[str, Mapping[str, np.ndarray]],
                     measure: str,
                     provenance: Mapping[str, tuple[str, bool]]) -> list[ProvenanceRow]:
    """Per group (real, synthetic, verified, unverified) with at least one query: each
    system's mean ``measure`` over that group. Empty when the split would say nothing new:
    no provenance, or every query in the same group on both axes."""
    if not provenance:
        return []
    masks = _masks(query_ids, provenance)
    mixed = any(masks[a].any() and masks[b].any()
                for a, b in (("real", "synthetic"), ("verified", "unverified")))
    if not mixed:
        return []
    return [ProvenanceRow(g, int(m.sum()), {s: float(per[measure][m].mean())
                                            for s, per in scores.items()})
            for g, m in masks.items() if m.any()]
