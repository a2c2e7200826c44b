"""Code only from where the administrator put it: the scripts bucket (outside what other
clients may write) or a local path the administrator registers; other clients set no
code-bearing argument at all."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclab.services.glue_api import pipeline_job_definition
from glue_local import access, code_sources, jobs_api, run_args
from glue_local.errors import GlueError
from glue_local.server import ENV_GLUE_CLIENTS, running_server
from pipeline_contract.settings import load_pipeline

P = load_pipeline()
SCRIPTS = P.lake.scripts_bucket
PLACES = jobs_api.default_code_places(load_pipeline())
OK_S3 = f"s3://{SCRIPTS}/jobs/my_job.py"
QUARANTINE = f"s3://{P.lake.bronze_bucket}/{P.lake.quarantine_prefix}/x.py"
KEYS = {access.ADMIN: ("AKIDADMIN", "a-secret"), access.WATCHER: ("AKIDWATCH", "w-secret")}


def refused(fn, *args, **kwargs) -> str:
    with pytest.raises(GlueError) as info:
        fn(*args, **kwargs)
    assert info.value.code == "InvalidInputException"
    return info.value.message


def test_what_other_clients_may_write_in_the_scripts_bucket_is_known():
    """From pipeline_contract.minio_users' policies: the jobs' temp dir and the backlog markers."""
    assert PLACES.scripts_bucket == SCRIPTS
    assert f"arn:aws:s3:::{SCRIPTS}/temp/*" in PLACES.others_write
    assert any(p.endswith("*.backlog") for p in PLACES.others_write)


@pytest.mark.parametrize("location, why", [
    ("/tmp/x.py", None), ("file:///tmp/x.py", None), (OK_S3, None),
    (QUARANTINE, "is not the scripts bucket"),
    (f"s3://{SCRIPTS}/temp/x.py", "other clients may write there"),
    (f"s3://{SCRIPTS}/jobs/x.backlog", "other clients may write there"),
    (f"s3://{SCRIPTS}/", "names no object"),
    ("https://example.com/x.py", "https:// locations are not allowed"),
])
def test_a_job_definitions_code_locations(location, why):
    for field in (None, *code_sources.LOCATION_ARGUMENTS):
        job = ({"Command": {"ScriptLocation": location}} if field is None else
               {"Command": {"ScriptLocation": OK_S3}, "DefaultArguments": {field: location}})
        if why is None:
            code_sources.check_job(job, "Job j", PLACES)
            continue
        message = refused(code_sources.check_job, job, "Job j", PLACES)
        assert why in message and location[:40] in message
        assert (field or "Command.ScriptLocation") in message
        assert f"s3://{SCRIPTS}/" in message  # what is allowed


def test_lists_modules_and_nonoverridable_arguments_are_checked_item_by_item():
    job = {"Command": {"ScriptLocation": OK_S3}, "NonOverridableArguments": {
        run_args.EXTRA_JARS: f"{OK_S3[:-3]}.jar, s3://elsewhere/evil.jar"}}
    assert "s3://elsewhere/evil.jar" in refused(code_sources.check_job, job, "Job j", PLACES)
    modules = {run_args.PYTHON_MODULES: f"pandas==2.2,/opt/w.whl,s3://{SCRIPTS}/w/x.whl"}
    code_sources.check_arguments(modules, "DefaultArguments", PLACES, admin=True)  # index, paths
    modules[run_args.PYTHON_MODULES] += f",{QUARANTINE}l"
    assert "--additional-python-modules" in refused(
        code_sources.check_arguments, modules, "DefaultArguments", PLACES, admin=True)


@given(name=st.sampled_from(sorted(code_sources.CODE_ARGUMENTS)), value=st.text(max_size=40))
def test_no_code_bearing_run_argument_from_other_clients(name, value):
    message = refused(code_sources.check_arguments, {name: value}, "StartJobRun Arguments",
                      PLACES, admin=False)
    assert name in message and "only the administrator" in message
    code_sources.check_arguments({"--mode": value, "--TempDir": value},
                                 "StartJobRun Arguments", PLACES, admin=False)


def test_the_pipelines_own_job_with_its_local_script_is_accepted():
    code_sources.check_job(pipeline_job_definition(P), f"Job {P.glue_job.name}", PLACES)


@pytest.fixture()
def api(tmp_path, monkeypatch):
    import boto3

    monkeypatch.setenv(ENV_GLUE_CLIENTS, ",".join(f"{n}:{k}:{s}" for n, (k, s) in KEYS.items()))
    script = tmp_path / "job.py"
    script.write_text("print('hello')\n")
    with running_server(tmp_path / "state", quiet=True) as server:
        def client(name):
            key, secret = KEYS[name]
            return boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                                aws_access_key_id=key, aws_secret_access_key=secret)

        yield client(access.ADMIN), client(access.WATCHER), str(script)


def test_the_found_attack_is_refused_and_the_pipeline_still_runs(api):
    admin, watcher, script = api
    for location in ("/tmp/x.py", QUARANTINE):
        with pytest.raises(watcher.exceptions.AccessDeniedException):
            watcher.create_job(Name="evil", Role="r", Command={"ScriptLocation": location})
    with pytest.raises(admin.exceptions.InvalidInputException, match="not the scripts bucket"):
        admin.create_job(Name="evil", Role="r", Command={"ScriptLocation": QUARANTINE})
    admin.create_job(Name="mine", Role="r", Command={"ScriptLocation": script},
                     DefaultArguments={"--extra-py-files": script})  # the admin's local path
    for args in ({"--extra-py-files": "/tmp/evil.py"}, {"--conf": "spark.pyspark.python=/x"},
                 {"--additional-python-modules": "evil"}):
        with pytest.raises(watcher.exceptions.InvalidInputException,
                           match=f"StartJobRun Arguments: {next(iter(args))} brings code"):
            watcher.start_job_run(JobName="mine", Arguments=args)
    assert admin.get_job_runs(JobName="mine")["JobRuns"] == []  # nothing started
    run = watcher.start_job_run(JobName="mine", Arguments={"--mode": "x"})["JobRunId"]
    assert watcher.get_job_run(JobName="mine", RunId=run)["JobRun"]["Arguments"] == {
        "--mode": "x"}
    with pytest.raises(admin.exceptions.InvalidInputException, match="other clients may"):
        admin.start_job_run(JobName="mine",
                            Arguments={"--extra-files": f"s3://{SCRIPTS}/temp/x.txt"})
