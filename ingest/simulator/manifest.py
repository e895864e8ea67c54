"""What a simulator run delivered, written as JSON at the end of the run (``--manifest``).

Tests and ``vigia-ingest completeness`` compare the stored data against it. Counts are of messages
the brokers acknowledged (delivery reports), never of messages merely handed to the producer; with
``--sink hes``, of rows committed to the HES database (``"topic": "hes.measure"``).

Example::

    {
      "version": 1,
      "mode": "backfill",
      "topic": "measure",
      "seed": 42,
      "meters": {"prefix": "UY", "first": 1, "count": 10000, "width": 6},
      "magnitudes": ["AEI", "AEE", "REI", "REE"],
      "valid": {"2026-11-20": {"AEI": 960000, "AEE": 960000, "REI": 960000, "REE": 960000}},
      "valid_total": 3840000,
      "duplicates": 0,
      "malformed": {"malformed_json": 5, "missing_field": 5, ..., "invalid_ts": 5},
      "malformed_total": 35,
      "produced": 3840035,
      "failed": 0,
      "first_ts": "2026-11-20T00:15:00Z",
      "last_ts": "2026-11-21T00:19:59Z",
      "started_at": "2026-11-21T08:00:00.123456Z",
      "finished_at": "2026-11-21T08:01:10.654321Z"
    }

`valid` counts each measure key once (its first send); `duplicates` counts the extra sends of
``--duplicate-ratio`` (corrections of an already sent key, with a later ts). `produced` is
valid_total + duplicates + malformed_total; `failed` are messages whose delivery failed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

VERSION: Final = 1


@dataclass(frozen=True)
class MeterRange:
    """Meter ids ``<prefix><number zero-padded to width>`` for count consecutive numbers."""

    count: int
    prefix: str = "UY"
    first: int = 1
    width: int = 6

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("the meter count must be at least 1")
        if self.first < 0:
            raise ValueError("the first meter number must not be negative")
        if len(str(self.first + self.count - 1)) > self.width:
            raise ValueError(f"{self.count} meters do not fit in {self.width} digits")

    def ids(self) -> list[str]:
        numbers = range(self.first, self.first + self.count)
        return [f"{self.prefix}{n:0{self.width}d}" for n in numbers]


def meter_range(count: int, prefix: str = "UY") -> MeterRange:
    """Ids UY000001…: six digits, more when the count needs them."""
    return MeterRange(count=count, prefix=prefix, width=max(6, len(str(count))))


@dataclass
class Manifest:
    mode: str
    topic: str
    seed: int
    meters: MeterRange
    magnitudes: tuple[str, ...]
    valid: dict[str, dict[str, int]] = field(default_factory=dict)
    duplicates: int = 0
    malformed: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    first_ts: str | None = None
    last_ts: str | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def valid_total(self) -> int:
        return sum(sum(per_magnitude.values()) for per_magnitude in self.valid.values())

    @property
    def malformed_total(self) -> int:
        return sum(self.malformed.values())

    @property
    def produced(self) -> int:
        return self.valid_total + self.duplicates + self.malformed_total

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "mode": self.mode,
            "topic": self.topic,
            "seed": self.seed,
            "meters": {
                "prefix": self.meters.prefix,
                "first": self.meters.first,
                "count": self.meters.count,
                "width": self.meters.width,
            },
            "magnitudes": list(self.magnitudes),
            "valid": {day: dict(counts) for day, counts in sorted(self.valid.items())},
            "valid_total": self.valid_total,
            "duplicates": self.duplicates,
            "malformed": dict(self.malformed),
            "malformed_total": self.malformed_total,
            "produced": self.produced,
            "failed": self.failed,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        if data.get("version") != VERSION:
            raise ValueError(f"manifest version {data.get('version')!r} is not {VERSION}")
        return cls(
            mode=data["mode"],
            topic=data["topic"],
            seed=int(data["seed"]),
            meters=MeterRange(**data["meters"]),
            magnitudes=tuple(data["magnitudes"]),
            valid={day: dict(counts) for day, counts in data["valid"].items()},
            duplicates=int(data["duplicates"]),
            malformed=dict(data["malformed"]),
            failed=int(data["failed"]),
            first_ts=data.get("first_ts"),
            last_ts=data.get("last_ts"),
            started_at=data.get("started_at"),
            finished_at=data.get("finished_at"),
        )


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    return Manifest.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def write_manifest(manifest: Manifest, path: str | os.PathLike[str]) -> None:
    """Write atomically: a reader never sees half a manifest."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(manifest.to_json(), indent=2) + "\n", encoding="utf-8")
    partial.replace(target)
