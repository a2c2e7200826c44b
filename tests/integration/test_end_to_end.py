"""End to end on the real stack: seed, full load, randomized CDC workload, drain,
then silver must equal source row for row. Then the same after crashing the emitter
and the watcher mid-workload (replay, never skip).

The workload seed is random per run and printed; set CDCLAB_TEST_SEED to replay one.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import threading

import psycopg
import pytest

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.reconcile import reconcile
from cdclab.sample_data import seed
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.drain_report import drain_report, equal_later

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = int(os.environ.get("CDCLAB_TEST_SEED", random.randrange(1_000_000)))


def _drain_and_reconcile(env: dict[str, str]) -> None:
    target = current_wal_lsn(env[settings.ENV_PG_DSN])
    try:
        waited = wait_for_drain(env, load_pipeline(), target, timeout=420)
    except TimeoutError as e:  # stalled: the objects and runs say where
        raise AssertionError(f"seed {SEED}: {e}\n{drain_report(env, load_pipeline(), target)}"
                             ) from e
    result = reconcile(env, load_pipeline())
    if not result.equal:  # early drain, or lost for good? the report says which
        report = drain_report(env, load_pipeline(), target)
        later = equal_later(lambda: reconcile(env, load_pipeline()).equal)
        raise AssertionError(f"seed {SEED}: {result.to_json()}\ndrained after {waited:.1f}s, "
                             f"{later}; {report}")
    assert result.source_rows > 0


@pytest.fixture(scope="module")
def running_pipeline(stack):
    with psycopg.connect(stack.env[settings.ENV_PG_DSN]) as conn:
        seed(conn, load_pipeline(), 1500, seed=SEED)
    stack.start_pipeline()  # full load reads the snapshot exported with the slot
    return stack


def test_silver_equals_source_after_a_randomized_workload(running_pipeline) -> None:
    print(f"workload seed {SEED}")
    env = running_pipeline.env
    run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=250, rate=80, seed=SEED)
    _drain_and_reconcile(env)


def test_crashes_mid_workload_replay_and_lose_nothing(running_pipeline) -> None:
    """SIGKILL the emitter, the watcher and the Glue API (warm Spark and all) at random
    moments of a live workload; nobody restarts them but the supervisor (embedded: the
    keeper; containers: restart policies), and silver still equals source."""
    stack = running_pipeline
    env = stack.env
    rng = random.Random(SEED)
    done = threading.Event()

    def workload() -> None:
        try:
            run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=200, rate=50,
                         seed=SEED + 1)
        finally:
            done.set()

    thread = threading.Thread(target=workload)
    thread.start()
    try:
        crashed = {}
        for name in rng.sample(["emitter", "watcher", "glue"], 3):
            done.wait(rng.uniform(0.2, 1.5))
            # a crash: no clean shutdown, no final confirm or commit
            crashed[name] = stack.crash(name)
        back = {name: round(stack.wait_restarted(name, before), 1)
                for name, before in crashed.items()}
        print(f"restarted by the supervisor (seconds to healthy): {back}")
    finally:
        thread.join()
    _drain_and_reconcile(stack.env)


POISON = {  # object name in the bronze prefix -> a word of the reason
    "20261122-999999999 [1] {a,b}.csv.gz": "glob",  # and not gzip either
    "20261122-000000001.csv.gz": "gzip",
    "20261122-000000002.csv": "fields",
}


def test_poison_objects_are_quarantined_and_never_stall_the_pipeline(running_pipeline) -> None:
    """Objects the job could not read land among the real files while the workload runs:
    the Lambda moves them aside, every later change still reaches silver, and status and
    `cdclab quarantine` name each one with its reason."""
    from cdclab.services.minio import s3_client

    stack = running_pipeline
    env = stack.env
    p = settings.load_pipeline()
    s3 = s3_client(env)
    bodies = [b"not gzip", gzip.compress(b"Op,id\n" + b"I,1\n" * 500)[:-9],
              b"Op,id,url\nI,1\n"]
    for name, body in zip(POISON, bodies, strict=True):
        s3.put_object(Bucket=p.lake.bronze_bucket, Key=f"{p.bronze_prefix}/{name}", Body=body)
    run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=80, rate=60, seed=SEED + 4)
    _drain_and_reconcile(env)  # rows committed after the poison reached silver
    cli = [sys.executable, "-m", "cdclab.cli"]
    out = subprocess.run([*cli, "quarantine", "--json"], env=stack.cli_env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    reasons = {r["key"].rsplit("/", 1)[-1]: r["reason"] for r in report["object_reasons"]}
    for name, word in POISON.items():
        assert word in reasons[name], reasons
    status = json.loads(subprocess.run([*cli, "status", "--json"], env=stack.cli_env,
                                       capture_output=True, text=True, timeout=60).stdout)
    assert status["quarantine"]["objects"] >= len(POISON)


def test_source_database_crash_the_emitter_reconnects(running_pipeline) -> None:
    """PostgreSQL dies (SIGKILL: crash recovery on restart) between two workloads; the
    emitter reconnects by itself and resumes from the slot: nothing is lost."""
    stack = running_pipeline
    dsn = stack.env[settings.ENV_PG_DSN]
    run_workload(dsn, load_pipeline(), transactions=60, rate=60, seed=SEED + 2)
    emitter_run = stack.identity_of("emitter")
    stack.wait_restarted("postgres", stack.crash("postgres"))
    run_workload(dsn, load_pipeline(), transactions=60, rate=60, seed=SEED + 3)
    _drain_and_reconcile(stack.env)
    assert stack.identity_of("emitter") == emitter_run  # the same process, reconnected


def test_cli_reports_status_and_reconcile_as_json(running_pipeline) -> None:
    """The scripting contract: `status --json` and `reconcile --json` (exit 0 when equal)."""
    env = running_pipeline.cli_env  # either runtime: the CLI is told which, never guesses
    status = subprocess.run([sys.executable, "-m", "cdclab.cli", "status", "--json"],
                            env=env, capture_output=True, text=True, timeout=60)
    doc = json.loads(status.stdout)
    assert doc["postgres_dsn"].startswith("postgresql://") and doc["s3_endpoint"]
    assert {s["name"] for s in doc["services"]} >= {"postgres", "minio", "iceberg-rest",
                                                   "glue", "emitter", "watcher"}
    emitter = doc["emitter"]  # read from the emitter's state, in either runtime
    assert emitter["phase"] == "streaming" and "public.hosts_demo" in emitter["tables"]
    _drain_and_reconcile(running_pipeline.env)
    result = subprocess.run([sys.executable, "-m", "cdclab.cli", "reconcile", "--json"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["equal"] is True and report["mismatching_keys"] == []
    assert report["source_rows"] == report["silver_rows"] > 0
    # drained: every service up and data flowing, so status exits 0
    status = subprocess.run([sys.executable, "-m", "cdclab.cli", "status", "--json"],
                            env=env, capture_output=True, text=True, timeout=60)
    doc = json.loads(status.stdout)
    assert doc["pipeline"]["ok"] is True, doc["pipeline"]
    assert doc["pipeline"]["facts"]["consecutive_failed_runs"] == 0
    assert doc["pipeline"]["facts"]["slot"]["active"] is True
    assert status.returncode == 0, status.stderr
    text = subprocess.run([sys.executable, "-m", "cdclab.cli", "status"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "pipeline: data is flowing" in text.stdout and "quarantine:" in text.stdout


OWN_SCRIPT = """
import json, sys
from awsglue.context import GlueContext
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
args = getResolvedOptions(sys.argv, ["table", "min_id"])
glue = GlueContext(SparkContext.getOrCreate())
hosts = glue.create_dynamic_frame.from_catalog(
    database="airbnb", table_name=args["table"], push_down_predicate=f"id >= {args['min_id']}")
