"""`cdclab replay` of a DMS folder of a million rows, on a fresh embedded stack. Prints JSON.

    .venv/bin/python bench/bench_replay.py [--rows 1000000] [--changes 200000]

The folder is written here as DMS writes a full load and CDC (no header, Op on full-load
rows, a commit timestamp, $AR_H_CHANGE_SEQ last; full-load files of 250,000 rows, CDC
files gzip-compressed), the table described by a DDL file. Reported: rows read per second
over the whole replay (listing, copy, catalog, every Glue run), the replay process's peak
RSS (it streams files: bounded by neither the file nor the folder size), the runs, and
whether silver holds exactly the rows the generator's own model says (count and checksum).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402

DDL = ("CREATE TABLE events (id bigint PRIMARY KEY, account integer, amount numeric(12,2), "
       "note text, at timestamp);")
# the CLI in a process that reports its own peak RSS as it exits
MEASURED = ("import atexit, resource, sys\n"
            "atexit.register(lambda: print('PEAK_RSS_KB', resource.getrusage("
            "resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))\n"
            "from cdclab.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
LOAD_ROWS_PER_FILE = 250_000
CDC_ROWS_PER_FILE = 10_000


def seq(n: int) -> str:
    return f"{20260101000000000000000000000000000 + n:035d}"


def write_folder(root: Path, rows: int, changes: int, rng: random.Random) -> dict:
    """The DMS files and the generator's own final state (count, sum of amounts)."""
    table = root / "public" / "events"
    table.mkdir(parents=True)
    state: dict[int, int] = {}  # id -> amount in cents
    ts = "2026-01-01 00:00:00.000000"
    for f in range(0, rows, LOAD_ROWS_PER_FILE):
        with (table / f"LOAD{f // LOAD_ROWS_PER_FILE + 1:08d}.csv").open("w") as out:
            for i in range(f + 1, min(rows, f + LOAD_ROWS_PER_FILE) + 1):
                cents = rng.randrange(1, 10**7)
                state[i] = cents
                out.write(f"I,{ts},{i},{i % 977},{cents / 100:.2f},note {i},{ts},\n")
    next_id, n = rows + 1, 0
    for f in range(0, changes, CDC_ROWS_PER_FILE):
        lines = []
        for _ in range(min(CDC_ROWS_PER_FILE, changes - f)):
            n += 1
            op = rng.choice("IUUD")
            if op == "I" or not state:
                key, op = next_id, "I"
                next_id += 1
            else:
                key = rng.randrange(1, next_id)
                if key not in state:
                    key, op = next_id, "I"
                    next_id += 1
            at = f"2026-01-02 00:{n // 60000 % 60:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}000"
            if op == "D":
                del state[key]
                lines.append(f"D,{at},{key},,,,,{seq(n)}\n")
                continue
            cents = rng.randrange(1, 10**7)
            state[key] = cents
            lines.append(f"{op},{at},{key},{key % 977},{cents / 100:.2f},\"n, {n}\",{at},"
                         f"{seq(n)}\n")
        name = f"20260102-{f // CDC_ROWS_PER_FILE:06d}000.csv.gz"
        (table / name).write_bytes(gzip.compress("".join(lines).encode(), compresslevel=1))
    return {"rows": len(state), "amount_cents": sum(state.values())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--changes", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    from cdclab.reconcile import silver_catalog
    from cdclab.setup import setup_lake
    from cdclab.supervisor import INFRA, Stack

    with temp_state_dir("bench-replay") as state:
        os.environ[settings.ENV_STATE_DIR] = str(state)
        folder = state / "dms-folder"
        t0 = time.monotonic()
        want = write_folder(folder, args.rows, args.changes, random.Random(args.seed))
        written = time.monotonic() - t0
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        (state / "events.sql").write_text(DDL)
        (state / "endpoint.json").write_text(json.dumps(
            {"IncludeOpForFullLoad": True, "TimestampColumnName": "ts"}))
        stack = Stack(state, pipeline=load_pipeline())
        try:
            stack.up(INFRA)
            env = stack.env()
            setup_lake(env, load_pipeline())
            print(f"replaying {args.rows} rows + {args.changes} changes ({size} bytes)",
                  file=sys.stderr, flush=True)
            t0 = time.monotonic()
            cli = ["replay", str(folder), "--name", "bench", "--ddl", str(state / "events.sql"),
                   "--endpoint-settings", str(state / "endpoint.json"),
                   "--change-seq-column", "seq", "--json"]
            done = subprocess.run([sys.executable, "-c", MEASURED, *cli], env={**os.environ},
                                  capture_output=True, text=True)
            seconds = time.monotonic() - t0
            peak_kb = next((int(line.split()[1]) for line in done.stderr.splitlines()
                            if line.startswith("PEAK_RSS_KB ")), 0)
            report = json.loads(done.stdout) if done.stdout.strip() else {}
            table = silver_catalog(env).load_table("replay_bench.events_silver")
            silver = table.scan(selected_fields=("id", "amount")).to_arrow()
            got = {"rows": silver.num_rows,
                   "amount_cents": int(sum(a * 100 for a in silver.column("amount")
                                           .to_pylist() if a is not None))}
        finally:
            stack.down()
    read = sum(t["rows_read"] for t in report.get("tables", {}).values())
    print(json.dumps({
        "benchmark": "replay",
        "params": {"rows": args.rows, "changes": args.changes, "seed": args.seed},
        "cpus": os.cpu_count(),
        "folder_bytes": size, "folder_write_seconds": round(written, 1),
        "replay_seconds": round(seconds, 1),
        "rows_read": read,
        "rows_per_second": round(read / seconds) if seconds else None,
        "replay_peak_rss_mb": round(peak_kb / 1024, 1),
        "runs": len(report.get("runs", [])),
        "quarantined": sum(t["quarantined"] for t in report.get("tables", {}).values()),
        "silver_equals_generator": got == want, "silver": got, "generator": want,
        "exit_code": done.returncode,
    }, indent=1))
    return 0 if done.returncode == 0 and got == want else 1


if __name__ == "__main__":
    raise SystemExit(main())
