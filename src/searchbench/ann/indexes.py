"""ANN index adapters (FAISS HNSW / IVF-Flat / IVF-PQ, hnswlib HNSW) behind one interface.

Parameters split into **build** parameters (one index per combination) and **search**
parameters (looped over a built index). Distances come back in searchbench's convention
(smaller = closer, see :mod:`searchbench.knn`); cosine indexes are built on
unit-normalised vectors.
faiss and hnswlib are imported only when an index is built.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, require

__all__ = ["INDEXES", "AnnIndex", "IndexSpec", "index_spec", "make_index"]


@dataclass(frozen=True)
class IndexSpec:
    """An index family: its library and its parameters with default values."""

    name: str
    library: str
    description: str
    build: dict[str, int]
    search: dict[str, int]

    @property
    def params(self) -> list[str]:
        return [*self.build, *self.search]

    def check(self, names: list[str]) -> None:
        """Raise :class:`ConfigError` for a parameter this index does not have."""
        for name in names:
            if name not in self.build and name not in self.search:
                raise ConfigError(
                    f"unknown parameter {name!r} for index {self.name!r}; valid: build "
                    f"{', '.join(self.build)}; search {', '.join(self.search)}")


INDEXES: dict[str, IndexSpec] = {
    "hnsw": IndexSpec("hnsw", "faiss", "faiss IndexHNSWFlat",
                      {"M": 32, "efConstruction": 200}, {"efSearch": 64}),
    "ivf": IndexSpec("ivf", "faiss", "faiss IndexIVFFlat",
                     {"nlist": 1024}, {"nprobe": 16}),
    "ivfpq": IndexSpec("ivfpq", "faiss", "faiss IndexIVFPQ",
                       {"nlist": 1024, "m": 16, "nbits": 8}, {"nprobe": 16}),
    "hnswlib": IndexSpec("hnswlib", "hnswlib", "hnswlib HNSW",
                         {"M": 16, "efConstruction": 200}, {"efSearch": 64}),
}
_ALIASES = {"ivfflat": "ivf", "ivf-flat": "ivf", "ivf-pq": "ivfpq", "faiss-hnsw": "hnsw"}


def index_spec(name: str) -> IndexSpec:
    """The :class:`IndexSpec` of ``name`` or a :class:`ConfigError` listing the known ones."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in INDEXES:
        raise ConfigError(f"unknown index {name!r}; expected one of {', '.join(INDEXES)}")
    return INDEXES[key]


class AnnIndex(ABC):
    """Build once, set search parameters, search. Subclasses wrap one library."""

    def __init__(self, spec_: IndexSpec, metric: str, build: dict[str, int]) -> None:
        self.spec, self.metric, self.build_params = spec_, metric, dict(build)
        self.n = 0

    def check(self, n: int, dim: int) -> None:
        """Refuse parameter values that cannot work for ``n`` vectors of ``dim``."""
        return None  # every value works unless a subclass knows otherwise

    @abstractmethod
    def build(self, base: np.ndarray, threads: int) -> None:
        ...

    @abstractmethod
    def set_search(self, params: dict[str, int]) -> None:
        ...

    @abstractmethod
    def search(self, queries: np.ndarray, k: int, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64, distances float64), each ``(n_queries, k)``; id −1 = no result."""
        ...

    @abstractmethod
    def memory_bytes(self) -> int:
        """Size of the serialised index (measured by serialising it)."""
        ...


@contextlib.contextmanager
def faiss_threads(faiss: Any, threads: int) -> Iterator[None]:
    """Set faiss' OpenMP threads for a block and restore the previous value."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class FaissIndex(AnnIndex):
    """faiss HNSWFlat, IVFFlat and IVFPQ."""

    def check(self, n: int, dim: int) -> None:
        p = self.build_params
        if "nlist" in p and not 1 <= p["nlist"] <= n:
            raise ConfigError(f"nlist={p['nlist']} but the corpus holds {n} vectors; "
                              f"expected 1 ≤ nlist ≤ {n}")
        if "m" in p and (p["m"] < 1 or dim % p["m"]):
            divisors = [d for d in range(1, min(dim, 64) + 1) if dim % d == 0]
            raise ConfigError(f"m={p['m']} does not divide the dimension {dim}; "
                              f"valid m: {', '.join(map(str, divisors))}")
        if "nbits" in p and (not 1 <= p["nbits"] <= 16 or 2 ** p["nbits"] > n):
            raise ConfigError(f"nbits={p['nbits']}: expected 1..16 with 2^nbits ≤ {n} "
                              "training vectors")
        if "M" in p and p["M"] < 2:
            raise ConfigError(f"M={p['M']}; expected M ≥ 2")

    def build(self, base: np.ndarray, threads: int) -> None:
        faiss = require("faiss", "ann")
        x = np.ascontiguousarray(base, dtype=np.float32)
        d, p = x.shape[1], self.build_params
        mt = faiss.METRIC_L2 if self.metric == "l2" else faiss.METRIC_INNER_PRODUCT
        with faiss_threads(faiss, threads):
            if self.spec.name == "hnsw":
                index = faiss.IndexHNSWFlat(d, p["M"], mt)
                index.hnsw.efConstruction = p["efConstruction"]
            else:
                self._quantizer = faiss.IndexFlat(d, mt)
                index = (faiss.IndexIVFFlat(self._quantizer, d, p["nlist"], mt)
                         if self.spec.name == "ivf" else
                         faiss.IndexIVFPQ(self._quantizer, d, p["nlist"], p["m"], p["nbits"], mt))
                index.train(x)
            index.add(x)
        self.index, self.n = index, len(x)

    def set_search(self, params: dict[str, int]) -> None:
        if "efSearch" in params:
            self.index.hnsw.efSearch = params["efSearch"]
        if "nprobe" in params:
            self.index.nprobe = params["nprobe"]

    def search(self, queries: np.ndarray, k: int, threads: int) -> tuple[np.ndarray, np.ndarray]:
        faiss = require("faiss", "ann")
        with faiss_threads(faiss, threads):
            dist, ids = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return ids.astype(np.int64), _from_faiss(dist.astype(np.float64), self.metric)

    def memory_bytes(self) -> int:
        faiss = require("faiss", "ann")
        return int(faiss.serialize_index(self.index).nbytes)


