"""`vigia-dashboard`: the Plotly Dash app for operators and capacity reviews.

- `config`, `cli`: flags and VIGIA_* environment, the waitress server with /healthz.
- `sources` (the only I/O): Prometheus' HTTP API, the exporter's /api/v1/cluster, Alertmanager.
- `data`, `cluster`: typed results (or `Unreachable`) and the cluster JSON as dataclasses.
- `views/*`: one pure module per page (its queries and its builders); `sizing`: the calculator.
- `pages`: the page registry and one refresh (plan → parallel fetch → build); `app`: the shell.
"""
