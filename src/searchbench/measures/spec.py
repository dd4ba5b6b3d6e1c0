"""Measure grammar: names are parsed into small described objects.

Canonical form follows ir_measures: ``Family(param=value)@cutoff``, e.g. ``nDCG@10``,
``AP(rel=2)@100``, ``nDCG(gain=exp)@10``. trec_eval names (``ndcg_cut.10``,
``recip_rank``, ``P_5``, ``map``) are accepted as aliases. Parsing never evaluates code.
Names, aliases, parameters and trec_eval names come from the registry (:mod:`.registry`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from ..errors import UnknownMeasureError
from . import _kernels  # noqa: F401 - importing the kernels registers every family
from .registry import PARAMS, Family, families, is_integer

__all__ = ["FAMILIES", "Measure", "parse_measure", "parse_measures", "trec_name", "valid_names"]


# Canonical name -> family, in the registry's order (kept for ``searchbench.measures.FAMILIES``).
FAMILIES: dict[str, Family] = {f.name: f for f in families()}

# Case-insensitive spellings of canonical families (ir_measures' and common names).
_FAMILY_ALIASES = {alias.lower(): f.name for f in FAMILIES.values()
                   for alias in (f.name, *f.aliases)}

# trec_eval names (case-sensitive): family, whether a ".k" / "_k" cutoff follows.
_TREC_ALIASES = {f.trec_eval: (f.name, False) for f in FAMILIES.values() if f.trec_eval} | {
    f.trec_eval_cut: (f.name, True) for f in FAMILIES.values() if f.trec_eval_cut}

_CANONICAL = re.compile(r"^(?P<fam>[A-Za-z_]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>[^@]+))?$")
_TREC = re.compile(r"^(?P<fam>[A-Za-z_]+?)(?:[._](?P<k>\d+))?$")


@dataclass(frozen=True, order=True)
class Measure:
    """One measure: family + cutoff + parameters. ``str(m)`` is the canonical name.

    Built directly or by :func:`parse_measure`, it is checked against the registry: a
    known family, its cutoff rule, and parameter values of the right type and range
    (``UnknownMeasureError`` otherwise). A parameter the family ignores (``rel`` of
    ``NumRet``) is allowed here, as trec_eval's global ``-l`` is.
    """

    family: str
    cutoff: int | None = None
    rel: int = 1
    gain: str = "linear"

    def __post_init__(self) -> None:
        problem = _problem(self.family, self.cutoff, {p.name: getattr(self, p.name)
                                                      for p in PARAMS})
        if problem:
            raise _unknown(self.name, problem)

    @property
    def name(self) -> str:
        params = [f"{p.name}={getattr(self, p.name)}" for p in PARAMS
                  if getattr(self, p.name) != p.default]
        text = self.family + (f"({','.join(params)})" if params else "")
        return text + (f"@{self.cutoff}" if self.cutoff is not None else "")

    @property
    def is_count(self) -> bool:
        return FAMILIES[self.family].is_count

    def __str__(self) -> str:
        return self.name


def valid_names() -> str:
    """A one-line list of measure names for error messages."""
    parts = [fam.synopsis() for fam in FAMILIES.values()]
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


def parse_measures(items: str | Measure | Iterable[str | Measure]) -> list[Measure]:
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


def _parse_params(raw: str, family: str, text: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if not text:
        return params
    fam = FAMILIES[family]
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        param = fam.param(key)
        if not sep or param is None:
            hint = ", ".join(f"{p.name}=..." for p in fam.params) or "no parameters"
            extra = f" ({fam.ignored[key]})" if key in fam.ignored else ""
            raise _unknown(raw, f"{family} takes {hint}; found {part.strip()!r}{extra}")
        try:
            params[key] = param.parse(value)
        except ValueError as exc:
            raise _unknown(raw, str(exc)) from None
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


def _build(raw: str, family: str, cutoff: int | None, **params: Any) -> Measure:
    problem = _problem(family, cutoff, params)
    if problem:
        raise _unknown(raw, problem)
    return Measure(family, cutoff, **params)


def _problem(family: str, cutoff: object, params: dict[str, Any]) -> str | None:
    """What is wrong with a measure of these fields, by the registry; None if nothing."""
    fam = FAMILIES.get(family)
    if fam is None:
        return f"no measure family named {family!r}"
    if fam.cutoff == "required" and cutoff is None:
        return f"{family} needs a cutoff, e.g. {family}@10"
    if fam.cutoff == "none" and cutoff is not None:
        return f"{family} takes no cutoff"
    if cutoff is not None and (not is_integer(cutoff) or int(cast(int, cutoff)) <= 0):
        return f"the cutoff must be a positive integer, found {cutoff!r}"
    for param in PARAMS:
        if param.name in params:
            try:
                param.check(params[param.name])
            except ValueError as exc:
                return str(exc)
    return None


def _unknown(raw: str, why: str) -> UnknownMeasureError:
    return UnknownMeasureError(f"unknown measure {raw!r}: {why}; valid measures: {valid_names()}")


def trec_name(m: Measure) -> str:
    """trec_eval's name for ``m`` (``ndcg_cut_10``, ``P_5``); canonical if it has none.

    trec_eval sets ``rel`` globally (``-l``) and has no exponential gain, so a measure with a
    parameter other than its default keeps its canonical name.
    """
    fam = FAMILIES[m.family]
    if any(getattr(m, p.name) != p.default for p in PARAMS):
        return m.name
    if m.cutoff is None:
        return fam.trec_eval or m.name
    return f"{fam.trec_eval_cut}_{m.cutoff}" if fam.trec_eval_cut else m.name
