"""End-to-end: commit-to-silver latency and Glue run cost on a fresh embedded stack.
Prints one JSON object.

    .venv/bin/python bench/bench_pipeline.py [--rows N] [--duration S] [--rate TPS]

It runs `cdclab demo` in a temporary state dir (full load merged first, then a live
workload at the given rate), then reports the latency of every applied CDC change
(source commit -> visible in silver), and the duration of each warm Glue run by phase.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
from pathlib import Path

from pipeline_contract.settings import load_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=20.0)
    args = ap.parse_args()

    with temp_state_dir("bench-pipeline") as state:
        os.environ[settings.ENV_STATE_DIR] = str(state)
        code, result = run(args, state)
    print(json.dumps(result, indent=2))
    sys.exit(code)


def run(args: argparse.Namespace, state: Path) -> tuple[int, dict]:
    from cdclab.demo import run_demo, run_metrics
    from cdclab.runtime import EmbeddedRuntime

    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log):
            code = run_demo(EmbeddedRuntime(load_pipeline()), rows=args.rows,
                            duration=args.duration,
                            rate=args.rate, fresh=False, keep_running=False,
                            progress=lambda m: print(m))
    except BaseException:
        sys.stderr.write(log.getvalue())
        raise
    summary = json.loads((state / "demo-summary.json").read_text())
    metrics = run_metrics(settings.glue_run_logs(state))
    warm = [m for m in metrics[1:] if m.get("files")]  # the first run pays the cold start
    phase_names = sorted({k for m in warm for k in m.get("phase_seconds", {})})
    return code, {
        "benchmark": "pipeline",
        "params": vars(args),
        "silver_equals_source": summary["equal"],
        "commit_to_silver_seconds": summary["commit_to_silver_seconds"],
        "glue_runs": len(metrics),
        "warm_run_seconds": {
            "median_total": round(statistics.median(
                sum(m["phase_seconds"].values()) for m in warm), 2) if warm else None,
            "median_by_phase": {  # phases that ran in more than one warm run
                name: round(statistics.median(
                    m["phase_seconds"][name] for m in warm if name in m["phase_seconds"]), 2)
                for name in phase_names if sum(name in m["phase_seconds"] for m in warm) > 1
            },
        },
        "timings_seconds": summary["timings_seconds"],
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    main()
