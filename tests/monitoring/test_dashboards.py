"""Board JSON sanity: generated, unique ids, a datasource everywhere, variables defined, layout."""

from __future__ import annotations

import importlib
import re

import pytest
import yaml

from tests.monitoring import boards

GRAFANA = boards.REPO / "grafana"
DATASOURCE_UID = "vigia-prometheus"
EXPECTED_BOARDS = {"vigia-kafka-cluster", "vigia-topics", "vigia-consumers", "vigia-ingest",
                   "vigia-capacity", "vigia-hes", "vigia-promises"}  # fmt: skip
EXPECTED_VARIABLES = {
    "vigia-kafka-cluster": {"cluster", "broker", "topic"},
    "vigia-topics": {"cluster", "topic", "broker"},
    "vigia-consumers": {"cluster", "group", "topic"},
    "vigia-ingest": {"cluster", "query"},
    "vigia-capacity": {"cluster", "broker"},
    "vigia-hes": {"cluster", "connector"},
    "vigia-promises": {"cluster"},
}


def test_committed_boards_are_the_generators_output(monkeypatch: pytest.MonkeyPatch) -> None:
    # The script imports its generator/ package from beside it, as `python grafana/…` runs it.
    monkeypatch.syspath_prepend(GRAFANA)
    expected = importlib.import_module("generate_dashboards").rendered()
    committed = {p.name: p.read_text(encoding="utf-8") for p in boards.DASHBOARDS.glob("*.json")}
    assert sorted(committed) == sorted(expected)
    for name, text in expected.items():
        assert committed[name] == text, f"{name} differs: run python grafana/generate_dashboards.py"


def test_provisioning_points_at_the_boards_and_the_fixed_datasource() -> None:
    datasources = yaml.safe_load((GRAFANA / "provisioning/datasources/prometheus.yml").read_text())
    (source,) = datasources["datasources"]
    assert (source["uid"], source["type"], source["url"]) == (
        DATASOURCE_UID, "prometheus", "http://prometheus:9090",
    )  # fmt: skip
    providers = yaml.safe_load((GRAFANA / "provisioning/dashboards/vigia.yml").read_text())
    (provider,) = providers["providers"]
    assert provider["type"] == "file" and provider["folder"] == "Vigía"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


def test_uids_titles_and_panel_ids_are_unique() -> None:
    loaded = boards.load()
    assert set(loaded) == EXPECTED_BOARDS
    assert {b["uid"] for b in loaded.values()} == set(loaded)  # file name = uid
    titles = [b["title"] for b in loaded.values()]
    assert len(titles) == len(set(titles))
    for uid, board in loaded.items():
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), uid
        assert all(isinstance(i, int) and i > 0 for i in ids), uid


@pytest.mark.parametrize("uid", sorted(EXPECTED_BOARDS))
def test_every_panel_and_target_has_the_datasource_and_a_query(uid: str) -> None:
    board = boards.load()[uid]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert panels
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": DATASOURCE_UID}, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": DATASOURCE_UID}
            assert target["expr"].strip(), panel["title"]


@pytest.mark.parametrize("uid", sorted(EXPECTED_BOARDS))
def test_variables_are_defined_used_and_resolvable(uid: str) -> None:
    board = boards.load()[uid]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert set(variables) == EXPECTED_VARIABLES[uid]
    order = list(variables)
    for name, var in variables.items():
        assert var["datasource"]["uid"] == DATASOURCE_UID
        assert re.fullmatch(r"label_values\(.+, \w+\)", var["query"]["query"]), var["query"]
        # A variable may only depend on variables defined before it.
        for used in boards.VARIABLE.findall(var["query"]["query"]):
            assert (used[0] or used[1]) in order[: order.index(name)], (name, used)
    exprs = " ".join(t["expr"] for p in board["panels"] for t in p.get("targets", []))
    used = {a or b for a, b in boards.VARIABLE.findall(exprs)} - set(boards.BUILTINS)
    assert used <= set(variables), used - set(variables)
    assert set(variables) <= used | {"cluster"}, set(variables) - used  # every variable filters


@pytest.mark.parametrize("uid", sorted(EXPECTED_BOARDS))
def test_panels_fit_the_grid_without_overlapping(uid: str) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in boards.load()[uid]["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, panel["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]
