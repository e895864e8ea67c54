"""prometheus/rules/slo.yml is the output of `vigia-slo` on prometheus/slo/slos.yml, and the
generator reads only what it can turn into rules. How the rules behave: prometheus/tests/."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from vigia.common.slo import cli
from vigia.common.slo.rules import PAGE, TICKET, WINDOWS, rule_groups, scaled
from vigia.common.slo.spec import SpecError, parse

DOCS = list(yaml.safe_load_all(cli.SPEC.read_text(encoding="utf-8")))


def test_committed_rules_are_the_generators_output() -> None:
    committed = cli.RULES.read_text(encoding="utf-8")
    assert committed == cli.generate(cli.SPEC), "prometheus/rules/slo.yml: run vigia-slo"
    assert cli.main(["--check"]) == 0


def test_check_fails_on_a_hand_edit(tmp_path: Path) -> None:
    edited = tmp_path / "slo.yml"
    edited.write_text(cli.RULES.read_text(encoding="utf-8").replace("for: 2m", "for: 1m"))
    assert cli.main(["--check", "--rules", str(edited)]) == 1
    assert cli.main(["--rules", str(edited)]) == 0
    assert cli.main(["--check", "--rules", str(edited)]) == 0


def test_the_header_names_the_slo_file_the_rules_came_from(tmp_path: Path) -> None:
    mine = tmp_path / "my-slos.yml"
    mine.write_text(cli.SPEC.read_text(encoding="utf-8"))
    assert cli.generate(cli.SPEC).startswith("# GENERATED from prometheus/slo/slos.yml by")
    assert cli.generate(mine).startswith(f"# GENERATED from {mine} by")


def test_the_defaults_are_the_promises() -> None:
    slos = {s.name: s for s in parse(DOCS)}
    assert {n: (str(s.target), s.window) for n, s in slos.items()} == {
        "ingest-freshness": ("0.99", "28d"),
        "ingest-completeness": ("0.999", "28d"),
    }
    assert 'le=~"1800' in slos["ingest-freshness"].good
    assert 'cohort="live"' in slos["ingest-freshness"].total


def test_every_window_and_pair_is_generated() -> None:
    slos = parse(DOCS)
    rules = [r for g in rule_groups(slos) for r in g["rules"]]
    for slo in slos:
        mine = [r for r in rules if r.get("labels", {}).get("slo") == slo.name]
        recorded = {r["record"] for r in mine if "record" in r}
        assert recorded == {
            *(f"slo:sli_error:ratio_rate{w}" for w in (*WINDOWS, slo.window)),
            "slo:error_budget_remaining:ratio",
        }
        burns = {r["alert"]: r for r in mine if "alert" in r}
        assert set(burns) == {f"{slo.alert_prefix}FastBurn", f"{slo.alert_prefix}SlowBurn"}
        for alert, pairs in (("FastBurn", PAGE), ("SlowBurn", TICKET)):
            expr = burns[slo.alert_prefix + alert]["expr"]
            for p in pairs:
                assert f"ratio_rate{p.long}" in expr and f"ratio_rate{p.short}" in expr
    assert [(p.long, p.short, float(p.factor)) for p in (*PAGE, *TICKET)] == [
        ("1h", "5m", 14.4), ("6h", "30m", 6.0), ("1d", "2h", 3.0), ("3d", "6h", 1.0),
    ]  # fmt: skip


def _slo() -> dict[str, Any]:
    return copy.deepcopy(next(d for d in DOCS if d["kind"] == "SLO"))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("spec", "objectives", 0, "target"), 1.5, "between 0 and 1"),
        (("spec", "timeWindow", 0, "isRolling"), False, "rolling"),
        (("spec", "budgetingMethod"), "Timeslices", "Occurrences"),
        (("spec", "indicator", "spec", "ratioMetric", "counter"), False, "counter"),
        (("metadata", "name"), "Ingest_Freshness", "lower-case"),
        (("metadata", "annotations"), {}, "vigia.dev/up"),
    ],
)
def test_what_cannot_become_rules_is_refused(
    path: tuple[str | int, ...], value: object, message: str
) -> None:
    doc = _slo()
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(SpecError, match=message):
        parse([doc])


def test_duplicate_names_and_foreign_documents_are_refused() -> None:
    with pytest.raises(SpecError, match="distinct"):
        parse([_slo(), _slo()])
    with pytest.raises(SpecError, match="openslo/v1"):
        parse([{**_slo(), "apiVersion": "sloth.slok.dev/v1"}])


def test_an_unreadable_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    missing = tmp_path / "none.yml"
    assert cli.main(["--spec", str(missing), "--rules", str(tmp_path / "out.yml")]) == 2
    assert not (tmp_path / "out.yml").exists()


DRILL = Path(__file__).resolve().parents[1] / "integration" / "slo_drill.yml"


@pytest.mark.parametrize(
    ("base", "window", "expected"),
    [
        ("5m", "28d", "5m"), ("3d", "28d", "3d"), ("2m", "28d", "2m"),
        ("5m", "1d", "11s"), ("30m", "1d", "64s"), ("1h", "1d", "129s"), ("2h", "1d", "257s"),
        ("6h", "1d", "771s"), ("1d", "1d", "3086s"), ("3d", "1d", "9257s"),
        ("2m", "1d", "4s"), ("15m", "1d", "32s"), ("1m", "1d", "2s"),
        ("5m", "56d", "10m"), ("1m", "1h", "1s"), ("1d", "4w", "1d"),
    ],
)  # fmt: skip
def test_windows_scale_with_the_slo_window(base: str, window: str, expected: str) -> None:
    assert scaled(base, window) == expected


def test_a_drill_slo_gets_every_window_and_for_in_proportion() -> None:
    (slo,) = parse(yaml.safe_load_all(DRILL.read_text(encoding="utf-8")))
    assert (slo.window, 'le=~"60' in slo.good) == ("1d", True)
    groups = rule_groups([slo])
    recorded = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    assert recorded == {
        *(f"slo:sli_error:ratio_rate{w}" for w in ("11s", "64s", "129s", "257s", "771s")),
        *(f"slo:sli_error:ratio_rate{w}" for w in ("3086s", "9257s", "1d")),
        "slo:error_budget_remaining:ratio",
    }
    assert groups[1]["interval"] == "2s"
    burns = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    fast, slow = burns["DrillFreshnessFastBurn"], burns["DrillFreshnessSlowBurn"]
    assert (fast["for"], slow["for"]) == ("4s", "32s")
    for window in ("129s", "11s", "771s", "64s"):
        assert f"ratio_rate{window}{{" in fast["expr"]
    for window in ("3086s", "257s", "9257s", "771s"):
        assert f"ratio_rate{window}{{" in slow["expr"]
    assert "14.4× over 129s and 11s" in fast["annotations"]["description"]
