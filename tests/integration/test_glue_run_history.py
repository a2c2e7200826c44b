"""The local Glue API keeps its run history bounded (glue_local.run_history) without
breaking the bookmark: real boto3 against the in-process API, Spark-free runs."""

from __future__ import annotations

import json

import boto3
import pytest

from glue_local import bookmarks, run_history
from glue_local.server import running_server
from tests.integration.test_glue_runs import job, succeeded

pytestmark = pytest.mark.integration


def test_old_runs_are_forgotten_but_bookmarked_and_recent_ones_stay(tmp_path,
                                                                    monkeypatch) -> None:
    monkeypatch.setattr(run_history, "RUNS_KEPT", 3)
    state = tmp_path / "state"
    with running_server(state, env={}, quiet=True) as server:
        glue = boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                            aws_access_key_id="x", aws_secret_access_key="y")
        job(glue, tmp_path, "hist", "print('hello')\n")
        runs = [succeeded(glue, "hist")["Id"] for _ in range(2)]
        # the bookmark's history names the first run (as the JVM side writes it)
        path = bookmarks.bookmark_path(state, "hist")
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"src": {"cutoff_ms": 5, "band": {}}}
        path.write_text(json.dumps({**bookmarks.empty("hist"), "run": 1, "version": 1,
                                    "run_id": runs[0], "contexts": entry,
                                    "history": [{"run_id": runs[0], "contexts": entry}]}))
        runs += [succeeded(glue, "hist")["Id"] for _ in range(4)]

        kept = [r["Id"] for r in glue.get_job_runs(JobName="hist")["JobRuns"]]
        assert kept == [*reversed(runs[-3:]), runs[0]]  # newest 3, and the bookmarked one
        for gone in runs[1:3]:
            with pytest.raises(glue.exceptions.EntityNotFoundException):
                glue.get_job_run(JobName="hist", RunId=gone)
            assert not (state / "glue" / "scripts" / gone).exists()
            assert not (state / "glue" / "runs" / "hist" / f"{gone}.json").exists()
        assert (state / "glue" / "scripts" / runs[-1]).exists()
        # ResetJobBookmark(RunId) still finds the kept run's state
        glue.reset_job_bookmark(JobName="hist", RunId=runs[0])
        assert json.loads(glue.get_job_bookmark(JobName="hist")["JobBookmarkEntry"][
            "JobBookmark"]) == entry
