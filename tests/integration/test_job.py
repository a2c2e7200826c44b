"""The real Glue job on the real stack: local Glue API (warm Spark runner), MinIO, Iceberg
REST catalog. Delivers DMS files out of order, replays them, and checks silver against
cdclab.merge_model after every run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from cdclab.merge_model import Change, Row, apply_batch, apply_in_order, make_change_seq
from cdclab.services.base import StackContext
from cdclab.services.glue_api import job_run_metrics, register_job
from cdclab.tables_sync import publish
from glue_local.launcher import GlueApiService
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.launch import launch
from tests.resources.specs import hosts_spec

pytestmark = [pytest.mark.integration, pytest.mark.job_semantics]

HEADER = "Op,last_updated_ts,id,url,name,since,location,response_time,response_rate,change_seq"
T0 = datetime(2026, 1, 5, 9, 0, 0, 123456)


def ch(op: str, id_: int, lsn: int, pos: int, name: str | None = None,
       location: str | None = "Paris, France") -> Change:
    if op == "D":  # DMS delete rows carry the key only (default replica identity)
        return Change("D", id_, make_change_seq(lsn, pos), T0 + timedelta(seconds=lsn))
    return Change(op, id_, make_change_seq(lsn, pos), T0 + timedelta(seconds=lsn),
                  url=f"https://h/{id_}", name=name, since=date(2019, 3, id_ % 28 + 1),
                  location=location, response_time=None, response_rate="")


def field(value) -> str:
    if value is None:
        return ""  # NULL: empty, unquoted
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    text = str(value)
    return '"' + text.replace('"', '""') + '"'


def dms_csv(changes: list[Change], extra_lines: tuple[str, ...] = ()) -> str:
    lines = [HEADER]
    for c in changes:
        lines.append(",".join(field(v) for v in (
            c.op, c.last_updated_ts, c.id, c.url, c.name, c.since.isoformat() if c.since
            else None, c.location, c.response_time, c.response_rate, c.change_seq)))
    return "\n".join([*lines, *extra_lines]) + "\n"


FULL_LOAD = [
    ch("I", 1, 0, 1, 'Anna "A", host'), ch("I", 2, 0, 2, "multi\nline"),
    ch("I", 3, 0, 3, "", location=None), ch("I", 4, 0, 4, "D", location="Lisbon"),
]
CDC_A = [  # lsn 100: one transaction, all rows share one commit timestamp
    ch("U", 1, 100, 1, "Anna v2", "Rome,  Lazio, Italy"), ch("D", 2, 100, 2),
    ch("I", 5, 100, 3, "short-lived"), ch("D", 5, 100, 4), ch("U", 3, 100, 5, "C v2"),
]
CDC_B = [  # lsn 200: delivered BEFORE CDC_A
    ch("U", 3, 200, 1, "C v3"), ch("I", 2, 200, 2, "B again"), ch("U", 4, 200, 3, "D v2"),
    ch("U", 3, 200, 4, "C v4"),
]
CDC_C = [  # lsn 300: after everything; a delete and a re-insert
    ch("D", 4, 300, 1), ch("I", 6, 300, 2, "new host", "Kyoto, Japan"),
]
BAD_LINE = 'I,2026-01-05 09:00:00,not-an-int,u,n,,,,,' + make_change_seq(200, 9)


# Tables are read back through a second job in the same warm Spark session (pyiceberg
# needs pyarrow, which the pinned numpy 1.26 cannot load); values are cast to strings
# with the session time zone UTC.
DUMP_JOB = """
import json, sys
from pyspark.sql import SparkSession
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
spark = SparkSession.builder.getOrCreate()
out = {}
for name in args["--tables"].split(","):
    df = spark.table(name)
    rows = df.selectExpr(*[f"CAST({c} AS STRING) AS {c}" for c in df.columns]).collect()
    out[name] = [r.asDict() for r in rows]
