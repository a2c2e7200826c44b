"""The shipped job (jobs/bronze_to_silver.py, unchanged) as GlueVersion 5.0 on the real
stack: AWS Glue 5.0's runtime (Spark 3.5.4, Iceberg 1.7.1: glue_local.glue_runtimes)
against the lab's Iceberg REST catalog (server Iceberg 1.10.0, bearer token) over MinIO,
merging DMS CSV files into silver. AWS Glue versions:
https://docs.aws.amazon.com/glue/latest/dg/release-notes.html"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from cdclab.merge_model import Change, apply_batch
from cdclab.services.base import StackContext
from cdclab.services.glue_api import pipeline_job_definition, register_job
from cdclab.tables_sync import publish
from glue_local import glue_runtimes
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_job import T0, Tables, ch, dms_csv, run_job
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec
from tests.resources.stack import CONTAINERS, backend

# On the containers backend: the Glue API is the image's, so this is the one test of its
# Glue 5.0 runtime (/opt/venv-glue50); embedded, test_glue_versions_runtimes covers the
# host's 5.0 runtime, and one 5.0 driver start per run costs minutes of CI.
pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(backend() != CONTAINERS, reason="runs on the image's Glue")]


def recent(changes: list[Change]) -> list[Change]:
    """Committed an hour ago: the delete's tombstone is inside the job's retention (its
    first run's upkeep prunes tombstones older than tombstone_retention_days)."""
    shift = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1) - T0
    return [replace(c, last_updated_ts=c.last_updated_ts + shift) for c in changes]


LOAD = recent([ch("I", 1, 0, 1, "Ann"), ch("I", 2, 0, 2, "Bob"), ch("I", 3, 0, 3, "Cy")])
CDC = recent([ch("U", 1, 100, 1, "Ann v2", "Rome, Italy"), ch("D", 2, 100, 2),
              ch("I", 4, 100, 3, "Dee"), ch("U", 4, 100, 4, "Dee v2")])

# the latest snapshot of silver, read on the lab's 5.1 driver
SNAPSHOT_JOB = """
import json, sys
from pyspark.sql import SparkSession
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
spark = SparkSession.builder.getOrCreate()
[row] = spark.sql(f"SELECT summary FROM {args['--table']}.snapshots "
                  "ORDER BY committed_at DESC LIMIT 1").collect()
open(args["--out"], "w").write(json.dumps(dict(row[0])))
"""


def test_shipped_job_as_glue_50_merges_into_the_rest_catalog(iceberg_rest: dict, fresh_lake,
                                                               tmp_path: Path) -> None:
    rt = glue_runtimes.runtime("5.0")
    if glue_runtimes.missing(rt, Path("/")):
        pytest.fail(glue_runtimes.not_installed(rt, glue_runtimes.missing(rt, Path("/"))))
    p = settings.load_pipeline()
    env = dict(iceberg_rest["env"])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env=dict(env))
    glue_service = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        keys = {"aws_access_key_id": env[settings.ENV_ACCESS_KEY],
                "aws_secret_access_key": env[settings.ENV_SECRET_KEY]}
        glue = boto3.client("glue", endpoint_url=endpoint,
                            region_name=settings.DEFAULT_REGION, **keys)
        s3 = boto3.client("s3", endpoint_url=env[settings.ENV_S3_ENDPOINT],
                          region_name=settings.DEFAULT_REGION, **keys)
        publish(ctx.env, p, [hosts_spec(p)])
        register_job(glue, p)
        job = p.glue_job.name
        glue.update_job(JobName=job,
                        JobUpdate=pipeline_job_definition(p) | {"GlueVersion": "5.0"})
        for name, changes in (("LOAD00000001.csv", LOAD), ("20260105-090140000.csv", CDC)):
            s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}",
                          Body=dms_csv(changes).encode())

        metrics = run_job(glue, endpoint, job)

        assert (metrics["files"], metrics["quarantined"]) == (2, 0)
        [run] = glue.get_job_runs(JobName=job)["JobRuns"]
        log = (settings.glue_run_logs(ctx.state_dir) / f"{run['Id']}.log").read_text()
        assert "AWS Glue 5.0's runtime (Spark 3.5.4, Iceberg 1.7.1" in log
        silver, tombs = apply_batch({}, {}, LOAD + CDC)
        tables = Tables(glue, endpoint, tmp_path)
        got_silver, got_tombs, quarantine = tables.read()
        assert (got_silver, got_tombs, quarantine) == (silver, tombs, [])
        ids = [r["id"] for r in json.loads(tables.out.read_text())[tables.names[0]]]
        assert len(ids) == len(set(ids)) == 3  # no duplicate keys
        assert sorted(silver) == [1, 3, 4] and list(tombs) == [2]
        assert silver[4].name == "Dee v2"
        # silver's last commit is the 5.0 runtime's own (Iceberg's snapshot summary)
        out, script = tmp_path / "snapshot.json", tmp_path / "snapshot.py"
        script.write_text(SNAPSHOT_JOB)
        table = f"{p.lake.catalog_name}.{p.lake.glue_database}.{p.lake.silver_table}"
        glue.create_job(Name="silver_snapshot", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(script)},
                        DefaultArguments={"--table": table, "--out": str(out)})
        run_job(glue, endpoint, "silver_snapshot")
        summary = json.loads(out.read_text())
        assert summary["iceberg-version"].startswith(f"Apache Iceberg {rt.iceberg}")
        assert summary["engine-version"] == rt.spark == "3.5.4"
    finally:
        glue_service.stop()
