"""Context tokens counted in one tokenizer batch equal the per-text token offsets (the
count chunking uses), for the packaged MiniLM: long texts are never truncated."""

from __future__ import annotations

import pytest

from searchbench.retrieval.encoders import encoder
from searchbench.retrieval.spec import context_token_counts

pytestmark = pytest.mark.slow  # loads the packaged MiniLM


def test_batched_counts_equal_the_token_offsets_of_each_text(tmp_path):
    enc = encoder("minilm", cache=tmp_path)
    texts = {"short": "Use append to add an item.", "empty": "",
             "unicode": "naïve café — 東京 😀 straße",
             "long": " ".join(f"word{i} ünïcode" for i in range(900)),  # > 512 tokens
             "code": "def f(x):\n    return {k: v for k, v in x.items() if v}\n"}
    ids = ["long", "short", "empty", "unicode", "code", "short"]
    counts = context_token_counts(texts, ids, encoder=enc)
    assert counts == {i: len(enc.token_offsets(texts[i])) for i in ids}
    assert counts["long"] > 512 and counts["empty"] == 0
    # without a model: whitespace-separated words
    assert context_token_counts(texts, ["short", "empty"]) == {"short": 6, "empty": 0}
