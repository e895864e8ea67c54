"""Every secret can come from a file or the environment: the HES DSN's password never has to be
on a command line, where every user of the host sees it."""

from __future__ import annotations

from pathlib import Path

import pytest

from vigia.exporter.config import ConfigError as ExporterConfigError
from vigia.exporter.config import parse_config
from vigia.ingest.config import ConfigError as IngestConfigError
from vigia.ingest.config import load_config

DSN = "mysql://vigia_ro:p%40ss@hes.example.org:3306/hes"


@pytest.fixture
def dsn_file(tmp_path: Path) -> Path:
    path = tmp_path / "hes-dsn"
    path.write_text(DSN + "\n")
    path.chmod(0o600)
    return path


def test_exporter_reads_the_dsn_from_a_file(dsn_file: Path) -> None:
    from_flag = parse_config(["--hes-dsn-file", str(dsn_file)], {})
    from_env = parse_config([], {"VIGIA_HES_DSN_FILE": str(dsn_file)})
    for config in (from_flag, from_env):
        assert config.source.hes is not None
        assert (config.source.hes.user, config.source.hes.password) == ("vigia_ro", "p@ss")
    # The DSN itself still wins, as it did.
    given = parse_config(["--hes-dsn", "mysql://other@h/hes", "--hes-dsn-file", str(dsn_file)], {})
    assert given.source.hes is not None and given.source.hes.user == "other"


def test_ingest_reads_the_dsn_from_a_file(dsn_file: Path) -> None:
    base = ["--bootstrap-servers", "127.0.0.1:9092"]
    assert load_config([*base, "--hes-dsn-file", str(dsn_file)], {}).hes_dsn == DSN
    assert load_config(base, {"VIGIA_HES_DSN_FILE": str(dsn_file)}).hes_dsn == DSN


def test_an_unreadable_or_empty_file_is_a_configuration_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ExporterConfigError, match=r"--hes-dsn-file: .* is empty"):
        parse_config(["--hes-dsn-file", str(empty)], {})
    with pytest.raises(IngestConfigError, match="--hes-dsn-file: cannot read"):
        load_config(
            ["--bootstrap-servers", "b:9092", "--hes-dsn-file", str(tmp_path / "absent")], {}
        )


def test_the_web_config_file_comes_from_the_environment_too(tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    assert parse_config([], {"VIGIA_EXPORTER_WEB_CONFIG_FILE": str(web)}).web.headers == {
        "X-Frame-Options": "deny"
    }
    ingest = load_config(
        ["--bootstrap-servers", "b:9092"], {"VIGIA_INGEST_WEB_CONFIG_FILE": str(web)}
    )
    assert ingest.web.headers == {"X-Frame-Options": "deny"}