def _from_faiss(dist: np.ndarray, metric: str) -> np.ndarray:
    if metric == "ip":
        return -dist
    return 1.0 - dist if metric == "cosine" else dist


class HnswlibIndex(AnnIndex):
    """hnswlib's HNSW (space ``ip``: 1 − ⟨q,x⟩, ``cosine``: 1 − cos, ``l2``: squared)."""

    def check(self, n: int, dim: int) -> None:
        if self.build_params["M"] < 2:
            raise ConfigError(f"M={self.build_params['M']}; expected M ≥ 2")

    def build(self, base: np.ndarray, threads: int) -> None:
        hnswlib = require("hnswlib", "ann")
        x = np.ascontiguousarray(base, dtype=np.float32)
        index = hnswlib.Index(space=self.metric, dim=x.shape[1])
        index.init_index(max_elements=len(x), M=self.build_params["M"],
                         ef_construction=self.build_params["efConstruction"], random_seed=100)
        index.add_items(x, np.arange(len(x)), num_threads=threads)
        self.index, self.n = index, len(x)

    def set_search(self, params: dict[str, int]) -> None:
        self.ef = params.get("efSearch", self.spec.search["efSearch"])

    def search(self, queries: np.ndarray, k: int, threads: int) -> tuple[np.ndarray, np.ndarray]:
        self.index.set_ef(max(self.ef, k))  # hnswlib refuses ef < k (faiss accepts it)
        ids, dist = self.index.knn_query(np.ascontiguousarray(queries, dtype=np.float32), k=k,
                                         num_threads=threads)
        dist = dist.astype(np.float64)
        if self.metric == "ip":
            dist = dist - 1.0  # hnswlib returns 1 − ⟨q,x⟩
        return ids.astype(np.int64), dist

    def memory_bytes(self) -> int:
        with tempfile.TemporaryDirectory() as scratch:  # a private scratch file, not output
            path = os.path.join(scratch, "index.hnswlib")
            self.index.save_index(path)
            return os.path.getsize(path)


def make_index(name: str, metric: str, build: dict[str, int] | None = None) -> AnnIndex:
    """An unbuilt index of family ``name`` with ``build`` parameters (defaults filled in)."""
    s = index_spec(name)
    params = dict(s.build)
    for key, value in (build or {}).items():
        s.check([key])
        if key not in s.build:
            raise ConfigError(f"{key!r} is a search parameter of {s.name!r}, not a build one")
        params[key] = int(value)
    cls = HnswlibIndex if s.library == "hnswlib" else FaissIndex
    return cls(s, metric, params)
