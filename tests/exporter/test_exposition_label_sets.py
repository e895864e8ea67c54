"""The exposition writes each label set once and reuses it across families (text_format): what
it reuses must be the label text each family would have written itself."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import counter, gauge
from vigia.exporter.collectors.text_format import text


class _Families:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def _families() -> list[Metric]:
    shared = {("g1", "orders", 0): 5, ("g1", "orders", 1): 7, ('we"ird', "t\\x", 2): 1}
    by_pair = {("g1", "orders"): 3.5, ("g2", "orders"): 0}
    return [
        gauge("a_offset", "A.", ["consumergroup", "topic", "partition"], shared),
        gauge("a_lag", "B.", ["consumergroup", "topic", "partition"], shared),
        # The same label values under other names, and under the same names in another order:
        # each is its own label set.
        gauge("a_other", "C.", ["owner", "stream", "shard"], shared),
        gauge("a_swapped", "D.", ["topic", "consumergroup"], by_pair),
        counter("a_seen", "E.", ["consumergroup", "topic"], by_pair),
        # An int key and the string of it write the same label value.
        gauge("a_broker", "F.", ["broker"], {1: 1, "2": 0}),
        gauge("a_plain", "G.", [], {(): 4}),
    ]


def test_shared_label_sets_write_what_prometheus_client_writes() -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(_families()))  # type: ignore[arg-type]
    assert text(_families()) == generate_latest(registry).decode("utf-8")


def test_a_label_set_reused_across_families_keeps_each_familys_names() -> None:
    written = text(_families())
    assert 'a_lag{consumergroup="g1",partition="1",topic="orders"} 7.0' in written
    assert 'a_other{owner="g1",shard="1",stream="orders"} 7.0' in written
    # Labels are sorted by name: "consumergroup" first whatever the family's order.
    assert 'a_swapped{consumergroup="orders",topic="g2"} 0.0' in written
    assert 'a_seen_total{consumergroup="g2",topic="orders"} 0.0' in written
