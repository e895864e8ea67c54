"""One logging format for every console script, and third-party libraries kept to warnings."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log per request, connection or group at INFO (kafka-python's "Coordinator for
# group/… is …" once per group at each metadata refresh, its bootstrap and connection lines; py4j
# each JVM callback; the HTTP clients and servers each request), where ours log a line per change.
THIRD_PARTY = ("kafka", "py4j", "urllib3", "werkzeug", "httpx", "httpcore", "pymysql")


def setup_logging(level: str = "INFO") -> None:
    """`--log-level debug` shows every library's lines too; any other level, their warnings."""
    logging.basicConfig(level=level.upper(), format=FORMAT)
    debug = level.upper() == "DEBUG"
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
