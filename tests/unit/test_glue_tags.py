"""Job tags (CreateJob Tags, GetTags, TagResource, UntagResource) and ListJobs on the local
Glue API, spoken to by real boto3 over HTTP (botocore's Glue model validates each request
and parses each response); no Spark."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from glue_local.server import running_server

REGION = "eu-west-1"
ACCOUNT = "000000000000"
COMMAND = {"Name": "glueetl", "ScriptLocation": "s3://cdclab-scripts/jobs/job.py"}


def arn(name: str, kind: str = "job", region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:aws:glue:{region}:{account}:{kind}/{name}"


@pytest.fixture()
def glue(tmp_path: Path):
    with running_server(tmp_path / "state", env={"AWS_DEFAULT_REGION": REGION},
                        quiet=True) as server:
        yield boto3.client("glue", endpoint_url=server.endpoint, region_name=REGION,
                           aws_access_key_id="x", aws_secret_access_key="y")


def create(glue, name: str, tags: dict | None = None) -> None:
    glue.create_job(Name=name, Role="local", Command=COMMAND, **({"Tags": tags} if tags else {}))


def test_create_job_tags_are_stored_but_not_returned_by_get_job(glue) -> None:
    create(glue, "tagged", {"team": "data", "env": ""})
    assert "Tags" not in glue.get_job(JobName="tagged")["Job"]
    assert all("Tags" not in j for j in glue.get_jobs()["Jobs"])
    assert glue.get_tags(ResourceArn=arn("tagged"))["Tags"] == {"team": "data", "env": ""}
    create(glue, "plain")
    assert glue.get_tags(ResourceArn=arn("plain"))["Tags"] == {}
    # UpdateJob replaces the definition (JobUpdate has no Tags): the tags stay
    glue.update_job(JobName="tagged", JobUpdate={"Role": "r2", "Command": COMMAND})
    assert glue.get_tags(ResourceArn=arn("tagged"))["Tags"] == {"team": "data", "env": ""}


def test_tag_and_untag_resource(glue) -> None:
    create(glue, "j", {"a": "1"})
    glue.tag_resource(ResourceArn=arn("j"), TagsToAdd={"b": "2", "a": "one"})
    assert glue.get_tags(ResourceArn=arn("j"))["Tags"] == {"a": "one", "b": "2"}
    glue.untag_resource(ResourceArn=arn("j"), TagsToRemove=["a", "never-set"])
    assert glue.get_tags(ResourceArn=arn("j"))["Tags"] == {"b": "2"}
    glue.untag_resource(ResourceArn=arn("j"), TagsToRemove=["b"])
    assert glue.get_tags(ResourceArn=arn("j"))["Tags"] == {}


def test_job_names_with_slashes_and_spaces(glue) -> None:
    create(glue, "team/odd name", {"k": "v"})
    assert glue.get_tags(ResourceArn=arn("team/odd name"))["Tags"] == {"k": "v"}
    assert glue.list_jobs(Tags={"k": "v"})["JobNames"] == ["team/odd name"]


def test_tags_are_deleted_with_the_job(glue) -> None:
    create(glue, "gone", {"a": "1"})
    glue.delete_job(JobName="gone")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_tags(ResourceArn=arn("gone"))
    create(glue, "gone")  # recreated under the name: starts without tags
    assert glue.get_tags(ResourceArn=arn("gone"))["Tags"] == {}
    assert glue.list_jobs(Tags={"a": "1"})["JobNames"] == []


def test_unknown_job_region_or_account_is_entity_not_found(glue) -> None:
    create(glue, "j")
    for other in (arn("nope"), arn("j", region="us-east-1"), arn("j", account="111122223333"),
                  "arn:aws-cn:glue:eu-west-1:000000000000:job/j"):
        with pytest.raises(glue.exceptions.EntityNotFoundException):
            glue.get_tags(ResourceArn=other)
        with pytest.raises(glue.exceptions.EntityNotFoundException):
            glue.tag_resource(ResourceArn=other, TagsToAdd={"a": "b"})
        with pytest.raises(glue.exceptions.EntityNotFoundException):
            glue.untag_resource(ResourceArn=other, TagsToRemove=["a"])


def test_other_resource_types_and_non_arns_are_invalid_input(glue) -> None:
    for kind in ("database", "table", "crawler", "trigger", "connection"):
        with pytest.raises(glue.exceptions.InvalidInputException, match=kind):
            glue.get_tags(ResourceArn=arn("x", kind=kind))
    with pytest.raises(glue.exceptions.InvalidInputException, match="catalog"):
        glue.tag_resource(ResourceArn=f"arn:aws:glue:{REGION}:{ACCOUNT}:catalog",
                          TagsToAdd={"a": "b"})
    for bad in ("job/j", "arn:aws:s3:::bucket", f"arn:aws:glue:{REGION}:{ACCOUNT}:job/"):
        with pytest.raises(glue.exceptions.InvalidInputException):
            glue.get_tags(ResourceArn=bad)


def test_tag_limits_of_the_model(glue) -> None:
    with pytest.raises(glue.exceptions.InvalidInputException, match="at most 50"):
        create(glue, "many", {f"k{i}": "v" for i in range(51)})
    with pytest.raises(glue.exceptions.EntityNotFoundException):  # nothing was created
        glue.get_job(JobName="many")
    create(glue, "j", {f"k{i}": "v" for i in range(50)})
    with pytest.raises(glue.exceptions.InvalidInputException, match="at most 50"):
        glue.tag_resource(ResourceArn=arn("j"), TagsToAdd={"one-more": "v"})
    glue.tag_resource(ResourceArn=arn("j"), TagsToAdd={"k0": "changed"})  # still 50
    assert glue.get_tags(ResourceArn=arn("j"))["Tags"]["k0"] == "changed"
    for bad in ({"k" * 129: "v"}, {"k": "v" * 257}, {"aws:owner": "me"}, {"k": "AWS:x"}):
        with pytest.raises(glue.exceptions.InvalidInputException):
            glue.tag_resource(ResourceArn=arn("j"), TagsToAdd=bad)
    glue.tag_resource(ResourceArn=arn("j"), TagsToAdd={"k1": "v" * 256})  # at the limit
    with pytest.raises(glue.exceptions.InvalidInputException):
        glue.untag_resource(ResourceArn=arn("j"), TagsToRemove=[f"k{i}" for i in range(51)])


def test_list_jobs_filters_by_every_given_tag(glue) -> None:
    create(glue, "b-both", {"team": "data", "trigger": "bronze"})
    create(glue, "a-team", {"team": "data"})
    create(glue, "c-other", {"team": "web", "trigger": "bronze"})
    create(glue, "d-none")
    assert glue.list_jobs()["JobNames"] == ["a-team", "b-both", "c-other", "d-none"]
    assert glue.list_jobs(Tags={})["JobNames"] == ["a-team", "b-both", "c-other", "d-none"]
    assert glue.list_jobs(Tags={"team": "data"})["JobNames"] == ["a-team", "b-both"]
    assert glue.list_jobs(Tags={"team": "data", "trigger": "bronze"})["JobNames"] == ["b-both"]
    assert glue.list_jobs(Tags={"trigger": "bronze"})["JobNames"] == ["b-both", "c-other"]
    assert glue.list_jobs(Tags={"team": "DATA"})["JobNames"] == []  # case-sensitive
    glue.untag_resource(ResourceArn=arn("b-both"), TagsToRemove=["trigger"])
    assert glue.list_jobs(Tags={"trigger": "bronze"})["JobNames"] == ["c-other"]


def test_list_jobs_pages(glue) -> None:
    for i in range(7):
        create(glue, f"job{i}", {"even": "yes"} if i % 2 == 0 else None)
    first = glue.list_jobs(MaxResults=3)
    assert first["JobNames"] == ["job0", "job1", "job2"] and first["NextToken"]
    # a job created before the cursor, and one deleted after it, between pages
    create(glue, "job00")
    glue.delete_job(JobName="job4")
    second = glue.list_jobs(MaxResults=3, NextToken=first["NextToken"])
    assert second["JobNames"] == ["job3", "job5", "job6"]
    assert "NextToken" not in second  # nothing after: no token
    evens, token = [], None
    while True:
        page = glue.list_jobs(MaxResults=1, Tags={"even": "yes"},
                              **({"NextToken": token} if token else {}))
        evens += page["JobNames"]
        token = page.get("NextToken")
        if not token:
            break
    assert evens == ["job0", "job2", "job6"]
    # boto3's own paginator for ListJobs (NextToken/MaxResults) walks it too
    pages = glue.get_paginator("list_jobs").paginate(PaginationConfig={"PageSize": 2})
    assert [n for p in pages for n in p["JobNames"]] == [
        "job0", "job00", "job1", "job2", "job3", "job5", "job6"]


def test_list_jobs_invalid_input(glue) -> None:
    with pytest.raises(glue.exceptions.InvalidInputException, match="MaxResults"):
        glue.list_jobs(MaxResults=1001)
    with pytest.raises(glue.exceptions.InvalidInputException, match="NextToken"):
        glue.list_jobs(NextToken="%%% not a token")
    with pytest.raises(glue.exceptions.InvalidInputException):
        glue.list_jobs(Tags={f"k{i}": "v" for i in range(51)})


def test_tags_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for _ in range(2):
        with running_server(state, env={}, quiet=True) as server:
            client = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                                  aws_access_key_id="x", aws_secret_access_key="y")
            if not client.list_jobs()["JobNames"]:
                create(client, "kept", {"a": "1"})
            job = "arn:aws:glue:us-east-1:000000000000:job/kept"  # the default region
            assert client.get_tags(ResourceArn=job)["Tags"] == {"a": "1"}
            assert client.list_jobs(Tags={"a": "1"})["JobNames"] == ["kept"]
