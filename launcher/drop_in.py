"""Vigía's pieces for a Prometheus and Alertmanager the operator already runs.

Derived from the configuration Vigía runs itself (prometheus.yml, alertmanager.yml), so the two
never drift apart:
- scrape jobs: every Vigía job of prometheus.yml under its own name (the rules select
  `job="vigia-exporter"` and `job="vigia-ingest"`), with the `cluster` label the rules and boards
  group by set to the operator's cluster name, and their file_sd target files. The
  `prometheus` and `alertmanager` jobs stay out: the operator scrapes their own.
- the external label `vigia_console_url` every alert's links start with;
- one Alertmanager route to put under the operator's root route: it takes every alert labelled
  `product="vigia"` (every Vigía rule carries it) and routes it as Vigía's own tree does. Receivers
  are renamed `vigia-<name>` so they cannot collide with the operator's, and every inhibition is
  confined to Vigía's alerts on both sides: an operator's own `KafkaBrokerDown` must neither hide
  nor be hidden by one of Vigía's.
Pure functions over the parsed YAML; launcher/drop_in_files.py reads and writes the files.
"""

from __future__ import annotations

import copy
from typing import Any

PRODUCT_MATCHER = 'product="vigia"'
OPERATORS_OWN_JOBS = frozenset({"prometheus", "alertmanager"})
RECEIVER_PREFIX = "vigia-"
# The root route's timing is inherited by every route below it: the sub-route must carry Vigía's
# own, or the operator's root would decide how fast Vigía pages.
ROOT_SETTINGS = ("group_by", "group_wait", "group_interval", "repeat_interval")

Config = dict[str, Any]


def scrape_configs(prometheus: Config, cluster: str) -> list[Config]:
    """Vigía's scrape jobs with `cluster` set to `cluster`; their file_sd target files keep
    their names (targets/*.json), copied beside them for the operator to fill in."""
    jobs = []
    for job in prometheus["scrape_configs"]:
        name = job["job_name"]
        if name in OPERATORS_OWN_JOBS:
            continue
        jobs.append(
            {
                "job_name": name,
                "file_sd_configs": copy.deepcopy(job["file_sd_configs"]),
                "relabel_configs": [{"target_label": "cluster", "replacement": cluster}],
            }
        )
    return jobs


def _renamed(receiver: str) -> str:
    return RECEIVER_PREFIX + receiver


def _route(route: Config) -> Config:
    out = copy.deepcopy(route)
    out["receiver"] = _renamed(route["receiver"])
    if "routes" in route:
        out["routes"] = [_route(child) for child in route["routes"]]
    return out


def alertmanager_route(alertmanager: Config) -> Config:
    """The pieces to merge into the operator's alertmanager.yml: one route (first under their
    root's `routes`), Vigía's inhibitions and its receivers."""
    root = alertmanager["route"]
    sub: Config = {"matchers": [PRODUCT_MATCHER], "receiver": _renamed(root["receiver"])}
    sub.update({key: copy.deepcopy(root[key]) for key in ROOT_SETTINGS if key in root})
    sub["routes"] = [_route(child) for child in root.get("routes", [])]
    inhibitions = []
    for rule in alertmanager.get("inhibit_rules", []):
        confined = copy.deepcopy(rule)
        for side in ("source_matchers", "target_matchers"):
            confined[side] = [*confined.get(side, []), PRODUCT_MATCHER]
        inhibitions.append(confined)
    receivers = []
    for receiver in alertmanager["receivers"]:
        renamed = copy.deepcopy(receiver)
        renamed["name"] = _renamed(receiver["name"])
        receivers.append(renamed)
    return {"route": {"routes": [sub]}, "inhibit_rules": inhibitions, "receivers": receivers}
