"""Bounded job run history for the local Glue API (pure rules, no I/O).

AWS documents how long run history lasts: "Job run history is accessible for 365 days for
your workflow and job run" (GetJobRun, Glue API model in botocore). A laptop that runs the
pipeline every few seconds would pile up far more than anyone reads, so the local API also
keeps at most RUNS_KEPT finished runs per job, the newest. A run is never forgotten while
it is queued or active, nor while the job bookmark's history still names it (so
GetJobRun answers for every run ResetJobBookmark(RunId) / --job-bookmark-from can name).
"""

from __future__ import annotations

from collections.abc import Iterable

RUNS_KEPT = 500  # per job; the keeper keeps as many run logs (cdclab/log_rotation.py)
RETENTION_SECONDS = 365 * 86400  # AWS: run history is accessible for 365 days
FINAL_STATES = ("SUCCEEDED", "FAILED", "STOPPED", "TIMEOUT", "ERROR", "EXPIRED")


def runs_to_forget(runs: Iterable[dict], now: float, keep: int = RUNS_KEPT,
                   max_age: float = RETENTION_SECONDS,
                   protected: Iterable[str] = ()) -> list[str]:
    """Ids of the finished runs past the newest `keep` (by StartedOn) or finished more
    than `max_age` seconds ago; never an unfinished or a protected run."""
    protected = set(protected)
    finished = sorted((r for r in runs if r.get("JobRunState") in FINAL_STATES),
                      key=lambda r: (r.get("StartedOn", 0), r["Id"]), reverse=True)
    out = []
    for rank, run in enumerate(finished):
        ended = run.get("CompletedOn", run.get("StartedOn", now))
        if run["Id"] in protected:
            continue
        if rank >= keep or now - ended > max_age:
            out.append(run["Id"])
    return out
