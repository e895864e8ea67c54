"""Grafana's JSON model of a board: panel ids, places on the grid, targets and variables."""

from __future__ import annotations

from typing import Any

from generator.labels import Variable
from generator.panels import Board, Panel, Query, Steps

DATASOURCE = {"type": "prometheus", "uid": "vigia-prometheus"}
GRID_WIDTH = 24


def render(board: Board) -> dict[str, Any]:
    """Rows one under the other; a row's panels left to right, wrapping at the grid's width."""
    panels: list[dict[str, Any]] = []
    panel_id, y = 1, 0
    for row in board.rows:
        panels.append(
            {
                "id": panel_id,
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": y},
                "panels": [],
            }
        )
        panel_id, y = panel_id + 1, y + 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > GRID_WIDTH:
                x, y, line_height = 0, y + line_height, 0
            panels.append(_panel(panel, panel_id, x, y))
            panel_id += 1
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return {
        "uid": board.uid,
        "title": board.title,
        "description": board.description,
        "tags": ["vigia", "kafka"],
        "timezone": "browser",
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "links": [
            {
                "type": "dashboards",
                "tags": ["vigia"],
                "asDropdown": False,
                "includeVars": True,
                "keepTime": True,
                "title": "Vigía boards",
            }
        ],
        "annotations": {"list": []},
        "templating": {"list": [_variable(v) for v in board.variables]},
        "panels": panels,
    }


def _panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": {
            "defaults": {
                "unit": panel.unit,
                "custom": panel.custom,
                "mappings": panel.mappings,
                "thresholds": _thresholds(panel.thresholds),
                "color": {"mode": "thresholds" if panel.thresholds else "palette-classic"},
            },
            "overrides": [],
        },
        "options": panel.options,
        "targets": [_target(query, chr(ord("A") + i)) for i, query in enumerate(panel.queries)],
        "transformations": panel.transformations,
    }


def _thresholds(steps: Steps) -> dict[str, Any]:
    return {
        "mode": "absolute",
        "steps": [{"color": "green", "value": None}]
        + [{"color": colour, "value": value} for value, colour in steps],
    }


def _target(query: Query, ref: str) -> dict[str, Any]:
    target: dict[str, Any] = {
        "datasource": DATASOURCE,
        "refId": ref,
        "expr": query.expr,
        "legendFormat": query.legend or "__auto",
        "range": not query.instant,
        "instant": query.instant,
    }
    if query.table:
        target["format"] = "table"
    return target


def _variable(var: Variable) -> dict[str, Any]:
    return {
        "name": var.name,
        "label": var.label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": var.query, "refId": f"{var.name}-values"},
        "definition": var.query,
        "refresh": 2,
        "sort": 1,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0,
    }
