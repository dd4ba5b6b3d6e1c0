"""Generate the measure table of docs/measures.md from the measure registry.

Isolated on purpose: this is the only place the docs read the registry, so switching to a
new registry (``searchbench.measures`` family objects) changes this file alone.
"""

from __future__ import annotations

from searchbench.measures import FAMILIES, Measure
from searchbench.measures.spec import trec_name

_CUTOFF = {"required": "required: `@k`", "optional": "optional: `@k`", "none": "—"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _example(name: str, cutoff: str) -> Measure:
    return Measure(name, 10 if cutoff in ("required", "optional") else None)


def _trec(name: str, cutoff: str) -> str:
    """trec_eval's spelling of the family, with cutoff 10 where it takes one."""
    names = []
    if cutoff == "optional":
        names.append(trec_name(Measure(name)))
    names.append(trec_name(_example(name, cutoff)))
    # trec_name() falls back to the canonical name (with "@") where trec_eval has none
    found = [f"`{n}`" for n in dict.fromkeys(names) if "@" not in n]
    return ", ".join(found) or "—"


def measures_markdown() -> str:
    """A Markdown table: one row per measure family, straight from the registry."""
    rows = ["| family | per query | cutoff | parameters | aggregated | trec_eval name (k = 10) |",
            "|---|---|---|---|---|---|"]
    for fam in FAMILIES.values():
        params = ", ".join(f"`{p}`" for p in fam.params) or "—"
        rows.append(
            f"| `{fam.name}` | {_cell(fam.summary)} | {_CUTOFF[fam.cutoff]} | {params} | "
            f"{'sum' if fam.is_count else 'mean'} | {_trec(fam.name, fam.cutoff)} |")
    return "\n".join(rows) + "\n"
