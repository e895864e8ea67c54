"""The brokers' JMX agent, with prometheus/jmx-kafka.yml, on real Kafka 4 nodes (the harness's,
which runs the agent on each): every broker metric that the alert and recording rules, the Grafana
boards and the Dash app query is exported by every node. A rule over a name no broker exports is
silent forever; the recorded fixtures cannot tell, a real broker can."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.exporter.live import wait_for
from tests.realstack.targets import KafkaTarget

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BROKER_METRIC = re.compile(
    r"\bkafka_(?:server|controller|network|log_log|cluster_partition)_[a-z_]+"
)
USERS = ("prometheus/rules", "grafana/dashboards", "dashboard")


def _used() -> set[str]:
    return {
        name
        for folder in USERS
        for path in (REPO / folder).rglob("*")
        if path.suffix in {".yml", ".json", ".py"}
        for name in BROKER_METRIC.findall(path.read_text(encoding="utf-8"))
    }


def _missing(url: str, used: set[str]) -> list[str]:
    text = httpx.get(url, timeout=30).text
    exported = {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1].isalpha()
    }
    # Recording rules and boards also name families by their stem (`…_bytesin` for
    # `…_bytesin_total`): a name counts as exported when an exported family starts with it.
    return sorted(n for n in used if not any(e.startswith(n) for e in exported))


def test_every_broker_metric_the_rules_boards_and_app_use_is_exported(
    kafka_target: KafkaTarget,
) -> None:
    if not kafka_target.jmx_urls:
        pytest.skip("the brokers' JMX agent URLs are unknown (only the harness's cluster has them)")
    used = _used()
    assert len(used) >= 10, used  # the pattern still finds what the rules use
    for broker, url in kafka_target.jmx_urls.items():
        # Request metrics appear once a request of that kind has been served: a deadline. A scrape
        # of a broker's JMX agent took over 10 s on a loaded machine.
        wait_for(lambda u=url: not _missing(u, used), 240, f"broker {broker}'s JMX families")
