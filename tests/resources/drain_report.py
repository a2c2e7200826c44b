"""What the drain saw, for a reconcile that failed after it: the job's recent runs (state,
start, files read, backlog) beside the newest bronze objects, so a failure shows whether
a file was never read, read by a run that dropped it, or still waiting."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime

from cdclab.drain import bronze_objects, slot_confirmed_lsn
from pipeline_contract import settings
from tests.resources.waiting import wait_for

RUNS_SHOWN = 12
OBJECTS_SHOWN = 12


def _when(t: datetime | None) -> str:
    return t.strftime("%H:%M:%S.%f")[:-3] if t else "-"


def drain_report(env: Mapping[str, str], p: settings.PipelineSettings, target: int) -> str:
    from cdclab.services.glue_api import glue_client, job_run_metrics

    lines = [f"slot confirmed {slot_confirmed_lsn(env[settings.ENV_PG_DSN], p.source.slot)}"
             f" (target {target})"]
    objects = sorted(bronze_objects(env, p), key=lambda o: o["LastModified"])  # the drain's view
    lines.append("newest bronze objects:")
    lines += [f"  {_when(o['LastModified'])} {o['Key']} ({o['Size']} B)"
              for o in objects[-OBJECTS_SHOWN:]]
    glue = glue_client(env)
    runs = glue.get_job_runs(JobName=p.glue_job.name, MaxResults=RUNS_SHOWN)["JobRuns"]
    lines.append("newest job runs:")
    endpoint = env.get(settings.ENV_GLUE_ENDPOINT)
    for r in sorted(runs, key=lambda r: r["StartedOn"]):
        m = (job_run_metrics(endpoint, p.glue_job.name, r["Id"], env=env) or {}) if endpoint \
            else {}
        lines.append(f"  {_when(r['StartedOn'])}..{_when(r.get('CompletedOn'))} {r['Id'][:14]} "
                     f"{r['JobRunState']} files={m.get('files')} rows={m.get('rows_read')} "
                     f"quarantined={m.get('quarantined')} merged={m.get('inserted')}/"
                     f"{m.get('updated')}/{m.get('deleted')} "
                     f"backlog={m.get('backlog')} skipped={m.get('objects_skipped')} "
                     f"{(r.get('ErrorMessage') or '')[:160]}")
    return "\n".join(lines)


def equal_later(is_equal: Callable[[], bool], within: float = 120.0) -> str:
    """After a failed reconcile: does silver reach the source later (the drain returned
    early) or not (changes were lost)?"""
    start = time.monotonic()
    try:
        wait_for(is_equal, timeout=within, what="silver to equal the source", every=5)
    except AssertionError:
        return f"still not equal {within:.0f}s later (changes lost, or stalled)"
    return f"equal {time.monotonic() - start:.0f}s later (the drain returned early)"
