"""Exact top-k ties, dense search vs brute force, the embedding cache and its resume."""

from __future__ import annotations

import numpy as np
import pytest

import searchbench as sb
from searchbench.errors import ConfigError, SearchbenchWarning
from searchbench.retrieval import Dense, EmbeddingCache, Hybrid, TokenChunker, exact_topk

from .fakes import HashEncoder

DOCS = {f"d{i:02d}": f"word{i % 5} word{i % 7} shared topic{i % 3}" for i in range(40)}
QUERIES = {"q1": "word1 topic2", "q2": "word3 word4", "q3": "nothing matches"}


def test_exact_topk_breaks_ties_by_id_descending():
    scores = np.array([[1.0, 2.0, 2.0, 2.0, 0.5]])
    codes = np.arange(5)[None, :]
    key = np.array([0, 1, 2, 3, 4])  # code order == id order here
    c, v = exact_topk(scores, codes, key, 2)
    assert c.tolist() == [[3, 2]] and v.tolist() == [[2.0, 2.0]]
    c, _ = exact_topk(scores, codes, key, 5)
    assert c.tolist() == [[3, 2, 1, 0, 4]]


@pytest.mark.parametrize("backend", ["numpy", "kernel", "faiss"])
@pytest.mark.parametrize("metric", ["cos", "ip", "l2"])
def test_dense_equals_brute_force(tmp_path, metric, backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    enc = HashEncoder(cache=tmp_path)
    dense = Dense(enc, metric=metric, block_size=7, backend=backend)
    dense.index(sb.Corpus.from_dict(DOCS))
    run = dense.search(sb.Queries.from_dict(QUERIES), k=10)
    d = enc._embed(list(DOCS.values()))
    q = enc._embed(list(QUERIES.values()))
    if metric == "cos":
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
    s = -((q[:, None, :] - d[None]) ** 2).sum(-1) if metric == "l2" else q @ d.T
    ids = list(DOCS)
    for i, qid in enumerate(QUERIES):
        want = sorted(zip(s[i].tolist(), ids, strict=True), reverse=True)[:10]
        got = run.ranking(qid)
        assert [x for x, _ in got] == [x for _, x in want]
        assert [y for _, y in got] == pytest.approx([y for y, _ in want], abs=1e-5)


def test_cache_resumes_after_interruption(tmp_path):
    texts = [f"text number {i}" for i in range(10)]
    enc = HashEncoder(fail_after=2, cache=tmp_path)
    cache = EmbeddingCache(enc.identity, tmp_path, batch_size=3)
    with pytest.raises(KeyboardInterrupt):
        cache.embed(texts, enc._embed)
    assert enc.calls == [3, 3]                       # two batches stored before the stop
    enc.fail_after = None
    again = EmbeddingCache(enc.identity, tmp_path, batch_size=3)
    out = again.embed(texts, enc._embed)
    assert enc.calls == [3, 3, 3, 1]                 # only the 4 missing texts embedded
    assert again.hits == 6 and again.misses == 4
    np.testing.assert_array_equal(out, HashEncoder()._embed(texts))
    assert not list((again.folder).glob("*.tmp"))    # nothing half-written left behind


def test_cache_skips_texts_another_process_stored_meanwhile(tmp_path):
    texts = [f"t{i}" for i in range(6)]
    enc = HashEncoder()
    other = EmbeddingCache(enc.identity, tmp_path, batch_size=3)

    def embed_and_race(batch):
        if not enc.calls:  # while we embed batch 1, "another process" stores batch 2
            other.embed(texts[3:], HashEncoder()._embed)
        return enc._embed(batch)

    cache = EmbeddingCache(enc.identity, tmp_path, batch_size=3)
    out = cache.embed(texts, embed_and_race)
    assert enc.calls == [3] and cache.misses == 3 and cache.hits == 3
    np.testing.assert_array_equal(out, HashEncoder()._embed(texts))


def test_cache_embeds_longest_first_and_returns_vectors_in_the_callers_order(tmp_path):
    """Model calls hold texts of similar length (little padding), as sentence-transformers
    orders one call's texts; the caller still gets one vector per text, in its order."""
    texts = [" ".join(["w"] * n) + f" t{n}" for n in (1, 9, 3, 12, 5, 7, 2, 11)]
    seen: list[list[str]] = []

    def embed(batch):
        seen.append(list(batch))
        return HashEncoder()._embed(batch)

    out = EmbeddingCache("hash:64", tmp_path, batch_size=4).embed(texts, embed, step=2)
    assert [len(b) for b in seen] == [2, 2, 2, 2]
    lengths = [len(t) for b in seen for t in b]
    assert lengths == sorted(lengths, reverse=True)
    np.testing.assert_array_equal(out, HashEncoder()._embed(texts))


def test_a_cache_used_again_or_by_two_calls_at_once_embeds_no_cached_text_again(tmp_path):
    """Each ``embed`` call reads every shard itself: a second call on the same object (or
    one running at once on another thread, as a framework's workers call the encoder)
    gets the cached vectors, not a fresh embedding in another batch (other rounding)."""
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    EmbeddingCache("hash:64", tmp_path).embed(texts, HashEncoder()._embed)  # stored
    enc = HashEncoder(cache=tmp_path)
    cache = EmbeddingCache(enc.identity, tmp_path)
    for _ in range(2):
        cache.embed(texts, enc._embed)
        assert enc.calls == [] and cache.hits == 3

    class Interleaved(HashEncoder):
        """A second call starts just after the first one made its cache."""

        @property
        def last_cache(self):
            return self._last

        @last_cache.setter
        def last_cache(self, value):
            self._last = value
            if value is not None and not getattr(self, "_nested", False):
                self._nested = True
                self.encode_queries(texts[:1])

    twice = Interleaved(cache=tmp_path)
    out = twice.encode_queries(texts)
    assert twice.calls == []
    np.testing.assert_array_equal(out, HashEncoder()._embed(texts))


def test_cache_is_keyed_by_model_identity(tmp_path):
    a = EmbeddingCache("model-a", tmp_path)
    a.embed(["x"], lambda t: np.ones((len(t), 2)))
    b = EmbeddingCache("model-b", tmp_path)
    out = b.embed(["x"], lambda t: np.zeros((len(t), 2)))
    assert b.misses == 1 and out.tolist() == [[0.0, 0.0]]


def test_hybrid_rrf_over_chunks(tmp_path):
    corpus = sb.Corpus.from_dict(DOCS)
    queries = sb.Queries.from_dict(QUERIES)
    hybrid = Hybrid([sb.retrieval.BM25(stemmer=None), Dense(HashEncoder(cache=tmp_path))],
                    fusion="rrf")
    run = hybrid.index(corpus, chunker=TokenChunker(2, overlap=1)).search(queries, k=5)
    assert run.metadata["level"] == "doc" and run.metadata["fusion"] == "rrf"
    assert all(len(run.ranking(q)) == 5 for q in QUERIES)
    assert all("#" not in d for d, _ in run.ranking("q1"))  # doc level: doc ids
    chunk_run = hybrid.search(queries, k=5, level="chunk")
    assert all("#" in d for d, _ in chunk_run.ranking("q1"))


def test_chunks_longer_than_max_seq_length_warn_once_with_the_count(tmp_path):
    # every DOCS text is 4 words = 4 hash tokens: a limit of 3 cuts all 40 chunks
    enc = HashEncoder(cache=tmp_path)
    enc.max_seq_length = 3
    with pytest.warns(SearchbenchWarning) as caught:
        Dense(enc).index(sb.Corpus.from_dict(DOCS), chunker=TokenChunker(16))
    assert [str(w.message)[:56] for w in caught] == [
        "40 of 40 chunks exceed hash's max_seq_length of 3 tokens"]


def test_chunk_size_above_max_seq_length_alone_does_not_warn(tmp_path):
    # chunks of up to 16 tokens, but every chunk has 4 (< 8): nothing is truncated
    enc = HashEncoder(cache=tmp_path)
    enc.max_seq_length = 8
    dense = Dense(enc).index(sb.Corpus.from_dict(DOCS), chunker=TokenChunker(16))
    assert dense.truncated_units == 0


def test_bad_inputs(tmp_path):
    with pytest.raises(ConfigError, match="cosine, ip, l2"):
        Dense(HashEncoder(), metric="hamming")
    with pytest.raises(ConfigError, match="index"):
        Dense(HashEncoder()).search(sb.Queries.from_dict(QUERIES))
    with pytest.raises(ConfigError, match="never downloads"):
        sb.retrieval.encoder("BAAI/bge-small-en-v1.5")
    with pytest.raises(ConfigError, match="minilm"):
        sb.retrieval.encoder("no-such-model")
