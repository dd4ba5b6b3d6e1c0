"""How many units a model will truncate, measured with its own tokenizer before embedding.

A transformer encoder embeds at most ``max_seq_length`` tokens, special tokens included
(all-MiniLM-L6-v2: 256 = [CLS] + 254 text tokens + [SEP]); the rest of a longer text is
ignored. :func:`length_report` counts, before anything is embedded, the units whose
``text tokens + special tokens > max_seq_length`` and how long they are (median and 90th
percentile in model tokens, numpy's linear percentile); :func:`warn_truncation` turns a
report with truncated units into one :class:`~searchbench.errors.SearchbenchWarning`.

Whole-document embedding deliberately stays the default (no chunker is chosen for the
user): it is what sentence-transformers, BEIR and MTEB do, so scores stay comparable with
published numbers and earlier runs, and a chunk size is a modelling decision. Instead the
truncation is reported — warning, run metadata / sidecar (``truncation``), experiment
report — and the warning names the fix: ``--chunk tokens:N`` (a document then ranks at its
best chunk, i.e. max over chunks, at ``--level doc``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import SearchbenchWarning, user_stacklevel

__all__ = ["LengthReport", "length_report", "warn_truncation"]


@dataclass(frozen=True)
class LengthReport:
    """Lengths of the units of one index in the encoder's tokens, against its limit."""

    model: str
    units: int
    limit: int | None  # max_seq_length, special tokens included (None: no limit)
    special_tokens: int
    truncated: int  # units with text tokens + special tokens > limit
    median_tokens: float | None  # text tokens of the truncated units (None if none)
    p90_tokens: float | None
    max_tokens: int | None
    unit: str = "document"  # "document" or "chunk"

    @property
    def text_limit(self) -> int | None:
        """Text tokens that are embedded (the limit less the special tokens)."""
        return None if self.limit is None else self.limit - self.special_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text_limit": self.text_limit}

    def message(self) -> str:
        """The warning sentence (empty when nothing is truncated)."""
        if not self.truncated:
            return ""
        fix = (f"split documents into chunks of at most {self.text_limit} tokens "
               "(run --chunk tokens:N, chunkers = [\"tokens:N\"] in an experiment, "
               "TokenChunker(N) in Python; at the doc level a document then ranks at its "
               "best chunk)"
               if self.unit == "document" else
               f"use a smaller chunk size (at most {self.text_limit} tokens with the title)")
        return (f"{self.truncated} of {self.units} {self.unit}s exceed {self.model}'s "
                f"max_seq_length of {self.limit} tokens ({self.text_limit} of text + "
                f"{self.special_tokens} special); their length in model tokens: median "
                f"{self.median_tokens:,.0f}, p90 {self.p90_tokens:,.0f}, max "
                f"{self.max_tokens:,}. Only the first {self.text_limit} tokens of each are "
                f"embedded, the rest is ignored: {fix}")


def length_report(encoder: Any, texts: Sequence[str], unit: str = "document") -> LengthReport:
    """Count the ``texts`` longer than ``encoder.max_seq_length`` (tokenizer of the model).

    ``encoder`` needs ``name``, ``max_seq_length``, ``special_tokens`` and
    ``token_lengths(texts)``; with no limit (static models, HTTP endpoints) nothing is
    tokenised and nothing counts as truncated.
    """
    limit = getattr(encoder, "max_seq_length", None)
    special = int(getattr(encoder, "special_tokens", 0))
    if not limit or not len(texts):
        return LengthReport(encoder.name, len(texts), limit or None, special, 0, None, None,
                            None, unit)
    lengths = np.asarray(encoder.token_lengths(list(texts)), dtype=np.int64)
    over = lengths[lengths + special > limit]
    if not len(over):
        return LengthReport(encoder.name, len(texts), limit, special, 0, None, None, None,
                            unit)
    median, p90 = np.percentile(over, [50, 90])
    return LengthReport(encoder.name, len(texts), limit, special, len(over),
                        float(median), float(p90), int(over.max()), unit)


def warn_truncation(report: LengthReport) -> None:
    """One :class:`SearchbenchWarning` if ``report`` counts truncated units."""
    if report.truncated:
        warnings.warn(report.message(), SearchbenchWarning, stacklevel=user_stacklevel())
