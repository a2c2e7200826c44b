"""Backpressure on the real watcher process, real MinIO and the real local Glue API: a run
that reports "backlog" (it read its cap of files) gets a follow-up run with no new upload,
until a run leaves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclab import settings
from cdclab.services.base import StackContext
from cdclab.services.glue_api import GlueApiService
from cdclab.services.watcher import WatcherService
from tests.integration.test_watcher import (
    glue_with_job,
    read_state,
    runs,
    upload,
    wait_for,
)
from tests.resources.launch import launch

pytestmark = pytest.mark.integration


@pytest.fixture()
def glue_ctx(empty_bronze, tmp_path: Path):
    """The local Glue API (no Spark) beside the test's MinIO (as test_watcher's)."""
    ctx = StackContext(state_dir=tmp_path / "state", env=dict(empty_bronze["env"]))
    running = launch(GlueApiService(warm=False), ctx, mounts=(tmp_path,))
    try:
        yield ctx
    finally:
        running.stop()

# reads "3 files per run" of a backlog of 10: backlog on runs 1-3, none on run 4
CAPPED_JOB = """
import json, pathlib, sys
counter = pathlib.Path(sys.argv[0]).with_suffix(".runs")
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
left = max(0, 10 - 3 * n)
print("CDCLAB_METRICS " + json.dumps({"files": min(3, 10 - 3 * (n - 1)),
                                      "backlog": left > 0}))
"""


def test_a_backlog_gets_runs_until_none_is_left_without_uploads(empty_bronze, glue_ctx,
                                                                tmp_path: Path) -> None:
    p = settings.load_pipeline()
    s3, ctx = empty_bronze["s3"], glue_ctx
    job = p.glue_job.name
    watcher_running = None
    try:
        glue = glue_with_job(ctx, job, tmp_path / "capped.py", CAPPED_JOB)
        watcher_running = launch(WatcherService(interval=0.2, full_scan_seconds=3), ctx,
                                 mounts=(tmp_path,))
        upload(s3, p.lake.bronze_bucket, f"{p.bronze_prefix}/20261122-130000000.csv")
        wait_for(lambda: sum(r["JobRunState"] == "SUCCEEDED" for r in runs(glue, job)) >= 4,
                 90, "four runs: three with backlog, the last without")
        wait_for(lambda: not read_state(ctx)["in_flight"], 30, "the last run seen ended")
        state = read_state(ctx)
        assert state["backlog"] is False and not state["pending"]
        assert len(runs(glue, job)) == 4  # and no fifth: the last run left nothing
        assert (tmp_path / "capped.runs").read_text() == "4"
    finally:
        if watcher_running is not None:
            watcher_running.stop()
