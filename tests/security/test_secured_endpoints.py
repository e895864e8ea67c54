"""Vigía's own endpoints behind a web configuration file, over real TLS on loopback: the exporter
scraped by a real Prometheus that presents a client certificate and a password, the Dash app and
the ingest job's /metrics with basic auth, and what a plain-HTTP client is told."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MockCluster, free_port
from tests.requirements import require
from tests.scripts import console_script
from tests.security.certs import PASSWORD, USER, Certs, make_certs, web_config
from tests.servers import PROMETHEUS, start_prometheus, wait_until
from vigia.common.web_config import WebConfigError
from vigia.common.web_tls import load
from vigia.dashboard.config import ConfigError, load_config
from vigia.dashboard.data import Unreachable
from vigia.dashboard.sources import Sources

# A busy machine: Prometheus scrapes every second, the verdicts may take a few scrapes.
VERDICT_SECONDS = 90


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def write_config(certs: Certs, name: str, **kwargs: bool) -> Path:
    path = certs.directory / name
    path.write_text(web_config(certs, **kwargs))
    return path


def client(certs: Certs, *, cert: bool = True, auth: tuple[str, str] | None = None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if cert:
        context.load_cert_chain(certs.client_cert, certs.client_key)
    return httpx.Client(verify=context, auth=auth, timeout=10)


def plain_http_answer(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def secured_exporter(
    certs: Certs, mock_cluster: MockCluster, tmp_path: Path
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    config = write_config(certs, "exporter-web.yml")
    log = tmp_path / "exporter.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vigia.exporter.cli",
                "--port",
                str(port),
                "--bootstrap-servers",
                mock_cluster.bootstrap_servers,
                "--no-probe",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            # The variable, not the flag: it is the way a service file gives it.
            env={**os.environ, "VIGIA_EXPORTER_WEB_CONFIG_FILE": str(config)},
        )
    try:
        with client(certs) as http:
            wait_until(
                lambda: (
                    proc.poll() is None
                    and http.get(f"https://127.0.0.1:{port}/healthz").status_code == 200
                ),
                60,
                f"the exporter to serve TLS:\n{log.read_text()}",
            )
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_exporter_wants_both_a_client_certificate_and_a_password(
    certs: Certs, secured_exporter: tuple[int, subprocess.Popen[bytes]]
) -> None:
    port, _ = secured_exporter
    url = f"https://127.0.0.1:{port}"
    with client(certs) as anonymous:
        denied = anonymous.get(url + "/metrics")
        assert denied.status_code == 401
        assert denied.headers["www-authenticate"].startswith("Basic ")
        assert anonymous.get(url + "/api/v1/cluster").status_code == 401
        assert anonymous.get(url + "/healthz").status_code == 200
    with client(certs, auth=(USER, "wrong")) as wrong:
        assert wrong.get(url + "/metrics").status_code == 401
    with client(certs, auth=(USER, PASSWORD)) as right:
        metrics = right.get(url + "/metrics")
        assert metrics.status_code == 200
        assert "vigia_exporter_up" in metrics.text
    with (
        client(certs, cert=False, auth=(USER, PASSWORD)) as no_cert,
        pytest.raises(httpx.TransportError),
    ):
        no_cert.get(url + "/metrics")
    rogue = ssl.create_default_context(cafile=str(certs.ca))
    rogue.load_cert_chain(certs.rogue_cert, certs.rogue_key)
    with (
        httpx.Client(verify=rogue, auth=(USER, PASSWORD)) as stranger,
        pytest.raises(httpx.TransportError),
    ):
        stranger.get(url + "/metrics")
    answer = plain_http_answer(port)
    assert answer.startswith(b"HTTP/1.0 400 Bad Request")
    assert b"Client sent an HTTP request to an HTTPS server." in answer


def test_prometheus_scrapes_with_certificate_and_password_and_sees_the_401(
    certs: Certs, secured_exporter: tuple[int, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    require(PROMETHEUS is not None, "prometheus", "apt-get install prometheus")
    port, _ = secured_exporter
    (tmp_path / "right.pw").write_text(PASSWORD + "\n")
    (tmp_path / "wrong.pw").write_text("not-the-password\n")
    tls = (
        f"    tls_config:\n      ca_file: {certs.ca}\n"
        f"      cert_file: {certs.client_cert}\n      key_file: {certs.client_key}\n"
    )

    def job(name: str, password_file: str) -> str:
        return (
            f"  - job_name: {name}\n    scheme: https\n{tls}"
            f"    basic_auth:\n      username: {USER}\n"
            f"      password_file: {tmp_path / password_file}\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        )

    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
        + job("right", "right.pw")
        + job("wrong", "wrong.pw")
    )
    prometheus = start_prometheus(config, tmp_path / "data", tmp_path / "prometheus.log")
    try:

        def targets() -> dict[str, dict[str, Any]] | None:
            found = httpx.get(prometheus.url + "/api/v1/targets", timeout=5).json()["data"]
            by_job = {t["labels"]["job"]: t for t in found["activeTargets"]}
            settled = all(
                by_job.get(j, {}).get("health") in ("up", "down") for j in ("right", "wrong")
            )
            return by_job if settled else None

        def up(job: str) -> float | None:
            result = httpx.get(
                prometheus.url + "/api/v1/query", params={"query": f'up{{job="{job}"}}'}, timeout=5
            ).json()["data"]["result"]
            return float(result[0]["value"][1]) if result else None

        wait_until(lambda: up("right") == 1.0, VERDICT_SECONDS, "up{job=right} == 1")
        wait_until(lambda: up("wrong") == 0.0, VERDICT_SECONDS, "up{job=wrong} == 0")
        by_job = wait_until(targets, VERDICT_SECONDS, "both targets scraped")
        assert by_job["right"]["health"] == "up"
        assert by_job["wrong"]["health"] == "down"
        assert "401" in by_job["wrong"]["lastError"]
    finally:
        prometheus.stop()


def test_dash_app_over_tls_asks_for_a_password(certs: Certs, tmp_path: Path) -> None:
    port = free_port()
    config = write_config(certs, "dashboard-web.yml", client_certs=False)
    log = tmp_path / "dashboard.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                console_script("vigia-dashboard"),
                "--port",
                str(port),
                "--web.config.file",
                str(config),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"https://127.0.0.1:{port}"
    try:
        with client(certs, cert=False) as anonymous:
            wait_until(
                lambda: proc.poll() is None and anonymous.get(url + "/healthz").status_code == 200,
                60,
                f"the dashboard to serve TLS:\n{log.read_text()}",
            )
            denied = anonymous.get(url + "/")
            assert denied.status_code == 401
            assert denied.headers["www-authenticate"].startswith("Basic ")
            assert anonymous.get(url + "/runbooks/VigiaExporterDown").status_code == 401
        with client(certs, cert=False, auth=(USER, PASSWORD)) as operator:
            page = operator.get(url + "/")
            assert page.status_code == 200
            assert "Vigía" in page.text
        answer = plain_http_answer(port)
        assert answer.startswith(b"HTTP/1.0 400 Bad Request")
        assert b"Client sent an HTTP request to an HTTPS server." in answer
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_ingest_metrics_need_the_ca_signed_certificate_and_do_not_block_on_idle_clients(
    certs: Certs,
) -> None:
    """The ingest job's /metrics (ingest.job.serve_metrics) behind a web configuration file."""
    from vigia.ingest.config import IngestConfig
    from vigia.ingest.job import serve_metrics
    from vigia.ingest.metrics import IngestMetrics

    web = load(str(write_config(certs, "ingest-web.yml")))
    config = IngestConfig(bootstrap_servers="127.0.0.1:1", metrics_port=free_port(), web=web)
    server = serve_metrics(config, IngestMetrics(config.query_name))
    assert server is not None
    url = f"https://127.0.0.1:{config.metrics_port}/metrics"
    try:
        # A client that connects and says nothing holds its own thread, not the server.
        with (
            socket.create_connection(("127.0.0.1", config.metrics_port), timeout=10),
            client(certs, auth=(USER, PASSWORD)) as right,
        ):
            response = right.get(url)
        assert response.status_code == 200
        assert "vigia_ingest_batch_duration_seconds" in response.text
        with client(certs) as anonymous:
            denied = anonymous.get(url)
            assert denied.status_code == 401
            assert denied.headers["www-authenticate"].startswith("Basic ")
        with (
            client(certs, cert=False, auth=(USER, PASSWORD)) as no_cert,
            pytest.raises(httpx.TransportError),
        ):
            no_cert.get(url)
        answer = plain_http_answer(config.metrics_port)
        assert answer.startswith(b"HTTP/1.0 400 Bad Request")
    finally:
        server.shutdown()
        server.server_close()


