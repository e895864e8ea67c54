"""The HES leg's families: the source database and each hop's freshness.

Built at each scrape from the source watcher's last round (its own schedule, like the probe's)
and, for ``kafka_to_store``, from the latest collection's lag seconds: a few series in all —
``vigia_hes_day_rows`` has two (the last closed and the open day), the hop gauge at most two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from vigia.exporter.collectors.base import gauge
from vigia.exporter.model.pipeline_hops import SourceLook, hop_lags
from vigia.exporter.model.state import ExporterState


class HesCollector:
    def __init__(
        self,
        look: Callable[[], SourceLook | None],
        state: Callable[[], ExporterState | None],
        group: str,
        topic: str,
    ) -> None:
        self._look = look
        self._state = state
        self._group = group
        self._topic = topic

    def collect(self) -> Iterator[Metric]:
        look = self._look()
        reading = look.hes if look is not None else None
        yield gauge(
            "vigia_hes_up",
            "1 when the HES database answered the source watch's last round.",
            [],
            {} if look is None else {(): float(look.hes_up)},
        )
        newest = GaugeMetricFamily(
            "vigia_hes_newest_row_timestamp_seconds", "Newest ts in hes.measure (epoch seconds)."
        )
        if reading is not None and reading.newest_row_timestamp is not None:
            newest.add_metric([], reading.newest_row_timestamp)
        yield newest
        yield gauge(
            "vigia_hes_day_rows",
            "Rows in hes.measure for the last closed and the open measure date (UTC).",
            ["measure_date"],
            {} if reading is None else {d.isoformat(): n for d, n in reading.day_rows.items()},
        )
        yield gauge(
            "vigia_hes_query_duration_seconds",
            "Time the source watch's queries took on the HES in its last round.",
            [],
            {} if reading is None else {(): reading.query_seconds},
        )
        state = self._state()
        store_lag = None if state is None else state.max_lag_seconds.get((self._group, self._topic))
        yield gauge(
            "vigia_pipeline_hop_lag_seconds",
            "How far each hop's newest data is behind the previous hop's (hes_to_kafka: HES "
            "newest row ts − newest measure ts on the topic; kafka_to_store: the ingest group's "
            "lag in seconds).",
            ["hop"],
            hop_lags(look, store_lag),
        )
