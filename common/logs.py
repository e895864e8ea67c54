"""One logging format for every console script."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log every request at INFO: a line per poll, where ours log a line per change.
CHATTY = ("httpx", "httpcore")


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=level.upper(), format=FORMAT)
    for name in CHATTY:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
