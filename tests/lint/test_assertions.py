"""The check that every test asserts something (tests/lint/assertions.py), on sources written here
with and without assertions, and on this repository's tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.lint.assertions import helper_findings, unasserted

SOURCE = """
import pytest
from pytest import raises as expect_raise


def test_asserts():
    assert 1 + 1 == 2


def test_raises():
    with pytest.raises(ValueError):
        int("x")


def test_warns():
    with pytest.warns(UserWarning):
        pass


def test_fails_explicitly():
    pytest.fail("always")


def test_raise_assertion_error():
    raise AssertionError("no")


def test_bare_raises_imported_from_pytest():
    with expect_raise(ValueError):
        int("x")


def test_calls_a_listed_helper(checker):
    checker.check_everything()


def test_asserts_in_a_nested_check():
    def check():
        assert True is not False
    check()


def test_silent():
    int("1")


def test_only_skips():
    pytest.skip("never checks anything")


def test_calls_an_unlisted_helper():
    check_something()


def helper_not_a_test():
    pass


class TestGroup:
    def test_method_asserts(self):
        assert [] == []

    def test_method_silent(self):
        print("nothing")

    class TestNested:
        def test_nested_silent(self):
            pass


class Helper:
    def test_not_collected(self):
        pass


async def test_async_silent():
    pass
"""


def test_flags_exactly_the_tests_without_an_assertion() -> None:
    found = unasserted(SOURCE, "tests/x/test_x.py", helpers={"check_everything"})
    assert [f.message.split()[0] for f in found] == [
        "test_silent",
        "test_only_skips",
        "test_calls_an_unlisted_helper",
        "test_method_silent",
        "test_nested_silent",
        "test_async_silent",
    ]
    line = SOURCE.splitlines().index("def test_silent():") + 1
    assert str(found[0]) == f"tests/x/test_x.py:{line}: test_silent has no assertion"


def test_a_listed_helper_must_exist_and_assert() -> None:
    sources = {
        "tests/helpers.py": "def checks(x):\n    assert x\n\n\ndef looks(x):\n    return x\n",
    }
    found = helper_findings(sources, {"checks", "looks", "gone"})
    assert [str(f) for f in found] == [
        "tests/helpers.py:5: helper looks asserts nothing",
        "tests.lint.assertions:0: helper gone is listed but defined nowhere",
    ]


def test_the_repository_s_tests_all_assert(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "tests.lint.assertions"]
    clean = subprocess.run(run, capture_output=True, text=True, timeout=60, check=False)
    assert (clean.returncode, clean.stdout) == (0, "")
    (tmp_path / "test_bad.py").write_text("def test_nothing():\n    pass\n")
    dirty = subprocess.run(
        [*run, str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    # A folder of its own is checked alone; the listed helpers are then defined nowhere.
    assert dirty.returncode == 1
    assert f"{tmp_path.name}/test_bad.py:1: test_nothing has no assertion" in dirty.stdout
