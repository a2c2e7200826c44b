"""Job names as Glue checks them, and one state file per name, inside its folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from urllib.parse import quote

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glue_local import bookmarks, job_names, jobs_api, state_upgrade, tags_api
from glue_local.server import ServerContext, dispatch, operations, running_server
from pipeline_contract.settings import load_pipeline

SCRIPT = "/opt/job.py"  # a local path: the administrator may register one

# any string, weighted to the names that broke things: dots, slashes, case, spaces,
# control characters, lone surrogates, 255 +- 1 characters
awkward = st.sampled_from(["..", ".", "/", "a/../b", "Bronze to Silver", "Bronze_to_Silver",
                           "bronze_to_silver", "BRONZE_TO_SILVER", "%2e%2e", "~", "a\tb",
                           "a\nb", "\ud800", "x" * 254, "x" * 255, "x" * 256, "é" * 255])
names = st.one_of(awkward, st.text(max_size=300),
                  st.text(alphabet=st.characters(codec="utf-8"), min_size=100, max_size=260))


class _NoRunner:
    def submit(self, *_):  # runs are not the point here
        pass


def _ctx(root: Path) -> ServerContext:
    return ServerContext(state_dir=root, env={}, jobs=jobs_api.JobStore(root),
                         runner=_NoRunner(),
                         code_places=jobs_api.default_code_places(load_pipeline()))


def _call(ctx, op: str, body: dict) -> tuple[int, dict]:
    return dispatch(operations(), ctx, f"AWSGlue.{op}", json.dumps(body).encode())


def _files_of(ctx, name: str) -> dict[str, Path]:
    return {"job": ctx.jobs.job_path(name), "runs": ctx.jobs.runs_folder(name),
            "bookmark": bookmarks.bookmark_path(ctx.state_dir, name),
            "tags": tags_api.tags_path(ctx.state_dir, name)}


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(names, min_size=1, max_size=6, unique=True))
def test_a_name_is_refused_or_gets_files_of_its_own_inside_their_folders(tmp_path, batch):
    root = tmp_path / uuid.uuid4().hex  # one state dir per example
    ctx = _ctx(root)
    owner: dict[Path, str] = {}
    for name in batch:
        status, reply = _call(ctx, "CreateJob", {
            "Name": name, "Role": "r", "Command": {"ScriptLocation": SCRIPT},
            "Tags": {"k": "v"}})
        if not job_names.valid_name(name):
            assert (status, reply["__type"]) == (400, "ValidationException"), name
            assert reply["message"].startswith("1 validation error detected: Value ")
            assert " at 'name' failed to satisfy constraint: Member must " in reply["message"]
            continue
        assert status == 200, (name, reply)
        for kind, path in _files_of(ctx, name).items():
            folder = {"job": ctx.jobs.jobs_dir, "runs": ctx.jobs.runs_dir,
                      "bookmark": root.joinpath(*bookmarks.BOOKMARKS_DIR),
                      "tags": root.joinpath(*tags_api.TAGS_DIR)}[kind]
            assert path.parent == folder and path.name not in (".", ".."), (kind, name)
            assert len(path.name.encode()) <= 200
            assert owner.setdefault(path, name) == name, f"{name!r} and {owner[path]!r}"
        assert _call(ctx, "GetJob", {"JobName": name})[1]["Job"]["Name"] == name
    created = {n for n in batch if job_names.valid_name(n)}
    assert {j["Name"] for j in ctx.jobs.list_jobs()} == created
    for path in root.rglob("*"):  # nothing anywhere else
        assert path.resolve().is_relative_to(root.resolve())
    for name in created:  # deleting one job leaves every other's files
        _call(ctx, "DeleteJob", {"JobName": name})
        assert not ctx.jobs.job_path(name).exists()
        others = created - {name}
        assert {j["Name"] for j in ctx.jobs.list_jobs()} == others
        for other in others:
            assert tags_api.load_job_tags(root, other) == {"k": "v"}
        created = others


@given(st.text(max_size=300))
def test_state_names_are_one_to_one_path_safe_and_case_distinct(name):
    encoded = job_names.state_name(name)
    assert "/" not in encoded and encoded not in ("", ".", "..")
    assert not encoded.startswith(".") and encoded == encoded.lower()
    assert len(encoded) <= job_names.STATE_NAME_MAX + 65
    for other in {name.upper(), name.lower(), name.replace(" ", "_"), name + " "} - {name}:
        assert job_names.state_name(other) != encoded


def test_the_found_cases():
    """`Bronze to Silver` and the pipeline's `Bronze_to_Silver` are two jobs with two
    bookmarks; `..` stays in its folder; 300 characters are AWS's ValidationException."""
    assert job_names.state_name("Bronze to Silver") != job_names.state_name("Bronze_to_Silver")
    assert job_names.state_name("..") == "%2e%2e"
    assert job_names.state_name("bronze_to_silver") == "bronze_to_silver"
    long = job_names.state_name("x" * 255)
    assert long.startswith("x" * 48 + "~") and len(long) == 48 + 1 + 64


