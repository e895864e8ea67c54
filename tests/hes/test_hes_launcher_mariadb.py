"""`python -m vigia.launcher.mariadb`: an HES for the no-Docker stack, started and stopped by
PID."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.servers import wait_until
from vigia.common.hes import connect, parse_dsn
from vigia.launcher.mariadb import MariaDBError, binaries


def test_serves_writes_its_dsns_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    try:
        binaries()
    except MariaDBError as exc:
        pytest.skip(str(exc))
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vigia.launcher.mariadb",
            "--dir",
            str(tmp_path),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        dsn_file = tmp_path / "dsn.json"
        wait_until(dsn_file.exists, 60, "dsn.json")
        wait_until(lambda: dsn_file.read_text().strip().endswith("}"), 10, "a complete dsn.json")
        dsns = json.loads(dsn_file.read_text())
        assert set(dsns) == {"writer", "reader", "monitor", "connect", "signal"}
        assert dsn_file.stat().st_mode & 0o777 == 0o600
        connection = connect(parse_dsn(dsns["reader"]), timeout=5)
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@binlog_format, COUNT(*) FROM measure")
            assert cursor.fetchone() == ("ROW", 0)
        connection.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert not (tmp_path / "mariadbd.pid").exists()  # a clean shutdown removes it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
