"""Daily load profiles: what each meter measures in each 15-minute period (kWh / kvarh).

Everything is computed for a whole day at once with numpy, one (meters × 96) array per magnitude.
The shapes are drawn on the period's hour of day (the simulator's clock is UTC; think of it as the
meters' local time):

- AEI (active energy imported): a household curve — low at night, a morning peak around 07:30, an
  evening peak around 20:30 — scaled by each meter's daily consumption (log-normal, median
  9 kWh/day), a little higher at weekends and in the (southern) winter, with per-reading noise.
  For meters with rooftop solar, what the panels produce covers part of it.
- AEE (active energy exported): zero except for the solar meters (`SOLAR_SHARE`), whose surplus
  around midday is exported, more on clear days.
- REI (reactive imported): AEI times the meter's tan φ (0.15–0.45).
- REE (reactive exported): small, mostly at night (capacitive loads), often zero.

A meter's parameters depend only on the seed and its position in the meter list, so any day can be
regenerated identically.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from vigia.ingest.schema import MAGNITUDES, PERIODS_PER_DAY

FloatArray = npt.NDArray[np.float64]

SOLAR_SHARE: Final = 0.15
MEDIAN_DAILY_KWH: Final = 9.0
_HOURS: Final[FloatArray] = np.arange(PERIODS_PER_DAY, dtype=np.float64) / 4.0 + 0.125  # mid-period


def _bump(centre: float, width: float) -> FloatArray:
    return np.exp(-0.5 * ((_HOURS - centre) / width) ** 2)


def household_shape() -> FloatArray:
    """Relative consumption per period, averaging 1 over the day."""
    shape = 0.45 + 0.55 * _bump(7.5, 1.3) + 0.35 * _bump(13.0, 1.5) + 1.25 * _bump(20.5, 2.0)
    return shape / float(shape.mean())


def solar_shape() -> FloatArray:
    """Share of the panels' peak power produced in each period (0 at night, 1 at noon)."""
    return np.clip(np.cos(np.pi * (_HOURS - 13.0) / 13.0), 0.0, None) ** 2 * (
        (_HOURS > 6.5) & (_HOURS < 19.5)
    )


@dataclass(frozen=True)
class MeterTraits:
    """Per-meter parameters, one array entry per meter."""

    daily_kwh: FloatArray
    solar_kwp: FloatArray  # 0 for meters without panels
    tan_phi: FloatArray

    @classmethod
    def draw(cls, meters: int, seed: int) -> MeterTraits:
        rng = np.random.default_rng([seed, 0])
        daily = MEDIAN_DAILY_KWH * rng.lognormal(0.0, 0.5, meters)
        has_solar = rng.random(meters) < SOLAR_SHARE
        kwp = np.where(has_solar, rng.uniform(2.0, 6.0, meters), 0.0)
        return cls(daily_kwh=daily, solar_kwp=kwp, tan_phi=rng.uniform(0.15, 0.45, meters))


def _day_factor(day: dt.date) -> float:
    weekend = 1.1 if day.weekday() >= 5 else 1.0
    winter = 1.0 + 0.2 * np.cos(2.0 * np.pi * (day.timetuple().tm_yday - 196) / 365.25)
    return float(weekend * winter)


def day_values(traits: MeterTraits, day: dt.date, seed: int) -> dict[str, FloatArray]:
    """kWh (kvarh) per meter and period for every magnitude, rounded to Wh, never negative."""
    rng = np.random.default_rng([seed, day.toordinal()])
    meters = traits.daily_kwh.shape[0]
    shape = (meters, PERIODS_PER_DAY)
    mean_per_period = traits.daily_kwh[:, None] / PERIODS_PER_DAY * _day_factor(day)
    demand = mean_per_period * household_shape()[None, :] * rng.lognormal(0.0, 0.25, shape)
    clear_sky = rng.uniform(0.3, 1.0)
    produced = traits.solar_kwp[:, None] * 0.25 * clear_sky * solar_shape()[None, :]
    active_in = np.clip(demand - produced, 0.0, None)
    active_out = np.clip(produced - demand, 0.0, None)
    reactive_in = active_in * traits.tan_phi[:, None] * rng.lognormal(0.0, 0.1, shape)
    night = 1.0 - solar_shape()[None, :]
    reactive_out = np.clip(mean_per_period * 0.04 * night * rng.normal(1.0, 0.6, shape), 0.0, None)
    values = dict(zip(MAGNITUDES, (active_in, active_out, reactive_in, reactive_out), strict=True))
    return {name: np.round(array, 3) for name, array in values.items()}
