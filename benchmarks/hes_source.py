"""The HES leg's costs on a real MariaDB (launcher/mariadb.py): how fast `vigia-simulate --sink
hes` writes, and what the exporter's source watch and the completeness key read cost the HES.

1. write   ``vigia-simulate backfill --sink hes`` for --meters × --days (batched upserts, one
           transaction per period): rows/s, from the manifest's start and finish.
2. watch   the exporter's rounds (`exporter.hes.adapter.HesAdapter.read`): MAX(ts) alone, and
           with the last closed and open day's COUNT(*), --repeat times each: median and worst
           milliseconds, with the plans (EXPLAIN) of both queries.
3. keys    `ingest.hes_source.day_keys` for one full day (what ``completeness --hes-dsn`` reads).

    python benchmarks/hes_source.py                       # 1,000 meters × 2 days = 768,000 rows
    python benchmarks/hes_source.py --meters 10000 --days 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from pathlib import Path

from pymysql.cursors import DictCursor

from tests.conftest import free_port
from vigia.common.hes import parse_dsn
from vigia.exporter.hes.adapter import DAY_ROWS, NEWEST_ROW, HesAdapter
from vigia.ingest.hes_source import day_keys
from vigia.ingest.simulator.cli import main as simulate
from vigia.launcher.mariadb import HesDatabase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meters", type=int, default=1000)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    first = dt.date(2026, 11, 20)
    closed, open_day = first + dt.timedelta(days=args.days - 2), first + dt.timedelta(args.days - 1)

    with (
        tempfile.TemporaryDirectory(prefix="hes-bench-") as tmp,
        HesDatabase(Path(tmp), free_port()) as hes,
    ):
        manifest = Path(tmp) / "manifest.json"
        argv = ["backfill", "--sink", "hes", "--hes-dsn", hes.dsn("writer"), "--metrics-port", "0"]
        argv += ["--meters", str(args.meters), "--days", str(args.days)]
        assert simulate([*argv, "--start-date", str(first), "--manifest", str(manifest)]) == 0
        done = json.loads(manifest.read_text())
        seconds = (
            dt.datetime.fromisoformat(done["finished_at"])
            - dt.datetime.fromisoformat(done["started_at"])
        ).total_seconds()
        rows = done["valid_total"]
        print(f"write: {rows:,} rows in {seconds:.1f} s = {rows / seconds:,.0f} rows/s")

        adapter = HesAdapter(parse_dsn(hes.dsn("reader")), timeout=60)
        for count, what in ((False, "newest ts only"), (True, "newest ts + day counts")):
            timings = []
            for _ in range(args.repeat):
                began = time.perf_counter()
                reading = adapter.read((closed, open_day), count=count)
                timings.append((time.perf_counter() - began) * 1000)
            print(
                f"watch, {what}: median {statistics.median(timings):.1f} ms, "
                f"worst {max(timings):.1f} ms over {args.repeat} rounds"
                + (
                    f"; day rows { ({str(d): n for d, n in reading.day_rows.items()}) }"
                    if count
                    else ""
                )
            )
        adapter.close()
        connection = hes.admin()
        with connection.cursor(DictCursor) as cursor:
            cursor.execute("USE hes")
            for sql, params in ((NEWEST_ROW, None), (DAY_ROWS, ((closed, open_day),))):
                cursor.execute("EXPLAIN " + sql, params)
                for plan in cursor.fetchall():
                    shown = {k: plan[k] for k in ("type", "key", "rows", "Extra")}
                    print(f"explain {sql.split(' FROM')[0]}: {shown}")
        connection.close()

        began = time.perf_counter()
        keys = day_keys(parse_dsn(hes.dsn("reader")), open_day)
        print(f"keys: {keys.num_rows:,} keys of {open_day} in {time.perf_counter() - began:.2f} s")


if __name__ == "__main__":
    main()
