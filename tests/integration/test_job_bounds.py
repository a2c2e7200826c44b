"""The shipped Glue job's bounded resources on the real stack (local Glue API, MinIO,
Iceberg REST): a per-run input cap that leaves the rest for later runs and says so
("backlog" in its metrics, and the job's backlog marker in S3), the scheduled
Iceberg upkeep (snapshot expiry, orphan files, tombstone pruning only when no input
waits), and the snapshot bound any run keeps."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import boto3
import pytest

from cdclab.merge_model import Change, make_change_seq
from cdclab.services.base import StackContext
from cdclab.services.glue_api import register_job
from cdclab.tables_sync import publish
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.integration.test_job import dms_csv, run_job
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec

pytestmark = [pytest.mark.integration, pytest.mark.job_semantics]

OLD = datetime(2020, 1, 1, 12, 0, 0)  # a delete far past the tombstone horizon
NOW = datetime.utcnow().replace(microsecond=0)


def change(op: str, id_: int, lsn: int, at: datetime) -> Change:
    seq = make_change_seq(lsn, 1)
    if op == "D":
        return Change("D", id_, seq, at)
    return Change(op, id_, seq, at, url=f"https://h/{id_}", name=f"n{id_}@{lsn}",
                  since=None, location="Oslo, Norway", response_time=None, response_rate="")


FILES = [  # uploaded in this order: the cap takes them oldest first
    ("LOAD00000001.csv", [change("I", i, 0, OLD - timedelta(days=1)) for i in (1, 2, 3, 4)]),
    ("20200101-120000000.csv", [change("D", 2, 100, OLD)]),
    ("20261124-000000000.csv", [change("D", 3, 200, NOW)]),
    ("20261124-000001000.csv", [change("U", 1, 300, NOW)]),
    ("20261124-000002000.csv", [change("I", 5, 400, NOW)]),
]

STATE_JOB = """
import json, sys
from pyspark.sql import SparkSession
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
spark = SparkSession.builder.getOrCreate()
silver, tombs = args["--silver"], args["--tombstones"]
out = {"silver": sorted(r.id for r in spark.table(silver).collect()),
       "tombstones": sorted(r.id for r in spark.table(tombs).collect()),
       "snapshots": spark.sql(f"SELECT count(*) AS n FROM {silver}.snapshots").first().n,
       "properties": {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {silver}").collect()}}
open(args["--out"], "w").write(json.dumps(out))
"""

DROP_JOB = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
for name in sys.argv[sys.argv.index("--tables") + 1].split(","):
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
"""

UPKEEP_NOW = {"--maintenance_interval_minutes": "0", "--snapshot_retention_hours": "0",
              "--retain_last_snapshots": "1", "--orphan_file_age_hours": "24",
              "--tombstone_retention_days": "30"}


def test_capped_runs_report_backlog_and_upkeep_is_scheduled(iceberg_rest: dict, fresh_lake,
                                                            tmp_path: Path) -> None:
    p = settings.load_pipeline()
    env = dict(iceberg_rest["env"])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env=dict(env))
    glue_service = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        glue = boto3.client("glue", endpoint_url=endpoint, region_name=settings.DEFAULT_REGION,
                            aws_access_key_id=env[settings.ENV_ACCESS_KEY],  # SigV4 checked
                            aws_secret_access_key=env[settings.ENV_SECRET_KEY])
        s3 = boto3.client("s3", endpoint_url=env[settings.ENV_S3_ENDPOINT],
                          region_name=settings.DEFAULT_REGION,
                          aws_access_key_id=env[settings.ENV_ACCESS_KEY],
                          aws_secret_access_key=env[settings.ENV_SECRET_KEY])
        spec = hosts_spec(p)
        publish(ctx.env, p, [spec])
        register_job(glue, p)
        job = p.glue_job.name
        defaults = glue.get_job(JobName=job)["Job"]["DefaultArguments"]
        assert defaults["--bounded_files"] == "500"  # from pipeline.toml [glue_job]
        assert defaults["--orphan_file_age_hours"] == "72"  # [maintenance]
        script = tmp_path / "state_job.py"
        script.write_text(STATE_JOB)
        out = tmp_path / "state.json"
        glue.create_job(Name="read_state", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(script)},
                        DefaultArguments={"--silver": spec["silver_table"],
                                          "--tombstones": spec["tombstone_table"],
                                          "--out": str(out)})

        def state() -> dict:
            run_job(glue, endpoint, "read_state")
            return json.loads(out.read_text())

        # the session's catalog is shared: start from no tables, whatever ran before
        drop = tmp_path / "drop_tables.py"
        drop.write_text(DROP_JOB)
        glue.create_job(Name="drop_tables", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(drop)},
                        DefaultArguments={"--tables": ",".join(
                            spec[k] for k in ("silver_table", "tombstone_table",
                                              "quarantine_table"))})
        run_job(glue, endpoint, "drop_tables")

        for name, changes in FILES:
            s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}",
                          Body=dms_csv(changes).encode())
            time.sleep(0.05)  # distinct modification times: the upload order is the age order

        marker_bucket, marker_key = defaults["--backlog_marker"].removeprefix(
            "s3://").split("/", 1)
        assert defaults["--backlog_marker"] == p.backlog_marker()

        def marker() -> dict | None:
            try:
                body = s3.get_object(Bucket=marker_bucket, Key=marker_key)["Body"].read()
            except s3.exceptions.NoSuchKey:
                return None
            return json.loads(body)

        capped = {**UPKEEP_NOW, "--bounded_files": "2"}
        started = time.time() * 1000
        # tables never kept: the first run starts their interval, no step runs yet
        m1 = run_job(glue, endpoint, job, arguments={**capped,
                                                     "--maintenance_interval_minutes": "30"})
        assert (m1["files"], m1["backlog"]) == (2, True)  # LOAD + the 2020 delete
        written = marker()
        assert written["source"] == "job" and written["tables"] == [spec["name"]]
        assert m1["tables"][spec["name"]]["maintenance"] is None
        first = state()
        assert first["tombstones"] == [2]
        assert int(first["properties"]["cdclab.maintenance.last-run-ms"]) >= started
        assert first["properties"]["write.metadata.previous-versions-max"] == "20"
        m2 = run_job(glue, endpoint, job, arguments=capped)  # interval 0: every run
        assert (m2["files"], m2["backlog"]) == (2, True)
        assert m2["tables"][spec["name"]]["maintenance"]["tombstones_pruned"] == 0  # input waits

        # an orphan in the silver table's folder (a failed write's leftover): younger than
        # the safe age (24 h, Iceberg's own floor for the procedure), so it stays
        location = glue.get_table(DatabaseName=p.lake.glue_database,
                                  Name=p.lake.silver_table)["Table"]["Parameters"][
            "metadata_location"].rsplit("/metadata/", 1)[0]
        bucket, key = location.removeprefix("s3://").split("/", 1)
        orphan = f"{key}/data/orphan-left-by-a-failed-write.parquet"
        s3.put_object(Bucket=bucket, Key=orphan, Body=b"PAR1 not really")

        m3 = run_job(glue, endpoint, job, arguments=capped)
        assert (m3["files"], m3["backlog"]) == (1, False)  # the last file: nothing waits
        assert marker() is None  # the Lambda starts no more runs
        upkeep = m3["tables"][spec["name"]]["maintenance"]
        assert upkeep["tombstones_pruned"] == 1  # the 2020 delete; the recent one stays
        assert upkeep["orphan_files_removed"] == 0 and upkeep["errors"] == []
        s3.head_object(Bucket=bucket, Key=orphan)  # still there: it may be a write in flight
        got = state()
        assert got["silver"] == [1, 4, 5] and got["tombstones"] == [3]
        assert got["snapshots"] == 1  # retain_last 1, nothing younger than the window

        # a step Iceberg refuses (an orphan age under 24 h) is reported, the run succeeds
        m3b = run_job(glue, endpoint, job, arguments={**UPKEEP_NOW,
                                                      "--orphan_file_age_hours": "1"})
        errors = m3b["tables"][spec["name"]]["maintenance"]["errors"]
        assert len(errors) == 3 and all("24 hours" in e for e in errors)

        # the Lambda's marker of a file that landed during an earlier run: this run, which
        # started after it was written, lists that file, so it deletes the marker
        s3.put_object(Bucket=marker_bucket, Key=marker_key, Body=b'{"source": "lambda"}')
        time.sleep(2.5)  # past the clock margin
        m4 = run_job(glue, endpoint, job)  # the job's defaults: upkeep not due for 30 min
        assert (m4["files"], m4["backlog"]) == (0, False)
        assert marker() is None
        assert m4["tables"][spec["name"]]["maintenance"] is None
        # a late, older change to a pruned key is the documented limit: it would insert;
        # one for a key still tombstoned stays dropped
        late = "20261124-000003000.csv"
        s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{late}",
                      Body=dms_csv([change("U", 3, 150, NOW)]).encode())
        m5 = run_job(glue, endpoint, job)
        assert m5["skipped"] == 0 and m5["inserted"] == 0 and m5["updated"] == 0
        assert state()["silver"] == [1, 4, 5]

        # a table over max_snapshots is expired in any run, not only when the upkeep is
        # due: down to half the bound (never fewer than retain_last_snapshots)
        for i, name in enumerate(("20261124-000004000.csv", "20261124-000005000.csv")):
            s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}",
                          Body=dms_csv([change("I", 6 + i, 500 + i, NOW)]).encode())
            assert run_job(glue, endpoint, job)["tables"][spec["name"]]["maintenance"] is None
        seen = state()
        before = seen["snapshots"]
        assert before >= 3  # the defaults' bound (200) is far
        m6 = run_job(glue, endpoint, job, arguments={"--max_snapshots": "2",
                                                     "--retain_last_snapshots": "1"})
        bounded = m6["tables"][spec["name"]]["maintenance"]
        assert bounded["snapshots_bounded"][spec["silver_table"]] == before
        assert bounded["snapshots_expired"] >= before - 1  # silver's, and any of the others'
        assert bounded["errors"] == [] and bounded["tombstones_pruned"] == 0
        after = state()
        assert after["snapshots"] == 1 and after["silver"] == [1, 4, 5, 6, 7]
        # only the bound ran: the scheduled upkeep was not due, and is not marked done
        mark = "cdclab.maintenance.last-run-ms"
        assert after["properties"][mark] == seen["properties"][mark]

        # the scheduled upkeep with a 6-hour window keeps every younger snapshot
        s3.put_object(Bucket=p.lake.bronze_bucket,
                      Key=f"{p.bronze_prefix}/20261124-000006000.csv",
                      Body=dms_csv([change("I", 8, 600, NOW)]).encode())
        run_job(glue, endpoint, job)
        young = state()["snapshots"]
        assert young >= 2
        m7 = run_job(glue, endpoint, job, arguments={"--maintenance_interval_minutes": "0",
                                                     "--snapshot_retention_hours": "6",
                                                     "--retain_last_snapshots": "1"})
        kept = m7["tables"][spec["name"]]["maintenance"]
        assert kept["snapshots_expired"] == 0 and kept["snapshots_bounded"] == {}
        assert state()["snapshots"] == young
    finally:
        glue_service.stop()
