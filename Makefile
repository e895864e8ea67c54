# `make test` is the one test command: CI (.ci/run) calls it, and so should you.
PYTHON ?= python3

.PHONY: test lint typecheck unit

test: lint typecheck unit

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

typecheck:
	$(PYTHON) -m mypy

# pytest exits 5 when it collects nothing, which fails this target: an empty run is never green.
unit:
	$(PYTHON) -m pytest
