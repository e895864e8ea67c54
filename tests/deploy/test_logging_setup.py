"""Every console script's logging: a line per state change, so no library logs each request."""

from __future__ import annotations

import logging

import pytest

from vigia.common.librdkafka_log import librdkafka_logger
from vigia.common.logs import CHATTY, setup_logging


def test_http_clients_log_warnings_only_under_info() -> None:
    setup_logging("INFO")
    for name in CHATTY:
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        assert logging.getLogger(name).isEnabledFor(logging.WARNING), name


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
