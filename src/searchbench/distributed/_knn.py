"""Exact k-NN ground truth with the corpus sharded over Ray workers (ARCHITECTURE §13).

Each shard (a contiguous range of corpus rows) gets :func:`~searchbench.knn.exact_knn`'s
float64-verified top-``depth`` (``depth = min(k + extra, rows)``) by (distance, row id) of its
own rows; ids are shifted to corpus rows and the shards' lists are merged by (distance, id).
The global top-``depth`` by (distance, id) is the top-``depth`` of the union of the shards'
top-``depth`` lists, and every distance is the same float64 number (computed per pair by
:func:`~searchbench.knn.exact_distances`), so the result equals the single-process
``exact_knn`` exactly: ids and distances.
"""

from __future__ import annotations

import os
from itertools import pairwise
from typing import Any

import numpy as np

from ..errors import BackendError, SearchbenchError
from ..knn import GroundTruth, check_knn_inputs, exact_knn, fingerprint
from ._cluster import gather, ray_cluster

__all__ = ["merge_shards", "shard_bounds", "sharded_knn"]

RETRIES = 2


def shard_bounds(n: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous row ranges covering ``0..n`` as evenly as possible."""
    edges = np.linspace(0, n, min(shards, n) + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in pairwise(edges) if b > a]


def merge_shards(parts: list[tuple[np.ndarray, np.ndarray]], depth: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-shard ``(ids, distances)`` (ids already corpus rows) into the top
    ``depth`` of every query by (distance ascending, id ascending) - the tie policy."""
    ids = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((ids, dist), axis=1)[:, :depth]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(dist, order, axis=1)


def sharded_knn(base: np.ndarray | str | os.PathLike[str], queries: np.ndarray, k: int,
                metric: str = "ip", *, extra: int = 10, shards: int = 4,
                engine: str = "auto", address: str | None = None, retries: int = RETRIES,
                quiet: bool | None = None) -> GroundTruth:
    """:func:`~searchbench.knn.exact_knn` with the corpus cut into ``shards`` row ranges
    searched as Ray tasks; the same ids and distances. ``base``: a matrix (put in Ray's
    object store once) or the path of a ``.npy`` file each task memory-maps (a cluster's
    workers must see that path). ``engine``: the candidate engine of each shard."""

    matrix = np.load(base, mmap_mode="r") if isinstance(base, (str, os.PathLike)) else base
    matrix, queries, metric = check_knn_inputs(matrix, queries, k, metric, extra)
    depth = min(k + extra, len(matrix))
    bounds = shard_bounds(len(matrix), shards)
    with ray_cluster(address) as ray:
        source = os.fspath(base) if isinstance(base, (str, os.PathLike)) else ray.put(matrix)
        q_ref = ray.put(queries)
        task = ray.remote(max_retries=retries, retry_exceptions=[OSError])(_shard_top)
        pending = {task.remote(source, q_ref, lo, hi, depth, metric, engine): (lo, hi)
                   for lo, hi in bounds}
        done, failed = gather(ray, pending, "ground truth", "shards", quiet)
    if failed:
        raise _failure(failed, len(done), len(bounds))
    ordered = [done[b] for b in bounds]
    ids, dist = merge_shards([(p[0], p[1]) for p in ordered], depth)
    prov = dict(ordered[0][2])
    prov.update(n_base=int(matrix.shape[0]), base_fingerprint=fingerprint(matrix), k=k,
                extra=extra, queries_searched_again=int(sum(p[3] for p in ordered)),
                sharding={"engine": "ray", "shards": len(bounds),
                          "merge": "per-shard top-(k + extra), merged by (distance, id)"})
    return GroundTruth(ids, dist, metric, k, prov)


def _shard_top(source: Any, queries: np.ndarray, lo: int, hi: int, depth: int, metric: str,
               engine: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any], int]:
    """A Ray task: the exact top-``depth`` of rows ``lo:hi`` (ids as corpus rows)."""
    base = np.load(source, mmap_mode="r") if isinstance(source, str) else source
    shard = np.ascontiguousarray(base[lo:hi])
    found = exact_knn(shard, queries, min(depth, hi - lo), metric, extra=0, engine=engine,
                      threads=1)
    ids, dist = found.ids + lo, found.distances
    if ids.shape[1] < depth:  # a shard smaller than depth: pad with "no neighbour"
        pad = depth - ids.shape[1]
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=np.iinfo(np.int64).max)
        dist = np.pad(dist, ((0, 0), (0, pad)), constant_values=np.inf)
    return ids, dist, found.provenance, int(found.provenance.get("queries_searched_again", 0))


def _failure(failed: list[tuple[tuple[int, int], BaseException]], n_done: int,
             n_shards: int) -> SearchbenchError:
    (lo, hi), cause = failed[0]
    name = f"shard rows {lo}..{hi - 1}"
    tail = f"; {n_done} of {n_shards} shards finished, no ground truth was written"
    if isinstance(cause, SearchbenchError):
        return type(cause)(f"{name} failed: {cause}{tail}")
    return BackendError(f"{name} failed after {RETRIES} retries: {type(cause).__name__}: "
                        f"{cause}{tail}")
