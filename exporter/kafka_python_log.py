"""kafka-python's per-request noise kept out of operators' logs.

kafka-python 3's network loop warns "Task ... ran for 0.155s (>0.100s threshold). It is blocking
the event loop" whenever one step of a request takes longer than 0.1 s, which on a loaded machine
is several times per collection; it says nothing about the cluster. Those lines are demoted to
DEBUG (still there with --log-level debug); the exporter logs state changes itself.
"""

from __future__ import annotations

import logging

SELECTOR_LOGGER = "kafka.net.selector"


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
