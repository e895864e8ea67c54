"""kafka-python's per-request noise kept out of operators' logs.

kafka-python 3's network loop warns "Task ... ran for 0.155s (>0.100s threshold). It is blocking
the event loop" whenever one step of a request takes longer than 0.1 s, which on a loaded machine
is several times per collection; it says nothing about the cluster. Those lines are demoted to
DEBUG (still there with --log-level debug). Its connection loggers repeat the same failure at every
attempt (a broker that is down, a cluster it cannot talk to, retried every few minutes): each
distinct line gets through once an hour. The exporter logs the state changes itself.
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


class SlowTaskDemotion(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and "blocking the event loop" in str(record.msg):
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_kafka_python() -> None:
    logger = logging.getLogger(SELECTOR_LOGGER)
    if not any(isinstance(f, SlowTaskDemotion) for f in logger.filters):
        logger.addFilter(SlowTaskDemotion())
    for name in CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in logger.filters):
            logger.addFilter(RepeatFilter(REPEAT_WINDOW_SECONDS))
