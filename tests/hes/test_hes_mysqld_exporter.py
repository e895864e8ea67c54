"""Debian's prometheus-mysqld-exporter against the HES (a real MariaDB), scraped for real: the
series compose's Prometheus job gets from the HES's exporter, with the monitor user's grants."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port
from tests.servers import Server, wait_until
from vigia.ingest.simulator.cli import main
from vigia.launcher.mariadb import HesDatabase

EXPORTER = shutil.which("prometheus-mysqld-exporter") or shutil.which("mysqld_exporter")


def _start_exporter(hes: HesDatabase, tmp_path: Path) -> Server:
    if EXPORTER is None:
        pytest.skip("prometheus-mysqld-exporter is not installed (apt-get install it)")
    port = free_port()
    log = tmp_path / "mysqld-exporter.log"
    # The DSN goes in the environment, as in compose, never on the command line.
    env = {**os.environ, "DATA_SOURCE_NAME": hes.exporter_dsn()}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--config.my-cnf=/dev/null"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = Server("mysqld-exporter", port, process, log)
    try:
        wait_until(
            lambda: httpx.get(server.url + "/metrics", timeout=5).status_code == 200,
            30,
            "mysqld_exporter",
        )
    except BaseException:
        server.stop()
        raise
    return server


def _scrape(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_mysqld_exporter_sees_the_hes_and_its_writes(hes: HesDatabase, tmp_path: Path) -> None:
    server = _start_exporter(hes, tmp_path)
    try:
        before = _scrape(server)
        assert before[("mysql_up", ())] == 1
        inserts = ("mysql_global_status_commands_total", (("command", "insert"),))
        assert inserts in before and ("mysql_global_status_queries", ()) in before
        assert before[("mysql_global_variables_log_bin", ())] == 1
        argv = ["backfill", "--sink", "hes", "--hes-dsn", hes.dsn("writer"), "--meters", "5"]
        assert main([*argv, "--start-date", "2026-11-20", "--metrics-port", "0"]) == 0
        after = _scrape(server)
        # 96 periods, one batched INSERT each (other tests' writes may add more, never fewer).
        assert after[inserts] - before[inserts] >= 96
        assert (
            after[("mysql_global_status_queries", ())] > before[("mysql_global_status_queries", ())]
        )
        # Each batch is one transaction in the binlog Debezium reads.
        commits = ("mysql_global_status_binlog_commits", ())
        assert after[commits] - before[commits] >= 96
    finally:
        server.stop()


def test_mysqld_exporter_says_mysql_up_0_when_the_hes_is_down(
    hes_db: HesDatabase, tmp_path: Path
) -> None:
    own = HesDatabase(tmp_path / "own", free_port())
    own.start()
    server = _start_exporter(own, tmp_path)
    try:
        assert _scrape(server)[("mysql_up", ())] == 1
        own.stop()
        assert _scrape(server)[("mysql_up", ())] == 0
    finally:
        server.stop()
        own.close()
