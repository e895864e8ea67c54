"""What `vigia-ingest repair` asks of the outside: Kafka Connect's REST API about the connector,
and the HES's signalling table for the signal itself."""

from __future__ import annotations

from typing import Final

import httpx
import pymysql

from vigia.common.hes import Dsn, connect
from vigia.ingest.repair import Signal

SIGNAL_SETTING: Final = "signal.data.collection"


class RepairIoError(RuntimeError):
    """The connector or the HES refused or did not answer: one sentence."""


def signal_table(connect_url: str, connector: str, timeout: float = 10.0) -> str:
    """The signalling table (``db.table``) of ``connector``, once it is running with one; raises
    RepairIoError saying why it cannot take a signal now (not there, not running, none set)."""
    base = f"{connect_url.rstrip('/')}/connectors/{connector}"
    try:
        status = httpx.get(f"{base}/status", timeout=timeout)
        if status.status_code == 404:
            raise RepairIoError(f"Kafka Connect at {connect_url} has no connector {connector}")
        status.raise_for_status()
        config = httpx.get(f"{base}/config", timeout=timeout)
        config.raise_for_status()
    except httpx.HTTPError as exc:
        raise RepairIoError(f"Kafka Connect at {connect_url} did not answer ({exc})") from exc
    body = status.json()
    states = [body["connector"]["state"], *(task["state"] for task in body.get("tasks", []))]
    if len(states) < 2 or any(state != "RUNNING" for state in states):
        raise RepairIoError(
            f"connector {connector} is not running (connector and tasks: {', '.join(states)})"
        )
    table = str(config.json().get(SIGNAL_SETTING) or "")
    if table.count(".") != 1:
        raise RepairIoError(
            f"connector {connector} has no {SIGNAL_SETTING} (database.table): register it with "
            "docker/connect/connector-hes-measure.json"
        )
    return table


def send_signal(dsn: Dsn, table: str, signal: Signal, timeout: float = 30.0) -> None:
    """Insert ``signal`` into ``table`` (``db.table``); the connector reads it from the binlog."""
    quoted = ".".join(f"`{part.replace('`', '``')}`" for part in table.split("."))
    try:
        connection = connect(dsn, timeout)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {quoted} (id, type, data) VALUES (%s, %s, %s)",
                    (signal.id, signal.type, signal.data),
                )
        finally:
            connection.close()
    except pymysql.MySQLError as exc:
        raise RepairIoError(
            f"cannot insert the signal into {table} as {dsn.redacted()}: {exc.args[-1]}"
        ) from exc
