from __future__ import annotations

import numpy as np
import pytest

from searchbench.ann.formats import (
    read_ann_benchmarks,
    read_bigann_groundtruth,
    read_bin,
    read_vectors,
    write_bin,
)
from searchbench.errors import DataFormatError

from .ann_vectors import clustered


def test_fbin_roundtrip_bytes(tmp_path):
    x, _ = clustered(10, 1, 4)
    write_bin(tmp_path / "v.fbin", x)
    raw = (tmp_path / "v.fbin").read_bytes()
    assert raw[:8] == np.array([10, 4], dtype="<u4").tobytes()
    np.testing.assert_array_equal(read_bin(tmp_path / "v.fbin"), x)
    np.testing.assert_array_equal(read_vectors(tmp_path / "v.fbin"), x)


def test_truncated_bin_is_an_error(tmp_path):
    ids = np.arange(12, dtype=np.int32).reshape(3, 4)
    write_bin(tmp_path / "i.ibin", ids)
    np.testing.assert_array_equal(read_bin(tmp_path / "i.ibin"), ids)
    data = (tmp_path / "i.ibin").read_bytes()[:-4]
    (tmp_path / "t.ibin").write_bytes(data)
    with pytest.raises(DataFormatError, match="header says 3 × 4"):
        read_bin(tmp_path / "t.ibin")


def test_bigann_groundtruth_layout(tmp_path):
    ids = np.array([[3, 1], [0, 2]], dtype="<u4")
    dist = np.array([[0.5, 0.7], [0.1, 0.2]], dtype="<f4")
    with open(tmp_path / "gt", "wb") as fh:
        np.array([2, 2], dtype="<u4").tofile(fh)
        ids.tofile(fh)
        dist.tofile(fh)
    gt = read_bigann_groundtruth(tmp_path / "gt", "l2")
    np.testing.assert_array_equal(gt.ids, ids)
    np.testing.assert_allclose(gt.distances, dist)
    assert gt.metric == "l2" and gt.k == 2


def test_ann_benchmarks_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    base, queries = clustered(50, 3, 4)
    with h5py.File(tmp_path / "d.hdf5", "w") as f:
        f.attrs["distance"] = "euclidean"
        f["train"], f["test"] = base, queries
        f["neighbors"] = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32)
        f["distances"] = np.array([[1.0, 2.0], [0.5, 3.0], [2.0, 2.0]], dtype=np.float32)
    train, _test, gt = read_ann_benchmarks(tmp_path / "d.hdf5")
    np.testing.assert_array_equal(train, base)
    assert gt.metric == "l2"
    np.testing.assert_allclose(gt.distances[0], [1.0, 4.0])  # squared
    np.testing.assert_array_equal(read_vectors(tmp_path / "d.hdf5", key="test"), queries)
