"""prometheus/examples/two-clusters.yml: valid for promtool, and every cluster's target labelled."""

from __future__ import annotations

import pytest
import yaml

from tests.monitoring.servers import PROMETHEUS_DIR
from tests.servers import MISSING, PROMTOOL, run

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]

EXAMPLE = PROMETHEUS_DIR / "examples" / "two-clusters.yml"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yml"))
# The stack's own jobs serve every cluster.
SHARED_JOBS = {"prometheus", "alertmanager"}


def test_promtool_checks_the_two_cluster_example_with_every_rule_file() -> None:
    assert PROMTOOL is not None
    result = run([PROMTOOL, "check", "config", str(EXAMPLE)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(RULE_FILES)} rule files found" in result.stdout


def test_each_cluster_job_keeps_its_name_and_labels_every_target_group() -> None:
    shipped = {
        j["job_name"]
        for j in yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())["scrape_configs"]
    }
    jobs = yaml.safe_load(EXAMPLE.read_text())["scrape_configs"]
    assert {j["job_name"] for j in jobs} <= shipped
    clusters: set[str] = set()
    for job in jobs:
        for group in job["static_configs"]:
            if job["job_name"] in SHARED_JOBS:
                assert "cluster" not in group.get("labels", {}), job["job_name"]
            else:
                clusters.add(group["labels"]["cluster"])
    assert clusters == {"prod", "dr"}
