"""kafka-python's per-request noise kept out of operators' logs.

kafka-python 3's network loop warns "Task ... ran for 0.155s (>0.100s threshold). It is blocking
the event loop" whenever one step of a request takes longer than 0.1 s, which on a loaded machine
is several times per collection; it says nothing about the cluster. Those lines are demoted to
DEBUG (still there with --log-level debug). Its connection loggers report each step of a failed
connection as a WARNING or an ERROR of their own (four ERROR lines when it cannot decode a broker's
ApiVersions answer, as with librdkafka's mock cluster), while the exporter says what failed, and
what it leaves out because of it, in one line of its own: they are demoted to DEBUG too, and each
distinct line gets through once an hour, as they repeat it at every attempt.
"""

from __future__ import annotations

import logging

from common.librdkafka_log import RepeatFilter

SELECTOR_LOGGER = "kafka.net.selector"
# Filters do not apply to child loggers: each logger that repeats itself gets one.
CONNECTION_LOGGERS = (
    "kafka.net.manager",
    "kafka.net.connection",
    "kafka.net.transport",
    "kafka.protocol.parser",
)
REPEAT_WINDOW_SECONDS = 3600.0


def _demote(record: logging.LogRecord) -> bool:
    """To DEBUG; False (drop it) when its logger does not log DEBUG."""
    if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
        return False
    record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    return True


class SlowTaskDemotion(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and "blocking the event loop" in str(record.msg):
            return _demote(record)
        return True


class ConnectionDemotion(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _demote(record) if record.levelno > logging.INFO else True


def quiet_kafka_python() -> None:
    logger = logging.getLogger(SELECTOR_LOGGER)
    if not any(isinstance(f, SlowTaskDemotion) for f in logger.filters):
        logger.addFilter(SlowTaskDemotion())
    for name in CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in logger.filters):
            logger.addFilter(RepeatFilter(REPEAT_WINDOW_SECONDS))
        if not any(isinstance(f, ConnectionDemotion) for f in logger.filters):
            logger.addFilter(ConnectionDemotion())