open(args["--out"], "w").write(json.dumps(out))
"""


def to_row(r: dict) -> Row:
    return Row(**{**r, "id": int(r["id"]),
                  "last_updated_ts": datetime.fromisoformat(r["last_updated_ts"]),
                  "since": date.fromisoformat(r["since"]) if r["since"] else None})


class Tables:
    """Reads the silver, tombstone and quarantine tables with the dump job."""

    def __init__(self, glue, endpoint: str, work: Path) -> None:
        self.glue, self.endpoint, self.out = glue, endpoint, work / "dump.json"
        script = work / "dump_tables.py"
        script.write_text(DUMP_JOB)
        lake = settings.load_pipeline().lake
        self.names = [f"{lake.catalog_name}.{lake.glue_database}.{t}" for t in
                      (lake.silver_table, lake.tombstone_table, lake.quarantine_table)]
        glue.create_job(Name="dump_tables", Role="r",
                        Command={"Name": "glueetl", "ScriptLocation": str(script)},
                        DefaultArguments={"--tables": ",".join(self.names),
                                          "--out": str(self.out)})

    def read(self) -> tuple[dict[int, Row], dict[int, str], list[dict]]:
        run_job(self.glue, self.endpoint, "dump_tables")
        data = json.loads(self.out.read_text())
        silver, tombs, quarantine = (data[n] for n in self.names)
        return ({int(r["id"]): to_row(r) for r in silver},
                {int(r["id"]): r["change_seq"] for r in tombs}, quarantine)


def assert_iceberg_tables_in_the_glue_catalog(glue, p) -> None:
    """The job's Iceberg tables show in the Glue API as GlueCatalog shows them on AWS."""
    db = p.lake.glue_database
    silver = glue.get_table(DatabaseName=db, Name=p.lake.silver_table)["Table"]
    assert silver["TableType"] == "EXTERNAL_TABLE"
    assert silver["Parameters"]["table_type"] == "ICEBERG"
    assert silver["Parameters"]["metadata_location"].startswith("s3://")
    assert silver["Parameters"]["metadata_location"].endswith(".metadata.json")
    columns = {c["Name"]: c for c in silver["StorageDescriptor"]["Columns"]}
    assert columns["id"]["Type"] == "int"
    assert columns["id"]["Parameters"]["iceberg.field.current"] == "true"
    names = {t["Name"] for t in glue.get_tables(DatabaseName=db)["TableList"]}
    assert {p.lake.bronze_table, p.lake.silver_table, p.lake.tombstone_table} <= names
    with pytest.raises(glue.exceptions.InvalidInputException, match="Iceberg"):
        glue.delete_table(DatabaseName=db, Name=p.lake.silver_table)


ICEBERG_COPY_JOB = """
import json, sys
from awsglue.context import GlueContext
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
args = getResolvedOptions(sys.argv, ["db", "source", "target", "catalog"])
glue = GlueContext(SparkContext.getOrCreate())
spark = glue.spark_session
target = f"{args['catalog']}.{args['db']}.{args['target']}"
spark.sql(f"CREATE TABLE IF NOT EXISTS {target} USING iceberg AS "
          f"SELECT * FROM {args['catalog']}.{args['db']}.{args['source']} WHERE false")
frame = glue.create_dynamic_frame.from_catalog(
    database=args["db"], table_name=args["source"], push_down_predicate="id >= 2")
glue.write_dynamic_frame.from_catalog(frame=frame, database=args["db"],
                                      table_name=args["target"])
copied = spark.table(target).count()
spark.sql(f"DROP TABLE {target} PURGE")
print("CDCLAB_METRICS " + json.dumps({"read": frame.count(), "copied": copied}))
"""


