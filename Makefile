# Two commands: `make demo` and `make test`. Each creates .venv if missing and installs.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# torch 2.13.0 (CPU build) is installed first and pinned, so nothing pulls a CUDA build.
TORCH  := torch==2.13.0

.PHONY: demo test lint typecheck unit browser bench bytecode clean help

help:
	@echo "make demo   - create .venv, install, run the example suites, write reports"
	@echo "make test   - create .venv, install, lint, type-check and run the tests"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[all,dev]" "$(TORCH)"
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# An editable install compiles nothing, and PYTHONDONTWRITEBYTECODE (set on some machines)
# stops Python from caching what it compiles: every command would compile the package anew
# (~0.1 s). Compiled here; stale files are recompiled by Python as usual.
bytecode:
	$(BIN)/python -m compileall -q src

install: $(STAMP)

demo: $(STAMP) bytecode
	$(BIN)/python examples/demo.py

# lint-imports checks the layers and private modules of pyproject's [tool.importlinter]
lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo

# headless Chromium for the HTML report's browser test (skipped when already installed)
browser:
	bash scripts/install-browser.sh

unit: $(STAMP) bytecode browser
	$(BIN)/python -m pytest -q

test: lint unit

bench: $(STAMP) bytecode
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) runs .queryeval-cache .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
