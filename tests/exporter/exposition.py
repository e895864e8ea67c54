"""Read a Prometheus text exposition back into samples, with the official parser."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.parser import text_string_to_metric_families


class Labels(Mapping[str, str]):
    """A hashable label set, so samples can be dict keys."""

    def __init__(self, labels: Mapping[str, str]) -> None:
        self._items = dict(sorted(labels.items()))

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return repr(self._items)


Samples = dict[tuple[str, Labels], float]


def samples(text: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, Labels(s.labels))
            assert key not in found, f"duplicate series {key}"
            found[key] = s.value
    return found


def value(found: Samples, name: str, **labels: str) -> float | None:
    """The value of the series with exactly these labels, or None when there is no such series."""
    return found.get((name, Labels(labels)))


def family_names(text: str) -> set[str]:
    return {s[0] for s in samples(text)}
