"""`vigia-exporter --hes-dsn` as operators run it (a process, the mock cluster, a real MariaDB):
the source watch starts with the app, its families reach /metrics and its section
/api/v1/cluster, and an HES that stops is `vigia_hes_up 0`, not a change of `vigia_exporter_up`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.conftest import MockCluster, free_port
from tests.exporter.exposition import Labels
from tests.exporter.live import exporter_process, wait_for
from vigia.launcher.mariadb import HesDatabase

TODAY = dt.datetime.now(dt.UTC).date()


def test_the_exporter_process_watches_the_hes(
    hes_db: HesDatabase, mock_cluster: MockCluster, tmp_path: Path
) -> None:
    own = HesDatabase(tmp_path / "db", free_port())
    own.start()
    try:
        admin = own.admin()
        with admin.cursor() as cursor:
            cursor.execute(
                "INSERT INTO hes.measure VALUES ('UY000001', %s, 1, 'AEI', 1.0, %s)",
                (TODAY, dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)),
            )
        admin.close()
        args = ["--bootstrap-servers", mock_cluster.bootstrap_servers, "--no-probe"]
        args += ["--collection-interval", "1", "--collection-timeout", "3"]
        args += ["--hes-dsn", own.dsn("reader"), "--hes-interval", "1"]
        with exporter_process(tmp_path / "exporter.log", *args) as running:
            up = ("vigia_hes_up", Labels({}))
            today = ("vigia_hes_day_rows", Labels({"measure_date": TODAY.isoformat()}))
            wait_for(lambda: running.metrics().get(up) == 1, 30, "vigia_hes_up 1")
            metrics = running.metrics()
            assert metrics[today] == 1
            wait_for(lambda: running.get("/api/v1/cluster").status_code == 200, 30, "a collection")
            source = running.get("/api/v1/cluster").json()["source"]
            assert source["hes"]["up"] is True and source["interval_seconds"] == 1
            assert own.passwords["reader"] not in running.log_text()
            # The mock cluster lacks some APIs, so some collection phases fail anyway: an HES that
            # stops must add nothing to what the exporter says about itself.
            exporter_up = metrics[("vigia_exporter_up", Labels({}))]
            own.stop()
            wait_for(lambda: running.metrics().get(up) == 0, 30, "vigia_hes_up 0")
            metrics = running.metrics()
            assert metrics[("vigia_exporter_up", Labels({}))] == exporter_up
            phases = {
                labels["phase"]
                for name, labels in metrics
                if name.startswith("vigia_exporter_coll") and "phase" in labels
            }
            assert not any("hes" in phase for phase in phases)
            assert today not in metrics
            assert "the HES database does not answer" in running.log_text()
    finally:
        own.close()
