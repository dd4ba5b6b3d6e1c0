"""The one vocabulary of searchbench: every enumerated option, its canonical spelling and
its aliases, shared by the library, the experiment TOML and the command line.

Each concept has a ``Literal`` type, a tuple of canonical values (the order shown to
users, default first) and a ``canonical_*`` function that maps any accepted spelling
(case-insensitive, aliases included) to the canonical one or raises
:class:`~searchbench.errors.ConfigError` listing the valid values and aliases. The CLI
builds its ``click.Choice`` lists from :func:`choices` (canonical values + aliases), so
``Dense(metric="cos")``, ``run --metric cos`` and ``ann --metric cosine`` all agree.

This module is the bottom layer: it imports nothing from searchbench but ``errors``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .errors import ConfigError

__all__ = [
    "BACKENDS",
    "BM25_METHODS",
    "CALLABLE_TYPES",
    "CORRECTIONS",
    "DEFAULT_MEASURES",
    "DEFAULT_STATS",
    "FORMATS",
    "FUSIONS",
    "KEEP_POLICIES",
    "LEVELS",
    "MAX_RESAMPLES",
    "METRICS",
    "MISSING_POLICIES",
    "NORMS",
    "RETRIEVER_TYPES",
    "STEMMERS",
    "STOPWORDS",
    "TESTS",
    "UNANSWERABLE_POLICIES",
    "Backend",
    "Bm25Method",
    "Correction",
    "Format",
    "Fusion",
    "KeepPolicy",
    "Level",
    "Metric",
    "MissingPolicy",
    "Norm",
    "RetrieverType",
    "StatsSettings",
    "TestName",
    "UnanswerablePolicy",
    "canonical",
    "canonical_backend",
    "canonical_bm25_method",
    "canonical_correction",
    "canonical_format",
    "canonical_fusion",
    "canonical_keep",
    "canonical_level",
    "canonical_metric",
    "canonical_missing",
    "canonical_norm",
    "canonical_retriever_type",
    "canonical_stemmer",
    "canonical_stopwords",
    "canonical_test",
    "canonical_unanswerable",
    "check_finite",
    "check_positive_int",
    "check_probability",
    "choices",
    "valid_values",
    "values",
]

# -- the concepts -----------------------------------------------------------------------------
Metric = Literal["cosine", "ip", "l2"]
METRICS: tuple[Metric, ...] = ("cosine", "ip", "l2")

TestName = Literal["randomization", "t", "wilcoxon", "bootstrap"]
TESTS: tuple[TestName, ...] = ("randomization", "t", "wilcoxon", "bootstrap")

Correction = Literal["holm", "bonferroni", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bonferroni", "bh", "none")

MissingPolicy = Literal["zero", "skip"]
MISSING_POLICIES: tuple[MissingPolicy, ...] = ("zero", "skip")

#: Queries an evaluation set marks ``"no_answer": true`` (ARCHITECTURE §4.4): ``skip`` leaves
#: them out of every measure (the default), ``zero`` scores them as trec_eval does (0 where
#: the qrels hold no relevant document).
UnanswerablePolicy = Literal["skip", "zero"]
UNANSWERABLE_POLICIES: tuple[UnanswerablePolicy, ...] = ("skip", "zero")

KeepPolicy = Literal["max", "first"]
KEEP_POLICIES: tuple[KeepPolicy, ...] = ("max", "first")

Level = Literal["doc", "chunk"]
LEVELS: tuple[Level, ...] = ("doc", "chunk")

Fusion = Literal["rrf", "weighted"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "weighted")

Norm = Literal["minmax", "zscore"]
NORMS: tuple[Norm, ...] = ("minmax", "zscore")

Bm25Method = Literal["lucene", "robertson", "atire", "bm25l", "bm25+"]
BM25_METHODS: tuple[Bm25Method, ...] = ("lucene", "robertson", "atire", "bm25l", "bm25+")

Backend = Literal["auto", "numpy", "kernel", "faiss"]
BACKENDS: tuple[Backend, ...] = ("auto", "numpy", "kernel", "faiss")

RetrieverType = Literal["bm25", "dense", "hybrid", "db", "http", "python", "langchain",
                        "llamaindex", "haystack"]
RETRIEVER_TYPES: tuple[RetrieverType, ...] = ("bm25", "dense", "hybrid", "db", "http", "python",
                                              "langchain", "llamaindex", "haystack")
#: Retriever types that are the user's own object, named by ``target = "module:factory"``.
CALLABLE_TYPES: tuple[str, ...] = ("python", "langchain", "llamaindex", "haystack")

#: What a command writes or prints, one word per format, shared by every ``--format`` of the
#: command line (each command accepts the subset it can write, ARCHITECTURE §9.1): ``table``
#: and ``text`` are for people, the others for programs and other tools.
Format = Literal["table", "text", "json", "tsv", "csv", "trec", "markdown", "latex", "html",
                 "native", "beir", "parquet", "arrow"]
FORMATS: tuple[Format, ...] = ("table", "text", "json", "tsv", "csv", "trec", "markdown",
                               "latex", "html", "native", "beir", "parquet", "arrow")

#: Snowball stemmers of PyStemmer 2.x (``Stemmer.algorithms()``; a test checks they agree).
STEMMERS: tuple[str, ...] = (
    "english", "arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch",
    "dutch_porter", "esperanto", "estonian", "finnish", "french", "german", "greek", "hindi",
    "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali", "norwegian",
    "persian", "polish", "porter", "portuguese", "romanian", "russian", "serbian", "sesotho",
    "spanish", "swedish", "tamil", "turkish", "yiddish")
#: Stop-word lists of bm25s, by ISO 639-1 code (``en_plus``: bm25s's longer English list).
STOPWORDS: tuple[str, ...] = ("en", "en_plus", "da", "de", "es", "fr", "it", "ko", "nl", "no",
                              "pt", "ru", "sv", "tr", "zh")

#: The default measures of ``eval``, ``compare``, experiments and Python alike:
#: nDCG@10 (graded quality of the first page, BEIR's headline measure), RR@10 (how soon the
#: first relevant result comes, MS MARCO's), R@10 (what a RAG prompt of ten results holds),
#: R@100 (what a re-ranker is given), AP (trec_eval's classic whole-ranking summary) and P@10.
#: Each answers a different question; more would only spend the multiple-comparison budget.
DEFAULT_MEASURES: tuple[str, ...] = ("nDCG@10", "RR@10", "R@10", "R@100", "AP", "P@10")

# -- aliases (lower case) ---------------------------------------------------------------------
_ALIASES: dict[str, dict[str, str]] = {
    "metric": {"cos": "cosine", "angular": "cosine", "dot": "ip", "inner_product": "ip",
               "inner-product": "ip", "euclidean": "l2", "l2sq": "l2"},
    "test": {"fisher": "randomization", "randomisation": "randomization",
             "permutation": "randomization", "student": "t", "ttest": "t", "t-test": "t",
             "paired-t": "t", "signed-rank": "wilcoxon"},
    "correction": {"benjamini-hochberg": "bh", "benjamini_hochberg": "bh", "fdr": "bh",
                   "fdr_bh": "bh"},
    "missing policy": {},
    "unanswerable policy": {"exclude": "skip", "drop": "skip", "score": "zero",
                            "trec_eval": "zero"},
    "keep policy": {},
    "level": {"document": "doc", "passage": "chunk"},
    "fusion": {"reciprocal-rank": "rrf", "linear": "weighted"},
    "normalisation": {"min-max": "minmax", "min_max": "minmax", "z-score": "zscore",
                      "z_score": "zscore"},
    "BM25 method": {"bm25plus": "bm25+"},
    "backend": {},
    "retriever type": {"lexical": "bm25", "sparse": "bm25"},
    "stemmer": {"en": "english"},
    "format": {"md": "markdown", "tex": "latex", "jsonl": "json", "txt": "text",
               "pq": "parquet", "feather": "arrow", "ipc": "arrow"},
    "stop words": {"english": "en", "english_plus": "en_plus", "danish": "da",
                   "german": "de", "spanish": "es", "french": "fr", "italian": "it",
                   "korean": "ko", "dutch": "nl", "norwegian": "no", "portuguese": "pt",
                   "russian": "ru", "swedish": "sv", "turkish": "tr", "chinese": "zh"},
}
_VALUES: dict[str, tuple[str, ...]] = {
    "metric": METRICS, "test": TESTS, "correction": CORRECTIONS,
    "missing policy": MISSING_POLICIES, "unanswerable policy": UNANSWERABLE_POLICIES,
    "keep policy": KEEP_POLICIES, "level": LEVELS,
    "fusion": FUSIONS, "normalisation": NORMS, "BM25 method": BM25_METHODS,
    "backend": BACKENDS, "retriever type": RETRIEVER_TYPES, "stemmer": STEMMERS,
    "stop words": STOPWORDS, "format": FORMATS,
}


def values(concept: str) -> tuple[str, ...]:
    """The canonical values of ``concept`` (e.g. ``values("metric")``)."""
    return _VALUES[concept]


def choices(concept: str) -> list[str]:
    """Every accepted spelling of ``concept``: canonical values first, then aliases (what
    the CLI's ``click.Choice`` offers)."""
    return [*_VALUES[concept], *_ALIASES[concept]]


def valid_values(concept: str) -> str:
    """``'a, b, c (aliases: x=a, y=b)'`` for messages."""
    text = ", ".join(_VALUES[concept])
    aliases = _ALIASES[concept]
    if aliases:
        text += " (aliases: " + ", ".join(f"{a}={c}" for a, c in aliases.items()) + ")"
    return text


def canonical(concept: str, value: Any, key: str | None = None) -> str:
    """The canonical spelling of ``value`` for ``concept`` (see the module docstring);
    ``key`` names the option or config key in the message."""
    if isinstance(value, str):
        low = value.strip().lower()
        low = _ALIASES[concept].get(low, low)
        if low in _VALUES[concept]:
            return low
    where = f"{key}: " if key else ""
    raise ConfigError(f"{where}unknown {concept} {value!r}; expected one of "
                      f"{valid_values(concept)}")


_Word = TypeVar("_Word", bound=str)


def _one_of(values: tuple[_Word, ...], word: str) -> _Word:
    """``word`` (a canonical spelling, checked by :func:`canonical`) typed as one of
    ``values``."""
    return values[values.index(word)]


def canonical_metric(value: Any, key: str | None = None) -> Metric:
    """``cos``/``angular`` → ``cosine``, ``dot``/``inner_product`` → ``ip``,
    ``euclidean``/``l2sq`` → ``l2`` (squared Euclidean distance)."""
    return _one_of(METRICS, canonical("metric", value, key))


def canonical_test(value: Any, key: str | None = None) -> TestName:
    """Paired test: ``randomization`` (Fisher, permutation), ``t``, ``wilcoxon``,
    ``bootstrap``."""
    return _one_of(TESTS, canonical("test", value, key))


def canonical_correction(value: Any, key: str | None = None) -> Correction:
    """Multiple-comparison correction: ``holm``, ``bonferroni``, ``bh`` (FDR), ``none``."""
    return _one_of(CORRECTIONS, canonical("correction", value, key))


def canonical_missing(value: Any, key: str | None = None) -> MissingPolicy:
    """Qrels queries absent from a run: ``zero`` (trec_eval -c) or ``skip``."""
    return _one_of(MISSING_POLICIES, canonical("missing policy", value, key))


def canonical_unanswerable(value: Any, key: str | None = None) -> UnanswerablePolicy:
    """Queries marked ``no_answer``: ``skip`` (left out of the measures) or ``zero``
    (scored as trec_eval scores them)."""
    return _one_of(UNANSWERABLE_POLICIES, canonical("unanswerable policy", value, key))


def canonical_keep(value: Any, key: str | None = None) -> KeepPolicy | None:
    """Duplicate (query, doc) lines: ``max``, ``first``, or None (an error)."""
    if value is None:
        return None
    return _one_of(KEEP_POLICIES, canonical("keep policy", value, key))


def canonical_level(value: Any, key: str | None = None) -> Level:
    """Evaluation level: ``doc`` (a document ranks at its best chunk) or ``chunk``."""
    return _one_of(LEVELS, canonical("level", value, key))


def canonical_fusion(value: Any, key: str | None = None) -> Fusion:
    """Hybrid fusion: ``rrf`` or ``weighted``."""
    return _one_of(FUSIONS, canonical("fusion", value, key))


def canonical_norm(value: Any, key: str | None = None) -> Norm:
    """Score normalisation of weighted fusion: ``minmax`` or ``zscore``."""
    return _one_of(NORMS, canonical("normalisation", value, key))


def canonical_bm25_method(value: Any, key: str | None = None) -> Bm25Method:
    """BM25 variant of bm25s: ``lucene``, ``robertson``, ``atire``, ``bm25l``, ``bm25+``."""
    return _one_of(BM25_METHODS, canonical("BM25 method", value, key))


def canonical_backend(value: Any, key: str | None = None) -> Backend:
    """Exact dense search backend: ``auto``, ``numpy``, ``kernel``, ``faiss``."""
    return _one_of(BACKENDS, canonical("backend", value, key))


def canonical_retriever_type(value: Any, key: str | None = None) -> RetrieverType:
    """``bm25``, ``dense``, ``hybrid`` or ``http``."""
    return _one_of(RETRIEVER_TYPES, canonical("retriever type", value, key))


def canonical_format(value: Any, key: str | None = None) -> Format:
    """Output format: ``table``, ``text``, ``json``, ``tsv``, ``csv``, ``trec``, ``markdown``,
    ``latex``, ``html``, ``native``, ``beir``, ``parquet``, ``arrow`` (``md``, ``tex``,
    ``feather``… accepted)."""
    return _one_of(FORMATS, canonical("format", value, key))


_OFF = ("none", "", "off", "false")


def canonical_stemmer(value: Any, key: str | None = None) -> str | None:
    """A Snowball language, or None for no stemming (``none``, ``false``, ``""``);
    ``true`` is the default, ``english``."""
    if value is None or value is False or (isinstance(value, str) and value.strip().lower()
                                           in _OFF):
        return None
    if value is True:
        return "english"
    return canonical("stemmer", value, key)


def canonical_stopwords(value: Any, key: str | None = None) -> str | tuple[str, ...] | None:
    """A bm25s stop-word list by language code (``en``, ``de``…, or the language name), a
    custom list of words (returned as a tuple), or None for none (``none``, ``false``,
    ``""``); ``true`` is the default, ``en``."""
    if value is None or value is False or (isinstance(value, str) and value.strip().lower()
                                           in _OFF):
        return None
    if value is True:
        return "en"
    if isinstance(value, list | tuple) and value and all(isinstance(w, str) for w in value):
        return tuple(value)  # a custom list of stop words
    return canonical("stop words", value, key)


# -- numbers ----------------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_finite(value: Any, key: str, *, minimum: float | None = None,
                 maximum: float | None = None, strict_min: bool = False) -> float:
    """``value`` as a finite float within the bounds, or ConfigError naming ``key``."""
    low = "" if minimum is None else (f"> {minimum:g}" if strict_min else f">= {minimum:g}")
    high = "" if maximum is None else f"<= {maximum:g}"
    want = "a finite number" + (f" {low}" if low else "") + \
        (f"{' and' if low else ''} {high}" if high else "")
    if not _is_number(value) or not math.isfinite(value):
        raise ConfigError(f"{key} is {value!r}; expected {want}")
    x = float(value)
    if minimum is not None and (x < minimum or (strict_min and x == minimum)):
        raise ConfigError(f"{key} is {value!r}; expected {want}")
    if maximum is not None and x > maximum:
        raise ConfigError(f"{key} is {value!r}; expected {want}")
    return x


