"""The Lambda's object gate on hostile objects: verdict, seconds to decide, and the gate's
peak memory. Prints one JSON object.

    .venv/bin/python bench/bench_gate.py [--baseline GIT_REF]

Cases (issue 22): a gzip bomb (256 MiB of zeros after a header, ~255 KB compressed); a
truncated `.csv.gz` whose first record is 70 MiB (cut at 557 KB, as written under the
DMS folder); a normal 1 MB DMS CDC file for reference. The gate runs with the pipeline's
limits (lambda_shim/function_env.py) on the object's bytes as S3 would stream them.
Each case is decided twice: once for the time and the RSS high-water delta (VmHWM after,
less VmRSS before, the mark reset first through /proc/self/clear_refs), once under
tracemalloc for the peak of Python allocations. `--baseline` also runs the gate as it
was at GIT_REF (its object_gate.py and gate_*.py, with its defaults) on the same objects.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dms_emitter.dms_csv import encode_line  # noqa: E402
from lambda_shim import object_gate  # noqa: E402
from lambda_shim.function_env import gate_limits  # noqa: E402
from lambda_shim.lambda_function import GATE_LIMITS  # noqa: E402
from pipeline_contract import settings  # noqa: E402

MiB = 1024 * 1024
CHUNK = 1024 * 1024  # what the Lambda asks S3's body for at a time (READ_CHUNK)
HEADER = ["Op", "last_updated_ts", "id", "url", "name", "since", "location", "change_seq"]


def deflate(parts, level: int = 9) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return b"".join(c.compress(p) for p in parts) + c.flush()


def repeat(piece: bytes, total: int):
    block = piece * (MiB // len(piece))
    for at in range(0, total, len(block)):
        yield block[:total - at]


def bomb() -> bytes:
    head = encode_line(HEADER).encode() + b"I,"
    return deflate([head, *repeat(b"\0", 256 * MiB)])


def sparse(total: int, every: int = 360, seed: int = 22):
    """Mostly one letter, a random one every `every` bytes: about 120:1 under gzip -6,
    so 557 KB of the stream inflate to 66 MiB (past the gate's old 64 MiB 'too large to
    check', as the attacker's object did)."""
    rnd = random.Random(seed)
    for _ in range(0, total, MiB):
        block = bytearray(b"x" * MiB)
        for i in range(0, MiB, every):
            block[i] = rnd.randrange(97, 123)
        yield bytes(block)


def huge_first_record() -> bytes:
    head = encode_line(HEADER).encode() + b"I,2026-11-22 10:15:00.123456,1,"
    return deflate([head, *sparse(70 * MiB)], level=6)[:557 * 1000]


def normal(size: int = MiB) -> bytes:
    lines, i = [encode_line(HEADER)], 0
    while sum(map(len, lines)) < size:
        i += 1
        lines.append(encode_line(["U", "2026-11-22 10:15:00.123456", str(i),
                                  f"https://www.airbnb.com/users/show/{i}",
                                  f'Host {i}, "the" best' if i % 3 else "", "2015-03-01",
                                  "Lisbon, Portugal", f"{i:035d}"]))
    return "".join(lines).encode()


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the HWM back to the current RSS
        return True
    except OSError:
        return False


def gate_at(ref: str):
    """object_gate.py as it was at `ref` (with the gate_*.py it imported there), as a
    module of its own: its siblings are imported from the ref's files, as the Lambda
    zip's root holds them, never from this checkout's lambda_shim."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    listed = subprocess.run([*git, "ls-tree", "--name-only", ref, "lambda_shim/"],
                            check=True, capture_output=True, text=True).stdout.split()
    folder = Path(tempfile.mkdtemp(prefix="gate-baseline-"))
    for name in listed:
        if name.endswith(".py") and Path(name).name.startswith(("object_gate", "gate_")):
            source = subprocess.run([*git, "show", f"{ref}:{name}"], check=True,
                                    capture_output=True, text=True).stdout
            (folder / Path(name).name).write_text(source)
    spec = importlib.util.spec_from_file_location("object_gate_baseline",
                                                  folder / "object_gate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    # hidden while it loads, so its `from lambda_shim… import` falls back to the files
    ours = {name: sys.modules.get(name) for name in list(sys.modules)
            if name.split(".")[0] == "lambda_shim"} or {"lambda_shim": None}
    sys.modules.update(dict.fromkeys(ours))
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        for name, loaded in ours.items():
            if loaded is None:
                del sys.modules[name]
            else:
                sys.modules[name] = loaded
    return module


def decide(key: str, data: bytes, limits: object_gate.Limits | None, gate=object_gate):
    chunks = (data[at:at + CHUNK] for at in range(0, len(data), CHUNK))
    if gate is object_gate:
        return object_gate.inspect(key, chunks, object_gate.CsvLayout(), limits)
    return gate.inspect(key, chunks)  # an earlier gate: its own defaults


def case(name: str, key: str, data: bytes, limits: object_gate.Limits | None,
         gate=object_gate) -> dict:
    reset = reset_peak()
    rss_before = status_kb("VmRSS")
    t0 = time.perf_counter()
    verdict = decide(key, data, limits, gate)
    seconds = time.perf_counter() - t0
    hwm_delta = status_kb("VmHWM") - rss_before
    tracemalloc.start()
    decide(key, data, limits, gate)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "case": name, "key": key, "object_bytes": len(data),
        "verdict": "pass" if verdict is None else verdict.describe(),
        "seconds": round(seconds, 4),
        "tracemalloc_peak_mb": round(peak / MiB, 2),
        "rss_hwm_delta_mb": round(hwm_delta / 1024, 1) if reset else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--baseline", metavar="GIT_REF",
                    help="also run the gate as it was at this commit")
    args = ap.parse_args()
    env = gate_limits(settings.load_pipeline().dms)
    limits = object_gate.Limits(**{GATE_LIMITS[k]: v for k, v in env.items()})
    prefix = settings.load_pipeline().bronze_prefix
    inputs = [
        ("gzip bomb 255 KB -> 256 MiB", f"{prefix}/20261122-101500123.csv.gz", bomb()),
        ("truncated .csv.gz, 70 MiB first record", f"{prefix}/20261122-101500124.csv.gz",
         huge_first_record()),
        ("normal 1 MB DMS file", f"{prefix}/20261122-101500125.csv", normal()),
    ]
    baseline = gate_at(args.baseline) if args.baseline else None
    print(json.dumps({
        "benchmark": "object_gate",
        "limits": env,
        "cases": [case(name, key, data, limits) for name, key, data in inputs],
        **({"baseline": {"ref": args.baseline, "cases": [
            case(name, key, data, None, baseline) for name, key, data in inputs]}}
           if baseline else {}),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }, indent=2))


if __name__ == "__main__":
    main()
