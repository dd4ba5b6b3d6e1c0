"""NaN/inf vectors are refused where they enter: encoder output, cache write, cache read."""

from __future__ import annotations

import numpy as np
import pytest

from searchbench.errors import BackendError
from searchbench.retrieval.cache import EmbeddingCache, check_vectors, text_key

from .fakes import HashEncoder


class PoisonEncoder(HashEncoder):
    """HashEncoder whose vector of ``poison`` texts is NaN (or ``bad``)."""

    def __init__(self, bad: float = np.nan, **kw) -> None:
        super().__init__(dim=8, **kw)
        self.bad = bad

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = super()._embed(texts)
        for i, t in enumerate(texts):
            if "poison" in t:
                out[i, 3] = self.bad
        return out


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_encoder_output_names_the_text_and_nothing_of_the_batch_is_cached(tmp_path, bad):
    enc = PoisonEncoder(bad, cache=tmp_path, quiet=True)
    enc.cache_batch = 2
    # embedded longest first, two at a time: the two long texts, then the pill with "beta"
    texts = ["alpha alpha alpha", "gamma gamma gamma", "beta", "a poison pill"]
    # named by its position in the caller's list, not in the batch
    with pytest.raises(BackendError, match=r"text #3 \('a poison pill'\)") as info:
        enc.encode_documents(texts)
    assert "NaN or infinity" in str(info.value) and "1 of 2 in this batch" in str(info.value)
    shards = sorted(tmp_path.rglob("shard-*.npz"))
    assert len(shards) == 1  # the first, finite batch only
    with np.load(shards[0]) as data:
        assert np.isfinite(data["vectors"]).all()
        assert sorted(data["keys"].astype(str)) == sorted(text_key(t) for t in texts[:2])


def test_without_cache_too(tmp_path):
    with pytest.raises(BackendError, match="text #0"):
        PoisonEncoder(cache=False).encode_queries(["poison"])


def test_a_poisoned_cache_is_recomputed_not_served(tmp_path):
    enc = HashEncoder(dim=8, cache=tmp_path, quiet=True)
    texts = ["one two", "three"]
    good = enc.encode_documents(texts)
    cache = EmbeddingCache(enc.identity, tmp_path)
    [shard] = list(cache.folder.glob("shard-*.npz"))
    with np.load(shard) as data:
        keys, vectors = data["keys"], data["vectors"].copy()
    vectors[1] = np.nan  # a shard written before NaN was refused
    np.savez(shard, keys=keys, vectors=vectors)
    calls = len(enc.calls)
    again = HashEncoder(dim=8, cache=tmp_path, quiet=True)
    out = again.encode_documents(texts)
    np.testing.assert_array_equal(out, good)
    assert again.calls == [1] and calls == 1  # only the NaN text was embedded again


def test_cached_vectors_of_another_dimension_are_an_error(tmp_path):
    cache = EmbeddingCache("same-identity", tmp_path)
    cache.embed(["a"], lambda ts: np.ones((len(ts), 4)), quiet=True)
    cache = EmbeddingCache("same-identity", tmp_path)
    with pytest.raises(BackendError, match="different shapes"):
        cache.embed(["a", "b"], lambda ts: np.ones((len(ts), 6)), quiet=True)


def test_check_vectors_shape_and_kind():
    with pytest.raises(BackendError, match="one vector per text"):
        check_vectors(np.ones((2, 3)), ["a"], "model")
    with pytest.raises(BackendError, match="not a matrix of numbers"):
        check_vectors([["x", "y"]], ["a"], "model")
    with pytest.raises(BackendError, match="text #0"):
        check_vectors(np.full((1, 2), 1e300), ["a"], "model")  # float32 overflow: inf
    assert check_vectors(np.ones((1, 2)), ["a"], "m").dtype == np.float32
