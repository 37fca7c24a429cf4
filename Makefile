# Two commands: `make demo` and `make test`. Each creates .venv if missing and installs.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# torch 2.13.0 (CPU build) is installed first and pinned, so nothing pulls a CUDA build.
# The tests need the `ray` extra too (the Ray executor's tests; ~240 MB, not in `all`).
TORCH  := torch==2.13.0
# Microsoft's KQL parser and analyzer for JavaScript (KQL validity: kql_syntax, kql_semantic),
# installed into the environment when npm is present; queryeval finds it there.
KUSTO_LANGUAGE := @kusto/language-service-next@12.4.1
KUSTO_STAMP    := $(VENV)/kusto-language/.installed-12.4.1

.PHONY: demo test lint typecheck unit browser bench bytecode clean help kusto-language postgres

help:
	@echo "make demo   - create .venv, install, run the example suites, write reports"
	@echo "make test   - create .venv, install, lint, type-check and run the tests"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[all,dev,ray]" "$(TORCH)"
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# An editable install compiles nothing, and PYTHONDONTWRITEBYTECODE (set on some machines)
# stops Python from caching what it compiles: every command would compile the package anew
# (~0.1 s). Compiled here; stale files are recompiled by Python as usual.
bytecode:
	$(BIN)/python -m compileall -q src

$(KUSTO_STAMP): | $(BIN)/python
	@if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
		npm install --prefix $(VENV)/kusto-language --no-audit --no-fund --no-save \
			--loglevel=error $(KUSTO_LANGUAGE) && touch $(KUSTO_STAMP); \
	else \
		echo "note: node/npm not found; KQL validity (kql_syntax, kql_semantic) is unavailable"; \
	fi

kusto-language: $(KUSTO_STAMP)

# PostgreSQL's server binaries (engine: postgres; its tests and the demo start a server from
# them): installed with apt-get where initdb is missing and apt-get is usable as root, else a
# note (the PostgreSQL tests then skip, saying why)
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y -q postgresql >/dev/null 2>&1 || \
			{ apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; }; \
	else \
		echo "note: PostgreSQL is not installed and apt-get is not usable as root here; engine: postgres is unavailable"; \
	fi

install: $(STAMP) $(KUSTO_STAMP) postgres

demo: $(STAMP) $(KUSTO_STAMP) bytecode postgres
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

unit: $(STAMP) $(KUSTO_STAMP) bytecode browser postgres
	$(BIN)/python -m pytest -q

test: lint unit

bench: $(STAMP) $(KUSTO_STAMP) bytecode
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) runs .queryeval-cache .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
