"""Measure grammar: canonical names, trec_eval aliases, errors that list valid names."""

from __future__ import annotations

import pytest

from searchbench.errors import UnknownMeasureError
from searchbench.measures import parse_measure, parse_measures
from searchbench.measures.spec import trec_name


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("nDCG@10", "nDCG@10"), ("ndcg_cut.10", "nDCG@10"), ("ndcg_cut_10", "nDCG@10"),
        ("ndcg", "nDCG"), ("recip_rank", "RR"), ("RR@10", "RR@10"), ("MRR@10", "RR@10"),
        ("P.5", "P@5"), ("P_5", "P@5"), ("map", "AP"), ("map_cut.100", "AP@100"),
        ("AP(rel=2)@100", "AP(rel=2)@100"), ("nDCG(gain=exp)@10", "nDCG(gain=exp)@10"),
        ("recall.100", "R@100"), ("Recall@100", "R@100"), ("Rprec", "Rprec"),
        ("bpref", "Bpref"), ("success.5", "Success@5"), ("Judged@10", "Judged@10"),
        ("num_q", "NumQ"), ("num_rel_ret", "NumRelRet"), ("AP(rel=1)", "AP"),
    ],
)
def test_names_parse_to_canonical_form(text: str, canonical: str) -> None:
    assert parse_measure(text).name == canonical
    assert parse_measure(canonical).name == canonical


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("foo", "no measure family named 'foo'"), ("P@0", "positive integer, found 0"),
        ("P@-1", "positive integer"), ("nDCG@x", "positive integer, found 'x'"),
        ("P", "needs a cutoff"), ("Rprec@10", "takes no cutoff"),
        ("nDCG(rel=2)@10", "ignores rel"), ("AP(gain=exp)", "AP takes rel=..."),
        ("nDCG(gain=cubic)@10", "gain must be 'linear' or 'exp'"),
        ("__import__('os')", "no measure family named '__import__'"), ("P@5@5", "cannot read"),
    ],
)
def test_unknown_measures_say_why_and_list_valid_names(text: str, why: str) -> None:
    with pytest.raises(UnknownMeasureError) as err:
        parse_measure(text)
    assert why in str(err.value)
    assert "nDCG[@k]" in str(err.value)


def test_comma_lists_and_trec_eval_cutoff_lists() -> None:
    names = [m.name for m in parse_measures(["P.5,10,20", "nDCG@10, RR@10", "AP(rel=2)@5"])]
    assert names == ["P@5", "P@10", "P@20", "nDCG@10", "RR@10", "AP(rel=2)@5"]


def test_duplicates_are_dropped_in_order() -> None:
    assert [m.name for m in parse_measures(["ndcg_cut.10", "nDCG@10", "P@5"])] == [
        "nDCG@10", "P@5"]


def test_trec_names() -> None:
    assert [trec_name(parse_measure(n)) for n in ["nDCG@10", "AP@5", "P@5", "RR", "R@100"]] == [
        "ndcg_cut_10", "map_cut_5", "P_5", "recip_rank", "recall_100"]


@pytest.mark.parametrize("text", ["AP(rel=0)", "P(rel=-1)@5"])
def test_relevance_level_must_be_positive(text: str) -> None:
    with pytest.raises(UnknownMeasureError, match="rel must be a positive integer"):
        parse_measure(text)
