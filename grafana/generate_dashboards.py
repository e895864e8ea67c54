"""Writes Vigía's Grafana boards (grafana/dashboards/*.json) from grafana/generator/.

The JSON files are committed (Grafana provisions them as they are); generator/ is their source: one
module per board, written in generator/panels.py's vocabulary. Edit a board, run
`python grafana/generate_dashboards.py`, commit both. tests/monitoring checks that the committed
JSON equals this script's output and runs every query against a real Prometheus.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from generator import capacity, consumers, hes, ingest, kafka_cluster, promises, topics
from generator.render import render
from vigia.common.logs import setup_logging

OUT_DIR = Path(__file__).resolve().parent / "dashboards"
BOARDS = (
    kafka_cluster.BOARD,
    topics.BOARD,
    consumers.BOARD,
    ingest.BOARD,
    capacity.BOARD,
    hes.BOARD,
    promises.BOARD,
)


def rendered() -> dict[str, str]:
    """File name → JSON text, exactly as committed."""
    return {
        f"{board.uid}.json": json.dumps(render(board), indent=2, ensure_ascii=False) + "\n"
        for board in BOARDS
    }


def main() -> int:
    setup_logging()
    OUT_DIR.mkdir(exist_ok=True)
    for name, text in rendered().items():
        (OUT_DIR / name).write_text(text, encoding="utf-8")
    logging.getLogger("generate_dashboards").info("wrote %d boards to %s", len(BOARDS), OUT_DIR)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
