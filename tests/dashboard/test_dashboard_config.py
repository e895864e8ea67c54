"""`vigia-dashboard` configuration: defaults, environment, flags win, one-line errors, exit 2."""

from __future__ import annotations

import pytest

from vigia.dashboard.cli import main
from vigia.dashboard.config import ConfigError, DashboardConfig, load_config


def test_defaults_match_the_contract() -> None:
    assert load_config([], {}) == DashboardConfig(
        prometheus_url="http://127.0.0.1:9090",
        exporter_url="http://127.0.0.1:9308",
        alertmanager_url="http://127.0.0.1:9093",
        refresh_interval=15.0,
        listen_address="127.0.0.1",
        port=8050,
    )


def test_environment_then_flags() -> None:
    env = {
        "VIGIA_PROMETHEUS_URL": "http://prom:9090/",
        "VIGIA_EXPORTER_URL": "http://exporter:9308",
        "VIGIA_ALERTMANAGER_URL": "https://am.example:9093",
        "VIGIA_DASHBOARD_REFRESH_INTERVAL": "1m",
        "VIGIA_DASHBOARD_LISTEN_ADDRESS": "0.0.0.0",
        "VIGIA_DASHBOARD_PORT": "9000",
        "VIGIA_LOG_LEVEL": "debug",
    }
    config = load_config([], env)
    assert config.prometheus_url == "http://prom:9090"  # trailing slash dropped
    assert config.alertmanager_url == "https://am.example:9093"
    assert (config.refresh_interval, config.listen_address, config.port) == (60.0, "0.0.0.0", 9000)
    assert config.log_level == "DEBUG"
    flagged = load_config(
        ["--prometheus-url", "http://other:1", "--refresh-interval", "30s", "--port", "8051"], env
    )
    assert (flagged.prometheus_url, flagged.refresh_interval, flagged.port) == (
        "http://other:1",
        30.0,
        8051,
    )
    assert flagged.exporter_url == "http://exporter:9308"


def test_the_outage_target_is_a_day_unless_told() -> None:
    assert load_config([], {}).outage_target == 86_400.0
    env = {"VIGIA_DASHBOARD_OUTAGE_TARGET": "48h"}
    assert load_config([], env).outage_target == 172_800.0
    assert load_config(["--outage-target", "6h"], env).outage_target == 21_600.0


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--port", "99999"], {}, "port '99999' is not a TCP port"),
        (["--prometheus-url", "prom:9090"], {}, "Prometheus URL 'prom:9090' is not an http(s) URL"),
        ([], {"VIGIA_DASHBOARD_REFRESH_INTERVAL": "often"}, "refresh interval 'often' is not a"),
        (["--refresh-interval", "500ms"], {}, "refresh interval must be at least 1 s"),
        (["--backend-timeout", "0"], {}, "backend timeout must be in (0, 60]"),
        (["--log-level", "loud"], {}, "log level 'LOUD' is not one of"),
        (["--outage-target", "0"], {}, "outage target must be positive"),
        (["--no-such-flag"], {}, "unrecognized arguments: --no-such-flag"),
    ],
)
def test_invalid_configuration_is_one_clear_line(
    argv: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(argv, env)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_cli_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIGIA_EXPORTER_URL", "ftp://exporter")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == "vigia-dashboard: error: exporter URL 'ftp://exporter' is not an http(s) URL\n"
