"""Property: any evaluation set survives native and BEIR round trips (same content hash)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchbench.data.beir import read_beir, write_beir
from searchbench.data.evalset import EvalSet, Evidence, read_native
from searchbench.data.qrels import Qrels
from searchbench.data.texts import Corpus, Document, Queries, Query

ids = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
                            blacklist_characters="#"), min_size=1, max_size=8)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
sources = st.sampled_from(["human", "logs", "curated", "synthetic"])


@st.composite
def evalsets(draw) -> EvalSet:
    doc_ids = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    docs = [Document(d, draw(texts) + "quote", draw(texts),
                     draw(st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=2)))
            for d in doc_ids]
    q_ids = draw(st.lists(ids, min_size=1, max_size=5, unique=True))
    queries = [Query(q, draw(texts), draw(sources), draw(st.none() | ids), draw(st.booleans()))
               for q in q_ids]
    pairs = {(q, draw(st.sampled_from(doc_ids))): draw(st.integers(-1, 3)) for q in q_ids}
    qrels = Qrels.from_columns([p[0] for p in pairs], [p[1] for p in pairs], list(pairs.values()))
    evidence = tuple(Evidence(q, d, g, "quote", len(next(x.text for x in docs if x.id == d)) - 5,
                              len(next(x.text for x in docs if x.id == d)))
                     for (q, d), g in list(pairs.items())[:2])
    return EvalSet(Corpus(docs), Queries(queries), qrels, evidence, name="prop")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evalsets(), st.booleans())
def test_native_round_trip(es: EvalSet, compress: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        back = read_native(es.write(Path(tmp) / "set", compress=compress))
    assert back.content_hash() == es.content_hash()
    assert [e.start for e in back.evidence] == [
        back.corpus[e.doc_id].text.find("quote") for e in back.evidence]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evalsets())
def test_beir_round_trip_keeps_judged_queries(es: EvalSet) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        back = read_beir(write_beir(es, Path(tmp) / "b"))
    # evidence travels in the side file evidence.jsonl (every quoted query is judged here)
    assert back.content_hash() == es.content_hash()
    assert [(e.query_id, e.doc_id, e.grade, e.quote) for e in back.evidence] == [
        (e.query_id, e.doc_id, e.grade, e.quote) for e in es.evidence]
