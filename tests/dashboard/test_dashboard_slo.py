"""The promises' arithmetic (dashboard/slo.py) and their settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from vigia.common.slo.cli import SPEC, load
from vigia.dashboard.config import ConfigError, load_config
from vigia.dashboard.data import Fetched, Window
from vigia.dashboard.slo import SLO_WINDOW_SECONDS, Incident, budget_left, incidents, slos
from vigia.dashboard.views import promises
from vigia.dashboard.views.common import PageContext


def test_queries_read_the_raw_slis_of_the_live_cohort() -> None:
    freshness, deadline = slos(load(SPEC))
    assert freshness.error_ratio("1h") == (
        '1 - sum(increase(vigia_ingest_measure_freshness_seconds_bucket{cohort="live", '
        r'le=~"1800(\\.0)?"}[1h])) / sum(increase('
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
    assert "not a perfect score" in text and "slo-ingest-freshness-nodata" in text
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


def test_the_page_takes_its_slis_from_the_slo_file(tmp_path: Path) -> None:
    """Another SLO file: its names, queries and objectives reach the page, no code edited."""
    text = SPEC.read_text(encoding="utf-8")
    other = tmp_path / "slos.yml"
    other.write_text(
        text.replace("name: ingest-completeness", "name: hes-coverage")
        .replace("Each day complete by its deadline", "Every meter read")
        .replace("vigia_ingest_deadline_measures_stored_total", "hes_meters_read_total")
        .replace("target: 0.999", "target: 0.95"),
        encoding="utf-8",
    )
    try:
        promises.use_slos(load(other), {"ingest-freshness": 0.995})
        fresh, coverage = promises.current()
        assert (fresh.key, fresh.objective) == ("ingest-freshness", 0.995)
        assert (coverage.key, coverage.title, coverage.objective) == (
            "hes-coverage",
            "Every meter read",
            0.95,
        )
        plan = promises.plan(60.0)
        assert "hes_meters_read_total[28d]" in plan.instant["hes-coverage:28d"]
        assert plan.ranged["hes-coverage:burn"].endswith(" / 0.05")
        fetched = Fetched(instant={}, ranged={})
        page = str(promises.build(PageContext(fetched, Window(0, 3600, 15), 3600)))
        assert "Every meter read" in page and "slo-hes-coverage-nodata" in page
        assert "Each day complete by its deadline" not in page
    finally:
        promises.use_slos(load(SPEC), {})
