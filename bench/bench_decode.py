"""The emitter's pure hot path, no servers: pgoutput bytes -> DMS CSV lines.
Prints one JSON object.

    .venv/bin/python bench/bench_decode.py [--changes N]

Decodes N Update messages (with old tuples, as REPLICA IDENTITY FULL sends them) of a
realistic hosts_demo row, builds the DMS rows and encodes them as CSV: the CPU cost per
change the emitter pays before any I/O.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dms_emitter.changes import one_table  # noqa: E402
from dms_emitter.pgoutput import decode  # noqa: E402

COLUMNS = ("id", "url", "name", "since", "location", "response_time", "response_rate")
OID = 16385


def cstring(text: str) -> bytes:
    return text.encode() + b"\0"


def relation() -> bytes:
    out = b"R" + struct.pack(">I", OID) + cstring("public") + cstring("hosts_demo")
    out += b"f" + struct.pack(">h", len(COLUMNS))
    for name in COLUMNS:
        out += b"\x01" + cstring(name) + struct.pack(">Ii", 25, -1)
    return out


def tuple_data(values: tuple[str, ...]) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        raw = v.encode()
        out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def update(i: int) -> bytes:
    values = (str(i), f"https://www.airbnb.com/users/show/{i}", f'Host "{i}", Zoë',
              "2015-03-01", "Lisbon, Portugal", "within an hour", "97%")
    return b"U" + struct.pack(">I", OID) + b"O" + tuple_data(values) + b"N" + tuple_data(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--changes", type=int, default=200_000)
    args = ap.parse_args()
    messages = [relation(), b"B" + struct.pack(">QqI", 100, 0, 1)]
    messages += [update(i) for i in range(args.changes)]
    messages.append(b"C" + struct.pack(">BQQq", 0, 200, 300, 0))

    builder = one_table("public", "hosts_demo", ["id"])  # no WAL positions: stream order
    start = time.perf_counter()
    txn = None
    for message in messages:
        txn = builder.feed(decode(message)) or txn
    seconds = time.perf_counter() - start
    assert txn is not None and len(txn.lines) == args.changes
    print(json.dumps({
        "benchmark": "decode_encode",
        "changes": args.changes,
        "seconds": round(seconds, 3),
        "changes_per_second": round(args.changes / seconds),
        "csv_bytes_per_change": round(sum(map(len, txn.lines)) / args.changes, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
