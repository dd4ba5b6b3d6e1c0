"""Vector and ground-truth files: ``.npy``, big-ann ``.fbin/.ibin/.u8bin/.i8bin`` and
big-ann ground truth, ann-benchmarks HDF5.

big-ann layouts (little-endian): ``uint32 n, uint32 d`` then ``n·d`` values (float32,
int32, uint8 or int8). Its ground-truth files: ``uint32 n, uint32 k``, ``n·k`` uint32 ids,
then ``n·k`` float32 distances. ann-benchmarks HDF5: datasets ``train``, ``test``,
``neighbors``, ``distances`` and the attribute ``distance`` (``angular`` = 1 − cos,
``euclidean`` = ‖q − x‖, not squared).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .._util import atomic_write
from ..errors import DataFormatError, require
from ..knn import TIE_POLICY, GroundTruth, check_finite, check_metric

__all__ = [
    "checked_vectors",
    "read_ann_benchmarks",
    "read_bigann_groundtruth",
    "read_bin",
    "read_vecs",
    "read_vectors",
    "write_bin",
]

_BIN_DTYPES = {".fbin": np.float32, ".ibin": np.int32, ".u8bin": np.uint8, ".i8bin": np.int8}


def read_bin(path: str | os.PathLike[str], mmap: bool = True) -> np.ndarray:
    """Read a big-ann ``.fbin/.ibin/.u8bin/.i8bin`` file as an ``(n, d)`` array."""
    path = Path(path)
    dtype = _BIN_DTYPES.get(path.suffix)
    if dtype is None:
        raise DataFormatError(f"{path}: unknown extension; expected one of "
                              f"{', '.join(_BIN_DTYPES)}")
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file; expected a {path.suffix} file")
    n, d = _header(path)
    expected = 8 + n * d * np.dtype(dtype).itemsize
    size = path.stat().st_size
    if size != expected:
        raise DataFormatError(f"{path}: header says {n} × {d} {np.dtype(dtype).name} "
                              f"({expected} bytes), the file has {size} bytes")
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, d))
    return np.fromfile(path, dtype=dtype, offset=8).reshape(n, d)


def write_bin(path: str | os.PathLike[str], x: np.ndarray) -> None:
    """Write an ``(n, d)`` array in big-ann layout; the extension fixes the dtype."""
    path = Path(path)
    dtype = _BIN_DTYPES.get(path.suffix)
    if dtype is None or x.ndim != 2:
        raise DataFormatError(f"{path}: expected a 2-D array and one of {', '.join(_BIN_DTYPES)}")
    with atomic_write(path, binary=True, compress=False) as fh:
        np.array(x.shape, dtype="<u4").tofile(fh)
        np.ascontiguousarray(x, dtype=dtype).tofile(fh)


def _header(path: Path) -> tuple[int, int]:
    raw = np.fromfile(path, dtype="<u4", count=2)
    if len(raw) != 2:
        raise DataFormatError(f"{path}: shorter than the 8-byte header (uint32 n, uint32 d)")
    return int(raw[0]), int(raw[1])


def read_bigann_groundtruth(path: str | os.PathLike[str], metric: str) -> GroundTruth:
    """Read big-ann ground truth (ids then float32 distances); ``metric`` names what the
    distances are (big-ann stores ``l2`` distances squared and ``ip`` as inner products).
    """
    path, metric = Path(path), check_metric(metric)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file; expected big-ann ground truth")
    n, k = _header(path)
    expected = 8 + 2 * n * k * 4
    if path.stat().st_size != expected:
        raise DataFormatError(f"{path}: header says {n} queries × {k} neighbours "
                              f"({expected} bytes), the file has {path.stat().st_size}")
    ids = np.fromfile(path, dtype="<u4", count=n * k, offset=8).reshape(n, k).astype(np.int64)
    dist = np.fromfile(path, dtype="<f4", count=n * k, offset=8 + n * k * 4).reshape(n, k)
    dist = dist.astype(np.float64)
    if metric == "ip" and n and np.all(np.diff(dist, axis=1) <= 0):
        dist = -dist  # stored as similarities, best first
    return GroundTruth(ids, dist, metric, k, {"source": str(path), "format": "big-ann",
                                              "tie_policy": "as stored"})


def read_vectors(path: str | os.PathLike[str], key: str | None = None) -> np.ndarray:
    """``.npy`` (memory-mapped), big-ann binary, ``.fvecs/.ivecs/.bvecs``, one dataset of
    an HDF5 file, or a folder written by ``searchbench embed`` (its corpus; its queries for
    ``key="test"``), checked: a 2-D array of numbers with at least one row and column, every
    value finite. A malformed file (object array - never unpickled -, truncated, bad
    header, wrong shape, NaN or infinity) raises :class:`DataFormatError` naming the file
    (and the first bad row)."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: no such file; expected a vector file")
    if path.is_dir():
        # lazy: loads retrieval on first use
        from ..retrieval import Kind, is_embedding_folder, read_embedded

        if is_embedding_folder(path):  # written by searchbench embed: test = its queries
            kind: Kind = "queries" if key == "test" else "corpus"
            return checked_vectors(read_embedded(path, kind)[0], f"{path} ({kind})")
        raise DataFormatError(f"{path}: is a folder; expected a vector file (or a folder "
                              "written by searchbench embed)")
    if path.suffix == ".npy":
        return checked_vectors(_read_npy(path), str(path))
    if path.suffix in _BIN_DTYPES:
        return checked_vectors(read_bin(path), str(path))
    if path.suffix in _VECS_DTYPES:
        return checked_vectors(read_vecs(path), str(path))
    if path.suffix in (".hdf5", ".h5"):
        h5py = require("h5py", "ann")
        try:
            with h5py.File(path, "r") as f:
                name = key or "train"
                if name not in f:
                    raise DataFormatError(f"{path}: no dataset {name!r}; found {sorted(f)}")
                return checked_vectors(np.asarray(f[name]), f"{path}[{name}]")
        except DataFormatError:
            raise
        except (OSError, ValueError, TypeError) as exc:
            raise DataFormatError(f"{path}: not a readable HDF5 file ({exc}); expected an "
                                  "ann-benchmarks .hdf5 file") from None
    raise DataFormatError(f"{path}: unknown vector file; expected .npy, "
                          f"{', '.join(_BIN_DTYPES)}, {', '.join(_VECS_DTYPES)} or .hdf5")


