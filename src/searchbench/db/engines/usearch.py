"""usearch (an HNSW library by Unum) as a store: ``usearch://./folder?name=docs``.

The folder holds, for collection ``name``:

- ``name.rows/`` — the loaded float32 vectors, one ``.npy`` file per loaded batch named by
  its first key (the rows the index is built from; a rebuild with another ``dtype`` starts
  from them, not from the index's quantised copy);
- ``name.ids.json`` — the :class:`~searchbench.db.IdMap` (string id ↔ usearch's uint64 key);
- ``name.usearch`` — the HNSW index (``Index.save``), built by :meth:`build_index` over
  every stored row (a load only adds rows: ``searchbench db load`` calls it once per
  batch, then builds once);
- ``name.meta.json`` — dimension, metric, build parameters, rows indexed, build time and
  the provenance given to :meth:`load`.

Every file is written atomically (a batch file first, then the id map, so an interrupted
load resumes without duplicates: a batch file beyond the map is an orphan and replaced).
Distances follow searchbench's convention: usearch's ``cos`` (1 − cos) and ``l2sq``
(‖q − x‖²) already do; its ``ip`` returns 1 − ⟨q, x⟩, shifted here to −⟨q, x⟩.
usearch stores no payloads: texts and metadata are not kept and filters are refused.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._util import atomic_path, safe_component, utc_now, write_bytes, write_json
from ...errors import ConfigError, DataFormatError, require
from ..base import ParamSpec, Rows, StoreHits, StoreURL, VectorStore
from ..ids import IdMap
from ._common import SettingGate

__all__ = ["USearchStore"]

_FORMAT = "searchbench-usearch/1"
_METRICS = {"cosine": "cos", "ip": "ip", "l2": "l2sq"}  # searchbench → usearch


def _usearch_index() -> Any:
    """``usearch.index``, imported after onnxruntime when that is installed: with usearch
    2.26 and onnxruntime 1.32 loaded in the other order, importing onnxruntime crashes the
    process (a segmentation fault, e.g. in a test run that uses both)."""
    with contextlib.suppress(ImportError):
        importlib.import_module("onnxruntime")
    return require("usearch.index", "usearch")


class USearchStore(VectorStore):
    """usearch HNSW library (in-process); exact = brute force over the index's stored
    vectors.

    One usearch HNSW index in a folder, with its rows, id map and provenance."""

    engine: ClassVar[str] = "usearch"
    index_kinds: ClassVar[tuple[str, ...]] = ("hnsw",)
    url_options: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("name", str, "docs", "collection name (its files' stem)", "url"),)
    filters: ClassVar[bool] = False
    params: ClassVar[tuple[ParamSpec, ...]] = (
        ParamSpec("connectivity", int, 16, "HNSW edges per node (M)", "build", low=2),
        ParamSpec("expansion_add", int, 128, "candidates kept while inserting "
                  "(efConstruction)", "build", low=1),
        ParamSpec("dtype", str, "bf16", "scalar type the index stores vectors in (usearch's "
                  "default bf16 rounds every vector; f32 keeps them)", "build",
                  choices=("f32", "f16", "bf16", "i8")),
        ParamSpec("expansion_search", int, 64, "candidates kept while searching (efSearch)",
                  "search", low=1),
    )

    def __init__(self, url: StoreURL) -> None:
        super().__init__(url)
        self.name = safe_component(self.options["name"], "usearch collection name")
        self.folder = Path(url.path or ".")
        self._index: Any = None
        self._idmap: IdMap | None = None
        self._loaded_meta: dict[str, Any] | None = None
        self._gate = SettingGate()  # concurrent searches, one expansion_search at a time

    # -- files --------------------------------------------------------------------------
    def _file(self, suffix: str) -> Path:
        return self.folder / f"{self.name}{suffix}"

    def _read_meta(self) -> dict[str, Any] | None:
        """``name.meta.json`` (its ``dimension`` is the record's ``dim``)."""
        path = self._file(".meta.json")
        if not path.exists():
            return None
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataFormatError(f"{path}: not a searchbench usearch description ({exc})"
                                  ) from None
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise DataFormatError(f"{path}: expected format {_FORMAT!r}")
        meta["dim"] = meta.pop("dimension")
        return meta

    def _write_meta(self, meta: Mapping[str, Any]) -> None:
        record = {k: v for k, v in meta.items() if k != "dim"}
        write_json(self._file(".meta.json"), {**record, "dimension": meta["dim"]})

    def _create_collection(self, meta: dict[str, Any], rows: Rows) -> None:
        _usearch_index()  # a missing extra is reported before anything is written
        meta.update(format=_FORMAT, name=self.name, rows_indexed=0, build_seconds=None,
                    build={s.name: s.default for s in self.params if s.when == "build"})

    def _chunks(self) -> list[tuple[int, Path]]:
        folder = self._file(".rows")
        if not folder.is_dir():
            return []
        return sorted((int(p.stem), p) for p in folder.glob("*.npy") if p.stem.isdigit())

    def _rows(self, n: int, dim: int) -> np.ndarray:
        """The first ``n`` loaded rows, in key order."""
        parts = [np.load(p, allow_pickle=False) for start, p in self._chunks() if start < n]
        rows = np.concatenate(parts) if parts else np.empty((0, dim), np.float32)
        if rows.shape != (n, dim):
            raise DataFormatError(f"{self._file('.rows')}: holds {rows.shape[0]} rows of "
                                  f"{rows.shape[1:]} for {n} ids; the folder is damaged: "
                                  "load into a new folder")
        return rows

    # -- writing ------------------------------------------------------------------------
    def _existing(self, ids: list[str]) -> set[str]:
        """The ids in the map; batch files an interrupted load wrote after its last saved
        map are orphans, removed first (their rows are written again)."""
        idmap = self._id_map()
        self._drop_orphans(len(idmap))
        return {doc for doc in ids if doc in idmap}

    def _write_batch(self, rows: Rows, meta: Mapping[str, Any]) -> None:
        """The batch's rows as one file, then the id map (texts and metadata are not
        stored): a crash between the two leaves an orphan file, never a key without rows."""
        idmap = self._id_map()
        try:
            self._write_chunk(len(idmap), rows.vectors)
            idmap.assign(rows.ids)
            idmap.save()
        except BaseException:
            self._idmap = None  # the map on disk is the truth: reread it
            raise

    def _id_map(self) -> IdMap:
        """The id map, read from disk once per store object and kept current by loads."""
        if self._idmap is None:
            self._idmap = IdMap(self._file(".ids.json"))
        return self._idmap

    def _drop_orphans(self, n: int) -> None:
        """Batch files written by an interrupted load after its last saved id map."""
        for start, path in self._chunks():
            if start >= n:
                path.unlink()

    def _write_chunk(self, start: int, rows: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(rows, dtype=np.float32), allow_pickle=False)
        write_bytes(self._file(".rows") / f"{start:012d}.npy", buf.getvalue())

    def _build_params(self, kind: str, given: Mapping[str, Any], meta: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """Unset parameters keep the values of the last build."""
        return {**meta["build"], **given}

    def _build(self, kind: str, params: Mapping[str, Any], meta: Mapping[str, Any]) -> float:
        """Rebuild the HNSW index over every stored row; replaces the index file. Seconds
        taken by ``add``."""
        usearch = _usearch_index()
        n = len(self._id_map())
        rows = self._rows(n, meta["dim"])
        index = usearch.Index(ndim=meta["dim"], metric=_METRICS[meta["metric"]],
                              dtype=params["dtype"], connectivity=params["connectivity"],
                              expansion_add=params["expansion_add"])
        t0 = time.perf_counter()
        if n:
            index.add(np.arange(n, dtype=np.uint64), rows)
        seconds = time.perf_counter() - t0
        with atomic_path(self._file(".usearch")) as tmp:
            index.save(str(tmp))
        done = {**meta, "build": dict(params), "rows_indexed": n, "build_seconds": seconds,
                "built": utc_now(), "usearch": require("usearch", "usearch").__version__}
        self._write_meta(done)
        self._index, self._loaded_meta = index, done
        return seconds

    # -- reading ------------------------------------------------------------------------
    def _loaded(self, meta: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        """The index and its description, read once per store object (the searches of a
        sweep then touch no file)."""
        if self._index is not None and self._loaded_meta is not None:
            return self._index, self._loaded_meta
        n = len(self._id_map())
        if meta["rows_indexed"] != n or not self._file(".usearch").exists():
            raise ConfigError(f"{self.url.public}: the index covers {meta['rows_indexed']} of "
                              f"{n} rows; build it (searchbench db load --index hnsw, or "
                              "store.build_index() after store.load)")
        path = self._file(".usearch")
        self._index = _usearch_index().Index.restore(str(path))
        if self._index is None:
            raise DataFormatError(f"{path}: not a usearch index; run the load again to "
                                  "rebuild it")
        self._loaded_meta = dict(meta)
        return self._index, meta

    def _search(self, q: np.ndarray, k: int, exact: bool, expansion: int | None,
                meta: Mapping[str, Any]) -> tuple[list[list[str]], list[np.ndarray],
                                                  Mapping[str, Any]]:
        index, meta = self._loaded(meta)

        def apply(ef: int) -> None:
            if index.expansion_search != ef:
                index.expansion_search = ef

        with self._gate.using(expansion, apply), warnings.catch_warnings():
            # the empty slots of a short answer hold garbage that numpy warns about when
            # cast; usearch's counts say how many are real (short answers are reported)
            warnings.filterwarnings("ignore", "invalid value encountered in cast",
                                    RuntimeWarning)
            found = index.search(q, k, exact=exact)  # expansion_search is the index's
            keys = np.atleast_2d(found.keys)
            dist = np.atleast_2d(np.asarray(found.distances, dtype=np.float64))
        counts = np.atleast_1d(getattr(found, "counts", len(keys[0])))
        if meta["metric"] == "ip":
            dist = dist - 1.0  # usearch ip distance is 1 − ⟨q, x⟩
        idmap = self._id_map()
        ids = [idmap.lookup(keys[i, :c]) for i, c in enumerate(counts)]
        return ids, [dist[i, :c].copy() for i, c in enumerate(counts)], meta

    def widen(self, params: Mapping[str, Any], depth: int) -> dict[str, Any] | None:
        """An HNSW search keeps ``expansion_search`` candidates and can return fewer rows
        than asked when that is below the count: ask again with at least ``depth``."""
        if int(params.get("expansion_search", 64)) >= depth:
            return None
        return {**params, "expansion_search": depth}

    def _knn(self, queries: np.ndarray, k: int, params: Mapping[str, Any],
             filter: str | None, meta: Mapping[str, Any]) -> StoreHits:
        """HNSW search with ``expansion_search`` (default 64); ``index_used`` is True."""
        ef = int(params.get("expansion_search", 64))
        ids, dist, meta = self._search(queries, k, False, ef, meta)
        b = meta["build"]
        plan = (f"usearch HNSW over {meta['rows_indexed']} indexed rows (connectivity="
                f"{b['connectivity']}, expansion_add={b['expansion_add']}, dtype={b['dtype']}),"
                f" expansion_search={ef}, k={k}")
        return StoreHits(ids, dist, True, plan, {"expansion_search": ef})

    def _exact_knn(self, queries: np.ndarray, k: int, filter: str | None,
                   meta: Mapping[str, Any]) -> StoreHits:
        """usearch's brute force (``search(..., exact=True)``) over the index's vectors, in
        the index's dtype (bf16 by default: its ground truth, not float64's)."""
        ids, dist, meta = self._search(queries, k, True, None, meta)
        plan = (f"usearch exact=True: brute force over {meta['rows_indexed']} rows stored "
                f"as {meta['build']['dtype']}")
        return StoreHits(ids, dist, False, plan)

    def exists(self) -> bool:
        """The collection's record is in the folder."""
        return self._read_meta() is not None

    def location(self) -> str:
        return f"collection {self.name} in {self.folder}"

    def count(self) -> int:
        """Rows stored (0 for a collection not created yet)."""
        return len(IdMap(self._file(".ids.json")))

    def stored_ids(self) -> list[str]:
        """Every stored id in load order ([] for a collection not created yet)."""
        return list(IdMap(self._file(".ids.json")).ids)

    def _describe(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """Version, collection, ``index`` (kind, build ``params``, rows indexed, build
        seconds, size) and size on disk."""
        index_file = self._file(".usearch")
        index_bytes = index_file.stat().st_size if index_file.exists() else None
        rows_bytes = sum(p.stat().st_size for _, p in self._chunks())
        return {
            "version": meta.get("usearch"), "collection": self.name,
            "index": {"kind": "hnsw", "params": dict(meta["build"]),
                      "built": meta.get("built"), "rows_indexed": meta["rows_indexed"],
                      "build_seconds": meta.get("build_seconds"), "size_bytes": index_bytes},
            "size_bytes": (index_bytes or 0) + rows_bytes,
        }

    def close(self) -> None:
        self._index = self._idmap = self._loaded_meta = None
