# `make test` is the one test command: CI (.ci/run) calls it, and so should you.
PYTHON ?= python3

.PHONY: demo up test preflight lint typecheck unit

# `make demo` and `make test` run in one virtualenv, .venv, with Vigía and its test tools installed:
# made the first time (from whatever `python3` is: nothing is installed into it), reinstalled when
# pyproject.toml changes. `make demo` runs the whole product on this machine, without Docker or
# Kafka (vigia-stack --demo). Ctrl-C stops everything.
VENV ?= .venv

demo: $(VENV)/.installed
	$(VENV)/bin/vigia-stack --demo

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[all]'
	touch $@

# `make up` starts the whole stack. The first time, it writes .env from .env.example with a random
# Grafana admin password (compose refuses to start without one; there is no admin/admin).
up: .env
	docker compose up -d --build

.env:
	@password=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(18))'); \
	sed "s/^GRAFANA_ADMIN_PASSWORD=$$/GRAFANA_ADMIN_PASSWORD=$$password/" .env.example > .env; \
	echo "wrote .env; Grafana admin password: $$password"

test: preflight lint typecheck unit

# Names what some tests need and this machine lacks (Debian packages, with the apt-get line; the
# real-stack runtimes): outside CI those tests skip, saying so; in CI it stops here (exit 1).
preflight: $(VENV)/.installed
	@$(VENV)/bin/python -m tests.preflight

# lint-imports checks exporter/'s layers (pyproject.toml); without a cache, because building the
# import graph takes a second and a cache would be one more folder in the tree. tests.lint.assertions
# fails on a test function that asserts nothing (a test that cannot fail).
lint: $(VENV)/.installed
	$(VENV)/bin/python -m ruff check .
	$(VENV)/bin/python -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/python -m tests.lint.assertions

typecheck: $(VENV)/.installed
	$(VENV)/bin/python -m mypy

# pytest exits 5 when it collects nothing, which fails this target: an empty run is never green;
# in CI a skipped test fails too (tests/strict.py), and each run ends with a `skipped: N` line.
# Two runs, each on two workers: most of a test's time is waiting on subprocesses, Spark, servers
# and drills' timers. The unit suites first; then the real-stack suites (the `realstack` marker,
# tests/realstack), one file per worker at a time (a file's tests share their stack), each worker
# starting its own Kafka cluster, Connect and HES once.
unit: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -m "not realstack" -n 2
	$(VENV)/bin/python -m pytest -m realstack -n 2 --dist loadfile
