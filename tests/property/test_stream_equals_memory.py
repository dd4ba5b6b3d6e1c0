"""Property: streaming evaluation equals in-memory evaluation exactly (ARCHITECTURE §13).

Generated runs with tied scores, graded and negative labels, qrels queries the run lacks
and run queries the qrels lack, written as TREC text, gzip, Parquet and Arrow IPC with each
query's lines together (queries in random order, lines in random order within a query), are
read in tiny blocks and batches so query groups straddle every boundary.
"""

from __future__ import annotations

import gzip
import tempfile
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchbench.data import Qrels, Run
from searchbench.measures import Evaluator, stream_run

MEASURES = ["nDCG@5", "nDCG", "AP", "RR", "R@3", "P@2", "Bpref", "Rprec", "Judged@3",
            "Success@1", "NumRet", "NumRel", "NumRelRet", "NumQ", "AP(rel=2)"]
QIDS = [f"q{i}" for i in range(8)]
DOCS = [f"d{i}" for i in range(10)]


@st.composite
def cases(draw):
    run_q = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    lines = []
    for q in run_q:  # query order as drawn; lines of a query in drawn order
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        lines += [(q, d, draw(st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0]))) for d in docs]
    qrels_q = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    judged = [(q, d, draw(st.integers(-2, 3))) for q in qrels_q
              for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=5,
                                     unique=True))]
    return lines, judged


def _write(lines, folder: Path, kind: str) -> Path:
    text = "".join(f"{q} Q0 {d} {i} {s!r} tag\n" for i, (q, d, s) in enumerate(lines))
    if kind == "trec":
        (folder / "run.trec").write_text(text)
        return folder / "run.trec"
    if kind == "gz":
        with gzip.open(folder / "run.trec.gz", "wt") as fh:
            fh.write(text)
        return folder / "run.trec.gz"
    import pyarrow as pa

    table = pa.table({"query_id": [q for q, _, _ in lines], "doc_id": [d for _, d, _ in lines],
                      "score": [s for _, _, s in lines]})
    if kind == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, folder / "run.parquet", row_group_size=3)
        return folder / "run.parquet"
    with pa.OSFile(str(folder / "run.arrow"), "wb") as sink, \
            pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=2):
            writer.write_batch(batch)
    return folder / "run.arrow"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["trec", "gz", "parquet", "arrow"]),
       st.sampled_from(["zero", "skip"]), st.sampled_from([None, 2]),
       st.integers(1, 40), st.integers(1, 12))
def test_stream_equals_in_memory(case, kind, missing, depth, read_size, batch_entries):
    lines, judged = case
    qrels = Qrels.from_columns(*zip(*judged, strict=True))
    evaluator = Evaluator(qrels, MEASURES, missing=missing, depth=depth)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(lines, Path(tmp), kind)
        read = read_size * (16 if kind in ("trec", "gz") else 1)  # bytes vs rows
        with warnings.catch_warnings(record=True) as seen_whole:
            warnings.simplefilter("always")
            try:
                whole = evaluator.evaluate(Run.from_file(path, name="r"))
            except Exception as exc:
                whole = exc
        with warnings.catch_warnings(record=True) as seen_stream:
            warnings.simplefilter("always")
            try:
                streamed = stream_run(evaluator, path, name="r", read_size=read,
                                      batch_entries=batch_entries).result
            except Exception as exc:
                streamed = exc
    if isinstance(whole, Exception):
        assert type(streamed) is type(whole)
        return
    assert not isinstance(streamed, Exception), streamed
    assert [str(w.message) for w in seen_stream] == [str(w.message) for w in seen_whole]
    assert streamed.query_ids.tolist() == whole.query_ids.tolist()
    assert (streamed.n_missing, streamed.n_extra) == (whole.n_missing, whole.n_extra)
    for name in whole.measures:
        assert np.array_equal(streamed.scores[name], whole.scores[name]), name
        assert streamed.mean[name] == whole.mean[name], name
