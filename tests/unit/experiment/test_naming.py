"""Names entering an experiment are validated; file names made from them are safe slugs."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchbench.errors import ConfigError
from searchbench.experiment import parse_config
from searchbench.experiment.naming import MAX_NAME_LENGTH, check_name, slug

HOSTILE = [
    ("a\\b", "backslash"), ("a/b", "slash"), ("..", "path component"),
    (".", "path component"), ("", "empty"), ("   ", "empty"), (" bm25", "space"),
    ("bm25\n", "space"), ("a\x00b", "U+0000"), ("a\tb", "U+0009"), ("a\x1bb", "U+001B"),
    ("evil\u202etxt", "U+202E"), ("a\ud800b", "U+D800"), ("x" * (MAX_NAME_LENGTH + 1), "long"),
]


@pytest.mark.parametrize("name, why", HOSTILE)
def test_hostile_names_are_refused_with_the_reason(name, why):
    with pytest.raises(ConfigError, match=r"exp\.toml: key 'name'") as err:
        check_name(name, "key 'name'", "exp.toml")
    assert why in str(err.value)
    assert "\n" not in str(err.value)  # one line, the name shown escaped


@pytest.mark.parametrize("name", ["bm25", "bm25 a", "bm25+a", "bm25_a", "modèle-ü", "日本語",
                                  'x" onload="alert(1)', "[a]*(b)?$^{1}",
                                  "<img src=x onerror=alert(1)>", "%s%n", "x" * MAX_NAME_LENGTH,
                                  "a..b", ".hidden"])
def test_free_text_names_are_kept(name):
    assert check_name(name, "key 'name'", "here") == name


def test_config_load_validates_retriever_and_experiment_names():
    base = {"evalset": "set"}
    with pytest.raises(ConfigError, match=r"retrievers.*name.*contains a backslash"):
        parse_config({**base, "retrievers": [{"name": "a\\b", "type": "bm25"}]}, where="c")
    with pytest.raises(ConfigError, match=r"key 'name' '\.\.' is a path component"):
        parse_config({**base, "name": "..", "retrievers": [{"type": "bm25"}]}, where="c")
    with pytest.raises(ConfigError, match=r"experiment name .* set key 'name'"):
        parse_config({**base, "retrievers": [{"type": "bm25"}]}, name="a\\b", where="c")
    cfg = parse_config({**base, "retrievers": [{"name": "bm25 a", "type": "bm25"},
                                               {"name": "bm25+a", "type": "bm25"}]})
    assert [r.name for r in cfg.retrievers] == ["bm25 a", "bm25+a"]


_SAFE = set(string.ascii_letters + string.digits + "_-")


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_slugs_are_safe_bounded_and_distinct(a, b):
    sa, sb = slug(a), slug(b)
    assert set(sa) <= _SAFE and sa and not sa.startswith((".", "-"))
    assert len(sa) <= 48 + 9
    if a != b:
        assert sa != sb


def test_slug_examples():
    assert slug("bm25") == "bm25"  # unchanged names stay readable
    assert slug("bm25 a") != slug("bm25+a") != slug("bm25_a")
    assert slug("bm25 a").startswith("bm25_a-") and slug("bm25+a").startswith("bm25_a-")
    assert slug("..").startswith("x-") and slug("../../etc").startswith("etc-")
    assert slug("modèle").startswith("modele-")
    # a name chosen to look like another name's slug does not take that slug
    assert slug(slug("bm25 a")) != slug("bm25 a")
