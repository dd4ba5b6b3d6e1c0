"""The measure registry is complete: every family can be parsed, named, computed and documented."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import searchbench as sb
from searchbench.measures import registry
from searchbench.measures.registry import PARAMS, Family, Param, families, register
from searchbench.measures.spec import FAMILIES, Measure, parse_measure, trec_name

ALL = families()
IDS = [f.name for f in ALL]


def examples(fam: Family) -> list[Measure]:
    """Measures of ``fam`` with every allowed cutoff form and every parameter changed."""
    cutoffs = {"required": [1, 10], "optional": [None, 10], "none": [None]}[fam.cutoff]
    values = {"rel": [1, 3], "gain": ["linear", "exp"]}
    settings = [dict(zip([p.name for p in fam.params], combo, strict=True))
                for combo in itertools.product(*(values[p.name] for p in fam.params))]
    return [Measure(fam.name, k, **s) for k in cutoffs for s in settings]


def test_every_family_is_registered_once_and_in_the_grammar() -> None:
    assert len(IDS) == len(set(IDS)) >= 13
    assert list(FAMILIES) == IDS
    assert {"P", "R", "RR", "AP", "nDCG", "Rprec", "Success", "Bpref", "Judged", "NumRet",
            "NumRel", "NumRelRet", "NumQ"} <= set(IDS)


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_family_has_kernel_formula_and_typed_parameters(fam: Family) -> None:
    assert callable(fam.kernel)
    first = fam.formula.splitlines()[0]
    assert first.lower().startswith(fam.name.lower()) and "=" in first, first
    assert fam.summary and fam.cutoff in ("optional", "required", "none")
    assert fam.aggregate == ("sum" if fam.is_count else "mean")
    for param in fam.params:
        assert isinstance(param, Param) and param in PARAMS
        assert param.type in (int, str) and isinstance(param.default, param.type)
        assert param.parse(str(param.default)) == param.default
        assert hasattr(examples(fam)[0], param.name), "each parameter is a Measure field"
        assert param.doc


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_family_has_a_trec_eval_name_or_says_why_not(fam: Family) -> None:
    has_name = bool(fam.trec_eval or fam.trec_eval_cut)
    assert has_name != bool(fam.no_trec_eval), "a trec_eval name, or None and a reason"
    if fam.trec_eval_cut is None and fam.trec_eval is not None:
        assert fam.cutoff != "required", "a required cutoff needs a trec_eval name with one"


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_every_alias_parses_to_its_family(fam: Family) -> None:
    suffix = "@10" if fam.cutoff == "required" else ""
    for alias in (fam.name, *fam.aliases):
        for spelling in (alias, alias.lower(), alias.upper()):
            m = parse_measure(spelling + suffix)
            assert m.family == fam.name, spelling
    if fam.trec_eval:
        assert parse_measure(fam.trec_eval) == Measure(fam.name)
    if fam.trec_eval_cut:
        for sep in "._":
            assert parse_measure(f"{fam.trec_eval_cut}{sep}7") == Measure(fam.name, 7)


def test_aliases_and_trec_eval_names_are_unambiguous() -> None:
    spellings = [a.lower() for f in ALL for a in {f.name, *f.aliases}]
    assert len(spellings) == len({*spellings})
    trec = [n for f in ALL for n in (f.trec_eval, f.trec_eval_cut) if n]
    assert len(trec) == len(set(trec))


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_names_round_trip(fam: Family) -> None:
    for m in examples(fam):
        assert parse_measure(str(m)) == m, str(m)
        assert parse_measure(trec_name(m)) == m, trec_name(m)


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_trec_eval_names_follow_the_registry(fam: Family) -> None:
    for m in examples(fam):
        default = all(getattr(m, p.name) == p.default for p in PARAMS)
        if not default:
            expected = str(m)
        elif m.cutoff is None:
            expected = fam.trec_eval or str(m)
        else:
            expected = f"{fam.trec_eval_cut}_{m.cutoff}" if fam.trec_eval_cut else str(m)
        assert trec_name(m) == expected


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_parameters_are_validated(fam: Family) -> None:
    k = "@5" if fam.cutoff == "required" else ""
    for param in fam.params:
        bad = "x" if param.type is int else "cubic"
        with pytest.raises(sb.UnknownMeasureError, match=f"{param.name} must be"):
            parse_measure(f"{fam.name}({param.name}={bad}){k}")
        if param.minimum is not None:
            with pytest.raises(sb.UnknownMeasureError, match="positive integer"):
                parse_measure(f"{fam.name}({param.name}={param.minimum - 1}){k}")
    with pytest.raises(sb.UnknownMeasureError, match=f"{fam.name} takes"):
        parse_measure(f"{fam.name}(depth=3){k}")


@pytest.mark.parametrize("fam", ALL, ids=IDS)
def test_evaluation_dispatches_to_the_kernel(fam: Family) -> None:
    """Every family evaluates; the kernel the registry names is the one that runs."""
    qrels = sb.Qrels.from_dict({"q": {"a": 2, "b": 0, "c": 1}, "r": {"a": 1}})
    run = sb.Run.from_dict({"q": {"a": 3.0, "b": 2.0, "d": 1.0}, "r": {"x": 1.0}})
    names = [str(m) for m in examples(fam)]
    result = sb.evaluate(qrels, run, names)
    for name in names:
        assert result.scores[name].shape == (2,) and np.isfinite(result.scores[name]).all()
    m = parse_measure(names[0])
    assert result.scores[names[0]].tolist() == _direct(fam, qrels, run, m)


def _direct(fam: Family, qrels: sb.Qrels, run: sb.Run, m: Measure) -> list[float]:
    """The kernel called on the evaluator's join, by hand."""
    evaluator = sb.Evaluator(qrels, [m])
    calls: list[Measure] = []

    def spy(j, measure):
        calls.append(measure)
        return fam.kernel(j, measure)

    original = registry._REGISTRY[fam.name]
    registry._REGISTRY[fam.name] = Family(**{**original.__dict__, "kernel": spy})
    try:
        values = evaluator.evaluate(run).scores[str(m)].tolist()
    finally:
        registry._REGISTRY[fam.name] = original
    assert calls and all(c == m for c in calls)
    return values


