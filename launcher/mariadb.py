"""An HES database without Docker: Debian's MariaDB as a plain process on loopback.

`HesDatabase` creates its own data directory (``mariadb-install-db``), starts ``mariadbd`` on
127.0.0.1 with the binlog in ROW format (what Debezium reads), creates ``hes.measure`` and one
user per role, and stops the server by PID. Tests use it, and so can anyone who wants an HES next
to ``vigia-stack``::

    with HesDatabase(Path("/tmp/hes"), port=3306) as hes:
        print(hes.dsn("writer"))   # for vigia-simulate --sink hes --hes-dsn ...

Roles (least privilege, one password each, random unless given):

- ``writer``: SELECT, INSERT, UPDATE on hes.* (the simulator, standing in for the HES);
- ``reader``: SELECT on hes.* (the exporter's source watch, ``vigia-ingest completeness``) and
  BINLOG MONITOR (``SHOW BINARY LOGS``, for the exporter's binlog margin);
- ``monitor``: what prometheus-mysqld-exporter's default collectors need;
- ``connect``: what Debezium's MySQL connector needs (the grants of the recorded worker), and
  INSERT on ``hes.debezium_signal`` for its incremental snapshots' watermarks;
- ``signal``: INSERT on ``hes.debezium_signal`` alone (``vigia-ingest repair``'s signal).

The server reports ``VERSION()`` = 5.7.99-log: Debezium's MySQL connector, against a version
string containing "MariaDB", resumed at the wrong binlog position after a restart and skipped
rows (shared/fixtures/connect-debezium/README.md); with this setting it did not.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import pymysql

from vigia.common.hes import SIGNAL_TABLE, SIGNAL_TABLE_DDL, TABLE_DDL
from vigia.common.logs import setup_logging

log = logging.getLogger(__name__)

Role = Literal["writer", "reader", "monitor", "connect", "signal"]
USERS: Final[dict[Role, str]] = {
    "writer": "hes_writer",
    "reader": "hes_reader",
    "monitor": "hes_monitor",
    "connect": "dbz",
    "signal": "hes_signal",
}
_SIGNAL_INSERT: Final = f"INSERT ON hes.{SIGNAL_TABLE}"
_GRANTS: Final[dict[Role, tuple[str, ...]]] = {
    "writer": ("SELECT, INSERT, UPDATE ON hes.*",),
    "reader": ("SELECT ON hes.*", "BINLOG MONITOR ON *.*"),
    "monitor": ("PROCESS, REPLICATION CLIENT, SLAVE MONITOR, SELECT ON *.*",),
    "connect": (
        "SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, BINLOG MONITOR ON *.*",
        _SIGNAL_INSERT,
    ),
    "signal": (_SIGNAL_INSERT,),
}


class MariaDBError(RuntimeError):
    """MariaDB is not installed, or did not initialise or start (the message says which)."""


def binaries() -> tuple[str, str]:
    """Paths of mariadb-install-db and mariadbd (Debian puts the server in /usr/sbin)."""
    install = shutil.which("mariadb-install-db")
    server = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/libexec")
    if install is None or server is None:
        raise MariaDBError("MariaDB is not installed (apt-get install mariadb-server)")
    return install, server


class HesDatabase:
    def __init__(
        self,
        base_dir: Path,
        port: int,
        passwords: dict[Role, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.base_dir = base_dir
        self.port = port
        self.host = host
        self.passwords: dict[Role, str] = {
            role: (passwords or {}).get(role) or secrets.token_hex(8) for role in USERS
        }
        self.datadir = base_dir / "data"
        self.log_path = base_dir / "mariadbd.log"
        # A Unix socket path must stay under ~108 bytes: a short directory of its own.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="hes-"))
        self.socket = self._socket_dir / "mariadbd.sock"
        self._process: subprocess.Popen[bytes] | None = None

    def dsn(self, role: Role) -> str:
        return f"mysql://{USERS[role]}:{self.passwords[role]}@{self.host}:{self.port}/hes"

    def exporter_dsn(self) -> str:
        """The monitor user in the DATA_SOURCE_NAME form prometheus-mysqld-exporter reads."""
        return f"{USERS['monitor']}:{self.passwords['monitor']}@tcp({self.host}:{self.port})/"

    def start(self, timeout: float = 60.0) -> None:
        install, server = binaries()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        fresh = not (self.datadir / "mysql").is_dir()
        if fresh:
            self._install(install, timeout)
        argv = [
            server,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--pid-file={self.base_dir / 'mariadbd.pid'}",
            f"--bind-address={self.host}",
            f"--port={self.port}",
            "--skip-name-resolve",
            "--server-id=1",
            f"--log-bin={self.datadir / 'mariadb-bin'}",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--expire-logs-days=1",
            "--innodb-buffer-pool-size=128M",
            "--version=5.7.99-log",
            *_as_root(),
        ]
        with self.log_path.open("ab") as out:
            self._process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(timeout)
            self._create_schema_and_users()
        except BaseException:
            self.stop()
            raise
        log.info("HES database (MariaDB) on %s:%d, data in %s", self.host, self.port, self.datadir)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a clean InnoDB shutdown), SIGKILL after `timeout`; by PID, never by name."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    def __enter__(self) -> HesDatabase:
        self.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def admin(self) -> Any:
        """A root connection over the Unix socket (root has no TCP account)."""
        return pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)

    def _install(self, install: str, timeout: float) -> None:
        result = subprocess.run(
            [
                install,
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                *_as_root(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise MariaDBError(f"mariadb-install-db failed: {' / '.join(tail)}")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self._process is not None
            if self._process.poll() is not None:
                tail = self.log_path.read_text(errors="replace").splitlines()[-5:]
                raise MariaDBError(
                    f"mariadbd exited with {self._process.returncode}: {' / '.join(tail)}"
                )
            try:
                self.admin().close()
                return
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise MariaDBError(f"mariadbd not ready after {timeout:g} s") from None
                time.sleep(0.1)

    def _create_schema_and_users(self) -> None:
        connection = self.admin()
        try:
            with connection.cursor() as cursor:
                cursor.execute("CREATE DATABASE IF NOT EXISTS hes")
                cursor.execute("USE hes")
                cursor.execute(TABLE_DDL)
                cursor.execute(SIGNAL_TABLE_DDL)
                for role, user in USERS.items():
                    account = f"'{user}'@'{self.host}'"
                    cursor.execute(
                        f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY %s",
                        (self.passwords[role],),
                    )
                    cursor.execute(
                        f"ALTER USER {account} IDENTIFIED BY %s", (self.passwords[role],)
                    )
                    for grant in _GRANTS[role]:
                        cursor.execute(f"GRANT {grant} TO {account}")
        finally:
            connection.close()


def _as_root() -> list[str]:
    """mariadbd refuses to run as root unless told to; any other user runs as itself."""
    return ["--user=root"] if os.geteuid() == 0 else []


def main(argv: list[str] | None = None) -> int:
    """``python -m vigia.launcher.mariadb --dir DIR --port PORT``: an HES for the no-Docker stack.
    Writes each role's DSN to DIR/dsn.json (mode 0600, new passwords at every start) and serves
    until SIGINT / SIGTERM, then shuts MariaDB down cleanly."""
    parser = argparse.ArgumentParser(
        prog="python -m vigia.launcher.mariadb", description=main.__doc__
    )
    parser.add_argument("--dir", type=Path, required=True, help="data directory (kept)")
    parser.add_argument("--port", type=int, default=3306, help="TCP port on 127.0.0.1 (3306)")
    parser.add_argument(
        "--stop-with-parent",
        action="store_true",
        help="stop when the process that started this one is gone (vigia-stack --demo: a "
        "killed launcher leaves no database behind)",
    )
    args = parser.parse_args(argv)
    setup_logging(os.environ.get("VIGIA_LOG_LEVEL", "INFO"))
    parent = os.getppid()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    database = HesDatabase(args.dir, args.port)
    try:
        database.start()
    except MariaDBError as exc:
        log.error("%s", exc)
        database.close()
        return 1
    try:
        dsn_file = args.dir / "dsn.json"
        written = dsn_file.with_suffix(".tmp")
        written.touch(mode=0o600)
        written.chmod(0o600)  # also when an earlier run left it
        written.write_text(json.dumps({role: database.dsn(role) for role in USERS}, indent=2))
        written.replace(dsn_file)  # readers never see half a file
        log.info("DSNs in %s (writer: vigia-simulate --sink hes; reader: --hes-dsn)", dsn_file)
        while not stop.wait(1.0):
            if not database.running:
                log.error("mariadbd exited; see %s", database.log_path)
                return 1
            if args.stop_with_parent and os.getppid() != parent:
                log.warning("the process that started it is gone: stopping")
                return 0
        return 0
    finally:
        database.close()


if __name__ == "__main__":
    raise SystemExit(main())
