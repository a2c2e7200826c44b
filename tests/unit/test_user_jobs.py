"""`cdclab job add/run`: names, arguments and the job definition (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclab.user_jobs import (
    JobArgumentError,
    job_name_for,
    parse_arguments,
    script_key,
    user_job_definition,
)
from pipeline_contract import settings


def test_names_and_arguments():
    assert job_name_for(Path("/x/my_job.py"), None) == "my_job"
    assert job_name_for(Path("/x/a.py"), "Nightly.v2") == "Nightly.v2"
    with pytest.raises(JobArgumentError, match="job name 'a b'"):
        job_name_for(Path("/x/a.py"), "a b")
    assert parse_arguments(["source=s3://b/k", "--n=1=2", "empty="]) == {
        "--source": "s3://b/k", "--n": "1=2", "--empty": ""}
    with pytest.raises(JobArgumentError, match="expected key=value"):
        parse_arguments(["novalue"])
    assert script_key("n") == "jobs/n.py"


def test_definition_has_the_lab_glue_settings_and_the_users_arguments_win():
    p = settings.load_pipeline()
    d = user_job_definition(p, "s3://scripts/jobs/n.py",
                            {"--job-bookmark-option": "job-bookmark-disable", "--x": "1"}, "r")
    assert d["Command"]["ScriptLocation"] == "s3://scripts/jobs/n.py"
    assert d["GlueVersion"] == p.glue_job.glue_version
    args = d["DefaultArguments"]
    assert args["--datalake-formats"] == "iceberg"
    assert "org.apache.iceberg.aws.glue.GlueCatalog" in args["--conf"]
    assert args["--TempDir"] == f"s3://{p.lake.scripts_bucket}/temp/"
    assert args["--job-bookmark-option"] == "job-bookmark-disable"
    assert args["--x"] == "1"