def test_registering_a_family_twice_is_refused() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        register("P", "again")(lambda j, m: np.zeros(0))


def test_descriptions_feed_the_docs() -> None:
    rows = [f.describe() for f in families()]
    json.dumps(rows)  # plain data
    ndcg = next(r for r in rows if r["name"] == "nDCG")
    assert ndcg["trec_eval"] == ["ndcg", "ndcg_cut.K"] and ndcg["synopsis"] == "nDCG[@k]"
    assert ndcg["params"] == ["gain: linear or exp, default linear — gain of a grade g: "
                              "'linear' = g, 'exp' = 2^g − 1"]
    assert "log2(r + 1)" in ndcg["formula"]
    judged = next(r for r in rows if r["name"] == "Judged")
    assert judged["trec_eval"] == [] and "trec_eval has no" in judged["no_trec_eval"]


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"family": "nope"}, "no measure family named 'nope'"),
        ({"family": "P"}, "P needs a cutoff"),
        ({"family": "Rprec", "cutoff": 10}, "Rprec takes no cutoff"),
        ({"family": "P", "cutoff": 0}, "the cutoff must be a positive integer, found 0"),
        ({"family": "P", "cutoff": 5.0}, "the cutoff must be a positive integer, found 5.0"),
        ({"family": "AP", "rel": 0}, "rel must be a positive integer (trec_eval -l)"),
        ({"family": "AP", "rel": True}, "rel must be an integer, found True"),
        ({"family": "nDCG", "gain": "cubic"}, "gain must be 'linear' or 'exp'"),
    ],
)
def test_measures_built_directly_are_checked(kwargs: dict, why: str) -> None:
    with pytest.raises(sb.UnknownMeasureError) as err:
        Measure(**kwargs)
    assert why in str(err.value)


def test_a_global_rel_on_a_family_that_ignores_it_is_allowed() -> None:
    """As trec_eval's -l applies to every measure (the golden test relies on it)."""
    assert Measure("NumRet", rel=2).rel == 2
    assert Measure("P", np.int64(5)) == Measure("P", 5)