def copy_silver_through_the_catalog(glue, endpoint: str, p, work: Path) -> dict:
    """from_catalog and write_dynamic_frame.from_catalog on Iceberg tables, as on Glue 5."""
    script = work / "iceberg_copy.py"
    script.write_text(ICEBERG_COPY_JOB)
    glue.create_job(Name="iceberg_copy", Role="r",
                    Command={"Name": "glueetl", "ScriptLocation": str(script)},
                    DefaultArguments={"--db": p.lake.glue_database,
                                      "--source": p.lake.silver_table,
                                      "--target": "silver_copy",
                                      "--catalog": p.lake.catalog_name})
    return run_job(glue, endpoint, "iceberg_copy")


CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# the blog's --conf value, verbatim but for the warehouse bucket (the lab's)
BLOG_CONF = (
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions "
    "--conf spark.sql.catalog.job_catalog.warehouse={warehouse} "
    "--conf spark.sql.catalog.job_catalog=org.apache.iceberg.spark.SparkCatalog "
    "--conf spark.sql.catalog.job_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog "
    "--conf spark.sql.catalog.job_catalog.io-impl=org.apache.iceberg.aws.s3.S3FileIO "
    "--conf spark.sql.catalog.glue_catalog.glue.lakeformation-enabled=true "
    "--conf spark.sql.iceberg.handle-timestamp-without-timezone=true")


def run_seed_blog_job(glue, endpoint: str, p, work: Path) -> dict[int, dict]:
    table = "hosts_silver_blog"
    glue.create_job(Name="seed_blog", Role="r", GlueVersion="5.1",
                    Command={"Name": "glueetl",
                             "ScriptLocation": str(CORPUS / "seed_blog_fixed.py")},
                    DefaultArguments={"--datalake-formats": "iceberg",
                                      "--conf": BLOG_CONF.format(warehouse=p.warehouse),
                                      "--job-bookmark-option": "job-bookmark-enable",
                                      "--silver_table": table})
    run_job(glue, endpoint, "seed_blog")
    name = f"{p.lake.catalog_name}.{p.lake.glue_database}.{table}"
    out = work / "blog.json"
    glue.create_job(Name="dump_blog", Role="r",
                    Command={"Name": "glueetl", "ScriptLocation": str(work / "dump_tables.py")},
                    DefaultArguments={"--tables": name, "--out": str(out)})
    run_job(glue, endpoint, "dump_blog")
    return {int(r["id"]): r for r in json.loads(out.read_text())[name]}


