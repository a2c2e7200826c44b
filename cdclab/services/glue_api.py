"""The local Glue API's client side, as the conductor uses it: a boto3 client, the run
metrics, and the pipeline job's registration. Its launcher is glue_local.launcher."""

from __future__ import annotations

from collections.abc import Mapping

from glue_local.launcher import glue_call
from pipeline_contract import settings
from pipeline_contract.job_config import glue_default_arguments, job_definition

__all__ = ["LOCAL_ROLE", "glue_call", "glue_client", "job_run_metrics",
           "pipeline_job_definition", "register_job"]

LOCAL_ROLE = "arn:aws:iam::000000000000:role/cdclab-glue-local"


def glue_client(env: Mapping[str, str]):
    """A boto3 Glue client of the lab's Glue API, with the keys `env` carries."""
    import boto3

    return boto3.client(
        "glue",
        endpoint_url=env[settings.ENV_GLUE_ENDPOINT],
        region_name=env.get(settings.ENV_REGION, settings.DEFAULT_REGION),
        aws_access_key_id=env[settings.ENV_ACCESS_KEY],
        aws_secret_access_key=env[settings.ENV_SECRET_KEY],
    )


def job_run_metrics(endpoint: str, job_name: str, run_id: str,
                    env: Mapping[str, str] | None = None) -> dict | None:
    """The run's CDCLAB_METRICS payload, as the local GetJobRun exposes it."""
    run = glue_call(endpoint, "GetJobRun", {"JobName": job_name, "RunId": run_id},
                    env=env)["JobRun"]
    return run.get("Metrics")


def pipeline_job_definition(p: settings.PipelineSettings, role: str = LOCAL_ROLE) -> dict:
    """The pipeline's Glue job as the local Glue API takes it (the script from the repo)."""
    return job_definition(p.glue_job, role=role, script_location=str(p.script_path.resolve()),
                          arguments=glue_default_arguments(p))


def register_job(glue_client, p: settings.PipelineSettings,
                 role: str = LOCAL_ROLE) -> str:
    """Idempotent CreateJob/UpdateJob of the pipeline's job; returns "created"/"updated"."""
    definition = pipeline_job_definition(p, role)
    try:
        glue_client.get_job(JobName=p.glue_job.name)
    except glue_client.exceptions.EntityNotFoundException:
        glue_client.create_job(Name=p.glue_job.name, **definition)
        return "created"
    glue_client.update_job(JobName=p.glue_job.name, JobUpdate=definition)
    return "updated"
