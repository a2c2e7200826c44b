"""Whatever JSON a client sends, the local Glue API answers with one of Glue's errors
(HTTP 400), never a 500, and writes nothing outside its state dir."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glue_local import jobs_api, request_types
from glue_local.errors import GlueError
from glue_local.server import ServerContext, dispatch, operations
from pipeline_contract.settings import load_pipeline

MEMBERS = ["Name", "JobName", "Command", "DefaultArguments", "NonOverridableArguments",
           "Arguments", "RunId", "JobRunId", "Timeout", "GlueVersion", "MaxResults",
           "NextToken", "JobRunIds", "JobUpdate", "ExecutionProperty", "Tags", "ResourceArn",
           "TagsToAdd", "TagsToRemove", "MaxRetries", "DatabaseName", "TableName",
           "DatabaseInput", "TableInput", "PartitionInput", "PartitionInputList",
           "PartitionValues", "PartitionsToDelete", "Expression", "Segment"]
scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
           | st.text(max_size=8) | st.sampled_from(["j", "..", "db", "/tmp/x.py"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(MEMBERS) | st.text(max_size=4), inner,
                                        max_size=3), max_leaves=6)


class _Runner:
    def submit(self, *_):
        pass

    def stop(self, *_):
        return None


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    root = tmp_path_factory.mktemp("state")
    ctx = ServerContext(state_dir=root, env={}, jobs=jobs_api.JobStore(root), runner=_Runner(),
                        code_places=jobs_api.default_code_places(load_pipeline()))
    dispatch(operations(), ctx, "AWSGlue.CreateJob", json.dumps(
        {"Name": "j", "Role": "r", "Command": {"ScriptLocation": "/opt/j.py"}}).encode())
    return ctx


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(sorted(operations())),
       body=st.dictionaries(st.sampled_from(MEMBERS), values, max_size=4))
def test_any_json_gets_a_glue_error_never_a_500(ctx, op, body):
    status, reply = dispatch(operations(), ctx, f"AWSGlue.{op}", json.dumps(body).encode())
    assert status in (200, 400), reply
    for path in ctx.state_dir.rglob("*"):
        assert path.resolve().is_relative_to(ctx.state_dir.resolve())


def test_a_wrong_json_type_is_a_serialization_exception_naming_the_member():
    with pytest.raises(GlueError) as info:
        request_types.check("CreateJob", {"Name": "j", "Command": {"ScriptLocation": 5}})
    assert info.value.code == "SerializationException"
    assert "CreateJob.Command.ScriptLocation" in info.value.message
    request_types.check("CreateJob", {"Name": "j", "Unknown": [1], "Timeout": None})
