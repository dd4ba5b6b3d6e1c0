"""Generate the measures reference of docs/measures.md from the measure registry.

Isolated on purpose: this is the only place the docs read the registry
(``searchbench.measures.families()``, each ``Family.describe()``), so the reference lists
exactly what the installed version parses. Every table cell and every line of text taken
from the registry is escaped (``md_text``); only the registry's ````code```` spans are
kept as Markdown code spans.
"""

from __future__ import annotations

import re
from typing import Any

from searchbench._util import md_table, md_text
from searchbench.measures import families

_CUTOFF = {"required": "required @k", "optional": "optional @k", "none": "none"}
_CODE = re.compile(r"``(.+?)``")


def _code(text: str) -> str:
    """``text`` as a Markdown code span (backticks inside are fenced by longer runs)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(text: str) -> str:
    """Registry prose as inert Markdown: escaped text, ````x```` spans as code."""
    parts = _CODE.split(text)
    return "".join(_code(p) if i % 2 else md_text(p) if p.strip() else p
                   for i, p in enumerate(parts))


def _codes(names: list[str]) -> str:
    return ", ".join(_code(n) for n in names)


def _trec(desc: dict[str, Any]) -> str:
    if desc["trec_eval"]:
        return _codes(desc["trec_eval"])
    return "none"


def _table(descs: list[dict[str, Any]]) -> str:
    rows = [[f"[{_code(d['synopsis'])}](#{_anchor(d['name'])})", md_text(d["summary"]),
             md_text(_CUTOFF[d["cutoff"]]),
             ", ".join(_code(p.split(":", 1)[0]) for p in d["params"]) or "none",
             md_text(d["aggregate"]), _trec(d), _codes(d["aliases"]) or "none"]
            for d in descs]
    header = ["family", "per query", "cutoff", "parameters", "aggregated", "trec_eval",
              "aliases"]
    return md_table(header, rows, escape=False)


def _anchor(name: str) -> str:
    return f"measure-{name.lower()}"


def _section(desc: dict[str, Any]) -> str:
    lines = [f"### {_code(desc['synopsis'])} {{ #{_anchor(desc['name'])} }}", ""]
    for paragraph in desc["formula"].split("\n\n"):
        lines += [_inline(" ".join(paragraph.split())), ""]
    names = [desc["name"], *desc["aliases"]]
    lines.append(f"- names: {_codes(names)} (any letter case)")
    if desc["trec_eval"]:
        lines.append(f"- trec_eval: {_codes(desc['trec_eval'])} (`K` is the cutoff)")
    if desc["no_trec_eval"]:
        lines.append(f"- trec_eval: none; {md_text(desc['no_trec_eval'])}")
    lines.append(f"- cutoff: {md_text(_CUTOFF[desc['cutoff']])}; aggregated over queries "
                 f"by {md_text(desc['aggregate'])}")
    for param in desc["params"]:
        name, _, doc = param.partition(":")
        lines.append(f"- parameter {_code(name)}: {md_text(doc.strip())}")
    return "\n".join(lines) + "\n"


def measures_markdown() -> str:
    """One table of every measure family, then a section per family with its formula."""
    descs = [fam.describe() for fam in families()]
    sections = "\n".join(_section(d) for d in descs)
    return f"{_table(descs)}\n\n{sections}"
