"""Every console script's logging: a line per state change, so no library logs each request."""

from __future__ import annotations

import logging

from common.logs import CHATTY, setup_logging


def test_http_clients_log_warnings_only_under_info() -> None:
    setup_logging("INFO")
    for name in CHATTY:
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        assert logging.getLogger(name).isEnabledFor(logging.WARNING), name
