"""The address alerts link to (`--console-url`, VIGIA_CONSOLE_URL): derived, validated, and written
as Prometheus' external label by `vigia-stack`; compose hands it to its Prometheus."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.deploy.compose import COMPOSE_FILE, env_example, raw
from vigia.launcher import cli
from vigia.launcher.console_url import (
    ConsoleUrlError,
    derive_console_url,
    is_loopback,
    parse_console_url,
)

PROMETHEUS_YML = Path(__file__).resolve().parents[2] / "prometheus" / "prometheus.yml"


@pytest.mark.parametrize(
    ("listen", "fqdn", "hostname", "expected"),
    [
        ("127.0.0.1", "vigia.example.org", "vigia", "http://127.0.0.1:8050"),
        ("10.0.0.5", "vigia.example.org", "vigia", "http://10.0.0.5:8050"),
        ("vigia.lan", "localhost", "vm", "http://vigia.lan:8050"),
        ("0.0.0.0", "vigia.example.org", "vigia", "http://vigia.example.org:8050"),
        ("", "vigia.example.org", "vigia", "http://vigia.example.org:8050"),
        ("::", "vigia.example.org", "vigia", "http://vigia.example.org:8050"),
        # getfqdn() answers "localhost" on hosts whose name resolves nowhere: the host name then
        ("0.0.0.0", "localhost", "vm", "http://vm:8050"),
        ("0.0.0.0", "localhost.localdomain", "node-7", "http://node-7:8050"),
        ("fd00::5", "x", "y", "http://[fd00::5]:8050"),
        ("::1", "x", "y", "http://[::1]:8050"),
    ],
)
def test_the_default_address_follows_the_listen_address(
    listen: str, fqdn: str, hostname: str, expected: str
) -> None:
    assert derive_console_url(listen, 8050, fqdn, hostname) == expected


@pytest.mark.parametrize("listen", ["0.0.0.0", "", "::", "10.1.2.3", "vigia.lan"])
@pytest.mark.parametrize("names", [("vigia.example.org", "v"), ("localhost", "vm")])
def test_a_network_listen_address_never_yields_a_loopback_link(
    listen: str, names: tuple[str, str]
) -> None:
    url = derive_console_url(listen, 8050, *names)
    assert not is_loopback(url.removeprefix("http://").rsplit(":", 1)[0]), url


def test_a_wildcard_on_a_machine_without_a_name_asks_for_the_flag() -> None:
    with pytest.raises(ConsoleUrlError, match="--console-url"):
        derive_console_url("0.0.0.0", 8050, "localhost", "localhost")
    with pytest.raises(ConsoleUrlError, match="--console-url"):
        derive_console_url("0.0.0.0", 8050, "127.0.0.1", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://vigia.example.org", "https://vigia.example.org"),
        ("https://vigia.example.org/", "https://vigia.example.org"),
        ("http://10.0.0.5:8050", "http://10.0.0.5:8050"),
        (" https://ops.example.org/vigia/ ", "https://ops.example.org/vigia"),
        ("http://[fd00::5]:8050", "http://[fd00::5]:8050"),
    ],
)
def test_console_urls_are_accepted_without_a_trailing_slash(text: str, expected: str) -> None:
    assert parse_console_url(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "vigia.example.org",
        "ftp://vigia.example.org",
        "https://",
        "http://vigia:port",
        "https://vigia.example.org/?x=1",
        "https://vigia.example.org/#top",
        "",
    ],
)
def test_anything_else_is_rejected(text: str) -> None:
    with pytest.raises(ConsoleUrlError):
        parse_console_url(text)


def _dry_run(tmp_path: Path, *argv: str) -> int:
    return cli.main(
        [
            "--dry-run",
            "--run-dir",
            str(tmp_path / "run"),
            "--only",
            "prometheus",
            "--prometheus-binary",
            "/usr/bin/prometheus",
            *argv,
        ]
    )


def _rendered_label(tmp_path: Path) -> str:
    config = yaml.safe_load((tmp_path / "run" / "prometheus" / "prometheus.yml").read_text())
    return str(config["global"]["external_labels"]["vigia_console_url"])


def test_vigia_stack_on_all_addresses_links_to_the_machines_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIGIA_CONSOLE_URL", raising=False)
    monkeypatch.setattr(socket, "getfqdn", lambda *_: "vigia-7.example.org")
    assert _dry_run(tmp_path, "--listen-address", "0.0.0.0", "--dashboard-port", "18050") == 0
    assert _rendered_label(tmp_path) == "http://vigia-7.example.org:18050"


def test_vigia_stack_writes_the_given_console_url_flag_over_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIGIA_CONSOLE_URL", "https://from-env.example.org/")
    assert _dry_run(tmp_path, "--listen-address", "0.0.0.0") == 0
    assert _rendered_label(tmp_path) == "https://from-env.example.org"
    args = ["--listen-address", "0.0.0.0", "--console-url", "https://vigia.example.org"]
    assert _dry_run(tmp_path, *args) == 0
    assert _rendered_label(tmp_path) == "https://vigia.example.org"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_invalid_console_url_exits_2_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    monkeypatch.delenv("VIGIA_CONSOLE_URL", raising=False)
    argv = ["--console-url", "vigia.example.org"] if how == "flag" else []
    if how == "env":
        monkeypatch.setenv("VIGIA_CONSOLE_URL", "vigia.example.org")
    with pytest.raises(SystemExit) as exit_:
        _dry_run(tmp_path, *argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "http:// or https://" in err, err


def test_a_nameless_machine_on_all_addresses_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("VIGIA_CONSOLE_URL", raising=False)
    monkeypatch.setattr(socket, "getfqdn", lambda *_: "localhost")
    monkeypatch.setattr(socket, "gethostname", lambda: "localhost")
    assert _dry_run(tmp_path, "--listen-address", "0.0.0.0") == 2
    assert "--console-url" in capsys.readouterr().err


def test_compose_hands_the_console_url_to_prometheus() -> None:
    """prometheus.yml names the variable; compose's Prometheus expands it from its environment,
    which .env sets (documented in .env.example with compose's default)."""
    labels = yaml.safe_load(PROMETHEUS_YML.read_text())["global"]["external_labels"]
    assert labels["vigia_console_url"] == "${VIGIA_CONSOLE_URL}"
    prometheus = raw()["services"]["prometheus"]
    assert "--enable-feature=expand-external-labels" in prometheus["command"]
    assert prometheus["environment"]["VIGIA_CONSOLE_URL"] == (
        "${VIGIA_CONSOLE_URL:-http://localhost:8050}"
    )
    assert env_example()["VIGIA_CONSOLE_URL"] == "http://localhost:8050"
    # The image's Prometheus knows the feature flag (2.27 and later).
    major, minor = (int(n) for n in prometheus["image"].split(":v")[1].split(".")[:2])
    assert (major, minor) >= (2, 27), COMPOSE_FILE
