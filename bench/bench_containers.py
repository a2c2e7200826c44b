"""Benchmark: the compose stack against the embedded one, in the same run. Prints JSON.

  build_seconds            scripts/docker-build.sh (cold or warm: `layer_cache` says which)
  first_up_seconds         `up -d --wait` on fresh volumes (credentials, init, full load)
  warm_up_seconds          `stop`, then plain `docker compose up -d --wait` again, as the
                           README says (no wrapper, none of the lab's variables; the
                           engine reaches no registry here): target <= 30 s
  image_bytes              cdclab/runtime and the tagged build stages (target <= 2.5 GB)
  idle_memory_mib          sum of `docker stats` over the stack once idle (target <= 3 GiB)
  commit_to_silver         p50/p95 of the same demo workload, compose vs embedded

Usage: python bench/bench_containers.py [--duration 15] [--rate 40]
Needs a Docker engine and the image's base images (`make docker-setup`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline_contract import settings  # noqa: E402
from tests.resources.stack_dirs import temp_state_dir  # noqa: E402

ROOT = settings.REPO_ROOT
COMPOSE = ["bash", str(ROOT / "scripts" / "compose.sh")]
PROJECT = "cdclab-bench"
LATENCY = re.compile(r"commit→silver\s+p50 ([\d.]+)s, p95 ([\d.]+)s")


def say(msg: str) -> None:
    print(f"bench_containers: {msg}", file=sys.stderr, flush=True)


def compose(*args: str, env: dict | None = None, timeout: float = 1800,
            command: tuple[str, ...] = tuple(COMPOSE)) -> str:
    done = subprocess.run([*command, "--project-name", PROJECT, *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"docker compose {' '.join(args)}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def plain_compose(*args: str) -> str:
    """`docker compose` as a user types it: none of compose.sh's variables (base images,
    build network, DOCKER_BUILDKIT), none of the lab's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CDCLAB_", "DOCKER_BUILDKIT"))}
    return compose(*args, env=env, timeout=600, command=("docker", "compose"))


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return round(time.monotonic() - start, 1), result


def image_bytes() -> dict[str, int]:
    out = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"],
                         capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        name, image_id = line.split()
        if name.startswith(("cdclab/runtime", "cdclab/build-stage")):
            size = subprocess.run(["docker", "image", "inspect", image_id, "--format",
                                   "{{.Size}}"], capture_output=True, text=True, check=True)
            sizes[name] = int(size.stdout.strip())
    return sizes


def idle_memory_mib() -> dict[str, float]:
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}"],
        capture_output=True, text=True, check=True).stdout
    units = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
    usage = {}
    for line in out.splitlines():
        name, used = line.split()[0], line.split()[1]
        if name.startswith(PROJECT):
            number, unit = re.match(r"([\d.]+)(\w+)", used).groups()
            usage[name.removeprefix(PROJECT + "-")] = round(float(number) * units[unit], 1)
    return usage


def latency(text: str) -> dict:
    found = LATENCY.search(text)
    equal = "silver EQUALS source" in text
    return {"p50": float(found[1]), "p95": float(found[2]), "equal": equal} if found else {
        "equal": equal}


def embedded_demo(args: argparse.Namespace) -> dict:
    with temp_state_dir("bench-containers") as state:
        env = {**os.environ, settings.ENV_STATE_DIR: str(state), settings.ENV_RUNTIME: "embedded"}
        done = subprocess.run(
            [sys.executable, "-m", "cdclab.cli", "demo", "--rows", "5000", "--duration",
             str(args.duration), "--rate", str(args.rate), "--stop"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        return latency(done.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--rate", type=float, default=40.0)
    args = ap.parse_args()
    had_cache = subprocess.run(["docker", "image", "inspect", "cdclab/build-stage:minio"],
                               capture_output=True).returncode == 0
    result: dict = {"benchmark": "containers", "params": vars(args)}
    try:
        say("building the image")
        result["build_seconds"], _ = timed(subprocess.run, ["bash", "scripts/docker-build.sh"],
                                           cwd=ROOT, check=True, capture_output=True)
        result["layer_cache"] = "warm" if had_cache else "cold"
        say("first up (fresh volumes)")
        result["first_up_seconds"], _ = timed(compose, "up", "-d", "--wait")
        compose("stop")
        say("warm up")
        result["warm_up_seconds"], _ = timed(plain_compose, "up", "-d", "--wait")
        result["warm_up_command"] = "docker compose up -d --wait"
        say("demo workload on compose")
        text = compose("run", "--rm", "cli", "demo", "--duration", str(args.duration),
                       "--rate", str(args.rate))
        compose_latency = latency(text)
        time.sleep(20)  # idle: no workload, the watcher and the warm Spark driver waiting
        result["idle_memory_mib"] = idle_memory_mib()
        result["idle_memory_mib_total"] = round(sum(result["idle_memory_mib"].values()), 1)
    finally:
        compose("--profile", "cli", "down", "-v", "--remove-orphans", timeout=600)
    say("the same demo on the embedded stack")
    result["commit_to_silver_seconds"] = {"compose": compose_latency,
                                          "embedded": embedded_demo(args)}
    sizes = image_bytes()
    result["image_bytes"] = sizes
    result["runtime_image_gb"] = round(sizes.get("cdclab/runtime:0.1.0", 0) / 1e9, 2)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