print("CDCLAB_METRICS " + json.dumps({"hosts": hosts.count()}))
"""


def test_bring_your_own_script_with_cdclab_job(running_pipeline, tmp_path) -> None:
    """`cdclab job add` uploads a script and registers it; `cdclab job run` follows a run."""
    _drain_and_reconcile(running_pipeline.env)
    script = tmp_path / "count_hosts.py"
    script.write_text(OWN_SCRIPT)
    cli = [sys.executable, "-m", "cdclab.cli", "job"]
    env = running_pipeline.cli_env
    added = subprocess.run([*cli, "add", str(script), "--arg", "table=hosts_silver",
                            "--arg", "min_id=1"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "job count_hosts created" in added.stdout
    ran = subprocess.run([*cli, "run", "count_hosts", "--arg", "min_id=2"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "SUCCEEDED" in ran.stdout
    bad = subprocess.run([*cli, "run", "count_hosts", "--arg", "table=nope"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1 and "FAILED" in bad.stdout and "nope" in bad.stdout


TRIGGERED_SCRIPT = """
import json, sys
from awsglue.context import GlueContext
from awsglue.job import Job
from awsglue.utils import getResolvedOptions
from pyspark.context import SparkContext
args = getResolvedOptions(sys.argv, ["JOB_NAME"])
glue = GlueContext(SparkContext.getOrCreate())
job = Job(glue)
job.init(args["JOB_NAME"], args)
new = glue.create_dynamic_frame.from_catalog(database="airbnb", table_name="hosts_bronze",
                                             transformation_ctx="new_bronze")
