"""Benchmark: a user's repository, from installing cdclab to its first green test, and the
lab's cost per test once it runs. Prints one JSON object.

  install        uv: a fresh virtualenv, this checkout as a wheel with its `pytest` extra
                 (pinned by requirements.lock); warm = uv's cache at $CDCLAB_CACHE/uv, cold
                 (--cold) = a fresh empty uv cache, every package from uv's configured index
  first_green    `pytest -q tests/test_with_the_lab.py::test_source_changes_reach_silver` in
                 a copy of examples/my-pipeline (starts the lab, runs the pipeline, reconciles):
                 the whole command, its phases (stack start, the test, stack stop) and the
                 totals install + command
  per_test       one pytest session of --tests trivial tests (each uses cdclab_lab: SELECT 1 on
                 the source, no job): the first test's setup starts the stack, the others
                 show the per-test overhead. Phases are timed by a conftest plugin written
                 into the copy (pytest's own report durations).

Usage: python bench/bench_user_repo.py [--backend embedded|containers] [--tests 5] [--cold]
The containers backend needs a Docker engine and the image (`make docker-build`); without
them it prints why it was not measured. Nothing under examples/ is changed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

EXAMPLE_TEST = "tests/test_with_the_lab.py::test_source_changes_reach_silver"
TIMINGS_ENV = "BENCH_USER_REPO_TIMINGS"  # where the generated conftest writes its records

CONFTEST = f'''"""Written by bench/bench_user_repo.py: each test phase's duration, as JSON."""
import json
import os

_records = []


def pytest_runtest_logreport(report):
    _records.append({{"test": report.nodeid, "when": report.when,
                     "seconds": report.duration, "outcome": report.outcome}})


def pytest_sessionfinish(session):
    with open(os.environ["{TIMINGS_ENV}"], "w") as out:
        json.dump(_records, out)
'''

TRIVIAL_TESTS = '''"""Written by bench/bench_user_repo.py: trivial tests on the lab, no job."""
import pytest


@pytest.mark.parametrize("n", range({count}))
def test_the_lab_answers(cdclab_lab, cdclab_source, n):
    assert cdclab_lab.backend == "{backend}"
    assert cdclab_source.execute("SELECT 1").fetchone() == (1,)
