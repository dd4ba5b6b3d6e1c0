from __future__ import annotations

import pytest

from searchbench.ann.indexes import index_spec, make_index
from searchbench.ann.sweep import _grids, parse_param
from searchbench.errors import ConfigError


def test_unknown_parameter_lists_valid_ones():
    with pytest.raises(ConfigError, match=r"'nprobe' for index 'hnsw'.*M, efConstruction.*"
                                          r"efSearch"):
        index_spec("hnsw").check(["nprobe"])
    with pytest.raises(ConfigError, match="hnsw, ivf, ivfpq, hnswlib"):
        index_spec("annoy")
    assert index_spec("IVF-PQ").name == "ivfpq"


def test_parse_param():
    assert parse_param("efSearch=16,32, 64") == ("efSearch", [16, 32, 64])
    for bad in ("efSearch", "efSearch=", "=3", "M=a,b"):
        with pytest.raises(ConfigError, match="NAME=V1,V2"):
            parse_param(bad)


def test_grid_is_build_by_search_with_defaults():
    build, search = _grids(index_spec("ivfpq"), {"nlist": [4, 8], "nprobe": [1, 2, 3]})
    assert build == [{"nlist": 4, "m": 16, "nbits": 8}, {"nlist": 8, "m": 16, "nbits": 8}]
    assert search == [{"nprobe": 1}, {"nprobe": 2}, {"nprobe": 3}]


def test_value_checks_before_build():
    with pytest.raises(ConfigError, match=r"m=5 does not divide the dimension 32; valid m: "
                                          r"1, 2, 4, 8, 16, 32"):
        make_index("ivfpq", "l2", {"m": 5}).check(100_000, 32)
    with pytest.raises(ConfigError, match="nlist=2000 but the corpus holds 1000"):
        make_index("ivf", "l2", {"nlist": 2000}).check(1000, 32)
    with pytest.raises(ConfigError, match="search parameter"):
        make_index("hnsw", "ip", {"efSearch": 3})
