"""A Qdrant server URL (qdrant-client): what can be tested without a server, honestly.

No Qdrant server can be installed here and qdrant-client's local mode is brute force only,
so it does not stand in for one. Tested: the unreachable-server error, secrets kept out of
messages, parameter validation before any request, and the mapping shared with the edge
adapter (whose results are checked against Qdrant's real engine in test_db_qdrant_edge).
"""

from __future__ import annotations

import socket
import uuid

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

import searchbench.db as db
from searchbench.db.engines import _qdrant as qm
from searchbench.errors import BackendError, ConfigError, DataFormatError
from searchbench.knn import exact_distances

SECRET = "s3cr3t-key-never-shown"


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_one_error_naming_the_url(closed_port, monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    url = f"qdrant://127.0.0.1:{closed_port}?collection=docs&timeout=2"
    store = db.connect(url)
    for action in (store.count, store.stored_ids, store.describe,
                   lambda: store.load(["a"], np.ones((1, 4)), metric="cosine"),
                   lambda: store.search(np.ones((1, 4)), 3)):
        with pytest.raises(BackendError) as err:
            action()
        assert url in str(err.value) and "reachable" in str(err.value)
        assert SECRET not in str(err.value) and "\n" not in str(err.value)
    store.close()


def test_secrets_stay_out_of_the_url_and_messages(monkeypatch):
    with pytest.raises(ConfigError) as err:
        db.connect(f"qdrant://user:{SECRET}@127.0.0.1:6333?collection=docs")
    assert SECRET not in str(err.value) and "environment variable" in str(err.value)
    monkeypatch.delenv("MY_KEY", raising=False)
    store = db.connect("qdrant://127.0.0.1:6333?collection=docs&api_key_env=MY_KEY")
    with pytest.raises(ConfigError, match="MY_KEY but that environment variable is not set"):
        store.count()


def test_url_options_and_parameters_are_checked_before_any_request():
    with pytest.raises(ConfigError, match="valid: api_key_env, collection, https, timeout"):
        db.connect("qdrant://127.0.0.1:6333?collection=docs&shard=x")
    with pytest.raises(ConfigError, match="expected 'qdrant://HOST:6333"):
        db.connect("qdrant://127.0.0.1:6333")
    store = db.connect("qdrant://127.0.0.1:6333?collection=docs")  # nothing listens: fine
    with pytest.raises(ConfigError, match="valid: acorn, hnsw_ef, indexed_only"):
        store.search(np.ones((1, 4)), 3, params={"ef": 10})
    with pytest.raises(ConfigError, match="valid: ef_construct, full_scan_threshold"):
        store.build_index(M=8)
    with pytest.raises(ConfigError, match="Qdrant filter"):
        store.search(np.ones((1, 4)), 3, filter='{"where": 1}')
    assert [s.name for s in store.params] == [s.name for s in
                                              db.engine_class("qdrant-edge").params]


@pytest.mark.parametrize(("metric", "score"), [
    ("cosine", lambda q, x: x @ q / np.linalg.norm(x, axis=1) / np.linalg.norm(q)),
    ("ip", lambda q, x: x @ q),
    ("l2", lambda q, x: np.linalg.norm(x - q, axis=1)),  # Qdrant's Euclid: not squared
])
def test_scores_become_knn_distances(metric, score):
    rng = np.random.default_rng(3)
    x, q = rng.normal(size=(50, 8)), rng.normal(size=(1, 8))
    got = qm.to_distances(score(q[0], x), metric)
    want = exact_distances(x, q, np.arange(50)[None, :], metric)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_payload_mapping():
    body = qm.payloads(["d#0-1"], ["some text"], [{"lang": "en", "year": 2020}])[0]
    assert body == {"lang": "en", "year": 2020, "text": "some text", "sb_id": "d#0-1"}
    with pytest.raises(DataFormatError, match="'sb_id' is reserved"):
        qm.payloads(["d"], None, [{"sb_id": "x"}])
    with pytest.raises(DataFormatError, match="expected a string, number or boolean"):
        qm.payloads(["d"], None, [{"tags": ["a"]}])


def test_point_ids_are_deterministic_uuid5():
    assert qm.point_uuid("doc#0-120") == str(uuid.uuid5(qm.ID_NAMESPACE, "doc#0-120"))
    assert qm.point_uuid("doc#0-120") != qm.point_uuid("doc#0-121")
    assert uuid.UUID(qm.point_uuid("é")).version == 5


def test_one_filter_text_for_edge_and_server():
    models = pytest.importorskip("qdrant_client.models")
    text = ('{"must": [{"key": "lang", "match": {"value": "en"}}, '
            '{"key": "year", "range": {"gte": 2020}}], '
            '"must_not": [{"key": "tag", "match": {"any": ["x", "y"]}}]}')
    data = qm.parse_filter(text)
    server = models.Filter.model_validate(data)
    assert server.model_dump(exclude_none=True)["must"][0] == data["must"][0]
    qe = pytest.importorskip("qdrant_edge")
    edge = qm.edge_filter(qe, data)
    assert len(edge.must) == 2 and len(edge.must_not) == 1


def test_planner_rule():
    assert qm.threshold_points(10000, 32) == 80000  # 10,000 KB of 32-d float32 vectors
    assert qm.index_use(exact=False, points=5, indexed=0, threshold=1, matching=None)[0] is False
    assert qm.index_use(exact=False, points=9, indexed=9, threshold=10, matching=None)[0] is False
    assert qm.index_use(exact=False, points=99, indexed=99, threshold=10, matching=None)[0]
    assert qm.index_use(exact=False, points=99, indexed=99, threshold=10, matching=9)[0] is False
    assert qm.index_use(exact=True, points=99, indexed=99, threshold=10, matching=None)[0] is False


def test_missing_extra_names_it(monkeypatch):
    import sys

    from searchbench.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(MissingDependencyError, match=r"searchbench\[qdrant\]"):
        db.connect("qdrant://127.0.0.1:6333?collection=docs")