def test_a_file_that_names_what_is_not_there_stops_the_start(certs: Certs, tmp_path: Path) -> None:
    missing = tmp_path / "missing.yml"
    missing.write_text("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n")
    with pytest.raises(WebConfigError, match=r"cert_file: cannot read .*nope.crt"):
        load(str(missing))
    mismatched = tmp_path / "mismatched.yml"
    mismatched.write_text(
        f"tls_server_config:\n  cert_file: {certs.server_cert}\n  key_file: {certs.client_key}\n"
    )
    with pytest.raises(WebConfigError, match="are not a PEM certificate and its key"):
        load(str(mismatched))
    with pytest.raises(WebConfigError, match="cannot read"):
        load(str(tmp_path / "absent.yml"))


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "vigia.exporter.cli"],
        [sys.executable, "-m", "vigia.dashboard.cli"],
        [sys.executable, "-m", "vigia.ingest.cli", "run", "--bootstrap-servers", "127.0.0.1:1"],
    ],
)
def test_every_component_refuses_a_bad_file_with_exit_code_2(
    command: list[str], tmp_path: Path
) -> None:
    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  prometheus: hunter2\n")
    done = subprocess.run(
        [*command, "--web.config.file", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "basic_auth_users.prometheus: not a bcrypt hash" in done.stderr


def test_dash_app_reads_a_secured_exporter_with_its_certificate_and_password(
    certs: Certs, secured_exporter: tuple[int, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    port, _ = secured_exporter
    password = tmp_path / "exporter.password"
    password.write_text(PASSWORD + "\n")
    settings = {
        "VIGIA_EXPORTER_URL": f"https://127.0.0.1:{port}",
        "VIGIA_DASHBOARD_BACKEND_CA_FILE": str(certs.ca),
        "VIGIA_DASHBOARD_BACKEND_CERT_FILE": str(certs.client_cert),
        "VIGIA_DASHBOARD_BACKEND_KEY_FILE": str(certs.client_key),
        "VIGIA_DASHBOARD_EXPORTER_USER": USER,
    }
    with pytest.raises(ConfigError, match="go together"):
        load_config([], settings)
    with_password = Sources(
        load_config([], {**settings, "VIGIA_DASHBOARD_EXPORTER_PASSWORD_FILE": str(password)})
    )
    try:
        cluster = wait_until(
            lambda: isinstance(answer := with_password.cluster(), dict) and answer,
            VERDICT_SECONDS,
            "the exporter's first collection through TLS and basic auth",
        )
        assert "brokers" in cluster
    finally:
        with_password.close()
    # The wrong password: the exporter's 401, as the app reports an unreachable backend.
    password.write_text("wrong\n")
    wrong = Sources(
        load_config([], {**settings, "VIGIA_DASHBOARD_EXPORTER_PASSWORD_FILE": str(password)})
    )
    try:
        refused = wrong.cluster()
        assert isinstance(refused, Unreachable)
        assert "401" in refused.reason
    finally:
        wrong.close()
