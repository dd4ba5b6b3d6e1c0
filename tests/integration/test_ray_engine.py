"""The Ray engine (distributed/, ARCHITECTURE §13): results equal the single-process ones.

One local Ray (2 CPUs, no dashboard, on 127.0.0.1) is started for the module by
``ray_cluster`` and shut down at its end.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray")

from searchbench.data import Qrels, Run  # noqa: E402
from searchbench.errors import DataFormatError  # noqa: E402
from searchbench.knn import exact_knn  # noqa: E402
from searchbench.measures import Evaluator  # noqa: E402

MEASURES = ["nDCG@10", "AP", "RR", "R@5", "Bpref", "NumRet", "NumRelRet"]


@pytest.fixture(scope="module")
def cluster():
    """searchbench's own local Ray (loopback only, quiet), shared by the module's tests."""
    from searchbench.distributed import ray_cluster

    with ray_cluster(num_cpus=2) as started:
        yield started


def _data(tmp_path, rng):
    """A run of 60 queries (q0..q59, some absent from the qrels) with tied scores, and
    qrels with graded and negative labels for q5..q69 (some absent from the run)."""
    qs, ds, ss = [], [], []
    for q in range(60):
        docs = rng.choice(40, 15, replace=False)
        qs += [f"q{q}"] * 15
        ds += [f"d{d}" for d in docs]
        ss += list(rng.integers(0, 4, 15) / 2)  # many ties
    run = Run.from_columns(qs, ds, np.array(ss), name="r")
    judged = [(f"q{q}", f"d{d}", int(g)) for q in range(5, 70)
              for d, g in zip(rng.choice(40, 8, replace=False), rng.integers(-1, 3, 8),
                              strict=True)]
    qrels = Qrels.from_columns(*zip(*judged, strict=True))
    table = pa.table({"query_id": pa.array(qs), "doc_id": pa.array(ds),
                      "score": pa.array(ss, pa.float64())})
    pq.write_table(table, tmp_path / "run.parquet", row_group_size=100)
    run.to_file(tmp_path / "run.trec")
    return qrels, run


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_eval_partitioned_by_query_equals_in_memory(cluster, tmp_path, missing):
    from searchbench.distributed import evaluate_runs

    qrels, run = _data(tmp_path, np.random.default_rng(3))
    evaluator = Evaluator(qrels, MEASURES, missing=missing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = evaluator.evaluate(run)
        found = evaluate_runs(evaluator, [tmp_path / "run.parquet", tmp_path / "run.trec"],
                              names=["r", "r"], partitions=4, quiet=True)
    for got in (f.result for f in found):
        assert got.query_ids.tolist() == expected.query_ids.tolist()
        assert (got.n_missing, got.n_extra) == (expected.n_missing, expected.n_extra)
        for name in MEASURES:
            assert np.array_equal(got.scores[name], expected.scores[name]), name
            assert got.mean[name] == expected.mean[name], name


def test_a_failing_partition_is_named_and_the_others_counted(cluster, tmp_path):
    from searchbench.distributed import evaluate_runs

    qrels = Qrels.from_columns(["a", "m", "z"], ["x", "x", "x"], [1, 1, 1])
    pq.write_table(pa.table({"query_id": ["a", "m", "z"], "doc_id": ["x", None, "x"],
                             "score": [1.0, 1.0, 1.0]}), tmp_path / "run.parquet")
    with pytest.raises(DataFormatError) as err:
        evaluate_runs(Evaluator(qrels, ["AP"]), [tmp_path / "run.parquet"], partitions=3,
                      quiet=True)
    message = str(err.value)
    assert "run.parquet [queries from 'm' to before 'z']" in message
    assert "column 'doc_id' is null" in message
    assert "2 of 3 partitions finished" in message


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_sharded_ground_truth_equals_single_process(cluster, tmp_path, metric):
    from searchbench.distributed import sharded_knn

    rng = np.random.default_rng(7)
    base = rng.standard_normal((3000, 16)).astype(np.float32)
    base[[50, 1700, 2999]] = base[11]  # exact ties across shards: ids decide
    queries = rng.standard_normal((20, 16)).astype(np.float32)
    queries[0] = base[11]
    np.save(tmp_path / "base.npy", base)
    expected = exact_knn(base, queries, 10, metric, extra=5)
    for source in (base, tmp_path / "base.npy"):
        got = sharded_knn(source, queries, 10, metric, extra=5, shards=4, quiet=True)
        assert np.array_equal(got.ids, expected.ids)
        assert np.array_equal(got.distances, expected.distances)
    if metric != "ip":  # first principles: the query's four copies, tied, by id
        assert got.ids[0, :4].tolist() == [11, 50, 1700, 2999]
    assert got.provenance["sharding"]["shards"] == 4


def test_ray_embedding_equals_local_and_the_cache_reuses_it(cluster, tmp_path):
    pytest.importorskip("model2vec")
    from searchbench.collections.registry import load_evalset
    from searchbench.distributed import embed_corpus
    from searchbench.distributed.embed import embed_texts_local
    from searchbench.retrieval.encoders import encoder
    from searchbench.retrieval.shards import EmbeddingFolder, read_embedded

    es = load_evalset("pyref")
    ids, texts = list(es.corpus.ids), es.corpus.texts(True)
    enc = encoder("static", cache=False)
    ray_folder = EmbeddingFolder(tmp_path / "ray", enc.identity)
    local_folder = EmbeddingFolder(tmp_path / "local", enc.identity)
    stats = embed_corpus("static", enc.identity, ray_folder, "corpus", ids, texts,
                         batch_size=16, shard_rows=32, quiet=True)
    embed_texts_local(enc, local_folder, "corpus", ids, texts, quiet=True)
    for folder in (ray_folder, local_folder):
        folder.write_manifest(corpus_rows=len(ids), queries_rows=0)
    got, got_ids = read_embedded(tmp_path / "ray")
    want, want_ids = read_embedded(tmp_path / "local")
    assert got_ids == want_ids == ids and stats.embedded == len(ids)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got, enc.encode_documents(texts), rtol=0, atol=1e-6)
    again = encoder("static", cache=tmp_path / "ray")  # a single-process run on that folder
    again.encode_documents(texts)
    assert (again.last_cache.hits, again.last_cache.misses) == (len(texts), 0)
    assert embed_corpus("static", enc.identity, ray_folder, "corpus", ids, texts,
                        quiet=True).embedded == 0  # resumed: nothing left to embed


def test_an_unreachable_address_fails_fast_naming_it(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "q.txt").write_text("a 0 x 1\n")
    (tmp_path / "r.trec").write_text("a Q0 x 1 1 t\n")
    done = subprocess.run([sys.executable, "-m", "searchbench", "eval", str(tmp_path / "q.txt"),
                           str(tmp_path / "r.trec"), "--engine", "ray", "--address",
                           f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot reach the Ray cluster at '127.0.0.1:{port}'")
