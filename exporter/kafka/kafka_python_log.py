"""kafka-python's per-request noise kept out of operators' logs.

kafka-python 3's network loop warns "Task ... ran for 0.155s (>0.100s threshold). It is blocking
the event loop" whenever one step of a request takes longer than 0.1 s, which on a loaded machine
is several times per collection; it says nothing about the cluster. Those lines are demoted to
DEBUG (still there with --log-level debug). Its connection loggers say at ERROR what every broker
stop is (a connection refused or reset; eight lines per stop), repeating it at every attempt: they
are demoted to DEBUG too, since the exporter logs the state changes itself (a broker down, back,
not answering a phase), once each.
"""

from __future__ import annotations

import logging

SELECTOR_LOGGER = "kafka.net.selector"
# Its metadata loop says at ERROR that the broker it asked is stopped (seen once in the 30-restart
# drill: "Metadata refresh: failed KafkaConnectionError: 111 ECONNREFUSED"); it asks another next.
CLUSTER_LOGGER = "kafka.cluster"
# Filters do not apply to child loggers: each logger that repeats itself gets one.
CONNECTION_LOGGERS = (
    "kafka.net.manager",
    "kafka.net.connection",
    "kafka.net.transport",
    "kafka.protocol.parser",
)


class Demotion(logging.Filter):
    """Lines at WARNING or above (only those containing `text`, when given) become DEBUG."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._text = text

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and self._text in str(record.msg):
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_kafka_python() -> None:
    demotions = {SELECTOR_LOGGER: "blocking the event loop", CLUSTER_LOGGER: "Metadata refresh"}
    demotions |= dict.fromkeys(CONNECTION_LOGGERS, "")
    for name, text in demotions.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, Demotion) for f in logger.filters):
            logger.addFilter(Demotion(text))