print("CDCLAB_METRICS " + json.dumps({"new_bronze_rows": new.count()}))
job.commit()
"""


def test_jobs_brought_along_run_for_every_batch_of_new_objects(running_pipeline,
                                                               tmp_path) -> None:
    """`cdclab job add --trigger` (or CreateJob with the cdclab:trigger tag) makes the
    watcher's Lambda start the job with the pipeline's, on new bronze objects alone."""
    import boto3

    env = running_pipeline.env
    _drain_and_reconcile(env)
    script = tmp_path / "new_bronze.py"
    script.write_text(TRIGGERED_SCRIPT)
    added = subprocess.run([sys.executable, "-m", "cdclab.cli", "job", "add", str(script),
                            "--trigger"], env=running_pipeline.cli_env, capture_output=True,
                           text=True, timeout=120)
    assert added.returncode == 0 and "runs for every batch" in added.stdout, added.stderr
    glue = boto3.client("glue", endpoint_url=env[settings.ENV_GLUE_ENDPOINT],
                        region_name=settings.DEFAULT_REGION,
                        aws_access_key_id=env[settings.ENV_ACCESS_KEY],
                        aws_secret_access_key=env[settings.ENV_SECRET_KEY])
    job = glue.get_job(JobName="new_bronze")["Job"]
    glue.create_job(Name="new_bronze_boto3", Role=job["Role"], Command=job["Command"],
                    GlueVersion=job["GlueVersion"], DefaultArguments=job["DefaultArguments"],
                    Tags={settings.TRIGGER_TAG: settings.TRIGGER_ON_BRONZE})
    run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=20, rate=40, seed=SEED + 7)
    _drain_and_reconcile(env)

    def succeeded(name: str) -> list[dict]:
        return [r for r in glue.get_job_runs(JobName=name)["JobRuns"]
                if r["JobRunState"] == "SUCCEEDED"]

    from tests.resources.waiting import wait_for

    wait_for(lambda: succeeded("new_bronze") and succeeded("new_bronze_boto3"), 300,
             "the triggered jobs' runs", every=2)
    glue.delete_job(JobName="new_bronze")  # later tests see only the pipeline's job
    glue.delete_job(JobName="new_bronze_boto3")
