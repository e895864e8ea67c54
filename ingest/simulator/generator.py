"""Measures as Kafka messages: (key = meter id, value = the JSON record), period by period.

Pure: no Kafka. `generate_day` is the plain API (the benchmark feeds the same rows elsewhere);
`DayReadings.period` gives the simulator's richer `Message` tuples.

Within a period the HES writes each meter's reading (all magnitudes at once) between the end of the
period and `MAX_DELAY_SECONDS` later; messages come sorted by that write time (`ts`). Every
(meter, date, period, magnitude) appears exactly once per day generated.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np

from vigia.ingest.schema import MAGNITUDES, PERIOD_SECONDS, PERIODS, PERIODS_PER_DAY, Reason
from vigia.ingest.simulator.manifest import MeterRange, meter_range
from vigia.ingest.simulator.profile import MeterTraits, day_values

MAX_DELAY_SECONDS: Final = 300


@dataclass(frozen=True)
class Tag:
    """What a message is, for delivery accounting: one shared instance per kind (see `*_tag`)."""

    kind: str  # "valid" | "duplicate" | "malformed"
    day: str | None = None
    magnitude: str | None = None
    reason: Reason | None = None


@cache
def valid_tag(day: str, magnitude: str) -> Tag:
    return Tag("valid", day=day, magnitude=magnitude)


DUPLICATE_TAG: Final = Tag("duplicate")


@cache
def malformed_tag(reason: Reason) -> Tag:
    return Tag("malformed", reason=reason)


Message = tuple[bytes, bytes, Tag, int]
"""key, value, tag, ts (epoch seconds: when the HES wrote it, i.e. when live mode releases it)."""


def utc_text(epoch_seconds: int) -> str:
    return dt.datetime.fromtimestamp(epoch_seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def day_start(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def period_end(day: dt.date, period: int) -> int:
    """Epoch seconds at which `period` of `day` ends (period 96 ends at the next midnight)."""
    return day_start(day) + period * PERIOD_SECONDS


class DayReadings:
    """One day of readings for every meter, computed at once; formatted period by period."""

    def __init__(self, meters: MeterRange, day: dt.date, seed: int, traits: MeterTraits) -> None:
        self.day = day
        self._ids = meters.ids()
        self._keys = [meter.encode() for meter in self._ids]
        values = day_values(traits, day, seed)
        self._values = [values[name] for name in MAGNITUDES]
        rng = np.random.default_rng([seed, day.toordinal(), 1])
        self._delays = rng.integers(0, MAX_DELAY_SECONDS, (meters.count, PERIODS_PER_DAY))
        self._tags = [valid_tag(day.isoformat(), name) for name in MAGNITUDES]

    @property
    def messages_per_period(self) -> int:
        return len(self._ids) * len(MAGNITUDES)

    def period(self, period: int) -> list[Message]:
        if period not in PERIODS:
            raise ValueError(f"period {period} is not in 1..96")
        column = period - 1
        order = np.argsort(self._delays[:, column], kind="stable")
        delays = self._delays[order, column].tolist()
        values = [array[order, column].tolist() for array in self._values]
        end = period_end(self.day, period)
        ts_texts = [utc_text(end + delay) for delay in range(MAX_DELAY_SECONDS)]
        middle = f'","measure_date":"{self.day.isoformat()}","period":{period},"magnitude":"'
        magnitudes = list(enumerate(zip(MAGNITUDES, self._tags, strict=True)))
        out: list[Message] = []
        append = out.append
        for row, meter_index in enumerate(order.tolist()):
            meter, key, delay = self._ids[meter_index], self._keys[meter_index], delays[row]
            ts, ts_text = end + delay, ts_texts[delay]
            for j, (magnitude, tag) in magnitudes:
                text = (
                    f'{{"meter":"{meter}{middle}{magnitude}",'
                    f'"value":{values[j][row]:.3f},"ts":"{ts_text}"}}'
                )
                append((key, text.encode(), tag, ts))
        return out


def generate_day(
    meters: int | MeterRange, day: dt.date, seed: int = 42
) -> Iterator[tuple[bytes, bytes]]:
    """Every measure of `day` for the meters, as Kafka (key, value) pairs, period after period."""
    spec = meter_range(meters) if isinstance(meters, int) else meters
    readings = DayReadings(spec, day, seed, MeterTraits.draw(spec.count, seed))
    for period in PERIODS:
        for key, value, _tag, _ts in readings.period(period):
            yield key, value
