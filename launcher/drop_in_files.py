"""Writes Vigía's pieces for an existing Prometheus and Alertmanager (`vigia-stack --drop-in`).

The files and how to merge them: docs/prometheus-drop-in.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from vigia.launcher import console_url, drop_in

GUIDE = "docs/prometheus-drop-in.md"


class PlainDumper(yaml.SafeDumper):  # type: ignore[misc]
    """Writes shared objects (the source's YAML anchors) out in full: no &id001 aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _write(path: Path, how: str, content: Any) -> None:
    header = f"# Written by `vigia-stack --drop-in`. {how} ({GUIDE}).\n"
    path.write_text(header + yaml.dump(content, Dumper=PlainDumper, sort_keys=False))


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, target))


def write_drop_in(config_dir: Path, out: Path, cluster: str, link_base: str) -> list[Path]:
    """Writes into `out` the rules, the scrape jobs with their target files, the external label
    and the Alertmanager pieces; returns what it wrote."""
    prometheus = yaml.safe_load((config_dir / "prometheus.yml").read_text(encoding="utf-8"))
    alertmanager = yaml.safe_load((config_dir / "alertmanager.yml").read_text(encoding="utf-8"))
    (out / "rules").mkdir(parents=True, exist_ok=True)
    written = [
        Path(shutil.copy(rule, out / "rules" / rule.name))
        for rule in sorted((config_dir / "rules").glob("*.yml"))
    ]
    jobs = drop_in.scrape_configs(prometheus, cluster)
    for job in jobs:
        for sd in job["file_sd_configs"]:
            # Absolute: Prometheus reads relative paths from its own config file's folder.
            sd["files"] = [
                str(_copy(config_dir / name, out.resolve() / name)) for name in sd["files"]
            ]
            written += [Path(name) for name in sd["files"]]
    parts = {
        "scrape-configs.yml": (
            "Append these jobs to your scrape_configs; put your addresses in targets/*.json",
            {"scrape_configs": jobs},
        ),
        "external-labels.yml": (
            "Add this label to your global external_labels",
            {"global": {"external_labels": {console_url.LABEL: link_base}}},
        ),
        "alertmanager.yml": (
            "Put the route first under your root route's routes; append the inhibit_rules and "
            "the receivers, with your webhook URLs",
            drop_in.alertmanager_route(alertmanager),
        ),
    }
    for name, (how, content) in parts.items():
        _write(out / name, how, content)
        written.append(out / name)
    return written
