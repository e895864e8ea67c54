"""`vigia-dashboard`: serve the Dash app (waitress, a production WSGI server) with /healthz.

With a web configuration file (--web.config.file) its basic-auth users and headers guard every
request but /healthz; with TLS in it, the app is served by vigia.common.wsgi_server (waitress has
no TLS), which answers plain HTTP with a 400."""

from __future__ import annotations

import logging
import ssl
import sys
from collections.abc import Sequence

from vigia.common.logs import setup_logging
from vigia.common.web_config import WebConfigError
from vigia.common.web_guard import wsgi_guard
from vigia.common.web_tls import load as load_web_config
from vigia.dashboard.config import ConfigError, load_config

log = logging.getLogger("vigia.dashboard")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = load_config(argv)
        web = load_web_config(config.web_config_file)
    except (ConfigError, WebConfigError) as exc:
        print(f"vigia-dashboard: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.log_level)
    if config.log_level != "DEBUG":  # one INFO line per backend request drowns everything else
        logging.getLogger("httpx").setLevel(logging.WARNING)

    from waitress import serve

    from vigia.common import wsgi_server
    from vigia.dashboard.app import create_app

    try:
        app = create_app(config)
    except ssl.SSLError as exc:
        print(f"vigia-dashboard: error: the backends' TLS files: {exc}", file=sys.stderr)
        return 2
    log.info(
        "serving on %s://%s:%d%s (Prometheus %s, exporter %s, Alertmanager %s, refresh %g s)",
        "https" if web.tls else "http",
        config.listen_address,
        config.port,
        f", {len(web.users)} basic-auth users" if web.users else "",
        config.prometheus_url,
        config.exporter_url,
        config.alertmanager_url,
        config.refresh_interval,
    )
    try:
        if web.tls is None:
            guarded = wsgi_guard(app.server, web)
            serve(guarded, host=config.listen_address, port=config.port, threads=8, ident="vigia")
        else:
            wsgi_server.bind(config.listen_address, config.port, app.server, web).serve_forever()
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", config.listen_address, config.port, exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
