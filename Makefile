# `make test` is the one test command: CI (.ci/run) calls it, and so should you.
PYTHON ?= python3

.PHONY: up test lint typecheck unit

# `make up` starts the whole stack. The first time, it writes .env from .env.example with a random
# Grafana admin password (compose refuses to start without one; there is no admin/admin).
up: .env
	docker compose up -d --build

.env:
	@password=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(18))'); \
	sed "s/^GRAFANA_ADMIN_PASSWORD=$$/GRAFANA_ADMIN_PASSWORD=$$password/" .env.example > .env; \
	echo "wrote .env; Grafana admin password: $$password"

test: lint typecheck unit

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

typecheck:
	$(PYTHON) -m mypy

# pytest exits 5 when it collects nothing, which fails this target: an empty run is never green.
unit:
	$(PYTHON) -m pytest
