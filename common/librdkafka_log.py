"""Python loggers for librdkafka's own log lines, rate-limited per distinct line.

While a broker is unreachable librdkafka repeats the same connect failure many times a second for
every client; each distinct line (digits ignored) gets through once per window. What librdkafka
logs as an error (a refused connection, a broker going away) it retries itself: a broker restart is
an expected event, so those lines are WARNINGs; a component logs its own ERROR when it gives up.
"""

from __future__ import annotations

import logging
import re
import time

WINDOW_SECONDS = 60.0


class RepeatFilter(logging.Filter):
    def __init__(self, window: float = WINDOW_SECONDS) -> None:
        super().__init__()
        self._window = window
        self._seen: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = re.sub(r"\d+", "#", record.getMessage())
        now = time.monotonic()
        if now - self._seen.get(key, -self._window) < self._window:
            return False
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = now
        return True


class RetriedIsWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def librdkafka_logger(name: str) -> logging.Logger:
    """The logger to pass as a client's `logger` setting (filters do not apply to child loggers,
    so each client family gets its own filtered logger)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RepeatFilter) for f in logger.filters):
        logger.addFilter(RepeatFilter())
    if not any(isinstance(f, RetriedIsWarning) for f in logger.filters):
        logger.addFilter(RetriedIsWarning())
    return logger