def _read_npy(path: Path) -> np.ndarray:
    """A ``.npy`` file memory-mapped; pickled data is never loaded (``allow_pickle=False``)."""
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # numpy parses the untrusted header: ValueError, EOFError,
        # OSError, tokenize.TokenError, SyntaxError... all mean "not a .npy array"
        text = str(exc)
        why = "it holds Python objects (pickled data is never loaded)" \
            if "object" in text or "pickle" in text else \
            "the file is shorter than its header says: truncated" if "mmap length" in text \
            else text
        raise DataFormatError(f"{path}: not a readable .npy array ({why}); expected a 2-D "
                              "numeric array saved with numpy.save") from None
    if not isinstance(arr, np.ndarray):
        raise DataFormatError(f"{path}: holds an .npz archive, not one array; expected a 2-D "
                              "numeric array saved with numpy.save")
    return arr


def checked_vectors(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` if it is a non-empty 2-D array of finite numbers; else DataFormatError naming
    ``name`` and the first bad row. Rows are checked in chunks (memory maps stay maps)."""
    if x.dtype.kind not in "fiu" or x.dtype.fields is not None:
        raise DataFormatError(f"{name}: found values of type {x.dtype}; expected numbers "
                              "(float, int or uint)")
    if x.ndim != 2:
        raise DataFormatError(f"{name}: found a {x.ndim}-D array of shape {x.shape}; expected "
                              "a 2-D array (one row per vector)")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise DataFormatError(f"{name}: found shape {x.shape}; expected at least one vector "
                              "with at least one dimension")
    if x.dtype.kind == "f":
        check_finite(x, name)
    return x


_VECS_DTYPES: dict[str, np.dtype] = {".fvecs": np.dtype("<f4"), ".ivecs": np.dtype("<i4"),
                                     ".bvecs": np.dtype("u1")}


def read_vecs(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a TEXMEX ``.fvecs/.ivecs/.bvecs`` file: per vector an int32 dimension ``d``,
    then ``d`` values (float32, int32 or uint8), every vector of the same ``d``."""
    path = Path(path)
    dtype = _VECS_DTYPES.get(path.suffix)
    if dtype is None:
        raise DataFormatError(f"{path}: unknown extension; expected one of "
                              f"{', '.join(_VECS_DTYPES)}")
    raw = np.fromfile(path, dtype=np.uint8)
    if len(raw) < 4:
        raise DataFormatError(f"{path}: shorter than one vector header (int32 dimension)")
    d = int(raw[:4].view("<i4")[0])
    row = 4 + d * dtype.itemsize
    if d <= 0 or len(raw) % row:
        raise DataFormatError(f"{path}: the first vector says dimension {d}, which does not "
                              f"divide the file's {len(raw)} bytes into whole vectors; "
                              "expected a complete file with one dimension throughout")
    rows = raw.reshape(-1, row)
    dims = rows[:, :4].copy().view("<i4").ravel()
    if (dims != d).any():
        i = int(np.flatnonzero(dims != d)[0])
        raise DataFormatError(f"{path}: vector {i} says dimension {int(dims[i])}; expected "
                              f"{d}, as the first vector")
    return np.ascontiguousarray(rows[:, 4:]).view(dtype)


def read_ann_benchmarks(path: str | os.PathLike[str]
                        ) -> tuple[np.ndarray, np.ndarray, GroundTruth]:
    """(train, test, ground truth) of an ann-benchmarks HDF5 file, distances converted to
    searchbench's convention (angular → cosine 1 − cos; euclidean → squared L2)."""
    h5py = require("h5py", "ann")
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file; expected an ann-benchmarks .hdf5 file")
    try:
        with h5py.File(path, "r") as f:
            missing = [k for k in ("train", "test", "neighbors", "distances") if k not in f]
            if missing:
                raise DataFormatError(f"{path}: missing datasets {missing}; found {sorted(f)}")
            kind = str(f.attrs.get("distance", ""))
            train = checked_vectors(np.asarray(f["train"]), f"{path}[train]")
            test = checked_vectors(np.asarray(f["test"]), f"{path}[test]")
            ids = np.asarray(f["neighbors"]).astype(np.int64)
            dist = np.asarray(f["distances"]).astype(np.float64)
    except DataFormatError:
        raise
    except (OSError, ValueError, TypeError) as exc:
        raise DataFormatError(f"{path}: not a readable ann-benchmarks HDF5 file ({exc}); "
                              "expected datasets train, test, neighbors, distances") from None
    if ids.ndim != 2 or ids.shape != dist.shape or len(ids) != len(test):
        raise DataFormatError(f"{path}: neighbors {ids.shape} and distances {dist.shape} must "
                              f"be 2-D, of one shape, one row per test vector ({len(test)})")
    if kind not in ("angular", "euclidean"):
        raise DataFormatError(f"{path}: distance {kind!r} is not supported; "
                              "expected 'angular' or 'euclidean'")
    metric = "cosine" if kind == "angular" else "l2"
    if metric == "l2":
        dist = dist**2
    meta = {"source": str(path), "format": "ann-benchmarks", "distance": kind,
            "tie_policy": f"as stored (searchbench's own: {TIE_POLICY})"}
    return train, test, GroundTruth(ids, dist, metric, ids.shape[1], meta)
