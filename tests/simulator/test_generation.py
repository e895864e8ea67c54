"""Load profiles, generated messages, injected faults: pure, no Kafka."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter

import numpy as np
import pytest

from vigia.ingest.schema import MAGNITUDES, REASONS
from vigia.ingest.simulator.generator import (
    MAX_DELAY_SECONDS,
    DayReadings,
    Message,
    generate_day,
    period_end,
)
from vigia.ingest.simulator.malformed import FaultInjector
from vigia.ingest.simulator.manifest import meter_range
from vigia.ingest.simulator.profile import (
    SOLAR_SHARE,
    MeterTraits,
    day_values,
    household_shape,
    solar_shape,
)

DAY = dt.date(2026, 11, 20)  # a Friday
WIRE_FORMAT = re.compile(
    r'\{"meter":"UY\d{6}","measure_date":"\d{4}-\d{2}-\d{2}","period":\d{1,2},'
    r'"magnitude":"(AEI|AEE|REI|REE)","value":\d+\.\d{3},"ts":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"\}'
)


def periods_of(hours: tuple[float, float]) -> slice:
    return slice(int(hours[0] * 4), int(hours[1] * 4))


def test_household_shape_has_a_quiet_night_and_an_evening_peak() -> None:
    shape = household_shape()
    assert shape.shape == (96,)
    assert shape.mean() == pytest.approx(1.0)
    night, evening = shape[periods_of((2, 5))].mean(), shape[periods_of((19, 22))].mean()
    assert evening > 2.5 * night
    assert shape[periods_of((6.5, 8.5))].mean() > 1.5 * night  # morning peak
    solar = solar_shape()
    assert solar[periods_of((0, 6))].max() == 0 and solar[periods_of((20, 24))].max() == 0
    assert solar.argmax() in range(50, 54)  # around 13:00


def test_day_values_follow_the_profile() -> None:
    traits = MeterTraits.draw(2000, seed=3)
    values = day_values(traits, DAY, seed=3)
    assert set(values) == set(MAGNITUDES)
    for array in values.values():
        assert array.shape == (2000, 96)
        assert (array >= 0).all() and np.isfinite(array).all()
        assert np.array_equal(array, np.round(array, 3))
    aei, aee, rei, ree = (values[m] for m in MAGNITUDES)
    assert 6.0 < float(np.median(aei.sum(axis=1))) < 13.0  # kWh imported per day: a household
    solar = traits.solar_kwp > 0
    assert abs(solar.mean() - SOLAR_SHARE) < 0.03
    assert aee[~solar].max() == 0  # only solar meters export
    assert aee[solar][:, periods_of((11, 15))].mean() > 0.1  # midday surplus
    assert aee[:, periods_of((0, 5))].max() == 0  # nothing exported at night
    assert aei[solar][:, periods_of((11, 15))].mean() < aei[~solar][:, periods_of((11, 15))].mean()
    assert rei.sum() < 0.5 * aei.sum()
    assert 0 < ree.sum() < 0.1 * aei.sum()


def test_the_same_seed_gives_the_same_day() -> None:
    first = list(generate_day(3, DAY, seed=5))
    assert first == list(generate_day(3, DAY, seed=5))
    assert first != list(generate_day(3, DAY, seed=6))
    assert first != list(generate_day(3, DAY + dt.timedelta(days=1), seed=5))


def test_generate_day_sends_every_measure_once_keyed_by_meter() -> None:
    messages = list(generate_day(25, DAY, seed=1))
    assert len(messages) == 25 * 96 * 4
    keys: Counter[tuple[str, int, str]] = Counter()
    for key, value in messages:
        assert WIRE_FORMAT.fullmatch(value.decode()), value
        record = json.loads(value)
        assert key == record["meter"].encode()
        assert record["measure_date"] == "2026-11-20"
        keys[(record["meter"], record["period"], record["magnitude"])] += 1
    assert set(keys.values()) == {1}
    assert {m for m, _, _ in keys} == {f"UY{n:06d}" for n in range(1, 26)}


def test_ts_is_the_period_end_plus_a_write_delay_in_order() -> None:
    readings = DayReadings(meter_range(50), DAY, 9, MeterTraits.draw(50, 9))
    for period in (1, 37, 96):
        messages = readings.period(period)
        end = period_end(DAY, period)
        stamps = [ts for *_, ts in messages]
        assert stamps == sorted(stamps)
        assert all(end <= ts < end + MAX_DELAY_SECONDS for ts in stamps)
        for _key, value, _tag, ts in messages[:8]:
            written = dt.datetime.fromisoformat(json.loads(value)["ts"])
            assert written.timestamp() == ts
    last = json.loads(readings.period(96)[0][1])
    assert last["ts"].startswith("2026-11-21T00:0")  # period 96 ends at midnight
    with pytest.raises(ValueError, match=r"not in 1\.\.96"):
        readings.period(97)


def _inject(messages: list[Message], malformed: float, duplicates: float) -> list[Message]:
    injector = FaultInjector(malformed, duplicates)
    periods = range(0, len(messages), 80)  # the fixture's 20 meters × 4 magnitudes per period
    return [m for start in periods for m in injector.apply(messages[start : start + 80])]


@pytest.fixture(scope="module")
def valid_messages() -> list[Message]:
    readings = DayReadings(meter_range(20), DAY, 2, MeterTraits.draw(20, 2))
    return [m for period in range(1, 11) for m in readings.period(period)]


def test_malformed_ratio_brings_every_reason_in_turn(valid_messages: list[Message]) -> None:
    out = _inject(valid_messages, 0.05, 0.0)
    kinds = Counter(tag.reason for _, _, tag, _ in out if tag.kind == "malformed")
    valid = sum(1 for _, _, tag, _ in out if tag.kind == "valid")
    assert valid == len(valid_messages) == 800
    total_malformed = sum(kinds.values())
    assert total_malformed == 800 * 5 // 95
    assert total_malformed / len(out) == pytest.approx(0.05, abs=0.002)
    assert set(kinds) == set(REASONS)
    assert max(kinds.values()) - min(kinds.values()) <= 1
    for key, _value, tag, ts in out:
        if tag.kind == "malformed":
            assert key.startswith(b"UY") and ts > 0
    first_kinds = [tag.reason for _, _, tag, _ in out if tag.kind == "malformed"][: len(REASONS)]
    assert first_kinds == list(REASONS)


def test_corrections_resend_a_key_later_with_a_new_value(valid_messages: list[Message]) -> None:
    out = _inject(valid_messages, 0.0, 0.1)
    originals = {
        (r["meter"], r["period"], r["magnitude"]): (r, ts)
        for key, value, tag, ts in out
        if tag.kind == "valid"
        for r in [json.loads(value)]
    }
    corrections = [(json.loads(value), ts) for _, value, tag, ts in out if tag.kind == "duplicate"]
    assert len(corrections) == 80
    for record, ts in corrections:
        original, original_ts = originals[(record["meter"], record["period"], record["magnitude"])]
        assert ts > original_ts
        assert dt.datetime.fromisoformat(record["ts"]).timestamp() == ts
        assert record["value"] != original["value"]
    stamps = [ts for *_, ts in out]
    assert stamps == sorted(stamps)  # live mode releases messages in this order


@pytest.mark.parametrize(("malformed", "duplicates"), [(1.0, 0.0), (-0.1, 0.0), (0.0, 1.5)])
def test_bad_ratios_are_refused(malformed: float, duplicates: float) -> None:
    with pytest.raises(ValueError, match="ratio"):
        FaultInjector(malformed, duplicates)


def test_no_faults_leave_the_messages_alone(valid_messages: list[Message]) -> None:
    injector = FaultInjector(0.0, 0.0)
    assert not injector.active
    assert injector.apply(valid_messages) is valid_messages
