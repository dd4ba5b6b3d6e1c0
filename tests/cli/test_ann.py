"""``searchbench ann``: ground truth, sweep, report; bad input gives one line and exit 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from searchbench.cli.main import main
from searchbench.knn import GroundTruth

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "ann"))
from ann_vectors import brute_force, clustered


@pytest.fixture()
def files(tmp_path):
    base, queries = clustered(1500, 25, 16, seed=4)
    np.save(tmp_path / "b.npy", base)
    np.save(tmp_path / "q.npy", queries)
    return tmp_path, base, queries


@pytest.mark.parametrize("engine", ["auto", "numpy"])
def test_groundtruth_matches_brute_force(files, capsys, engine):
    d, base, queries = files
    rc = main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries",
               str(d / "q.npy"), "--metric", "l2", "-k", "7", "-o", str(d / "gt.npz"),
               "--engine", engine])
    assert rc == 0
    gt = GroundTruth.load(d / "gt.npz")
    ids, _ = brute_force(base, queries, 17, "l2")
    np.testing.assert_array_equal(gt.ids, ids)
    assert gt.provenance["vectors"].endswith("b.npy")
    assert gt.provenance["engine"] == ("numpy" if engine == "numpy" else "faiss")


@pytest.mark.parametrize(("args", "message"), [
    (["-k", "5000"], "k=5000 but the corpus holds 1500"),
    (["--engine", "gpu"], "engine='gpu'; expected 'auto', 'faiss' or 'numpy'"),
])
def test_groundtruth_bad_input(files, capsys, args, message):
    d, _, _ = files
    rc = main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries",
               str(d / "q.npy"), "-o", str(d / "x.npz"), *args])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("quiet", [False, True])
def test_groundtruth_reports_a_warning_once_as_one_line(files, capsys, monkeypatch, quiet):
    """A library warning during ``ann groundtruth`` is one ``warning:`` line (once, none
    with -q), as in every other command, not Python's file:line form."""
    import warnings

    import searchbench.knn
    from searchbench.errors import SearchbenchWarning

    exact = searchbench.knn.exact_knn

    def warning_twice(*args, **kwargs):
        for _ in range(2):
            warnings.warn("the corpus holds repeated vectors", SearchbenchWarning, stacklevel=2)
        return exact(*args, **kwargs)

    monkeypatch.setattr(searchbench.knn, "exact_knn", warning_twice)
    d, _, _ = files
    rc = main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries",
               str(d / "q.npy"), "-k", "3", "-o", str(d / "w.npz"), *(["-q"] if quiet else [])])
    err = capsys.readouterr().err
    assert rc == 0
    expected = [] if quiet else ["warning: the corpus holds repeated vectors"]
    assert [line for line in err.splitlines() if "repeated" in line] == expected


def test_unknown_metric_is_a_usage_error_listing_aliases(files, capsys):
    d, _, _ = files
    rc = main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries",
               str(d / "q.npy"), "-o", str(d / "x.npz"), "--metric", "hamming"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown metric 'hamming'" in err and "cos=cosine" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("spelling", ["cos", "COSINE", "angular"])
def test_metric_aliases_are_accepted_on_the_command_line(files, spelling):
    """``ann --metric cos`` means what ``Dense(metric="cos")`` means: cosine."""
    d, base, queries = files
    for name, metric in (("a", "cosine"), ("b", spelling)):
        assert main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries",
                     str(d / "q.npy"), "--metric", metric, "-k", "5",
                     "-o", str(d / f"{name}.npz"), "--quiet"]) == 0
    a, b = GroundTruth.load(d / "a.npz"), GroundTruth.load(d / "b.npz")
    assert a.metric == b.metric == "cosine"
    np.testing.assert_array_equal(a.ids, b.ids)
    ids, _ = brute_force(base, queries, 5, "cosine")
    np.testing.assert_array_equal(b.ids[:, :5], ids[:, :5])


def test_sweep_bad_input_before_work(files, capsys):
    d, base, queries = files
    np.save(d / "q8.npy", queries[:, :8])
    bad = base.copy()
    bad[3, 1] = np.nan
    np.save(d / "nan.npy", bad)
    main(["ann", "groundtruth", "--vectors", str(d / "b.npy"), "--queries", str(d / "q.npy"),
          "--metric", "ip", "-k", "10", "-o", str(d / "gt.npz")])
    capsys.readouterr()
    cases = [
        (["--vectors", "b.npy", "--queries", "q.npy", "--param", "ef=1"],
         "unknown parameter 'ef' for index 'hnsw'; valid: build M, efConstruction; search "
         "efSearch"),
        (["--vectors", "b.npy", "--queries", "q8.npy"], "dimension mismatch"),
        (["--vectors", "nan.npy", "--queries", "q.npy"], "row 3 holds NaN"),
        (["--vectors", "b.npy", "--queries", "q.npy", "--gt", "gt.npz", "--metric", "l2"],
         "made with metric 'ip'"),
        (["--vectors", "b.npy", "--queries", "q.npy", "-k", "2000"], "k=2000"),
    ]
    for args, message in cases:
        args = [str(d / a) if a.endswith(".npy") or a.endswith(".npz") else a for a in args]
        rc = main(["ann", "sweep", *args, "-o", str(d / "s.json")])
        err = capsys.readouterr().err
        assert rc == 1 and message in err, (args, err)
    assert not (d / "s.json").exists()


def test_sweep_and_report(files, capsys):
    pytest.importorskip("hnswlib")
    pytest.importorskip("matplotlib")
    d, _, _ = files
    rc = main(["ann", "sweep", "--vectors", str(d / "b.npy"), "--queries", str(d / "q.npy"),
               "--index", "hnswlib", "--param", "M=4", "--param", "efSearch=2,32",
               "--repeats", "1", "--threads", "1", "-q", "-o", str(d / "s.json")])
    assert rc == 0
    data = json.loads((d / "s.json").read_text())
    assert [p["search"]["efSearch"] for p in data["points"]] == [2, 32]
    assert data["machine"]["cores"] >= 1
    rc = main(["ann", "report", str(d / "s.json"), "-o", str(d / "r.html"), "-f", "markdown"])
    out = capsys.readouterr().out
    assert rc == 0 and "| hnswlib | M=4 efConstruction=200 efSearch=32 |" in out
    assert "<svg" in (d / "r.html").read_text()
