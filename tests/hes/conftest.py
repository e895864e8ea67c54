"""The HES leg's tests run against a real MariaDB (tests/hes_db.py)."""

from tests.hes_db import hes, hes_db

__all__ = ["hes", "hes_db"]
