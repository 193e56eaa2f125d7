# tracewh: `make demo` and `make test` work on a fresh machine (Python 3.11+ with venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The demo's own warehouse: not ./warehouse, which in this repository is the package's source.
DEMO_WAREHOUSE := demo-warehouse
# cargo, for the native decode core that `pip install` builds: rustup puts it here, which a
# fresh shell's PATH may lack.
export PATH := $(HOME)/.cargo/bin:$(PATH)
NATIVE := ingest/native/Cargo.toml ingest/native/Cargo.lock $(wildcard ingest/native/src/*.rs)

.PHONY: install browser demo test test-torch bench docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(NATIVE)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,spark,s3,ray]'
	@# The editable install leaves tracewh's own modules uncompiled, and where Python writes no
	@# bytecode (PYTHONDONTWRITEBYTECODE, as on CI) every process compiled them again: ~0.1 s
	@# of CPU and ~40 MB of peak memory per ingest (the packages pip installed are compiled).
	$(BIN)/python -m compileall -q warehouse ingest sql > /dev/null
	@# DuckDB 1.0.0, the oldest the README promises reads tracewh.duckdb, beside the venv's own
	$(BIN)/pip install --quiet --no-deps --upgrade --target $(VENV)/duckdb-1.0 duckdb==1.0.0
	touch $@

demo: install
	@$(BIN)/tracewh --warehouse $(DEMO_WAREHOUSE) ingest examples/dlrm-8rank --run dlrm-demo --phase train
	@echo
	@echo "== communication/computation overlap per rank =="
	@$(BIN)/tracewh --warehouse $(DEMO_WAREHOUSE) query \
	  "SELECT rank, comm_ns, compute_ns, overlap_ns, round(overlap_ratio, 3) AS overlap_ratio, exposed_comm_ns FROM overlap WHERE run = 'dlrm-demo' ORDER BY rank"
	@echo
	@echo "== top kernels by total time over all ranks =="
	@$(BIN)/tracewh --warehouse $(DEMO_WAREHOUSE) query \
	  "SELECT short_name, class, sum(count) AS kernels, sum(total_ns) AS total_ns FROM kernel_stats WHERE run = 'dlrm-demo' GROUP BY ALL ORDER BY total_ns DESC LIMIT 10"
	@echo
	@echo "BI tools open $(DEMO_WAREHOUSE)/tracewh.duckdb read-only (every table and view);"
	@echo "Parquet/Delta readers find the views' answers in $(DEMO_WAREHOUSE)/marts/."

# Headless Chromium from Debian, for the test that renders the HTML report in a real browser.
browser:
	@command -v chromium >/dev/null || { \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	    >/dev/null 2>&1 || echo "make: could not install chromium (needs root and apt):" \
	    "the browser test will be skipped"; }

# Ray's servers listen on every interface whatever address they are given: its tests run in a
# network namespace that holds loopback alone (tests/loopback_only.py).
test: install browser
	$(BIN)/python -m pytest -m "not torch and not ray"
	$(BIN)/python tests/loopback_only.py $(BIN)/python -m pytest -m ray

# The torch extra into the same .venv, and the tests that profile a model with it: PyPI's
# Linux wheel brings the CUDA libraries (5.4 GB, 4 min to install on a loaded 2-core VM),
# which `make test` does without.
test-torch: $(VENV)/.installed-torch
	$(BIN)/python -m pytest -m torch

$(VENV)/.installed-torch: $(VENV)/.installed
	$(BIN)/pip install --quiet --no-cache-dir -e '.[torch]'  # not 3 GB of wheels cached too
	$(BIN)/python -c "import torch"  # a broken install fails here, not as skipped tests
	touch $@

bench: install
	$(BIN)/python bench/run.py

# The pages of docs/ that list what the code defines (views, tables, commands, the index),
# written from the code: tests/test_docs.py fails while a committed one differs.
docs: install
	$(BIN)/python docs/generate.py

clean:
	rm -rf $(VENV) *.egg-info $(DEMO_WAREHOUSE) ingest/native/target ingest/_decode*.so
