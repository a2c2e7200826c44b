"""Where a job's code may come from: only where the administrator put it. Pure: no I/O.

Code reaches a run through Command.ScriptLocation and the special parameters that fetch or
run code (CODE_ARGUMENTS, from glue_local.run_args and Glue's special parameters page:
https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-glue-arguments.html).
Every location among them must be an s3:// object in the stack's scripts bucket, outside
the keys another client may write there (the watcher's and the jobs' MinIO policies let
them write backlog markers and temp/), or a local path or file:// URI, which only the
administrator may register (CreateJob/UpdateJob, or its own StartJobRun): locally a run
executes on this machine with the Glue API's user, so a path is as good as a shell.
Other clients may not set any code-bearing argument in a run at all (stricter than AWS,
where a run executes in AWS's isolated workers as the job's role; see
docs/glue-fidelity.md). A refusal is InvalidInputException naming the argument, the value
and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from glue_local import run_args
from glue_local.errors import invalid_input

SCRIPT_LOCATION = "--scriptLocation"  # Glue: "overrides a script location set in JobCommand"
# argument -> what it brings
CODE_ARGUMENTS: dict[str, str] = {
    SCRIPT_LOCATION: "the script the run executes",
    run_args.EXTRA_PY_FILES: "Python files put on the run's path",
    run_args.EXTRA_FILES: "files copied beside the script",
    run_args.EXTRA_JARS: "jars loaded into the shared Spark driver",
    run_args.PYTHON_MODULES: "modules pip installs and the run imports",
    run_args.PYTHON_MODULES_OPTIONS: "pip's options (an index, a requirements file)",
    run_args.CONF: "Spark settings, which name classes and programs the driver loads or runs",
}
# arguments whose value is one location or a comma-separated list of them
LOCATION_ARGUMENTS = (SCRIPT_LOCATION, run_args.EXTRA_PY_FILES, run_args.EXTRA_FILES,
                      run_args.EXTRA_JARS)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class CodePlaces:
    """The scripts bucket, and the IAM resource patterns (arn:aws:s3:::bucket/key*) of the
    objects clients other than the administrator may write."""

    scripts_bucket: str
    others_write: tuple[str, ...] = ()


def _iam_match(pattern: str, arn: str) -> bool:
    """IAM's resource wildcards: '*' any characters ('/' too), '?' one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, arn, re.DOTALL) is not None


def location_problem(location: str, places: CodePlaces, local_ok: bool) -> str | None:
    """Why code may not come from `location`, or None."""
    scheme = _SCHEME.match(location)
    allowed = (f"an object in the scripts bucket (s3://{places.scripts_bucket}/...)"
               + (" or a local path" if local_ok else ""))
    if scheme is None or scheme[1] == "file":
        if local_ok:
            return None
        return f"a local path is allowed only from the administrator; allowed: {allowed}"
    if scheme[1] != "s3":
        return f"{scheme[1]}:// locations are not allowed; allowed: {allowed}"
    bucket, _, key = location[len("s3://"):].partition("/")
    if bucket != places.scripts_bucket:
        return f"bucket {bucket!r} is not the scripts bucket; allowed: {allowed}"
    if not key or key.endswith("/"):
        return f"it names no object; allowed: {allowed}"
    arn = f"arn:aws:s3:::{bucket}/{key}"
    for pattern in places.others_write:
        if _iam_match(pattern, arn):
            return (f"other clients may write there ({pattern.removeprefix('arn:aws:s3:::')}"
                    f"); allowed: {allowed}, outside what other clients may write")
    return None


def _locations(name: str, value: str) -> Iterable[str]:
    if name == run_args.PYTHON_MODULES:  # pip requirements; wheels in S3 are fetched first
        return [r for r in run_args.csv_list(value) if r.startswith("s3://")]
    return run_args.csv_list(value)


def check_arguments(args: Mapping[str, object] | None, what: str, places: CodePlaces,
                    admin: bool) -> None:
    """`what` ('DefaultArguments', 'StartJobRun Arguments', ...) as `admin` or not sets
    them: InvalidInputException for the first argument that may not bring its code."""
    for name, value in (args or {}).items():
        if name not in CODE_ARGUMENTS:
            continue
        if not admin:
            raise invalid_input(
                f"{what}: {name} brings code ({CODE_ARGUMENTS[name]}); only the administrator "
                "may set it for a run (the job's own value applies): locally a run executes "
                "on this machine, so no other client chooses its code")
        if name in LOCATION_ARGUMENTS or name == run_args.PYTHON_MODULES:
            for location in _locations(name, str(value)):
                problem = location_problem(location, places, local_ok=True)
                if problem:
                    raise invalid_input(f"{what}: {name} {location[:300]!r}: {problem}")


def check_job(job: Mapping, what: str, places: CodePlaces) -> None:
    """A job definition (CreateJob, UpdateJob's JobUpdate, a stored job being started):
    its script and its arguments' code come from where the administrator put them."""
    script = (job.get("Command") or {}).get("ScriptLocation")
    if isinstance(script, str):
        problem = location_problem(script, places, local_ok=True)
        if problem:
            raise invalid_input(f"{what}: Command.ScriptLocation {script[:300]!r}: {problem}")
    for field in ("DefaultArguments", "NonOverridableArguments"):
        check_arguments(job.get(field), f"{what}: {field}", places, admin=True)