def test_delete_of_a_lookalike_job_keeps_the_pipelines_bookmark(tmp_path):
    with running_server(tmp_path, env={}, quiet=True) as server:
        glue = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                            aws_access_key_id="x", aws_secret_access_key="y")
        for name in ("Bronze_to_Silver", "Bronze to Silver", ".."):
            glue.create_job(Name=name, Role="r", Command={"ScriptLocation": SCRIPT})
        pipeline = bookmarks.bookmark_path(tmp_path, "Bronze_to_Silver")
        pipeline.parent.mkdir(parents=True, exist_ok=True)
        pipeline.write_text(json.dumps(bookmarks.empty("Bronze_to_Silver")))
        glue.delete_job(JobName="Bronze to Silver")
        glue.delete_job(JobName="..")
        assert pipeline.exists()
        assert glue.get_job(JobName="Bronze_to_Silver")["Job"]["Name"] == "Bronze_to_Silver"
        left = {p.name for p in (tmp_path / "glue").iterdir()} - {"driver.json"}  # runner's
        assert left == {"bookmarks", "jobs", "state-names.json"}  # nothing of ".." here

        with pytest.raises(glue.exceptions.ValidationException) as info:
            glue.create_job(Name="j" * 300, Role="r", Command={"ScriptLocation": SCRIPT})
        assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert info.value.response["Error"]["Message"] == (
            f"1 validation error detected: Value '{'j' * 300}' at 'name' failed to satisfy "
            "constraint: Member must have length less than or equal to 255")
        for call in (lambda: glue.get_job(JobName="j" * 256),
                     lambda: glue.start_job_run(JobName="j" * 256),
                     lambda: glue.delete_job(JobName="a\x00b")):
            with pytest.raises(glue.exceptions.ValidationException, match="'jobName'"):
                call()
        # GetJobBookmark's JobName has no constraints in the model: no such job
        with pytest.raises(glue.exceptions.EntityNotFoundException):
            glue.get_job_bookmark(JobName="j" * 300)


def test_earlier_versions_state_files_are_found_where_their_owner_is_known(tmp_path):
    """Files named the old ways move to state_name's, once; a bookmark two jobs shared is
    set aside (whose it is cannot be known)."""
    glue = tmp_path / "glue"
    old_jobs = {"Bronze_to_Silver": "Bronze_to_Silver", "Nightly Run": "Nightly%20Run",
                "a b": "a%20b", "a_b": "a_b"}
    for name, stem in old_jobs.items():
        (glue / "jobs").mkdir(parents=True, exist_ok=True)
        (glue / "jobs" / f"{stem}.json").write_text(json.dumps({"Name": name}))
        (glue / "runs" / stem).mkdir(parents=True)
        (glue / "runs" / stem / "jr_1.json").write_text(json.dumps(
            {"Id": "jr_1", "JobName": name, "JobRunState": "SUCCEEDED", "StartedOn": 1}))
        (glue / "tags" / "job").mkdir(parents=True, exist_ok=True)
        (glue / "tags" / "job" / f"{quote(name, safe='')}.json").write_text(
            json.dumps({"Tags": {"owner": name}}))
    marks = glue / "bookmarks"
    marks.mkdir()
    (marks / "Bronze_to_Silver.json").write_text(json.dumps(bookmarks.empty("Bronze_to_Silver")))
    (marks / "Nightly_Run.json").write_text(json.dumps(bookmarks.empty("Nightly Run")))
    (marks / "a_b.json").write_text(json.dumps(bookmarks.empty("a b")))  # a b and a_b's

    moved = state_upgrade.upgrade(tmp_path)
    assert moved and state_upgrade.upgrade(tmp_path) == []  # once
    store = jobs_api.JobStore(tmp_path)
    for name in old_jobs:
        assert store.get_job(name) == {"Name": name}
        assert [r["Id"] for r in store.list_runs(name)] == ["jr_1"]
        assert tags_api.load_job_tags(tmp_path, name) == {"owner": name}
    assert bookmarks.load(tmp_path, "Bronze_to_Silver")["job"] == "Bronze_to_Silver"
    assert bookmarks.load(tmp_path, "Nightly Run")["job"] == "Nightly Run"
    for shared in ("a b", "a_b"):
        assert not bookmarks.bookmark_path(tmp_path, shared).exists()
    assert (marks / "a_b.json.shared").exists()


@pytest.mark.skipif(shutil.which("java") is None, reason="no java")
def test_the_jvm_side_names_bookmark_files_the_same(tmp_path):
    from glue_local import glue_jvm

    jar = glue_jvm.build()
    samples = ["Bronze_to_Silver", "Bronze to Silver", "..", "a/b", "é😀", "x" * 255,
               "é" * 40 + "x" * 100, "MiXeD.Case-1_2", "~tilde%"]
    out = subprocess.run(["java", "-cp", str(jar), "org.cdclab.glue.StateNames"],
                         input="\n".join(samples) + "\n", capture_output=True,
                         text=True, encoding="utf-8", check=True, timeout=60).stdout
    assert out.splitlines() == [job_names.state_name(s) for s in samples]
