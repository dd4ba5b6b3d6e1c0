"""Measure grammar and registry: names are parsed into small described objects.

Canonical form follows ir_measures: ``Family(param=value)@cutoff``, e.g. ``nDCG@10``,
``AP(rel=2)@100``, ``nDCG(gain=exp)@10``. trec_eval names (``ndcg_cut.10``,
``recip_rank``, ``P_5``, ``map``) are accepted as aliases. Parsing never evaluates code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UnknownMeasureError

__all__ = ["FAMILIES", "Measure", "parse_measure", "parse_measures", "trec_name", "valid_names"]


@dataclass(frozen=True)
class Family:
    """A measure family: its canonical name, which parameters it takes, and a summary."""

    name: str
    summary: str
    cutoff: str = "optional"  # "optional" | "required" | "none"
    params: tuple[str, ...] = ("rel",)
    is_count: bool = False


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("P", "relevant in top k / k", cutoff="required"),
        Family("R", "relevant in top k / all relevant", cutoff="required"),
        Family("RR", "1 / rank of the first relevant within k"),
        Family("AP", "sum of P@rank over relevant within k / all relevant"),
        Family("nDCG", "DCG / ideal DCG, gain = grade, discount log2(rank+1)", params=("gain",)),
        Family("Rprec", "relevant in top R / R, R = all relevant", cutoff="none"),
        Family("Success", "1 if any relevant in top k", cutoff="required"),
        Family("Bpref", "trec_eval's bpref", cutoff="none"),
        Family("Judged", "judged docs in top k / min(k, retrieved)", cutoff="required",
               params=()),
        Family("NumRet", "retrieved documents (summed)", cutoff="none", params=(),
               is_count=True),
        Family("NumRel", "relevant documents in the qrels (summed)", cutoff="none",
               is_count=True),
        Family("NumRelRet", "relevant documents retrieved (summed)", cutoff="none",
               is_count=True),
        Family("NumQ", "evaluated queries (summed)", cutoff="none", params=(), is_count=True),
    )
}

# Case-insensitive spellings of canonical families (ir_measures' and common names).
_FAMILY_ALIASES = {name.lower(): name for name in FAMILIES} | {
    "precision": "P", "recall": "R", "mrr": "RR", "map": "AP", "ndcg": "nDCG",
    "hit_rate": "Success", "hits": "Success", "success": "Success",
}

# trec_eval names: family, whether a ".k" / "_k" cutoff follows.
_TREC_ALIASES = {
    "P": ("P", True), "recall": ("R", True), "recip_rank": ("RR", False),
    "map": ("AP", False), "map_cut": ("AP", True), "ndcg": ("nDCG", False),
    "ndcg_cut": ("nDCG", True), "Rprec": ("Rprec", False), "success": ("Success", True),
    "bpref": ("Bpref", False), "num_ret": ("NumRet", False), "num_rel": ("NumRel", False),
    "num_rel_ret": ("NumRelRet", False), "num_q": ("NumQ", False),
}

_CANONICAL = re.compile(r"^(?P<fam>[A-Za-z_]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>[^@]+))?$")
_TREC = re.compile(r"^(?P<fam>[A-Za-z_]+?)(?:[._](?P<k>\d+))?$")


@dataclass(frozen=True, order=True)
class Measure:
    """One measure: family + cutoff + parameters. ``str(m)`` is the canonical name."""

    family: str
    cutoff: int | None = None
    rel: int = 1
    gain: str = "linear"

    @property
    def name(self) -> str:
        params = []
        if self.gain != "linear":
            params.append(f"gain={self.gain}")
        if self.rel != 1:
            params.append(f"rel={self.rel}")
        text = self.family + (f"({','.join(params)})" if params else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def is_count(self) -> bool:
        return FAMILIES[self.family].is_count

    def __str__(self) -> str:
        return self.name


def valid_names() -> str:
    """A one-line list of measure names for error messages."""
    parts = []
    for fam in FAMILIES.values():
        parts.append(fam.name + ("@k" if fam.cutoff == "required" else
                                 "[@k]" if fam.cutoff == "optional" else ""))
    return ", ".join(parts) + " (params: (rel=N), nDCG(gain=exp); trec_eval names " \
        "such as ndcg_cut.10, recip_rank, P_5, map are accepted)"


def parse_measure(text: str | Measure) -> Measure:
    """Parse one measure name (canonical or trec_eval alias) into a :class:`Measure`."""
    if isinstance(text, Measure):
        return text
    raw = str(text).strip()
    trec = _parse_trec(raw)
    if trec is not None:
        return trec
    m = _CANONICAL.match(raw)
    if not m:
        raise _unknown(raw, "cannot read it as Name(param=value)@k")
    family = _FAMILY_ALIASES.get(m.group("fam").lower())
    if family is None:
        raise _unknown(raw, f"no measure family named {m.group('fam')!r}")
    params = _parse_params(raw, family, m.group("params"))
    cutoff = _parse_cutoff(raw, m.group("k"))
    return _build(raw, family, cutoff, **params)


def parse_measures(items: str | Measure | list[str | Measure] | tuple) -> list[Measure]:
    """Parse several measures; strings may hold comma-separated names.

    trec_eval's ``P.5,10`` form is understood: a bare number after a comma is another
    cutoff of the previous trec_eval family. Duplicates are dropped, order is kept.
    """
    if isinstance(items, (str, Measure)):
        items = [items]
    out: list[Measure] = []
    for item in items:
        for m in _split(item) if isinstance(item, str) else [parse_measure(item)]:
            if m not in out:
                out.append(m)
    if not out:
        raise UnknownMeasureError(f"no measure given; valid measures: {valid_names()}")
    return out


def _split(text: str) -> list[Measure]:
    measures: list[Measure] = []
    prefix: str | None = None
    for token in [t.strip() for t in _split_outside_parens(text) if t.strip()]:
        if token.isdigit() and prefix is not None:
            measures.append(parse_measure(f"{prefix}.{token}"))
            continue
        m = parse_measure(token)
        measures.append(m)
        t = _TREC.match(token)
        prefix = t.group("fam") if t and t.group("k") and t.group("fam") in _TREC_ALIASES \
            else None
    return measures


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _parse_trec(raw: str) -> Measure | None:
    m = _TREC.match(raw)
    if not m or m.group("fam") not in _TREC_ALIASES:
        return None
    family, takes_cutoff = _TREC_ALIASES[m.group("fam")]
    k = m.group("k")
    if k is not None and not takes_cutoff:
        return None
    if k is None and takes_cutoff and FAMILIES[family].cutoff == "required":
        raise _unknown(raw, f"trec_eval's {m.group('fam')} needs a cutoff, e.g. "
                            f"{m.group('fam')}.10")
    return _build(raw, family, _parse_cutoff(raw, k))


def _parse_params(raw: str, family: str, text: str | None) -> dict[str, object]:
    params: dict[str, object] = {}
    if not text:
        return params
    allowed = FAMILIES[family].params
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or key not in allowed:
            hint = ", ".join(f"{p}=..." for p in allowed) or "no parameters"
            extra = " (nDCG uses the grades as gains and ignores rel, as trec_eval)" \
                if family == "nDCG" and key == "rel" else ""
            raise _unknown(raw, f"{family} takes {hint}; found {part.strip()!r}{extra}")
        if key == "rel":
            try:
                params["rel"] = int(value)
            except ValueError:
                raise _unknown(raw, f"rel must be an integer, found {value!r}") from None
            if params["rel"] < 1:
                raise _unknown(raw, f"rel must be a positive integer (trec_eval -l), "
                                    f"found {params['rel']}")
        elif key == "gain":
            if value not in ("linear", "exp"):
                raise _unknown(raw, f"gain must be 'linear' or 'exp', found {value!r}")
            params["gain"] = value
    return params


def _parse_cutoff(raw: str, k: str | None) -> int | None:
    if k is None:
        return None
    try:
        cutoff = int(k)
    except ValueError:
        raise _unknown(raw, f"the cutoff must be a positive integer, found {k!r}") from None
    if cutoff <= 0:
        raise _unknown(raw, f"the cutoff must be a positive integer, found {cutoff}")
    return cutoff


def _build(raw: str, family: str, cutoff: int | None, rel: int = 1,
           gain: str = "linear") -> Measure:
    fam = FAMILIES[family]
    if fam.cutoff == "required" and cutoff is None:
        raise _unknown(raw, f"{family} needs a cutoff, e.g. {family}@10")
    if fam.cutoff == "none" and cutoff is not None:
        raise _unknown(raw, f"{family} takes no cutoff")
    return Measure(family, cutoff, rel, gain)


def _unknown(raw: str, why: str) -> UnknownMeasureError:
    return UnknownMeasureError(f"unknown measure {raw!r}: {why}; valid measures: {valid_names()}")


_TREC_NAMES = {"P": "P", "R": "recall", "RR": "recip_rank", "AP": "map", "nDCG": "ndcg",
               "Rprec": "Rprec", "Success": "success", "Bpref": "bpref", "NumRet": "num_ret",
               "NumRel": "num_rel", "NumRelRet": "num_rel_ret", "NumQ": "num_q"}


def trec_name(m: Measure) -> str:
    """trec_eval's name for ``m`` (``ndcg_cut_10``, ``P_5``); canonical if it has none."""
    base = _TREC_NAMES.get(m.family)
    if base is None or m.gain != "linear" or m.rel != 1:
        return m.name  # trec_eval sets rel globally (-l): its names cannot say it
    if m.cutoff is None:
        return base
    if m.family in ("AP", "nDCG"):
        base += "_cut"
    if m.family == "RR":
        return m.name
    return f"{base}_{m.cutoff}"
