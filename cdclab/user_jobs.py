"""Bring your own Glue script: `cdclab job add` / `cdclab job run`.

A job is registered the way one deploys it to AWS: the script is uploaded to the scripts
bucket (`s3://<scripts bucket>/jobs/<name>.py`, which the local Glue runner reads like
Glue does) and CreateJob/UpdateJob gets the lab's Glue 5 job settings — `--datalake-formats
iceberg`, the Iceberg `--conf` for the Glue Data Catalog (the local runner points it at
the REST catalog), `--TempDir` — plus the user's own `--key value` arguments. The same
definition works on AWS once the script is there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pipeline_contract import settings
from pipeline_contract.job_config import job_definition, user_job_arguments

JOB_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")  # Glue: 1-255 chars, single line
FINAL_STATES = ("SUCCEEDED", "FAILED", "ERROR", "TIMEOUT", "STOPPED")


class JobArgumentError(ValueError):
    pass


# --- pure -----------------------------------------------------------------------------
def job_name_for(script: Path, name: str | None) -> str:
    chosen = name or script.stem
    if not JOB_NAME.match(chosen):
        raise JobArgumentError(f"job name {chosen!r}: use 1-255 letters, digits, _ . -")
    return chosen


def parse_arguments(pairs: Sequence[str]) -> dict[str, str]:
    """`key=value` pairs from the command line -> Glue job arguments (`--key`)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().removeprefix("--")
        if not sep or not key:
            raise JobArgumentError(f"--arg {pair!r}: expected key=value")
        out[f"--{key}"] = value
    return out


def script_key(name: str) -> str:
    return f"jobs/{name}.py"


def user_job_definition(p: settings.PipelineSettings, script_uri: str,
                        arguments: Mapping[str, str], role: str) -> dict:
    """CreateJob/UpdateJob fields: the lab's Glue 5 settings, the user's arguments on top."""
    return job_definition(p.glue_job, role=role, script_location=script_uri,
                          arguments=user_job_arguments(p, arguments), run_limits=False)


# --- I/O ------------------------------------------------------------------------------
def add_job(env: Mapping[str, str], p: settings.PipelineSettings, script: Path, name: str | None,
            arguments: Mapping[str, str], progress: Callable[[str], None],
            trigger: bool = False) -> str:
    """Upload the script and create or update its job; `trigger`: tag it so the watcher
    starts it for every batch of new bronze objects, like the pipeline's job."""
    from cdclab.services.glue_api import LOCAL_ROLE, glue_client
    from cdclab.services.minio import s3_client

    if not script.is_file():
        raise JobArgumentError(f"{script}: no such script")
    name = job_name_for(script, name)
    key = script_key(name)
    s3_client(dict(env)).upload_file(str(script), p.lake.scripts_bucket, key)
    uri = f"s3://{p.lake.scripts_bucket}/{key}"
    progress(f"uploaded {script} to {uri}")
    glue = glue_client(env)
    definition = user_job_definition(p, uri, arguments, LOCAL_ROLE)
    tags = {settings.TRIGGER_TAG: settings.TRIGGER_ON_BRONZE}
    try:
        glue.get_job(JobName=name)
    except glue.exceptions.EntityNotFoundException:
        glue.create_job(Name=name, **definition, **({"Tags": tags} if trigger else {}))
        progress(f"job {name} created")
    else:
        glue.update_job(JobUpdate=definition, JobName=name)
        arn = job_arn(env, name)
        if trigger:
            glue.tag_resource(ResourceArn=arn, TagsToAdd=tags)
        else:
            glue.untag_resource(ResourceArn=arn, TagsToRemove=list(tags))
        progress(f"job {name} updated")
    if trigger:
        progress(f"job {name} runs for every batch of new bronze objects (tag "
                 f"{settings.TRIGGER_TAG}={settings.TRIGGER_ON_BRONZE})")
    return name


def job_arn(env: Mapping[str, str], name: str) -> str:
    region = env.get(settings.ENV_REGION, settings.DEFAULT_REGION)
    return f"arn:aws:glue:{region}:{settings.LOCAL_ACCOUNT}:job/{name}"


def run_job(env: Mapping[str, str], name: str, arguments: Mapping[str, str],
            progress: Callable[[str], None], wait: bool = True,
            timeout: float = 3600.0) -> dict:
    from cdclab.services.glue_api import glue_client

    glue = glue_client(env)
    run_id = glue.start_job_run(JobName=name, Arguments=dict(arguments))["JobRunId"]
    progress(f"job {name}: run {run_id} started")
    deadline, last = time.monotonic() + timeout, None
    while True:
        run = glue.get_job_run(JobName=name, RunId=run_id)["JobRun"]
        state = run["JobRunState"]
        if state != last:
            progress(f"job {name}: run {run_id} {state}")
            last = state
        if not wait or state in FINAL_STATES:
            return run
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {name} run {run_id} still {state} after {timeout:.0f}s")
        time.sleep(1.0)
