"""Generate the table of option values (docs/cli.md) from ``searchbench.vocab``.

One row per concept: its canonical values (default first) and the aliases accepted for
them, read through the public ``values()``, ``choices()`` and ``canonical()``, so the table
is exactly what the CLI, the experiment TOML and the Python API accept.
"""

from __future__ import annotations

from searchbench._util import md_table
from searchbench.vocab import canonical, choices, values

#: (concept, where it is written: CLI options and TOML keys)
CONCEPTS = (
    ("metric", "`--metric`; TOML `metric`; `Dense(metric=)`"),
    ("test", "`compare --test`; TOML `test`; `sb.compare(test=)`"),
    ("correction", "`compare --correction`; TOML `correction`"),
    ("missing policy", "`--missing`; `sb.evaluate(missing=)`"),
    ("keep policy", "`--keep`; `keep=` of the readers"),
    ("level", "`run --level`; TOML `levels`"),
    ("fusion", "`run --fusion`; TOML `fusion`"),
    ("normalisation", "`run --norm`; TOML `norm`"),
    ("BM25 method", "`run --bm25-method`; TOML `method`"),
    ("backend", "`run --backend`; TOML `backend`"),
    ("retriever type", "`run --retriever`; TOML `type`"),
    ("stemmer", "`run --stemmer`; TOML `stemmer` (or `none`)"),
    ("stop words", "`run --stopwords`; TOML `stopwords` (or `none`)"),
    ("format", "`--format` of every command (each takes the formats it can write)"),
)


def _codes(items) -> str:
    return ", ".join(f"`{item}`" for item in items) or "none"


def vocab_markdown() -> str:
    """A Markdown table: concept, canonical values, aliases (alias → canonical), where."""
    rows = []
    for concept, where in CONCEPTS:
        canon = values(concept)
        aliases = [a for a in choices(concept) if a not in canon]
        alias_text = ", ".join(f"`{a}` → `{canonical(concept, a)}`" for a in aliases)
        rows.append([concept, _codes(canon), alias_text or "none", where])
    return md_table(["concept", "values (default first)", "aliases", "written as"], rows,
                    escape=False) + "\n"
