"""``searchbench embed`` (local engine): Parquet shards the cache and ann groundtruth read."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("model2vec")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "searchbench", *args], capture_output=True,
                          text=True, check=False)


def test_embed_then_groundtruth_then_cache_reuse(tmp_path):
    from searchbench.collections.registry import load_evalset
    from searchbench.knn import GroundTruth, exact_knn
    from searchbench.retrieval.encoders import encoder

    out = tmp_path / "emb"
    done = _run("embed", "pyref", "--model", "static", "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    es = load_evalset("pyref")
    enc = encoder("static", cache=out)  # a single-process run on the folder embeds nothing
    docs = enc.encode_documents(es.corpus.texts(True))
    assert enc.last_cache.misses == 0
    queries = enc.encode_queries(es.judged_queries.texts())
    assert enc.last_cache.misses == 0
    gt_path = tmp_path / "gt.npz"
    done = _run("ann", "groundtruth", "--vectors", str(out), "--queries", str(out), "-k", "5",
                "-o", str(gt_path), "-q")
    assert done.returncode == 0, done.stderr
    expected = exact_knn(docs, queries, 5, "cosine")
    got = GroundTruth.load(gt_path)
    assert np.array_equal(got.ids, expected.ids)
    assert np.array_equal(got.distances, expected.distances)


def test_a_folder_of_another_model_or_the_user_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    done = _run("embed", "pyref", "--model", "static", "-o", str(mine))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: {mine} exists and is not an embedding folder; choose a new or empty "
        "--output folder"]
    assert (mine / "notes.txt").read_text() == "keep me"
