"""The one vocabulary: canonical names, aliases and errors of every concept, and that the
library, the experiment TOML and the CLI all take them from there."""

from __future__ import annotations

import math

import pytest

from searchbench import vocab
from searchbench.errors import ConfigError

# (function, {spelling: canonical}, a bad value, the valid values the error lists)
CASES = [
    (vocab.canonical_metric,
     {"cosine": "cosine", "cos": "cosine", "COS": "cosine", "angular": "cosine", "ip": "ip",
      "dot": "ip", "inner_product": "ip", "l2": "l2", "euclidean": "l2", "l2sq": "l2"},
     "hamming", "cosine, ip, l2"),
    (vocab.canonical_test,
     {"randomization": "randomization", "permutation": "randomization",
      "fisher": "randomization", "randomisation": "randomization", "t": "t", "T": "t",
      "ttest": "t", "t-test": "t", "student": "t", "paired-t": "t", "wilcoxon": "wilcoxon",
      "signed-rank": "wilcoxon", "bootstrap": "bootstrap"},
     "anova", "randomization, t, wilcoxon, bootstrap"),
    (vocab.canonical_correction,
     {"holm": "holm", "bonferroni": "bonferroni", "bh": "bh", "BH": "bh", "fdr": "bh",
      "fdr_bh": "bh", "benjamini-hochberg": "bh", "benjamini_hochberg": "bh",
      "none": "none"},
     "sidak", "holm, bonferroni, bh, none"),
    (vocab.canonical_missing, {"zero": "zero", "skip": "skip", " Skip ": "skip"},
     "drop", "zero, skip"),
    (vocab.canonical_unanswerable, {"skip": "skip", "zero": "zero", "Exclude": "skip",
                                    "drop": "skip", "trec_eval": "zero", "score": "zero"},
     "ignore", "skip, zero"),
    (vocab.canonical_keep, {"max": "max", "first": "first"}, "last", "max, first"),
    (vocab.canonical_level, {"doc": "doc", "document": "doc", "chunk": "chunk",
                             "passage": "chunk"}, "page", "doc, chunk"),
    (vocab.canonical_fusion, {"rrf": "rrf", "reciprocal-rank": "rrf", "weighted": "weighted",
                              "linear": "weighted"}, "borda", "rrf, weighted"),
    (vocab.canonical_norm, {"minmax": "minmax", "min-max": "minmax", "zscore": "zscore",
                            "z-score": "zscore"}, "l2", "minmax, zscore"),
    (vocab.canonical_bm25_method, {"lucene": "lucene", "robertson": "robertson",
                                   "atire": "atire", "bm25l": "bm25l", "bm25+": "bm25+",
                                   "bm25plus": "bm25+"}, "magic", "lucene, robertson"),
    (vocab.canonical_backend, {"auto": "auto", "numpy": "numpy", "kernel": "kernel",
                               "faiss": "faiss"}, "gpu", "auto, numpy, kernel, faiss"),
    (vocab.canonical_retriever_type, {"bm25": "bm25", "dense": "dense", "hybrid": "hybrid",
                                      "sparse": "bm25"}, "splade", "bm25, dense, hybrid"),
    (vocab.canonical_stemmer, {"english": "english", "English": "english", "en": "english",
                               "german": "german", "porter": "porter"},
     "klingon", "english, arabic"),
    (vocab.canonical_stopwords, {"en": "en", "english": "en", "de": "de", "german": "de",
                                 "en_plus": "en_plus"}, "klingon", "en, en_plus"),
]


