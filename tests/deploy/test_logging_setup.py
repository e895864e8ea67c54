"""Every console script's logging: a line per state change, so no library logs each request."""

from __future__ import annotations

import logging

import pytest

from vigia.common.librdkafka_log import librdkafka_logger
from vigia.common.logs import THIRD_PARTY, setup_logging

# Their children, as the libraries name the loggers that wrote the noise.
NOISY = ("kafka.cluster", "kafka.coordinator", "kafka.net.connection", "py4j.clientserver",
         "urllib3.connectionpool", "werkzeug", "httpx")  # fmt: skip


@pytest.mark.parametrize("level", ["INFO", "warning", "ERROR"])
def test_third_party_libraries_log_warnings_only(level: str) -> None:
    """kafka-python wrote one "Coordinator for group/… is …" line per group at INFO at each
    metadata refresh; the console scripts, the demo's components among them, keep such libraries
    to their warnings."""
    root = logging.getLogger()
    saved = root.level
    root.setLevel(logging.DEBUG)  # as a console's root would pass everything its loggers allow
    try:
        setup_logging(level)
        for name in (*THIRD_PARTY, *NOISY):
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
            assert logging.getLogger(name).isEnabledFor(logging.ERROR), name
    finally:
        root.setLevel(saved)


def test_debug_shows_every_library() -> None:
    root = logging.getLogger()
    saved = root.level
    try:
        setup_logging("DEBUG")
        root.setLevel(logging.DEBUG)  # basicConfig leaves a root that has handlers (pytest's) alone
        for name in (*THIRD_PARTY, *NOISY):
            assert logging.getLogger(name).isEnabledFor(logging.DEBUG), name
    finally:
        root.setLevel(saved)
        setup_logging("INFO")


def test_librdkafka_errors_it_retries_are_warnings(caplog: pytest.LogCaptureFixture) -> None:
    """A broker stop made the exporter's record-time consumer log ERROR lines ("Connect to … failed:
    Connection refused"): librdkafka retries those, so they are WARNINGs."""
    logger = librdkafka_logger("test.librdkafka.levels")
    with caplog.at_level(logging.INFO, logger="test.librdkafka.levels"):
        logger.error("FAIL [consumer] 127.0.0.1:9092/3: Connect to ipv4#127.0.0.1:9092 failed")
        logger.info("kept as it was")
    assert [(r.levelname, r.getMessage()[:4]) for r in caplog.records] == [
        ("WARNING", "FAIL"),
        ("INFO", "kept"),
    ]
