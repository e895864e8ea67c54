"""Which topics and consumer groups the exporter reports (include/exclude regexes).

Patterns are Python regular expressions matched anywhere in the name (``re.search``), like
kafka_exporter's ``--topic.filter``: anchor them (``^measure$``) to match whole names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NameFilter:
    include: re.Pattern[str] | None = None  # None: everything
    exclude: re.Pattern[str] | None = None  # None: nothing

    def allows(self, name: str) -> bool:
        if self.include is not None and not self.include.search(name):
            return False
        return self.exclude is None or not self.exclude.search(name)


@dataclass(frozen=True, slots=True)
class Filters:
    topics: NameFilter = NameFilter()
    groups: NameFilter = NameFilter()
