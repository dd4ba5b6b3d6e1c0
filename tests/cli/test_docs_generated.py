"""The generated docs sections (measures reference, option values) say what the code does.

``docs/gen_measures.py`` renders the measure registry and ``docs/gen_vocab.py`` the
vocabulary; these tests parse every name the pages show back through the library, and check
that text from the registry cannot break the Markdown it is put into.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import searchbench as sb
from searchbench import vocab
from searchbench.measures import families

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _generator(name: str):
    spec = importlib.util.spec_from_file_location(f"gen_{name}_under_test",
                                                  DOCS / f"gen_{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_measures = _generator("measures")
gen_vocab = _generator("vocab")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _cells(row: str) -> list[str]:
    return UNESCAPED_PIPE.split(row.strip())[1:-1]


@pytest.fixture(scope="module")
def reference() -> str:
    return gen_measures.measures_markdown()


def test_every_family_has_a_row_and_a_section(reference: str) -> None:
    rows = [line for line in reference.splitlines() if line.startswith("| [")]
    names = [fam.describe()["name"] for fam in families()]
    assert len(rows) == len(names) == len(set(names)) >= 13
    for name in names:
        assert f"{{ #measure-{name.lower()} }}" in reference


def test_every_name_shown_parses_to_its_family(reference: str) -> None:
    """Aliases and trec_eval names on the page are accepted by the parser (K = 10)."""
    for fam in families():
        desc = fam.describe()
        cutoff = "@10" if desc["cutoff"] == "required" else ""
        for alias in [desc["name"], *desc["aliases"]]:
            assert sb.parse_measure(alias + cutoff).family == desc["name"], alias
            assert f"`{alias}`" in reference
        for trec in desc["trec_eval"]:
            assert sb.parse_measure(trec.replace(".K", ".10")).family == desc["name"], trec
            assert f"`{trec}`" in reference


def test_registry_text_cannot_break_the_table_or_inject_html() -> None:
    hostile = {"name": "X", "synopsis": "X|@k", "summary": "a | b <script>alert(1)</script>",
               "aliases": ["x|y"], "trec_eval": [], "no_trec_eval": "none | <b>",
               "cutoff": "none", "params": ["rel: int | <i>"], "aggregate": "mean",
               "formula": "X = a | b <img src=x> with ``code|span``.\n\n*not emphasis*"}
    table = gen_measures._table([hostile])
    row = table.splitlines()[2]
    assert len(_cells(row)) == 7  # the header's seven columns, whatever the text holds
    section = gen_measures._section(hostile)
    for text in (table, section):
        assert "<script>" not in text and "<img" not in text and "<b>" not in text
    assert "*not emphasis*" not in section


def test_option_values_table_lists_every_spelling_the_cli_accepts() -> None:
    table = gen_vocab.vocab_markdown()
    for concept, _ in gen_vocab.CONCEPTS:
        row = next(line for line in table.splitlines() if line.startswith(f"| {concept} |"))
        for spelling in vocab.choices(concept):
            assert f"`{spelling}`" in row, (concept, spelling)
            assert f"`{vocab.canonical(concept, spelling)}`" in row
