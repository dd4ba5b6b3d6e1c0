"""Judged coverage in comparisons: Judged@k beside every system, notes, the loud warning.

Expected coverages are counted by hand from the tiny qrels and runs below:
``Judged@k = |judged ∩ top k| / min(k, retrieved)``, averaged over the qrels queries.
"""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest

from searchbench import Qrels, Run, SearchbenchWarning
from searchbench.comparison import compare, render_terminal
from searchbench.measures import (
    MOSTLY_UNJUDGED_BELOW,
    UNJUDGED_WARN_BELOW,
    judged_cutoff,
    unjudged_cause,
)

# q1 judges d1 d2 d3, q2 judges d4 d5 (grade 0 is judged too)
QRELS = [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q2", "d4", 1), ("q2", "d5", 0)]


def _qrels() -> Qrels:
    q, d, g = zip(*QRELS, strict=True)
    return Qrels.from_columns(list(q), list(d), list(g))


def _run(name: str, rankings: dict[str, list[str]]) -> Run:
    q = [qid for qid, docs in rankings.items() for _ in docs]
    d = [doc for docs in rankings.values() for doc in docs]
    s = [float(len(docs) - i) for docs in rankings.values() for i in range(len(docs))]
    return Run.from_columns(q, d, s, name=name)


# full: q1 3/4 judged (d1 d2 x d3), q2 2/2 -> mean (0.75 + 1) / 2 = 0.875
FULL = {"q1": ["d1", "d2", "x1", "d3"], "q2": ["d4", "d5"]}
# sparse: q1 1/4 (d3 only), q2 0/3 -> mean 0.125: mostly unjudged, not "almost entirely"
SPARSE = {"q1": ["y1", "y2", "d3", "y3"], "q2": ["y4", "y5", "y6"]}
# chunks of judged documents: 0 judged -> 0.0 (below the warning threshold)
CHUNKS = {"q1": ["d1#0-10", "d3#5-20"], "q2": ["d4#0-8"]}


def _compare(runs: dict[str, dict[str, list[str]]], measures=("nDCG@10", "R@100")):
    named = {n: _run(n, r) for n, r in runs.items()}
    return compare(_qrels(), named, list(measures), test="t", correction="holm")


def test_judged_at_the_main_cutoff_for_every_system():
    cmp = _compare({"full": FULL, "sparse": SPARSE})
    assert cmp.judged_k == 10 and cmp.judged_label == "Judged@10"
    assert cmp.judged == pytest.approx({"full": 0.875, "sparse": 0.125})
    # the coverage is shown, not tested: only the asked measures have statistics
    assert cmp.measures == ["nDCG@10", "R@100"] and len(cmp.stats) == 2


def test_main_cutoff_is_the_first_measures():
    assert judged_cutoff(["R@100", "nDCG@10"]) == 100
    assert judged_cutoff(["AP", "RR@5"]) == 5
    assert judged_cutoff(["AP"]) == 10
    with pytest.warns(SearchbenchWarning, match=r"run 'sparse': only 0\.0% of its top 2"):
        cmp = _compare({"full": FULL, "sparse": SPARSE}, measures=("P@2", "AP"))
    # P@2 -> Judged@2: full q1 2/2, q2 2/2 = 1.0; sparse q1 0/2, q2 0/2 = 0.0
    assert cmp.judged_label == "Judged@2"
    assert cmp.judged == pytest.approx({"full": 1.0, "sparse": 0.0})


def test_mostly_unjudged_adds_a_note_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning above UNJUDGED_WARN_BELOW
        cmp = _compare({"full": FULL, "sparse": SPARSE})
    assert UNJUDGED_WARN_BELOW < 0.125 < MOSTLY_UNJUDGED_BELOW
    [note] = [n for n in cmp.notes if "unjudged" in n]
    assert "sparse 12%" in note and "full" not in note


def test_well_judged_comparison_has_no_note():
    cmp = _compare({"a": FULL, "b": {"q1": ["d3", "d1"], "q2": ["d5"]}})
    assert not any("unjudged" in n for n in cmp.notes)


def test_chunk_run_against_document_qrels_warns_naming_chunk_ids():
    with pytest.warns(SearchbenchWarning, match=r"run 'chunks'.*chunk ids \(doc#start-end\)"
                      r".*evalset chunk-qrels"):
        cmp = _compare({"full": FULL, "chunks": CHUNKS})
    assert cmp.judged["chunks"] == 0.0


def test_causes():
    docs, chunks = ["d1", "d2"], ["d1#0-5", "d2#3-9"]
    assert "look like chunk ids" in unjudged_cause(chunks, docs)
    assert "ranks whole documents" in unjudged_cause(docs, chunks)
    assert "different ones" in unjudged_cause(["d1#0-7"], chunks)
    assert "document ids must match" in unjudged_cause(["x"], docs)


def test_every_format_shows_judged():
    cmp = _compare({"full": FULL, "sparse": SPARSE})
    md = cmp.to_markdown(decimals=3)
    header = next(line for line in md.splitlines() if line.startswith("| system"))
    assert header.rstrip(" |").endswith("Judged@10")
    assert "| full (baseline) |" in md and md.count("| 0.875 |") == 1
    assert "| 0.125 |" in md
    latex = cmp.to_latex(decimals=3)
    assert r"Judged@10 \\" in latex and "0.875" in latex
    rows = cmp.to_csv().splitlines()
    head = rows[0].split(",")
    col = head.index("Judged@10")
    assert {r.split(",")[0]: float(r.split(",")[col]) for r in rows[1:]} == \
        {"full": 0.875, "sparse": 0.125}
    data = json.loads(cmp.to_json())
    assert data["judged"] == {"cutoff": 10, "means": {"full": 0.875, "sparse": 0.125}}
    from rich.console import Console

    buf = io.StringIO()
    render_terminal(cmp, console=Console(file=buf, width=200), decimals=3)
    text = buf.getvalue()
    assert "Judged@10" in text and "0.875" in text and "0.125" in text


def test_causes_from_arrow_ids_and_large_vocabularies():
    import pyarrow as pa  # compact qrels and streamed runs hold their doc ids as Arrow

    docs = [f"d{i}" for i in range(5000)]
    chunks = [f"d{i}#0-5" for i in range(5000)]
    assert "look like chunk ids" in unjudged_cause(pa.array(chunks), pa.array(docs))
    assert "ranks whole documents" in unjudged_cause(np.asarray(docs, dtype=object),
                                                     pa.chunked_array([chunks]))
    # 1 in 10 ids a chunk id: sampled evenly, under half, so not called chunk ids
    mixed = [f"d{i}#0-5" if i % 10 == 0 else f"d{i}" for i in range(5000)]
    assert "document ids must match" in unjudged_cause(pa.array(mixed), docs)
