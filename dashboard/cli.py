"""`vigia-dashboard`: serve the Dash app (waitress, a production WSGI server) with /healthz."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from vigia.common.logs import setup_logging
from vigia.dashboard.config import ConfigError, load_config

log = logging.getLogger("vigia.dashboard")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = load_config(argv)
    except ConfigError as exc:
        print(f"vigia-dashboard: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.log_level)
    if config.log_level != "DEBUG":  # one INFO line per backend request drowns everything else
        logging.getLogger("httpx").setLevel(logging.WARNING)

    from waitress import serve

    from vigia.dashboard.app import create_app

    app = create_app(config)
    log.info(
        "serving on http://%s:%d (Prometheus %s, exporter %s, Alertmanager %s, refresh %g s)",
        config.listen_address,
        config.port,
        config.prometheus_url,
        config.exporter_url,
        config.alertmanager_url,
        config.refresh_interval,
    )
    try:
        serve(app.server, host=config.listen_address, port=config.port, threads=8, ident="vigia")
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", config.listen_address, config.port, exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
