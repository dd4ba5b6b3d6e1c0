"""safe_component / within: a user-supplied name never escapes the folder it is put in."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbench._util import safe_component, within
from searchbench.errors import ConfigError, SearchbenchError

HOSTILE = ["", ".", "..", "../x", "../../x", "a/b", "/etc/passwd", "a\\b", "..\\x", "a\x00b",
           "a\nb", "a\rb", "a\tb", "x\u2028y", "x\u202ey", " lead", "trail ", "a" * 201,
           "\ud800"]
FINE = ["test", "dev-2", "bm25_a", "bm25 a", "bm25+a", "ÉCOLE", "naïve·x", "...x", "x..y",
        ".hidden", "a" * 200, "q:1"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_with_the_name_and_what(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid split") as info:
        safe_component(name, "split")
    assert isinstance(info.value, SearchbenchError)
    assert repr(name) in str(info.value)  # the message names what was found


@pytest.mark.parametrize("name", FINE)
def test_ordinary_names_pass_unchanged(name: str) -> None:
    assert safe_component(name, "split") == name


def test_non_text_is_refused() -> None:
    with pytest.raises(ConfigError):
        safe_component(None, "split")  # type: ignore[arg-type]


def test_within_stays_inside_even_through_a_symlink(tmp_path: Path) -> None:
    assert within(tmp_path, "qrels", "test.tsv") == tmp_path / "qrels" / "test.tsv"
    (tmp_path / "out").symlink_to("/")
    with pytest.raises(ConfigError, match="outside"):
        within(tmp_path, "out", "etc")
    with pytest.raises(ConfigError):
        within(tmp_path, "..")
