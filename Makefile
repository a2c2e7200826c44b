# The README's two commands: `make demo` and `make test`. Everything else is a helper.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
CDCLAB := $(VENV)/bin/cdclab

.PHONY: setup demo test test-unit test-integration lint bench down clean lock

setup:  ## install what is missing (idempotent; downloads cached in ~/.cache/cdclab)
	@bash scripts/bootstrap.sh

DEMO_ARGS ?=
demo: setup  ## start the stack, seed, full load, live workload, drain, reconcile
	@$(CDCLAB) demo $(DEMO_ARGS)

test: setup  ## lint, then the whole test suite (unit + integration on the embedded stack)
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/pytest

test-unit: setup
	@$(VENV)/bin/pytest -m "not integration"

test-integration: setup
	@$(VENV)/bin/pytest -m integration

lint: setup
	@$(VENV)/bin/ruff check .

bench: setup
	@for b in bench/bench_*.py; do $(PY) $$b; done

down:
	@$(CDCLAB) down

clean: down
	rm -rf .cdclab

lock:  ## re-pin requirements.lock from requirements.in
	@$(VENV)/bin/uv pip compile --python-version 3.11 requirements.in -o requirements.lock --no-header
