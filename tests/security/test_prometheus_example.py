"""The shipped prometheus.yml's commented example of a secured scrape is a valid job once
uncommented (promtool check config, which also looks for the certificate files it names)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.requirements import require
from tests.security.certs import make_certs
from tests.servers import PROMTOOL

PROMETHEUS_DIR = Path(__file__).resolve().parents[2] / "prometheus"
EXAMPLE = re.compile(
    r"  # BEGIN secured-scrape example\n(.*?)  # END secured-scrape example\n", re.S
)


def test_uncommented_secured_scrape_passes_promtool(tmp_path: Path) -> None:
    require(PROMTOOL is not None, "promtool", "apt-get install prometheus")
    assert PROMTOOL is not None
    text = (PROMETHEUS_DIR / "prometheus.yml").read_text()
    block = EXAMPLE.search(text)
    assert block, "the example's markers are gone from prometheus/prometheus.yml"
    lines = [re.sub(r"^  # ", "  ", line) for line in block.group(1).splitlines()]
    job = "\n".join(line for line in lines if not line.lstrip().startswith("# ")) + "\n"
    assert "scheme: https" in job and "password_file:" in job and "cert_file:" in job
    certs = make_certs(tmp_path / "certs")
    password = tmp_path / "exporter.password"
    password.write_text("s3cret\n")
    job = (
        job.replace("- job_name: vigia-exporter", "- job_name: vigia-exporter-secured")
        .replace("/etc/prometheus/vigia/ca.crt", str(certs.ca))
        .replace("/etc/prometheus/vigia/prometheus.crt", str(certs.client_cert))
        .replace("/etc/prometheus/vigia/prometheus.key", str(certs.client_key))
        .replace("/etc/prometheus/vigia/exporter.password", str(password))
    )
    copy = tmp_path / "prometheus"
    shutil.copytree(PROMETHEUS_DIR, copy)
    (copy / "prometheus.yml").write_text(text + job)
    done = subprocess.run(
        [PROMTOOL, "check", "config", str(copy / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # And promtool would have said so had a certificate been missing.
    certs.client_cert.unlink()
    failed = subprocess.run(
        [PROMTOOL, "check", "config", str(copy / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode != 0
