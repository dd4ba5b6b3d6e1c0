"""The measure registry: one :class:`Family` per measure family (ARCHITECTURE §4).

A family carries everything searchbench knows about a measure: its kernel (the vectorised
function), its canonical name and aliases, its trec_eval names, its typed parameters and
its formula (the kernel's docstring). The grammar (:mod:`.spec`), ``--trec-names``, the
evaluator's dispatch and the measures reference in the docs all read this registry.

Kernels register themselves with the :func:`register` decorator in :mod:`._kernels`, so
adding a measure is one decorated kernel there plus its test. ``families()`` lists the
families in registration order (the order of the docs' table). This module imports no
kernel: :mod:`.spec` (and so the package) imports :mod:`._kernels`, which fills the registry
when it loads.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    import numpy as np

    from ._kernels import Judged
    from .spec import Measure

__all__ = ["GAIN", "PARAMS", "REL", "Family", "Param", "families", "family", "is_integer",
           "register"]

Kernel = Callable[["Judged", "Measure"], "np.ndarray"]
CutoffRule = Literal["optional", "required", "none"]


@dataclass(frozen=True)
class Param:
    """A typed measure parameter, written ``Family(name=value)`` in a measure name.

    ``type`` is ``int`` or ``str``; ``choices`` limits a ``str``, ``minimum`` an ``int``;
    ``option`` names trec_eval's equivalent command-line option, if any.
    """

    name: str
    type: type
    default: int | str
    doc: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    option: str = ""

    def parse(self, text: str) -> int | str:
        """The value written in a measure name; ``ValueError`` says what is wrong."""
        if self.type is int:
            try:
                value: int | str = int(text)
            except ValueError:
                raise ValueError(f"{self.name} must be an integer, found {text!r}") from None
        else:
            value = text
        self.check(value)
        return value

    def check(self, value: object) -> None:
        """``ValueError`` unless ``value`` has the parameter's type and range."""
        if self.type is int:
            if not is_integer(value):
                raise ValueError(f"{self.name} must be an integer, found {value!r}")
            if self.minimum is not None and int(cast(int, value)) < self.minimum:
                what = ("a positive integer" if self.minimum == 1
                        else f"an integer ≥ {self.minimum}")
                where = f" ({self.option})" if self.option else ""
                raise ValueError(f"{self.name} must be {what}{where}, found {value}")
        elif self.choices and value not in self.choices:
            allowed = " or ".join(repr(c) for c in self.choices)
            raise ValueError(f"{self.name} must be {allowed}, found {value!r}")

    def describe(self) -> str:
        """``rel: int ≥ 1, default 1 — ...`` for the docs."""
        kind = self.type.__name__
        if self.choices:
            kind = " or ".join(self.choices)
        elif self.minimum is not None:
            kind += f" ≥ {self.minimum}"
        return f"{self.name}: {kind}, default {self.default} — {self.doc}"


def is_integer(value: object) -> bool:
    """An int (numpy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


REL = Param("rel", int, 1, "minimum grade counted as relevant (trec_eval -l)", minimum=1,
            option="trec_eval -l")
GAIN = Param("gain", str, "linear", "gain of a grade g: 'linear' = g, 'exp' = 2^g − 1",
             choices=("linear", "exp"))
# Every parameter a measure name can carry, in the order ``str(measure)`` writes them;
# each is a field of the same name on :class:`~searchbench.measures.spec.Measure`.
PARAMS: tuple[Param, ...] = (GAIN, REL)


@dataclass(frozen=True)
class Family:
    """A measure family: kernel, names, parameters and formula.

    ``cutoff`` says whether ``@k`` is ``"required"``, ``"optional"`` or refused (``"none"``).
    ``aliases`` are other (case-insensitive) spellings of the family in ir_measures'
    grammar. ``trec_eval`` is trec_eval's name without a cutoff (``map``) and
    ``trec_eval_cut`` its name with one (``map_cut`` → ``map_cut.10``, ``map_cut_10``);
    a family trec_eval lacks sets both to None and says why in ``no_trec_eval``.
    ``ignored`` maps a parameter the family ignores to the explanation given when it is
    written anyway. ``is_count`` families are summed over queries instead of averaged.
    """

    name: str
    kernel: Kernel
    summary: str
    cutoff: CutoffRule = "optional"
    params: tuple[Param, ...] = (REL,)
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    trec_eval_cut: str | None = None
    no_trec_eval: str | None = None
    is_count: bool = False
    ignored: dict[str, str] = field(default_factory=dict)

    @property
    def formula(self) -> str:
        """The kernel's docstring: the formula and its conventions."""
        return inspect.getdoc(self.kernel) or ""

    @property
    def aggregate(self) -> str:
        """How the ``all`` value is formed from the per-query values: sum or mean."""
        return "sum" if self.is_count else "mean"

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None if the family does not take it."""
        return next((p for p in self.params if p.name == name), None)

    def trec_eval_names(self) -> tuple[str, ...]:
        """trec_eval's spellings: ``map``, ``map_cut.K`` (``K`` stands for a cutoff)."""
        names = [self.trec_eval] if self.trec_eval else []
        if self.trec_eval_cut:
            names.append(f"{self.trec_eval_cut}.K")
        return tuple(names)

    def synopsis(self) -> str:
        """``nDCG[@k]``: the family with its cutoff rule."""
        return self.name + {"required": "@k", "optional": "[@k]", "none": ""}[self.cutoff]

    def describe(self) -> dict[str, Any]:
        """A plain description (for the docs' measures reference)."""
        return {
            "name": self.name, "synopsis": self.synopsis(), "summary": self.summary,
            "aliases": list(self.aliases), "trec_eval": list(self.trec_eval_names()),
            "no_trec_eval": self.no_trec_eval, "cutoff": self.cutoff,
            "params": [p.describe() for p in self.params], "aggregate": self.aggregate,
            "formula": self.formula,
        }


_REGISTRY: dict[str, Family] = {}


def register(name: str, summary: str, **options: Any) -> Callable[[Kernel], Kernel]:
    """Decorator: make the decorated kernel the family ``name`` (see :class:`Family`)."""

    def add(kernel: Kernel) -> Kernel:
        if name in _REGISTRY:
            raise RuntimeError(f"measure family {name!r} is registered twice")
        _REGISTRY[name] = Family(name, kernel, summary, **options)
        return kernel

    return add


def families() -> tuple[Family, ...]:
    """Every measure family, in the order of the docs' measures reference."""
    return tuple(_REGISTRY.values())


def family(name: str) -> Family:
    """The family with canonical name ``name`` (``KeyError`` if there is none)."""
    return _REGISTRY[name]
