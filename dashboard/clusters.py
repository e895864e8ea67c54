"""The clusters the app shows: the setting that names them, the one a page asks for (`?cluster=`),
and the alerts that concern it. Pure.

One Prometheus and one Alertmanager serve every cluster, told apart by the `cluster` label that
Prometheus puts on every series (prometheus/prometheus.yml); each cluster has its own exporter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from vigia.dashboard.promql_scope import CLUSTER_LABEL

# The name Vigía's shipped Prometheus configuration and `vigia-stack --cluster` give a cluster.
DEFAULT_CLUSTER = "smartmeter"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ClustersError(ValueError):
    """The clusters setting cannot be read; the message says why."""


@dataclass(frozen=True)
class ClusterTarget:
    name: str  # the `cluster` label of its series and alerts
    exporter_url: str
    # False for the one cluster of --exporter-url: every series is its own, whatever the label
    # says, so its queries go unchanged (as before clusters could be named).
    labelled: bool = True


def parse_clusters(entries: Iterable[str]) -> tuple[ClusterTarget, ...]:
    """`NAME=URL` entries, each possibly a comma-separated list of them, in order."""
    targets: list[ClusterTarget] = []
    for entry in entries:
        for item in (part.strip() for part in entry.split(",")):
            if not item:
                continue
            name, sep, url = (text.strip() for text in item.partition("="))
            if not sep or not name or not url:
                raise ClustersError(f"cluster {item!r} is not NAME=URL")
            if not _NAME.match(name):
                raise ClustersError(
                    f"cluster name {name!r}: letters, digits, '_', '.' and '-' only"
                )
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ClustersError(f"cluster {name}: {url!r} is not an http(s) URL")
            if any(t.name == name for t in targets):
                raise ClustersError(f"cluster {name!r} is named twice")
            targets.append(ClusterTarget(name, url.rstrip("/")))
    return tuple(targets)


def requested(search: str | None) -> str | None:
    """The cluster a page's query string asks for (`?cluster=NAME`), if any."""
    values = parse_qs((search or "").lstrip("?")).get("cluster")
    return values[0] if values else None


def pick(targets: Sequence[ClusterTarget], name: str | None) -> ClusterTarget:
    """The cluster of that name, else the first one configured."""
    return next((t for t in targets if t.name == name), targets[0])


def sync(targets: Sequence[ClusterTarget], search: str | None) -> tuple[ClusterTarget, str | None]:
    """The cluster a page shows for its query string, and the query string to show instead when
    it names no cluster or an unknown one (None: keep it). One cluster needs no `?cluster=`."""
    target = pick(targets, requested(search))
    if len(targets) > 1 and requested(search) != target.name:
        return target, with_choice(search, target.name)
    return target, None


def with_choice(search: str | None, name: str) -> str:
    """The query string with `cluster=name`, other parameters kept."""
    params = {k: v for k, v in parse_qs((search or "").lstrip("?")).items() if k != "cluster"}
    return "?" + urlencode({**params, "cluster": name}, doseq=True)


def alerts_for(alerts: list[dict[str, Any]], target: ClusterTarget) -> list[dict[str, Any]]:
    """The alerts of this cluster and those of no cluster in particular (the stack's own)."""
    if not target.labelled:
        return alerts
    return [
        a for a in alerts if (a.get("labels") or {}).get(CLUSTER_LABEL, target.name) == target.name
    ]


def misnamed(target: ClusterTarget, reported: str | None) -> str | None:
    """Why the exporter named for this cluster is not its own, when it says it watches another
    (an exporter too old to say is taken at its word)."""
    if not target.labelled or reported is None or reported == target.name:
        return None
    return (
        f"the exporter at {target.exporter_url} watches cluster {reported!r}, not "
        f"{target.name!r}: its --cluster or the Dash app's --cluster is wrong"
    )
