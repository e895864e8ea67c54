"""The Pipeline page's loss horizon headline, from the exporter's JSON built by its own model."""

from __future__ import annotations

import pytest

from tests.dashboard.horizon_states import cluster
from vigia.dashboard.data import Unreachable
from vigia.dashboard.views.horizon import duration, headline

# state -> (headline, light)
EXPECTED = {
    "binlog_first": ("Measures safe for 5 h 10 min: the HES purges binlog first", "green"),
    "kafka_at_risk": (
        "AT RISK: measures lost in 1 h 2 min unless caught up before: "
        "Kafka deletes unread measures first",
        "red",
    ),
    "kafka_lost": (
        "Measures LOST: Kafka deleted measures the ingest job had not read; repair the day: "
        "vigia-ingest repair --date D (runbook IngestMeasuresLost)",
        "red",
    ),
    "binlog_lost": (
        "Measures LOST: the HES purged binlog Connect had not read; repair the day: "
        "vigia-ingest repair --date D (runbook HesBinlogLost)",
        "red",
    ),
    "no_purge": ("Measures safe: no hop of the leg purges anything", "green"),
    "binlog_unwatched": (
        "Measures safe for at most 2 h: Kafka deletes unread measures first "
        "(the HES binlog: margin unknown)",
        "amber",
    ),
    "nothing_known": (
        "Loss horizon unknown (the HES binlog: no binlog round yet; "
        "Kafka: the topic is not collected)",
        "grey",
    ),
}


@pytest.mark.parametrize("state", sorted(EXPECTED))
def test_the_headline_says_how_long_and_where(state: str) -> None:
    line = headline(cluster(state))
    assert (line.text, line.status) == EXPECTED[state]


def test_the_hops_line_gives_each_margin() -> None:
    assert headline(cluster("binlog_first")).detail == (
        "the HES binlog ≥ 5 h 10 min; Kafka ≥ 6 d 23 h; the checkpoint: purges nothing"
    )
    assert "Kafka: lost" in headline(cluster("kafka_lost")).detail


def test_without_the_exporter_or_its_hes_watch_it_says_so() -> None:
    assert headline(Unreachable("exporter", "down")).status == "grey"
    assert "not watched" in headline({"source": None}).text


def test_durations_are_rounded_down_to_two_units() -> None:
    assert [duration(s) for s in (5, 59.9, 61, 3600, 18_659, 90_000, 86_400)] == [
        "5 s", "59 s", "1 min", "1 h", "5 h 10 min", "1 d 1 h", "1 d",
    ]  # fmt: skip