@pytest.mark.parametrize(("fn", "spellings", "bad", "listed"), CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_canonical_names_aliases_and_errors(fn, spellings, bad, listed):
    for given, want in spellings.items():
        assert fn(given) == want, given
    with pytest.raises(ConfigError) as err:
        fn(bad, "key 'x.y'")
    msg = str(err.value)
    assert msg.startswith("key 'x.y': unknown ") and repr(bad) in msg and listed in msg
    with pytest.raises(ConfigError):
        fn(3)  # not a string


@pytest.mark.parametrize("fn", [vocab.canonical_stemmer, vocab.canonical_stopwords])
@pytest.mark.parametrize("off", [None, False, "none", "None", "", "false", "off"])
def test_stemmer_and_stopwords_can_be_switched_off_every_way(fn, off):
    assert fn(off) is None


def test_true_means_the_default_stemmer_and_stopwords():
    assert vocab.canonical_stemmer(True) == "english"
    assert vocab.canonical_stopwords(True) == "en"


def test_tuples_have_their_canonical_values_first_and_choices_add_the_aliases():
    assert vocab.METRICS == ("cosine", "ip", "l2")
    assert vocab.values("metric") == vocab.METRICS
    assert vocab.choices("metric")[:3] == ["cosine", "ip", "l2"]
    assert {"cos", "dot", "inner_product", "euclidean"} <= set(vocab.choices("metric"))
    for concept in ("metric", "test", "correction", "level", "fusion", "normalisation"):
        for spelling in vocab.choices(concept):  # every listed alias resolves
            assert vocab.canonical(concept, spelling) in vocab.values(concept)


def test_stemmers_are_pystemmers_algorithms():
    stemmer = pytest.importorskip("Stemmer")
    assert set(vocab.STEMMERS) == set(stemmer.algorithms())


def test_stopword_codes_are_the_lists_bm25s_knows():
    tokenization = pytest.importorskip("bm25s.tokenization")
    for code in vocab.STOPWORDS:
        assert len(tokenization._infer_stopwords(code)) > 10, code


def test_one_default_measure_list_everywhere():
    from searchbench.cli import compare_cmd, eval_cmd
    from searchbench.experiment import ExperimentConfig
    from searchbench.measures import parse_measures

    assert [m.name for m in parse_measures(list(vocab.DEFAULT_MEASURES))] == \
        list(vocab.DEFAULT_MEASURES)
    assert list(vocab.DEFAULT_MEASURES) == eval_cmd.DEFAULT_MEASURES
    assert compare_cmd.DEFAULT_MEASURES == vocab.DEFAULT_MEASURES
    assert ExperimentConfig("x", ["pyref"], []).measures == list(vocab.DEFAULT_MEASURES)


def test_one_set_of_statistics_defaults_everywhere():
    import inspect

    from searchbench.comparison import compare, compare_results
    from searchbench.experiment import ExperimentConfig

    d = vocab.DEFAULT_STATS
    for fn in (compare, compare_results):
        params = inspect.signature(fn).parameters
        for name in ("test", "correction", "alpha", "confidence", "seed", "n_permutations"):
            assert params[name].default == getattr(d, name), (fn.__name__, name)
    assert ExperimentConfig("x", ["pyref"], []).stats == d


@pytest.mark.parametrize(("changes", "needle"), [
    ({"alpha": 0}, "alpha is 0; expected a number strictly between 0 and 1"),
    ({"alpha": math.nan}, "alpha is nan"),
    ({"confidence": 1.0}, "confidence is 1.0"),
    ({"seed": -1}, "seed is -1; expected an integer >= 0"),
    ({"seed": True}, "seed is True"),
    ({"n_permutations": 0}, "n_permutations is 0; expected an integer >= 1"),
    ({"n_permutations": 10**8}, "and <= 10000000"),
    ({"test": "anova"}, "unknown test 'anova'"),
    ({"correction": "sidak"}, "unknown correction 'sidak'"),
])
def test_statistics_settings_are_validated(changes, needle):
    with pytest.raises(ConfigError, match=needle):
        vocab.StatsSettings.from_mapping(changes)


def test_statistics_settings_canonicalise_aliases():
    s = vocab.StatsSettings.from_mapping({"test": "permutation", "correction": "fdr"})
    assert (s.test, s.correction) == ("randomization", "bh")


@pytest.mark.parametrize(("value", "ok"), [(0.5, True), (0, True), (1, True), (-0.1, False),
                                           (1.1, False), (math.nan, False), (math.inf, False),
                                           ("0.5", False), (True, False)])
def test_check_finite_bounds(value, ok):
    if ok:
        assert vocab.check_finite(value, "b", minimum=0, maximum=1) == float(value)
    else:
        with pytest.raises(ConfigError, match=r"^b is .*; expected a finite number >= 0 and "
                                              r"<= 1$"):
            vocab.check_finite(value, "b", minimum=0, maximum=1)


def test_library_and_ann_accept_both_spellings_of_a_metric():
    """``Dense(metric="cos")`` and ``ann --metric cosine`` (and the reverse) both work."""
    import numpy as np

    from searchbench.knn import exact_knn
    from searchbench.retrieval import Dense, Encoder

    class HashEncoder(Encoder):
        name = "hash"
        identity = "hash:4"

        def _embed(self, texts):
            return np.ones((len(texts), 4), dtype=np.float32)

    assert Dense(HashEncoder(), metric="cos").metric == "cosine"
    assert Dense(HashEncoder(), metric="cosine").metric == "cosine"
    assert Dense(HashEncoder(), metric="dot").metric == "ip"
    x = np.eye(4, dtype=np.float32) + 0.1
    a = exact_knn(x, x[:2], 2, "cos", extra=0)
    b = exact_knn(x, x[:2], 2, "cosine", extra=0)
    np.testing.assert_array_equal(a.ids, b.ids)


def test_library_accepts_the_aliases_of_every_option():
    import searchbench as sb
    from searchbench.retrieval import BM25, fuse

    bm25 = BM25(method="BM25Plus", stemmer="none", stopwords=False)
    assert (bm25.method, bm25.stemmer_name, bm25.stopwords) == ("bm25+", None, None)
    run = sb.Run.from_dict({"q": {"a": 2.0, "b": 1.0}})
    assert fuse([run, run], "linear", norm="min-max").to_dict() == \
        fuse([run, run], "weighted", norm="minmax").to_dict()
    qrels = sb.Qrels.from_dict({"q": {"a": 1}})
    assert sb.evaluate(qrels, run, ["P@1"], missing="Skip").mean == {"P@1": 1.0}


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"k1": math.nan}, "k1 is nan"), ({"k1": -1}, "k1 is -1"), ({"b": 2}, "b is 2"),
    ({"stemmer": "klingon"}, "unknown stemmer 'klingon'"),
    ({"stopwords": "klingon"}, "unknown stop words 'klingon'"),
    ({"method": "magic"}, "unknown BM25 method 'magic'"),
])
def test_bm25_refuses_bad_settings_when_made(kwargs, needle):
    from searchbench.retrieval import BM25

    with pytest.raises(ConfigError, match=needle):
        BM25(**kwargs)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"rrf_k": -1}, "rrf_k is -1"), ({"rrf_k": math.nan}, "rrf_k is nan"),
    ({"fusion": "weighted", "weights": [math.nan, 1]}, r"weights\[0\] is nan"),
    ({"fusion": "weighted", "weights": [1]}, "1 weights for 2 runs"),
])
def test_hybrid_refuses_bad_settings_when_made(kwargs, needle):
    from searchbench.retrieval import BM25, Hybrid

    with pytest.raises(ConfigError, match=needle):
        Hybrid([BM25(), BM25()], **kwargs)


def test_a_custom_stopword_list_is_kept_and_used():
    import searchbench as sb
    from searchbench.retrieval import BM25

    assert vocab.canonical_stopwords(["the", "a"]) == ("the", "a")
    with pytest.raises(ConfigError):
        vocab.canonical_stopwords(["the", 3])
    corpus = sb.Corpus.from_dict({"d1": "zebra stripes", "d2": "zebra zebra horse"})
    run = BM25(stopwords=["zebra"], stemmer=None).index(corpus).search(
        sb.Queries.from_dict({"q": "zebra"}), k=5)
    assert len(run) == 0  # the only query word is a stop word: nothing matches
