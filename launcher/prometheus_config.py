"""The repo's Prometheus config, rewritten for processes on this machine, not compose services.

prometheus/prometheus.yml names compose services (`exporter:9308`, `kafka-1:9404`, ...). Without
Docker those names do not resolve, so `vigia-stack` writes a variant into its run directory where:
- every target whose host is a compose service the launcher runs points at that local process;
- broker JMX target groups (`kafka-N:9404`) become one group per `--jmx-target ID=HOST:PORT`,
  keeping the groups' labels, with `broker` (when the groups carry it) set to that node id;
- targets of services not running here are dropped, and so are jobs left without targets;
- relative `rule_files` and `file_sd_configs` paths are made absolute (file_sd files are rewritten
  the same way into the run directory);
- Alertmanager targets point at the local Alertmanager (or alerting is removed without one);
- the given external labels are set (the Dash app's address, `vigia_console_url`, that alerts
  build their runbook and dashboard links from: launcher/console_url.py), replacing the
  `${VIGIA_CONSOLE_URL}` that compose's Prometheus expands from its environment.
Everything else (labels, relabelling, intervals, other external labels) is kept as it is.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vigia.launcher.plan import COMPONENTS, NOT_IN_COMPOSE

BROKER_HOST = re.compile(r"kafka-\d+")

TargetGroups = list[dict[str, Any]]


@dataclass(frozen=True)
class LocalConfig:
    """prometheus.yml content, and file_sd files to write (file name -> target groups)."""

    config: dict[str, Any]
    target_files: dict[str, TargetGroups] = field(default_factory=dict)


def split_target(target: str) -> tuple[str, str]:
    host, _, port = target.rpartition(":")
    return (host, port) if host else (target, "")


def is_broker_target(target: str) -> bool:
    return BROKER_HOST.fullmatch(split_target(target)[0]) is not None


def rewrite_targets(targets: Sequence[str], addresses: Mapping[str, str]) -> list[str]:
    """Local addresses for compose targets; other hosts (e.g. 127.0.0.1) are left alone."""
    out: list[str] = []
    for target in targets:
        host, _ = split_target(target)
        if host in addresses:
            out.append(addresses[host])
        elif host not in KNOWN_COMPOSE_HOSTS:
            out.append(target)
        # else: a compose service that does not run here
    return list(dict.fromkeys(out))


def rewrite_groups(
    groups: TargetGroups, addresses: Mapping[str, str], jmx_targets: Mapping[str, str]
) -> TargetGroups:
    """Target groups for this machine. `jmx_targets` maps Kafka node id -> JMX agent host:port."""
    out: TargetGroups = []
    broker_groups = [g for g in groups if any(map(is_broker_target, g.get("targets", [])))]
    for group in groups:
        if group in broker_groups:
            continue
        targets = rewrite_targets(group.get("targets", []), addresses)
        if targets:
            out.append({**group, "targets": targets})
    if broker_groups:
        labels = dict(broker_groups[0].get("labels") or {})
        for node_id, address in jmx_targets.items():
            node_labels = {**labels, "broker": node_id} if "broker" in labels else labels
            out.append({"targets": [address], **({"labels": node_labels} if node_labels else {})})
    return out


def localize(
    source: Mapping[str, Any],
    *,
    source_dir: Path,
    addresses: Mapping[str, str],
    jmx_targets: Mapping[str, str],
    alertmanager: str | None,
    target_dir: Path,
    read_target_file: Callable[[Path], TargetGroups],
    external_labels: Mapping[str, str] | None = None,
) -> LocalConfig:
    """The local variant of `source` (a parsed prometheus.yml living in `source_dir`).

    `addresses` maps compose service names to the local host:port of the processes that run here.
    file_sd files are read through `read_target_file` and renamed into `target_dir`.
    """
    config = copy.deepcopy(dict(source))
    if external_labels:
        config.setdefault("global", {}).setdefault("external_labels", {}).update(external_labels)
    config["rule_files"] = [
        str(_absolute(pattern, source_dir)) for pattern in config.get("rule_files") or []
    ]

    if alertmanager is None:
        config.pop("alerting", None)
    else:
        for am in (config.get("alerting") or {}).get("alertmanagers") or []:
            am["static_configs"] = [{"targets": [alertmanager]}]
            am.pop("file_sd_configs", None)
            am.pop("dns_sd_configs", None)

    target_files: dict[str, TargetGroups] = {}
    jobs = []
    for job in config.get("scrape_configs") or []:
        job["static_configs"] = rewrite_groups(
            job.get("static_configs") or [], addresses, jmx_targets
        )
        if not job["static_configs"]:
            del job["static_configs"]
        file_sd_configs = []
        for sd in job.get("file_sd_configs") or []:
            files = []
            for pattern in sd.get("files") or []:
                for path in sorted(_absolute(pattern, source_dir).parent.glob(Path(pattern).name)):
                    groups = rewrite_groups(read_target_file(path), addresses, jmx_targets)
                    if groups:
                        name = f"{job['job_name']}-{path.stem}.json"
                        target_files[name] = groups
                        files.append(str(target_dir / name))
            if files:
                file_sd_configs.append({**sd, "files": files})
        if file_sd_configs:
            job["file_sd_configs"] = file_sd_configs
        else:
            job.pop("file_sd_configs", None)
        if job.get("static_configs") or job.get("file_sd_configs"):
            jobs.append(job)
    config["scrape_configs"] = jobs
    return LocalConfig(config=config, target_files=target_files)


def _absolute(pattern: str, base: Path) -> Path:
    path = Path(pattern)
    return path if path.is_absolute() else base / path


# docker-compose.yml's services other than the brokers: targets naming one that does not run here
# are dropped rather than left pointing at a name that does not resolve.
KNOWN_COMPOSE_HOSTS = frozenset(
    {
        *COMPONENTS,
        *("grafana", "kafka-init", "hes-db", "connect", "connect-init", "mysqld-exporter"),
        *("spark-master", "spark-worker-1", "spark-worker-2"),
    }
    - NOT_IN_COMPOSE
)