def run_job(glue, endpoint: str, job: str, timeout: float = 900.0,
            arguments: dict[str, str] | None = None) -> dict:
    run_id = glue.start_job_run(JobName=job, Arguments=arguments or {})["JobRunId"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = glue.get_job_run(JobName=job, RunId=run_id)["JobRun"]
        if run["JobRunState"] in ("SUCCEEDED", "FAILED", "ERROR", "TIMEOUT", "STOPPED"):
            assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
            keys = glue._request_signer._credentials  # signed as the client is
            env = {settings.ENV_ACCESS_KEY: keys.access_key,
                   settings.ENV_SECRET_KEY: keys.secret_key}
            return job_run_metrics(endpoint, job, run_id, env=env) or {}
        time.sleep(0.5)
    raise AssertionError(f"job run {run_id} did not finish within {timeout}s")


@dataclass
class JobLab:
    """The job registered on a local Glue API over the stack's MinIO and catalog."""

    p: settings.PipelineSettings
    glue: object
    endpoint: str
    tables: Tables
    s3: object
    state: Path

    def upload(self, name: str, body: str) -> None:
        self.s3.put_object(Bucket=self.p.lake.bronze_bucket,
                           Key=f"{self.p.bronze_prefix}/{name}", Body=body.encode())

    def run(self, arguments: dict[str, str] | None = None) -> dict:
        return run_job(self.glue, self.endpoint, self.p.glue_job.name, arguments=arguments)

    def run_log(self, metrics: dict) -> str:
        return (settings.glue_run_logs(self.state) / f"{metrics['run_id']}.log").read_text()


@contextmanager
def job_lab(iceberg_rest: dict, tmp_path: Path) -> Iterator[JobLab]:
    p = settings.load_pipeline()
    env = dict(iceberg_rest["env"])
    ctx = StackContext(pipeline=load_pipeline(), state_dir=tmp_path / "state", env=dict(env))
    glue_service = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        endpoint = ctx.env[settings.ENV_GLUE_ENDPOINT]
        keys = {"aws_access_key_id": env[settings.ENV_ACCESS_KEY],
                "aws_secret_access_key": env[settings.ENV_SECRET_KEY]}
        glue = boto3.client("glue", endpoint_url=endpoint, region_name=settings.DEFAULT_REGION,
                            **keys)
        s3 = boto3.client("s3", endpoint_url=env[settings.ENV_S3_ENDPOINT],
                          region_name=settings.DEFAULT_REGION, **keys)
        publish(ctx.env, p, [hosts_spec(p)])  # bronze table and the job's --tables_config
        register_job(glue, p)
        yield JobLab(p, glue, endpoint, Tables(glue, endpoint, tmp_path), s3, ctx.state_dir)
    finally:
        glue_service.stop()


def test_job_matches_merge_model_out_of_order_and_replayed(iceberg_rest: dict, fresh_lake,
                                                           tmp_path: Path) -> None:
    with job_lab(iceberg_rest, tmp_path) as lab:
        p, glue, endpoint, tables, upload = lab.p, lab.glue, lab.endpoint, lab.tables, lab.upload
        job = p.glue_job.name

        # run 1: the full load and the LATER CDC file (plus one malformed row)
        upload("LOAD00000001.csv", dms_csv(FULL_LOAD))
        upload("20260105-090320000.csv", dms_csv(CDC_B, (BAD_LINE,)))
        m1 = run_job(glue, endpoint, job)
        silver, tombs = apply_batch({}, {}, FULL_LOAD + CDC_B)
        assert tables.read()[:2] == (silver, tombs)
        assert (m1["files"], m1["rows_read"], m1["quarantined"]) == (2, 9, 1)
        assert_iceberg_tables_in_the_glue_catalog(glue, p)
        copied = copy_silver_through_the_catalog(glue, endpoint, p, tmp_path)
        above_one = sum(i >= 2 for i in silver)
        assert copied == {"read": above_one, "copied": above_one}

        # run 2: the EARLIER CDC file arrives late; bookmarks skip the processed files
        upload("20260105-090140000.csv", dms_csv(CDC_A))
        m2 = run_job(glue, endpoint, job)
        silver, tombs = apply_batch(silver, tombs, CDC_A)
        assert m2["files"] == 1 and m2["quarantined"] == 0
        assert tables.read()[:2] == (silver, tombs)
        assert silver == apply_in_order(FULL_LOAD + CDC_A + CDC_B)
        assert 5 not in silver  # insert+delete in one batch inserted nothing

        # run 3: replay everything (bookmark reset): nothing changes
        glue.reset_job_bookmark(JobName=job)
        m3 = run_job(glue, endpoint, job)
        assert m3["files"] == 3
        assert (m3["inserted"], m3["updated"], m3["deleted"]) == (0, 0, 0)
        got_silver, got_tombs, quarantine = tables.read()
        assert (got_silver, got_tombs) == (silver, tombs)
        [bad] = quarantine  # the replay added no duplicate
        assert bad["source_file"].endswith("20260105-090320000.csv")
        assert bad["record_number"] == "6" and "id is not an INT" in bad["reason"]

        # run 4: one more file, with compaction forced: same rows, fewer files
        upload("20260105-090500000.csv", dms_csv(CDC_C))
        m4 = run_job(glue, endpoint, job, arguments={"--compact_after_files": "1"})
        assert "compact" in m4["phase_seconds"]
        silver, tombs = apply_batch(silver, tombs, CDC_C)
        assert tables.read()[:2] == (silver, tombs)

        # the seed blog's job (tests/corpus, fixed) over the same bronze files, with the
        # blog's own --conf (GlueCatalog "job_catalog"): the same hosts as the shipped job
        blog = run_seed_blog_job(glue, endpoint, p, tmp_path)
        keep = ("last_updated_ts", "url", "name", "since")
        assert {i: {k: str(r[k]) for k in keep} for i, r in blog.items()} == {
            i: {k: str(getattr(r, k)) for k in keep} for i, r in silver.items()}


def test_a_full_load_is_appended_where_silver_holds_none_of_its_keys(
        iceberg_rest: dict, fresh_lake, tmp_path: Path) -> None:
    """Batches of inserts only (full-load files, or CDC files of INSERTs), into tables that
    hold none of their key range: the job appends them (no classification), with the same
    silver and counts the MERGE would give. A repeated key across full-load files keeps
    its latest record; a quarantined row stays out. Any other batch is merged."""
    with job_lab(iceberg_rest, tmp_path) as lab:
        tables, upload = lab.tables, lab.upload
        second = [ch("I", 7, 0, 7, "seven"), ch("I", 1, 0, 8, "Anna reloaded")]
        upload("LOAD00000001.csv", dms_csv(FULL_LOAD))
        upload("LOAD00000002.csv", dms_csv(second, (BAD_LINE,)))
        m1 = lab.run()
        assert "insert into silver" in m1["phase_seconds"]
        assert "merge into silver" not in m1["phase_seconds"]
        silver, tombs = apply_batch({}, {}, FULL_LOAD + second)
        assert tables.read()[:2] == (silver, tombs)
        assert silver[1].name == "Anna reloaded"
        assert (m1["files"], m1["rows_read"], m1["quarantined"]) == (2, 7, 1)
        assert (m1["inserted"], m1["updated"], m1["deleted"], m1["skipped"]) == (5, 0, 0, 0)

        # silver written: a later full-load file is merged like any batch
        reload = [ch("I", 2, 0, 9, "B reloaded"), ch("I", 8, 0, 10, "eight")]
        upload("LOAD00000003.csv", dms_csv(reload))
        m2 = lab.run()
        assert "merge into silver" in m2["phase_seconds"]
        silver, tombs = apply_batch(silver, tombs, reload)
        assert (m2["inserted"], m2["updated"]) == (1, 1)

        upload("20260105-090140000.csv", dms_csv(CDC_A))
        m3 = lab.run()
        assert "merge into silver" in m3["phase_seconds"]
        silver, tombs = apply_batch(silver, tombs, CDC_A)
        assert tables.read()[:2] == (silver, tombs)

        # the next file of a full load (keys past silver's) is appended; a full-load file
        # whose key range holds a tombstone's key (5, deleted in CDC_A) is merged
        above = [ch("I", 20, 0, 11, "twenty"), ch("I", 21, 0, 12, "twenty-one")]
        upload("LOAD00000004.csv", dms_csv(above))
        m4 = lab.run()
        assert "merge into silver" not in m4["phase_seconds"]
        assert (m4["inserted"], m4["updated"], m4["skipped"]) == (2, 0, 0)
        silver, tombs = apply_batch(silver, tombs, above)
        over_tombstone = [ch("I", 5, 0, 13, "five again"), ch("I", 6, 0, 14, "six")]
        upload("LOAD00000005.csv", dms_csv(over_tombstone))
        m5 = lab.run()
        assert "merge into silver" in m5["phase_seconds"]
        assert m5["inserted"] == 1, m5
        silver, tombs = apply_batch(silver, tombs, over_tombstone)
        assert 5 not in silver and tables.read()[:2] == (silver, tombs)

        # CDC files of INSERTs only are appended the same way, with their latencies
        new_hosts = [ch("I", 30, 400, 1, "thirty"), ch("I", 31, 400, 2, "thirty-one")]
        upload("20260105-090640000.csv", dms_csv(new_hosts))
        m6 = lab.run()
        assert "merge into silver" not in m6["phase_seconds"]
        assert (m6["inserted"], m6["updated"], m6["skipped"]) == (2, 0, 0)
        assert m6["latency_seconds"]["count"] == 2
        silver, tombs = apply_batch(silver, tombs, new_hosts)
        # an INSERT of a key silver holds (a replayed change) is merged: stale, skipped
        upload("20260105-090641000.csv", dms_csv(new_hosts[:1]))
        m7 = lab.run()
        assert "merge into silver" in m7["phase_seconds"]
        assert (m7["inserted"], m7["skipped"]) == (0, 1)
        silver, tombs = apply_batch(silver, tombs, new_hosts[:1])
        assert tables.read()[:2] == (silver, tombs)

        # keys past every data file's bounds are told by the bounds alone; a key between
        # two keys of one file (its bounds meet it, its rows do not) by a scan. Silver is
        # compacted after the first into one file, whatever files the append wrote.
        apart = [ch("I", 40, 500, 1, "forty"), ch("I", 50, 500, 2, "fifty")]
        between = [ch("I", 45, 600, 1, "forty-five")]
        by_bounds = f"{hosts_spec(lab.p)['silver_table']}: no data file's key bounds meet"
        for name, batch, arguments in (
                ("20260105-090642000.csv", apart, {"--compact_after_files": "1"}),
                ("20260105-090643000.csv", between, {})):
            upload(name, dms_csv(batch))
            m = lab.run(arguments)
            assert "merge into silver" not in m["phase_seconds"]
            assert (m["inserted"], m["updated"], m["skipped"]) == (len(batch), 0, 0)
            silver, tombs = apply_batch(silver, tombs, batch)
            assert (by_bounds in lab.run_log(m)) == (batch is apart)
        assert tables.read()[:2] == (silver, tombs)


SET_WRITE_MODES_JOB = """
import sys
from awsglue.context import GlueContext
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
args = getResolvedOptions(sys.argv, ["table", "mode"])
spark = GlueContext(SparkContext.getOrCreate()).spark_session
spark.sql(f"ALTER TABLE {args['table']} SET TBLPROPERTIES (" + ", ".join(
    f"'write.{op}.mode'='{args['mode']}'" for op in ("delete", "update", "merge")) + ")")
"""


def test_a_copy_on_write_silver_is_refused_with_how_to_set_it(iceberg_rest: dict, fresh_lake,
                                                              tmp_path: Path) -> None:
    """A silver made copy-on-write elsewhere: the run fails naming the table and the
    properties to set, loses nothing, and the next run after the fix applies the file."""
    with job_lab(iceberg_rest, tmp_path) as lab:
        lab.upload("LOAD00000001.csv", dms_csv(FULL_LOAD))
        lab.run()
        silver = hosts_spec(lab.p)["silver_table"]
        script = tmp_path / "set_write_modes.py"
        script.write_text(SET_WRITE_MODES_JOB)
        lab.glue.create_job(Name="set_write_modes", Role="r",
                            Command={"Name": "glueetl", "ScriptLocation": str(script)},
                            DefaultArguments={"--table": silver})
        run_job(lab.glue, lab.endpoint, "set_write_modes", arguments={"--mode": "copy-on-write"})
        lab.upload("20260105-090320000.csv", dms_csv(CDC_B))
        with pytest.raises(AssertionError, match=(
                rf"MERGE INTO {silver} refused: the table is copy-on-write.*ALTER TABLE "
                rf"{silver} SET TBLPROPERTIES \('write.delete.mode'='merge-on-read'")):
            lab.run()
        run_job(lab.glue, lab.endpoint, "set_write_modes", arguments={"--mode": "merge-on-read"})
        lab.run()  # the failed run kept no bookmark: its file comes again
        assert lab.tables.read()[:2] == apply_batch({}, {}, FULL_LOAD + CDC_B)