def check_positive_int(value: Any, key: str, maximum: int | None = None,
                       minimum: int = 1) -> int:
    """``value`` as an integer >= ``minimum`` (and <= ``maximum``), or ConfigError."""
    want = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
            int(value) < minimum or (maximum is not None and int(value) > maximum):
        raise ConfigError(f"{key} is {value!r}; expected {want}")
    return int(value)


def check_probability(value: Any, key: str) -> float:
    """A number strictly between 0 and 1 (alpha, confidence)."""
    if not _is_number(value) or not math.isfinite(value) or not 0.0 < value < 1.0:
        raise ConfigError(f"{key} is {value!r}; expected a number strictly between 0 and 1")
    return float(value)


# -- statistics settings ----------------------------------------------------------------------
MAX_RESAMPLES = 10**7  # permutations or bootstrap resamples (time grows linearly with B)


@dataclass(frozen=True)
class StatsSettings:
    """The settings of every significance test (``compare``, experiments, reports): the one
    place their defaults live. ``n_permutations`` is the number of sign flips
    (randomization) or resamples (bootstrap)."""

    test: TestName = "randomization"
    correction: Correction = "holm"
    alpha: float = 0.05
    confidence: float = 0.95
    seed: int = 0
    n_permutations: int = 10_000

    def validated(self, key: Callable[[str], str] = str) -> StatsSettings:
        """A copy with canonical names, or ConfigError naming the bad setting as
        ``key(name)``."""
        check_probability(self.alpha, key("alpha"))
        check_probability(self.confidence, key("confidence"))
        check_positive_int(self.seed, key("seed"), minimum=0)
        check_positive_int(self.n_permutations, key("n_permutations"), MAX_RESAMPLES)
        return StatsSettings(canonical_test(self.test, None if key is str else key("test")),
                             canonical_correction(self.correction,
                                                  None if key is str else key("correction")),
                             float(self.alpha), float(self.confidence), self.seed,
                             self.n_permutations)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any],
                     key: Callable[[str], str] = str) -> StatsSettings:
        """Settings from a mapping (missing keys take the defaults), validated."""
        names = ("test", "correction", "alpha", "confidence", "seed", "n_permutations")
        return cls(**{n: data[n] for n in names if n in data}).validated(key)


DEFAULT_STATS = StatsSettings()
