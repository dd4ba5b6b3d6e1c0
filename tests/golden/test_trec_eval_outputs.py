"""Conformance: our values equal trec_eval's own expected outputs (4 printed decimals).

Each case is a command line from tests/fixtures/trec_eval/README.md (the vendored files);
every measure printed in the expected output that our grammar supports is compared, per
query and for ``all``.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.errors import UnknownMeasureError

# (expected output, qrels, run, options) — the options mirror trec_eval's flags.
CASES = [
    ("out.test", "qrels.test", "results.test", {}),
    ("out.test", "qrels.test.with-comments", "results.test", {}),
    ("out.comment.test", "qrels.comment.test", "results.comment.test", {}),
    ("out.test.a", "qrels.test", "results.test", {}),
    ("out.test.aq", "qrels.test", "results.test", {}),
    ("out.test.aqc", "qrels.test", "results.trunc", {"missing": "zero"}),
    ("out.test.aqcM", "qrels.test", "results.trunc", {"missing": "zero", "depth": 100}),
    ("out.test.aql", "qrels.rel_level", "results.test", {"rel": 2}),
    ("out.test.meas_params", "qrels.test", "results.test", {}),
]

# The warnings each run file raises: trec_eval's results.trunc has 5 lines with junk after the
# sixth field and no line for query 302 (judged in qrels.test); results.comment.test ranks
# queries qrels.comment.test does not judge. Any other run raises none.
RUN_WARNINGS = {
    "results.trunc": [r"results\.trunc:1: 5 line\(s\) have more than six fields",
                      r"1 qrels queries have no results"],
    "results.comment.test": [r"queries are not in the qrels and are ignored"],
}

# Measures every case must cover, so an unsupported-name skip cannot hide a regression.
CORE = {"NumQ", "NumRet", "NumRel", "NumRelRet", "AP", "Rprec", "Bpref", "RR"}


def read_expected(path: Path) -> dict[str, dict[str, float]]:
    """``{trec_eval measure name: {qid or 'all': value}}`` from a trec_eval output file."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if name == "runid" or name.startswith("relstring"):
            continue
        out[name][qid] = float(value)
    return out


def assert_warned(caught: list[warnings.WarningMessage], patterns: list[str]) -> None:
    """Exactly one :class:`SearchbenchWarning` per pattern, each matching it, no other."""
    assert all(issubclass(w.category, sb.SearchbenchWarning) for w in caught), caught
    messages = [str(w.message) for w in caught]
    assert len(messages) == len(patterns), messages
    for pattern in patterns:
        assert any(re.search(pattern, m) for m in messages), (pattern, messages)


def supported(names: list[str], rel: int) -> dict[str, sb.Measure]:
    found = {}
    for name in names:
        try:
            m = sb.parse_measure(name)
        except UnknownMeasureError:
            continue
        if rel != 1 and m.family != "nDCG":
            m = dataclasses.replace(m, rel=rel)
        found[name] = m
    return found


@pytest.mark.parametrize(("expected", "qrels", "run", "opts"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_matches_trec_eval(trec_eval_dir: Path, expected: str, qrels: str, run: str,
                           opts: dict) -> None:
    want = read_expected(trec_eval_dir / expected)
    measures = supported(list(want), opts.get("rel", 1))
    assert len(measures) >= 8
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sb.evaluate(
            sb.Qrels.from_file(trec_eval_dir / qrels), sb.Run.from_file(trec_eval_dir / run),
            list(measures.values()), missing=opts.get("missing", "skip"),
            depth=opts.get("depth"),
        )
    assert_warned(caught, RUN_WARNINGS.get(run, []))
    compared = 0
    for trec_name, m in measures.items():
        for qid, value in want[trec_name].items():
            got = res.mean[m.name] if qid == "all" else res.per_query[m.name][qid]
            assert got == pytest.approx(value, abs=5.01e-5), (trec_name, qid, got, value)
            compared += 1
    assert compared >= len(measures)


def test_core_measures_are_covered(trec_eval_dir: Path) -> None:
    """The default output holds every core measure, so the case above checks them all."""
    names = read_expected(trec_eval_dir / "out.test")
    families = {m.family for m in supported(list(names), 1).values()}
    assert families >= CORE | {"P"}
    all_trec = {m.family for m in supported(list(read_expected(trec_eval_dir / "out.test.a")),
                                            1).values()}
    assert all_trec >= CORE | {"P", "R", "nDCG", "Success"}
