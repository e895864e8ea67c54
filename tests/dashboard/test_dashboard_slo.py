"""The promises' arithmetic (dashboard/slo.py) and their settings."""

from __future__ import annotations

import pytest

from vigia.dashboard.config import ConfigError, load_config
from vigia.dashboard.data import Fetched, Window
from vigia.dashboard.slo import SLO_WINDOW_SECONDS, Incident, budget_left, incidents, slos
from vigia.dashboard.views import promises
from vigia.dashboard.views.common import PageContext


def test_queries_read_the_raw_slis_of_the_live_cohort() -> None:
    freshness, deadline = slos(0.99, 0.999)
    assert freshness.error_ratio("1h") == (
        '1 - sum(increase(vigia_ingest_measure_freshness_seconds_bucket{cohort="live",'
        'le="1800"}[1h])) / sum(increase('
        'vigia_ingest_measure_freshness_seconds_count{cohort="live"}[1h]))'
    )
    assert "vigia_ingest_deadline_measures_stored_total[3d]" in deadline.error_ratio("3d")
    assert deadline.burn_rate("5m").endswith(" / 0.001")


def test_budget_left_and_no_data() -> None:
    assert budget_left(0.0075, 0.01) == pytest.approx(0.25)
    assert budget_left(0.02, 0.01) == pytest.approx(-1.0)
    assert budget_left(None, 0.01) is None


def test_incidents_are_runs_above_one_with_the_budget_they_spent() -> None:
    times = [60.0 * i for i in range(10)]
    burns = [0.5, 2.0, 6.0, 2.0, None, 0.9, 14.4, 1.0, 0.0, 3.0]
    found = incidents(times, burns, 60.0)
    # Each point stands for the step before it; the most budget spent first.
    assert found[1] == Incident(0.0, 180.0, 6.0, 10.0 * 60 / SLO_WINDOW_SECONDS)
    assert [(i.start, i.end) for i in found] == [(300.0, 360.0), (0.0, 180.0), (480.0, 540.0)]
    assert incidents(times, [None] * 10, 60.0) == []


def test_no_data_is_said_as_such() -> None:
    fetched = Fetched(instant={}, ranged={})
    ctx = PageContext(fetched=fetched, window=Window(0, 3600, 15), now=3600)
    text = str(promises.build(ctx))
    assert "not a perfect score" in text and "slo-freshness-nodata" in text
    assert "In the demo" not in text


def test_the_demo_says_why_its_deadline_promise_has_no_data() -> None:
    fetched = Fetched(instant={}, ranged={})
    ctx = PageContext(fetched=fetched, window=Window(0, 3600, 15), now=3600, demo=True)
    deadline = str(promises.headline(promises.current()[1], None, demo=True))
    assert "In the demo: a day is judged at its next morning's deadline" in deadline
    # Freshness is judged within minutes: the demo adds nothing to its no-data line.
    assert str(promises.build(ctx)).count("In the demo") == 1


def test_objectives_are_settings_with_defaults() -> None:
    assert load_config([], {}).freshness_objective == 0.99
    assert load_config([], {}).deadline_objective == 0.999
    env = {"VIGIA_DASHBOARD_FRESHNESS_OBJECTIVE": "0.995"}
    assert load_config([], env).freshness_objective == 0.995
    with pytest.raises(ConfigError):
        load_config(["--deadline-objective", "99.9"], {})