'''


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, median, min and max of `values` (seconds, to the millisecond)."""
    if not values:
        return {"n": 0, "mean": None, "median": None, "min": None, "max": None}
    return {"n": len(values), "mean": round(statistics.fmean(values), 3),
            "median": round(statistics.median(values), 3),
            "min": round(min(values), 3), "max": round(max(values), 3)}


def per_test_overhead(records: Iterable[Mapping]) -> dict:
    """From pytest's phase reports (run order): the stack start (the first test's setup,
    where the session fixture starts the lab), the first test's seconds, the following
    tests' summary and the stack stop (the last test's teardown, where the session ends).
    A test's seconds are its setup + call + teardown, the last teardown excepted."""
    tests: dict[str, dict[str, float]] = {}
    for record in records:
        if record["outcome"] != "passed":
            raise ValueError(f"test {record['test']!r} {record['when']}: {record['outcome']}")
        tests.setdefault(record["test"], {})[record["when"]] = float(record["seconds"])
    if not tests:
        raise ValueError("no test reported a duration")
    phases = list(tests.values())
    stop = phases[-1].get("teardown", 0.0)
    seconds = [sum(p.values()) for p in phases]
    seconds[-1] -= stop
    return {"tests": len(phases),
            "stack_start_seconds": round(phases[0].get("setup", 0.0), 3),
            "first_test_seconds": round(seconds[0], 3),
            "following": summary(seconds[1:]),
            "stack_stop_seconds": round(stop, 3)}


def say(message: str) -> None:
    print(f"bench_user_repo: {message}", file=sys.stderr, flush=True)


def timed_install(uv: str, venv: Path, uv_cache: Path | None) -> float:
    from tests.resources.installed import clean_env, install

    start = time.monotonic()
    install(uv, venv, clean_env(uv_cache))
    return round(time.monotonic() - start, 1)


def run_pytest(venv: Path, repo: Path, backend: str, args: Sequence[str],
               env: Mapping[str, str] | None = None) -> float:
    from tests.resources.installed import clean_env

    full_env = {**clean_env(), **(env or {})}
    if backend == "containers":
        full_env["TESTCONTAINERS_RYUK_DISABLED"] = "true"  # as the integration test runs it
    start = time.monotonic()
    done = subprocess.run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider",
                           f"--cdclab-backend={backend}", *args],
                          cwd=repo, env=full_env, capture_output=True, text=True, timeout=1800)
    seconds = round(time.monotonic() - start, 1)
    if done.returncode != 0:
        raise RuntimeError(f"pytest {' '.join(args)} in {repo} exited {done.returncode}:\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return seconds


def measure(args: argparse.Namespace, uv: str, folder: Path) -> dict:
    from tests.resources.installed import ROOT

    result: dict = {"install": {}}
    say("installing into a fresh virtualenv (warm uv cache)")
    venv = folder / "venv-warm"
    result["install"]["warm_seconds"] = timed_install(uv, venv, None)
    if args.cold:
        say("installing into a fresh virtualenv (empty uv cache: downloads)")
        cold_cache = folder / "uv-cache-cold"
        try:
            result["install"]["cold_seconds"] = timed_install(uv, folder / "venv-cold",
                                                              cold_cache)
            venv = folder / "venv-cold"  # the first test then runs on what a newcomer has
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            result["install"]["cold_seconds"] = None
            result["install"]["cold_not_measured"] = str(error)[-1500:]
        shutil.rmtree(cold_cache, ignore_errors=True)
    else:
        result["install"]["cold_seconds"] = None
        result["install"]["cold_not_measured"] = "not asked (--cold downloads every package)"

    repo = folder / "my-pipeline"
    shutil.copytree(ROOT / "examples" / "my-pipeline", repo)
    (repo / "tests" / "conftest.py").write_text(CONFTEST)  # the copy's: examples/ unchanged
    timings = folder / "timings.json"
    say(f"pytest {EXAMPLE_TEST} ({args.backend})")
    first = run_pytest(venv, repo, args.backend, [EXAMPLE_TEST], {TIMINGS_ENV: str(timings)})
    phases = per_test_overhead(json.loads(timings.read_text()))
    install = result["install"]
    result["first_green"] = {
        "test": EXAMPLE_TEST, "pytest_seconds": first,
        "stack_start_seconds": phases["stack_start_seconds"],
        "test_call_seconds": round(phases["first_test_seconds"]
                                   - phases["stack_start_seconds"], 3),
        "stack_stop_seconds": phases["stack_stop_seconds"],
        "total_warm_seconds": round(install["warm_seconds"] + first, 1),
        "total_cold_seconds": (round(install["cold_seconds"] + first, 1)
                               if install["cold_seconds"] is not None else None)}

    (repo / "tests" / "test_bench_overhead.py").write_text(
        TRIVIAL_TESTS.format(count=args.tests, backend=args.backend))
    say(f"one session of {args.tests} trivial tests on the lab")
    session = run_pytest(venv, repo, args.backend, ["tests/test_bench_overhead.py"],
                         {TIMINGS_ENV: str(timings)})
    result["per_test"] = {**per_test_overhead(json.loads(timings.read_text())),
                          "pytest_seconds": session}
    return result


def at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"--tests {value}: at least 2 (a first and the rest)")
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("embedded", "containers"), default="embedded")
    ap.add_argument("--tests", type=at_least_two, default=5,
                    help="trivial tests in the per-test session (default 5)")
    ap.add_argument("--cold", action="store_true",
                    help="also install with an empty uv cache (downloads every package)")
    args = ap.parse_args()

    from cdclab.private_stack import docker_problem, temp_state_dir
    from tests.resources.installed import find_uv

    result: dict = {"backend": args.backend, "cpus": os.cpu_count(),
                    "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    problem = "uv not found (scripts/bootstrap.sh installs it into .venv)" \
        if find_uv() is None else None
    if args.backend == "containers" and problem is None:
        problem = docker_problem()
    if problem:
        print(json.dumps({**result, "not_measured": problem}, indent=2))
        return 0
    # a folder others may traverse: as root, the embedded PostgreSQL runs as another user
    # from the binary the virtualenv holds
    with temp_state_dir("bench-user-repo") as folder:
        result.update(measure(args, find_uv(), folder))
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
