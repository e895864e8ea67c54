"""Drill in the demo (`vigia-stack --demo`): the ingest driver killed with SIGKILL, and kept down,
pages IngestQueryDown at the demo's receiver while Prometheus, Alertmanager, the exporter and the
Dash app run on; left alone, the job runs again, stores new batches, and the page resolves
(tests/deploy/ingest_drill.py). `pytest -s` prints the timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.ingest_drill import fast_config_dir, run_drill, vigia_stack, wait_until_healthy
from tests.deploy.test_launcher_run import marker  # noqa: F401
from tests.ingest.conftest import backfill, utc_day
from tests.servers import MISSING


@pytest.mark.skipif(bool(MISSING), reason=f"the drill pages through them; not installed: {MISSING}")
@pytest.mark.timeout(1200)
def test_a_killed_ingest_driver_pages_from_the_demo_and_comes_back(
    tmp_path: Path,
    marker: str,  # noqa: F811
) -> None:
    args = ["--demo", "--config-dir", str(fast_config_dir(tmp_path))]
    with vigia_stack(tmp_path, marker, args) as stack:
        components = ["exporter", "dashboard", "prometheus", "alertmanager", "receiver"]
        wait_until_healthy(stack, components)
        bootstrap = (stack.run_dir / "mock-cluster.bootstrap").read_text().strip()

        def produce() -> int:
            manifest = backfill(bootstrap, tmp_path / "more.json", day=utc_day(1), meters=1)
            return manifest.valid_total

        run_drill(stack, produce, "drill in the demo (librdkafka mock cluster)")
