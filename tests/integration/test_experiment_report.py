"""A small experiment end to end: config → runner → store → report, rendered in Chromium.

BM25 and the static model on the built-in pyref set, two chunk sizes, both levels. The HTML
report must load in headless Chromium without console errors, with every section present
and drawn; the test fails (not skips) in CI when Chromium is missing.
"""

from __future__ import annotations

import json
import re

import pytest

from searchbench.cli.main import main
from searchbench.report.html import SECTIONS

from ._chromium import chromium_path, load_page, plot_axes

CONFIG = """name = "small"
evalset = "pyref"
chunkers = ["tokens:100:20", "tokens:200:0"]
levels = ["doc", "chunk"]
measures = ["nDCG@10", "RR@10", "R@100"]
baseline = "bm25"
n_permutations = 2000

[[retrievers]]
name = "bm25"
type = "bm25"

[[retrievers]]
name = "static"
type = "dense"
model = "static"

[[retrievers]]
name = "hybrid"
type = "hybrid"
of = ["bm25", "static"]
"""


@pytest.fixture(scope="module")
def report_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exp")
    config = folder / "small.toml"
    config.write_text(CONFIG, encoding="utf-8")
    assert main(["experiment", "run", str(config), "--quiet"]) == 0
    assert main(["experiment", "report", str(config), "--quiet", "--no-tables"]) == 0
    return {p.suffix: p for p in (folder / "report").iterdir()}


@pytest.mark.slow  # report_files runs an experiment (tens of seconds)
def test_report_renders_in_chromium_with_every_section(report_files):
    chromium_path()  # fails in CI (SEARCHBENCH_TEST_DATA set) if chromium is missing
    page = load_page(report_files[".html"])
    assert page["errors"] == [], page["errors"]
    assert not [c for c in page["console"] if "ERROR" in c or "Uncaught" in c]
    found = {s["id"]: s for s in page["sections"]}
    assert list(found) == list(SECTIONS)
    for name, s in found.items():
        assert s["height"] > 50, f"section {name} is not drawn"
        assert s["heading"], f"section {name} has no heading"
    for name in ("main-measure", "recall", "per-query", "chunking", "latency"):
        assert found[name]["svgs"] == 2, name  # one plot per level (doc, chunk)


@pytest.mark.slow  # report_files runs an experiment (tens of seconds)
def test_report_is_self_contained(report_files):
    html = report_files[".html"].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html.lower()
    assert html.count("<svg") == 10


@pytest.mark.slow  # report_files runs an experiment (tens of seconds)
def test_markdown_and_json_agree_with_the_store(report_files):
    data = json.loads(report_files[".json"].read_text(encoding="utf-8"))
    assert [g["level"] for g in data["groups"]] == ["doc", "chunk"]
    doc = data["groups"][0]
    systems = [c["system"] for c in doc["cells"]]
    assert systems == ["bm25/tokens:100:20", "static/tokens:100:20", "hybrid/tokens:100:20",
                       "bm25/tokens:200:0", "static/tokens:200:0", "hybrid/tokens:200:0"]
    cmp = doc["comparison"]
    assert cmp["baseline"] == "bm25/tokens:100:20"
    assert cmp["correction"] == "holm" and cmp["n_queries"] == 103
    markdown = report_files[".md"].read_text(encoding="utf-8")
    for cell in doc["cells"]:
        mean = cmp["means"][cell["system"]]["nDCG@10"]
        assert f"{mean:.4f}" in markdown
        assert cell["main_ci"][0] <= mean <= cell["main_ci"][1]
    assert "## Evaluation set and provenance" in markdown
    assert data["provenance"]["evalsets"]["pyref"]["summary"]["content_hash"].startswith(
        "sha256:")


@pytest.mark.slow  # report_files runs an experiment (tens of seconds)
def test_every_plot_has_plain_separate_tick_labels_in_chromium(report_files):
    """No TeX (mathtext is off), no escaped entity, no two tick labels of an axis on top of
    each other; BM25 (words) and the static model (its tokens) get a chunking panel each."""
    found = plot_axes(report_files[".html"])
    assert found["problems"] == [], found["problems"]
    assert found["axes"] >= 20 and found["labels"] >= 2 * found["axes"]
    seen = " ".join(found["seen"])
    assert "chunk size: whitespace-separated words per indexed chunk" in seen
    assert "chunk size: model tokens of " in seen and "context size: model tokens of " in seen
    data = json.loads(report_files[".json"].read_text(encoding="utf-8"))
    for cell in data["groups"][0]["cells"]:
        assert cell["extras"]["mean_unit_tokens"] > 0


def test_missing_chromium_fails_in_ci_and_skips_elsewhere(monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("SEARCHBENCH_TEST_DATA", "/anything")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        chromium_path()
    monkeypatch.delenv("SEARCHBENCH_TEST_DATA")
    with pytest.raises(pytest.skip.Exception):
        chromium_path()
