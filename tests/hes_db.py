"""A real HES database for tests: Debian's MariaDB as a plain process (launcher/mariadb.py), one
per test session, emptied before each test that asks for `hes`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from vigia.launcher.mariadb import HesDatabase, MariaDBError, binaries


@pytest.fixture(scope="session")
def hes_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HesDatabase]:
    try:
        binaries()
    except MariaDBError as exc:
        pytest.skip(str(exc))
    database = HesDatabase(Path(tmp_path_factory.mktemp("hes")), free_port())
    database.start()
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def hes(hes_db: HesDatabase) -> HesDatabase:
    """The session's database with an empty hes.measure."""
    connection = hes_db.admin()
    try:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE TABLE hes.measure")
    finally:
        connection.close()
    return hes_db
