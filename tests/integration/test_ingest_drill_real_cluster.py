"""Drill on a real Kafka cluster: `vigia-stack --bootstrap-servers <the cluster>` with every
component, the ingest job on a topic of its own; its driver killed with SIGKILL, and kept down,
pages IngestQueryDown at the stack's webhook receiver while Prometheus, Alertmanager, the exporter
and the Dash app run on; left alone, the job runs again, stores new batches, and the page resolves
(tests/deploy/ingest_drill.py). `pytest -s` prints the timeline."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.ingest_drill import fast_config_dir, run_drill, vigia_stack, wait_until_healthy
from tests.deploy.test_launcher_run import marker  # noqa: F401
from tests.ingest.conftest import backfill, utc_day
from tests.realstack.topics import create_topic
from tests.servers import MISSING
from vigia.common import kafka_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COMPONENTS = "exporter,ingest,dashboard,prometheus,alertmanager,receiver"


@pytest.fixture
def topic(real_kafka_bootstrap: str) -> Iterator[str]:
    from confluent_kafka.admin import AdminClient

    name = f"vigia-drill-{uuid.uuid4().hex[:8]}"
    options = kafka_config.from_env()
    create_topic(real_kafka_bootstrap, name, 3, options=options)
    admin = AdminClient({"bootstrap.servers": real_kafka_bootstrap, **options})
    try:
        yield name
    finally:
        admin.delete_consumer_groups([name], request_timeout=30)[name].exception(timeout=30)
        admin.delete_topics([name], operation_timeout=30)[name].result(timeout=60)


@pytest.mark.skipif(bool(MISSING), reason=f"the drill pages through them; not installed: {MISSING}")
@pytest.mark.timeout(1200)
def test_a_killed_ingest_driver_pages_from_the_stack_on_a_real_cluster_and_comes_back(
    real_kafka_bootstrap: str,
    topic: str,
    tmp_path: Path,
    marker: str,  # noqa: F811
) -> None:
    pager = tmp_path / "pager-url"
    args = [
        "--bootstrap-servers",
        real_kafka_bootstrap,
        "--only",
        COMPONENTS,
        "--config-dir",
        str(fast_config_dir(tmp_path)),
        "--alertmanager-pager-url-file",
        str(pager),
    ]
    env = {"VIGIA_INGEST_TOPIC": topic, "VIGIA_INGEST_GROUP_ID": topic}

    def produce() -> int:
        manifest = backfill(
            real_kafka_bootstrap, tmp_path / "more.json", day=utc_day(1), meters=1, topic=topic
        )
        return manifest.valid_total

    backfill(real_kafka_bootstrap, tmp_path / "first.json", day=utc_day(2), meters=1, topic=topic)
    with vigia_stack(tmp_path, marker, args, env, pager_url_file=pager) as stack:
        wait_until_healthy(stack, COMPONENTS.split(","))
        run_drill(stack, produce, "drill on a real Kafka cluster (3 brokers)")
