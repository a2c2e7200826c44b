"""An object that fails every run of the shipped job is found and skipped, on the real
stack (local Glue API, MinIO, Iceberg REST): the runs that fail on it narrow the next
input (Glue's boundedFiles), the object that fails alone twice is skipped with its reason
in the table's quarantine table, and the good files around it reach silver. The object
stays in bronze. Runs are started as the Lambda starts them; the gate is not in the way
here (a truncated gzip is what it refuses: this stands for what it cannot see)."""

from __future__ import annotations

import gzip
import json
import time
from datetime import datetime
from pathlib import Path

import boto3
import pytest

from cdclab.services.base import StackContext
from cdclab.services.glue_api import job_run_metrics, register_job
from cdclab.tables_sync import publish
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_job import dms_csv, run_job
from tests.integration.test_job_bounds import DROP_JOB, STATE_JOB, change
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec

pytestmark = [pytest.mark.integration, pytest.mark.job_semantics]

NOW = datetime.utcnow().replace(microsecond=0)
POISON = "20261124-000002500.csv.gz"
FILES = [  # in upload order (the bookmark's order)
    ("LOAD00000001.csv", [change("I", i, 0, NOW) for i in (1, 2, 3)]),
    ("20261124-000001000.csv", [change("U", 1, 100, NOW)]),
    ("20261124-000002000.csv", [change("I", 4, 200, NOW)]),
    (POISON, None),
    ("20261124-000003000.csv", [change("D", 2, 300, NOW)]),
    ("20261124-000004000.csv", [change("I", 5, 400, NOW)]),
]


def truncated_gzip() -> bytes:
    """Hadoop's gzip reader fails on it with an EOFException, in every run."""
    whole = gzip.compress(dms_csv([change("I", 99, 250, NOW)]).encode() * 50)
    return whole[: len(whole) // 2]


def final(glue, job: str, run_id: str) -> dict:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        run = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        if run["JobRunState"] in ("SUCCEEDED", "FAILED", "ERROR", "TIMEOUT", "STOPPED"):
            return run
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not end")


def test_an_object_failing_every_run_is_skipped_and_the_rest_reaches_silver(
        iceberg_rest: dict, fresh_lake, tmp_path: Path) -> None:
    p = settings.load_pipeline()
    env = dict(iceberg_rest["env"])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env=dict(env))
    glue_service = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        keys = {"region_name": settings.DEFAULT_REGION,
                "aws_access_key_id": env[settings.ENV_ACCESS_KEY],
                "aws_secret_access_key": env[settings.ENV_SECRET_KEY]}
        glue = boto3.client("glue", endpoint_url=endpoint, **keys)
        s3 = boto3.client("s3", endpoint_url=env[settings.ENV_S3_ENDPOINT], **keys)
        spec = hosts_spec(p)
        publish(ctx.env, p, [spec])
        register_job(glue, p)
        job = p.glue_job.name
        guard_bucket, guard_key = p.input_guard().removeprefix("s3://").split("/", 1)
        s3.delete_object(Bucket=guard_bucket, Key=guard_key)
        drop = tmp_path / "drop_tables.py"
        drop.write_text(DROP_JOB)
        glue.create_job(Name="drop_tables", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(drop)},
                        DefaultArguments={"--tables": ",".join(
                            spec[k] for k in ("silver_table", "tombstone_table",
                                              "quarantine_table"))})
        run_job(glue, endpoint, "drop_tables")
        for name, changes in FILES:
            body = truncated_gzip() if changes is None else dms_csv(changes).encode()
            s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}",
                          Body=body)
            time.sleep(0.05)  # distinct modification times: the upload order is the age order

        capped = {"--bounded_files": "2"}
        outcomes = []
        for _ in range(12):  # as the Lambda/watcher starts runs after each failure
            run = final(glue, job, glue.start_job_run(JobName=job, Arguments=capped)
                        ["JobRunId"])
            outcomes.append(run["JobRunState"])
            if run["JobRunState"] == "SUCCEEDED" and (job_run_metrics(
                    endpoint, job, run["Id"], env=env) or {}).get("objects_skipped"):
                break
        else:
            raise AssertionError(f"the poison object was never skipped: {outcomes}")
        # [LOAD, 1000] ok; [2000, poison] fails twice; [2000] ok; [poison] fails twice: skip
        assert outcomes == ["SUCCEEDED", "FAILED", "FAILED", "SUCCEEDED", "FAILED", "FAILED",
                            "SUCCEEDED"], outcomes
        for _ in range(3):  # the rest flows
            metrics = run_job(glue, endpoint, job, arguments=capped)
            if not metrics["backlog"]:
                break

        script = tmp_path / "state_job.py"
        script.write_text(STATE_JOB + """
out["quarantine"] = [r.asDict() for r in spark.table(args["--quarantine"]).collect()]
open(args["--out"], "w").write(json.dumps(out, default=str))
""")
        out = tmp_path / "state.json"
        glue.create_job(Name="read_state", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(script)},
                        DefaultArguments={"--silver": spec["silver_table"],
                                          "--tombstones": spec["tombstone_table"],
                                          "--quarantine": spec["quarantine_table"],
                                          "--out": str(out)})
        run_job(glue, endpoint, "read_state")
        got = json.loads(out.read_text())
        assert got["silver"] == [1, 3, 4, 5]  # every good file merged, the poison's 99 not
        [skipped] = got["quarantine"]
        assert skipped["source_file"].endswith(POISON)
        assert "failed reading this object alone" in skipped["reason"]
        assert skipped["record_number"] is None
        s3.head_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{POISON}")
        guard = json.loads(s3.get_object(Bucket=guard_bucket, Key=guard_key)["Body"].read())
        assert [s["file"] for s in guard["skipped"]] == [skipped["source_file"]]
        assert guard["tables"] == {} and guard["probation"] == []
    finally:
        glue_service.stop()
