"""The three ways of running the simulator, over any `Sink` (Kafka in production, a list in tests).

- backfill: whole days, period after period, as fast as `--rate` and the cluster allow.
- live: a simulated clock starting at `start` and running `speed` times faster than the wall clock;
  each reading is sent when the clock passes its ts. The first period sent is the one that ends at
  the 15-minute boundary at or before `start`. Runs for `duration` wall seconds (0: until stopped).
- outage: live, but from `outage.after` wall seconds into the run and for `outage.duration` wall
  seconds nothing is sent while the clock keeps running (an HES → Kafka outage of
  duration × speed simulated seconds). Then the backlog goes out as fast as the cluster takes it
  (`--rate` still applies when set) and live sending continues — or the run stops as soon as the
  backlog is handed over, with `outage.stop_after_release`.

Each valid (meter, date, period, magnitude) is sent once per run.
"""

from __future__ import annotations

import bisect
import datetime as dt
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from tqdm import tqdm

from vigia.ingest.schema import MAGNITUDES, PERIOD_SECONDS, PERIODS
from vigia.ingest.simulator.delivery import DeliveryCallback, DeliveryTally
from vigia.ingest.simulator.generator import DayReadings, Message, day_start
from vigia.ingest.simulator.malformed import FaultInjector
from vigia.ingest.simulator.manifest import MeterRange
from vigia.ingest.simulator.metrics import RunState
from vigia.ingest.simulator.profile import MeterTraits

log = logging.getLogger(__name__)

_CHUNK = 1000  # messages between stop checks, rate-limit waits and producer polls
_IDLE_WAIT = 0.2  # longest sleep, so a stop request is honoured quickly


class Sink(Protocol):
    def send(self, key: bytes, value: bytes, on_delivery: DeliveryCallback) -> None: ...

    def poll(self, timeout: float = 0.0) -> None: ...

    def pending(self) -> int: ...


class RateLimiter:
    """Token bucket: at most `rate` messages per second on average, bursts of one second."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self._tokens = rate
        self._last = time.monotonic()

    def acquire(self, count: int) -> None:
        if self.rate <= 0:
            return
        while True:
            now = time.monotonic()
            self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= count or self._tokens >= self.rate:
                self._tokens -= count
                return
            time.sleep((count - self._tokens) / self.rate)


@dataclass(frozen=True)
class Outage:
    """Nothing is sent from `after` for `duration` seconds, and again every `every` seconds
    after that when `every` > 0."""

    after: float
    duration: float
    stop_after_release: bool = False
    every: float = 0.0

    def holding(self, elapsed: float) -> bool:
        if elapsed < self.after:
            return False
        since = elapsed - self.after
        return (since % self.every if self.every > 0 else since) < self.duration

    def over(self, elapsed: float) -> bool:
        return elapsed >= self.after + self.duration


class Runner:
    def __init__(
        self,
        sink: Sink,
        meters: MeterRange,
        seed: int,
        tally: DeliveryTally,
        state: RunState,
        injector: FaultInjector,
        rate: float = 0.0,
        stop: threading.Event | None = None,
    ) -> None:
        self._sink = sink
        self._meters = meters
        self._seed = seed
        self._tally = tally
        self._state = state
        self._injector = injector
        self._limiter = RateLimiter(rate)
        # Small chunks under a low rate limit, so messages flow evenly instead of in bursts.
        self._chunk = min(_CHUNK, max(1, int(rate / 10))) if rate > 0 else _CHUNK
        self.stop = stop or threading.Event()
        self._traits = MeterTraits.draw(meters.count, seed)
        self._day: DayReadings | None = None
        self.first_ts: int | None = None
        self.last_ts: int | None = None

    def _readings(self, day: dt.date) -> DayReadings:
        if self._day is None or self._day.day != day:
            self._day = DayReadings(self._meters, day, self._seed, self._traits)
        return self._day

    def _messages(self, day: dt.date, period: int) -> list[Message]:
        return self._injector.apply(self._readings(day).period(period))

    def _send(self, messages: list[Message], progress: tqdm[None]) -> int:
        """Send in chunks until done or stopped; return how many were handed to the producer."""
        sent = 0
        for start in range(0, len(messages), self._chunk):
            if self.stop.is_set():
                break
            chunk = messages[start : start + self._chunk]
            self._limiter.acquire(len(chunk))
            callback = self._tally.callback
            for key, value, tag, _ts in chunk:
                self._sink.send(key, value, callback(tag))
            self._sink.poll(0)
            sent += len(chunk)
            last = chunk[-1][3]
            self.first_ts = chunk[0][3] if self.first_ts is None else self.first_ts
            self.last_ts = last if self.last_ts is None else max(self.last_ts, last)
            self._state.last_sent_ts = float(self.last_ts)
            progress.update(len(chunk))
        return sent

    def backfill(self, start_date: dt.date, days: int) -> None:
        valid = self._meters.count * len(MAGNITUDES) * len(PERIODS) * days
        total = self._injector.total_for(valid)
        with tqdm(total=total, unit="msg", unit_scale=True, disable=None) as progress:
            for offset in range(days):
                day = start_date + dt.timedelta(days=offset)
                log.info("backfilling %s", day)
                for period in PERIODS:
                    messages = self._messages(day, period)
                    if self._send(messages, progress) < len(messages):
                        return

    def live(
        self, start: dt.datetime, speed: float, duration: float, outage: Outage | None = None
    ) -> None:
        wall_start = time.monotonic()
        sim_start = start.timestamp()

        def elapsed() -> float:
            return time.monotonic() - wall_start

        def clock() -> float:
            return sim_start + elapsed() * speed

        with tqdm(unit="msg", unit_scale=True, disable=None) as progress:
            for day, period in _periods_from(int(sim_start)):
                messages = self._messages(day, period)
                release_times = [ts for *_, ts in messages]
                done = 0
                while done < len(messages):
                    if self.stop.is_set() or (duration > 0 and elapsed() >= duration):
                        return
                    now = clock()
                    self._state.backlog_seconds = max(0.0, now - messages[done][3])
                    if outage is not None and outage.holding(elapsed()):
                        self._sink.poll(_IDLE_WAIT)
                        continue
                    due = bisect.bisect_right(release_times, now, lo=done)
                    if due == done:
                        if (
                            outage is not None
                            and outage.stop_after_release
                            and outage.over(elapsed())
                        ):
                            log.info("backlog released; stopping as asked")
                            return
                        wait = (messages[done][3] - now) / speed
                        self._sink.poll(min(_IDLE_WAIT, max(wait, 0.0)))
                        continue
                    done += self._send(messages[done:due], progress)


def _periods_from(sim_start: int) -> Iterator[tuple[dt.date, int]]:
    """(day, period) from the period ending at the boundary at or before sim_start, forever."""
    end = sim_start - sim_start % PERIOD_SECONDS
    while True:
        begin = end - PERIOD_SECONDS
        day = dt.datetime.fromtimestamp(begin, dt.UTC).date()
        yield day, (begin - day_start(day)) // PERIOD_SECONDS + 1
        end += PERIOD_SECONDS
