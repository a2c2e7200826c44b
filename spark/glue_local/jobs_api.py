"""Glue job and job-run operations (CreateJob ... GetJobBookmark) with Glue's semantics.

Jobs and runs are JSON files under <state>/glue/jobs/ and <state>/glue/runs/<job>/, so
they survive a restart. The pure rules (argument overlay, concurrency, run records,
restart recovery) are plain functions; the operations are thin wrappers around them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from glue_local import access, code_sources, glue_versions, tags_api
from glue_local.errors import GlueError
from glue_local.job_names import checked_name, state_name, valid_name
from pipeline_contract import minio_users, settings
from pipeline_contract.atomic import write_json

ACTIVE_STATES = ("STARTING", "RUNNING", "STOPPING")
FINAL_STATES = ("SUCCEEDED", "FAILED", "STOPPED", "TIMEOUT", "ERROR", "EXPIRED")
WAITING = "WAITING"
DEFAULT_MAX_CONCURRENT_RUNS = 1
# Glue API model (Job.Timeout): blank means 480 minutes for Glue 5.0 and later (the only
# versions the lab runs: glue_local.glue_versions); values must stay within 7 days.
DEFAULT_TIMEOUT_MINUTES = 480
MAX_TIMEOUT_MINUTES = 10080
# Job run statuses page: a queued run that cannot get resources is retried for at most
# 15 minutes, then FAILED.
MAX_WAITING_SECONDS = 15 * 60
METRICS_FIELD = "Metrics"  # non-standard: the job's CDCLAB_METRICS line (boto3 drops it)
# non-standard: the arguments the script gets (JobRun.Arguments are the run's own)
RESOLVED_ARGUMENTS_FIELD = "ResolvedArguments"


# --- pure rules ---------------------------------------------------------------------
def job_id(name: str) -> str:
    return "j_" + hashlib.sha256(name.encode()).hexdigest()


def new_run_id() -> str:
    return "jr_" + secrets.token_hex(32)


def merged_arguments(job: dict, run_args: dict | None) -> dict[str, str]:
    """What the script gets: the run's Arguments replace the job's DefaultArguments, and
    the job's NonOverridableArguments are "not overridden when providing job arguments
    in a job run" (Glue API model)."""
    return {**job.get("DefaultArguments", {}), **(run_args or {}),
            **job.get("NonOverridableArguments", {})}


def checked_timeout(minutes, what: str) -> int | None:
    if minutes is None:
        return None
    if not 1 <= int(minutes) <= MAX_TIMEOUT_MINUTES:
        raise GlueError("InvalidInputException",
                        f"{what} Timeout {minutes} must be 1..{MAX_TIMEOUT_MINUTES} minutes")
    return int(minutes)


def run_timeout(job: dict, request: dict) -> int:
    given = checked_timeout(request.get("Timeout"), "StartJobRun")
    if given is not None:
        return given
    if job.get("Timeout") is not None:
        return int(job["Timeout"])
    return DEFAULT_TIMEOUT_MINUTES


def max_concurrent_runs(job: dict) -> int:
    return int(job.get("ExecutionProperty", {}).get("MaxConcurrentRuns",
                                                     DEFAULT_MAX_CONCURRENT_RUNS))


def queuing_enabled(job: dict, request: dict) -> bool:
    """The run's JobRunQueuingEnabled wins over the job's (Glue API model); runs of jobs
    configured to retry (MaxRetries > 0) are not queued (job run statuses page)."""
    flag = request.get("JobRunQueuingEnabled")
    if flag is None:
        flag = job.get("JobRunQueuingEnabled", False)
    return bool(flag) and not int(job.get("MaxRetries") or 0)


def free_slots(job: dict, runs: list[dict]) -> int:
    return max_concurrent_runs(job) - sum(r["JobRunState"] in ACTIVE_STATES for r in runs)


def start_state(job: dict, request: dict, runs: list[dict]) -> str:
    """STARTING if a slot is free (and no run waits before it), WAITING if the run may
    queue, else ConcurrentRunsExceededException."""
    waiting = any(r["JobRunState"] == WAITING for r in runs)
    if free_slots(job, runs) > 0 and not waiting:
        return "STARTING"
    if queuing_enabled(job, request):
        return WAITING
    raise GlueError("ConcurrentRunsExceededException",
                    f"Concurrent runs exceeded for {job['Name']}")


def new_run(job: dict, request: dict, now: float, state: str = "STARTING") -> dict:
    """A run with a new id. StartJobRun's JobRunId is "the ID of a previous JobRun to
    retry" (API reference): it becomes PreviousRunId, never the new run's id (a client
    must not overwrite runs or choose file names)."""
    run = {
        "Id": new_run_id(),
        "Attempt": 0,
        "JobName": job["Name"],
        "StartedOn": now,
        "LastModifiedOn": now,
        "JobRunState": state,
        "Arguments": dict(request.get("Arguments") or {}),  # as sent
        RESOLVED_ARGUMENTS_FIELD: merged_arguments(job, request.get("Arguments")),
        "PredecessorRuns": [],
        "ExecutionTime": 0,
        "Timeout": run_timeout(job, request),
        "WorkerType": request.get("WorkerType") or job.get("WorkerType", "G.1X"),
        "NumberOfWorkers": int(request.get("NumberOfWorkers") or job.get("NumberOfWorkers", 2)),
        "GlueVersion": job.get("GlueVersion", glue_versions.DEFAULT),
    }
    if request.get("JobRunId"):
        run["PreviousRunId"] = request["JobRunId"]
    if request.get("JobRunQueuingEnabled") is not None or "JobRunQueuingEnabled" in job:
        run["JobRunQueuingEnabled"] = queuing_enabled(job, request)
    return run


def resolved_arguments(run: dict) -> dict[str, str]:
    """The arguments the script runs with (runs stored by older versions: Arguments)."""
    return run.get(RESOLVED_ARGUMENTS_FIELD, run["Arguments"])


def retry_of(job: dict, failed: dict, now: float) -> dict | None:
    """The next attempt of a FAILED run while MaxRetries allows ("the maximum number of
    times to retry this job after a JobRun fails"): same arguments, Attempt + 1,
    PreviousRunId the run StartJobRun created."""
    if failed["JobRunState"] != "FAILED" or failed["Attempt"] >= int(job.get("MaxRetries") or 0):
        return None
    first = failed.get("PreviousRunId") or failed["Id"]
    attempt = failed["Attempt"] + 1
    keep = {k: v for k, v in failed.items() if k in (
        "JobName", "Arguments", RESOLVED_ARGUMENTS_FIELD, "Timeout", "WorkerType",
        "NumberOfWorkers", "GlueVersion", "PredecessorRuns")}
    return {**keep, "Id": f"{first}_attempt_{attempt}", "Attempt": attempt,
            "PreviousRunId": first, "StartedOn": now, "LastModifiedOn": now,
            "JobRunState": "STARTING", "ExecutionTime": 0}


def promote_waiting(job: dict | None, runs: list[dict], now: float) -> list[dict]:
    """Queued runs that change state now, oldest first: into free slots as STARTING;
    after MAX_WAITING_SECONDS (or with the job deleted) FAILED."""
    waiting = sorted((r for r in runs if r["JobRunState"] == WAITING),
                     key=lambda r: r["StartedOn"])
    free = 0 if job is None else free_slots(job, runs)
    changed = []
    for run in waiting:
        if job is not None and free > 0:
            free -= 1
            changed.append({**run, "JobRunState": "STARTING", "LastModifiedOn": now})
        elif job is None or now - run["StartedOn"] >= MAX_WAITING_SECONDS:
            changed.append(finish_run(run, "FAILED", now, error=(
                "The job was deleted while this run was WAITING" if job is None else
                f"The run waited {MAX_WAITING_SECONDS // 60} minutes without a free "
                f"slot (MaxConcurrentRuns {max_concurrent_runs(job)})")))
    return changed


def finish_run(run: dict, state: str, now: float, error: str | None = None,
               metrics: dict | None = None) -> dict:
    run = {**run, "JobRunState": state, "CompletedOn": now, "LastModifiedOn": now}
    started = run.get("RunStartedOn", run["StartedOn"])
    run["ExecutionTime"] = max(0, int(round(now - started)))
    if error:
        run["ErrorMessage"] = error
    if metrics is not None:
        run[METRICS_FIELD] = metrics
    return run


def recover_run(run: dict, now: float) -> tuple[dict, bool]:
    """After a restart: a run that was executing failed with the process; one that was
    only queued (STARTING) never began, so it is queued again. Returns (run, requeue)."""
    state = run["JobRunState"]
    if state in ("RUNNING", "STOPPING"):
        return finish_run(run, "FAILED", now, error=(
            "The local Glue API process stopped while this run was "
            f"{state}; the run did not finish (restart of glue_local)")), False
    return run, state == "STARTING"


def page(items: list, request: dict, default_size: int = 100) -> tuple[list, str | None]:
    token = request.get("NextToken") or "0"
    if not isinstance(token, str) or not token.isdigit():
        raise GlueError("InvalidInputException", "NextToken is not a token this API returned")
    start = int(token)
    size = int_member(request, "MaxResults", default_size)
    if size < 1:
        raise GlueError("InvalidInputException", f"MaxResults {size} must be at least 1")
    nxt = start + size
    return items[start:nxt], (str(nxt) if nxt < len(items) else None)


def int_member(request: dict, member: str, default: int) -> int:
    """An integer member (JSON number); AWS's SerializationException for another type."""
    value = request.get(member)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise GlueError("SerializationException", f"{member} must be an integer")
    return int(value)


# --- persistence --------------------------------------------------------------------
def _fname(run_id: str) -> str:
    return quote(run_id, safe="") + ".json"  # run ids are the API's own (new_run_id)


class JobStore:
    """Jobs and runs on disk, each job's files named by job_names.state_name (one path per
    name, inside its folder). One lock: the API is small and calls are short."""

    def __init__(self, state_dir: Path) -> None:
        self.root = Path(state_dir) / "glue"
        self.jobs_dir = self.root / "jobs"
        self.runs_dir = self.root / "runs"
        self.lock = threading.RLock()
        # job -> run id -> run; this process is the only writer, so the cache stays
        # true and StartJobRun's concurrency check needn't re-read every run file
        self._runs: dict[str, dict[str, dict]] = {}

    def job_path(self, name: str) -> Path:
        return self.jobs_dir / f"{state_name(name)}.json"

    def runs_folder(self, name: str) -> Path:
        return self.runs_dir / state_name(name)

    def get_job(self, name: str) -> dict | None:
        path = self.job_path(name)
        return json.loads(path.read_text()) if path.exists() else None

    def require_job(self, name: object, member: str = "jobName",
                    constrained: bool = True) -> dict:
        """The job, or EntityNotFoundException. `member`: the request member that named
        it, checked as Glue's model checks a NameString (ValidationException);
        `constrained` False where the model leaves the string unconstrained
        (GetJobBookmark's JobName): any string, and no job has an invalid name."""
        if constrained or name is None or not isinstance(name, str):
            name = checked_name(name, member)
        job = self.get_job(name) if valid_name(name) else None
        if job is None:
            raise GlueError("EntityNotFoundException", f"Job with name: {name} not found")
        return job

    def put_job(self, job: dict) -> None:
        write_json(self.job_path(job["Name"]), job)

    def delete_job(self, name: str) -> None:
        self.job_path(name).unlink(missing_ok=True)

    def list_jobs(self) -> list[dict]:
        if not self.jobs_dir.exists():
            return []
        jobs = [json.loads(p.read_text()) for p in self.jobs_dir.glob("*.json")]
        return sorted(jobs, key=lambda j: j["Name"])

    def _job_runs(self, job_name: str) -> dict[str, dict]:
        with self.lock:
            if job_name not in self._runs:
                folder = self.runs_folder(job_name)
                runs = (json.loads(p.read_text()) for p in folder.glob("*.json"))
                self._runs[job_name] = {r["Id"]: r for r in runs}
            return self._runs[job_name]

    def get_run(self, job_name: str, run_id: str) -> dict | None:
        run = self._job_runs(job_name).get(run_id)
        return dict(run) if run is not None else None

    def put_run(self, run: dict) -> None:
        with self.lock:
            write_json(self.runs_folder(run["JobName"]) / _fname(run["Id"]), run)
            self._job_runs(run["JobName"])[run["Id"]] = dict(run)

    def forget_runs(self, job_name: str, run_ids: list[str]) -> None:
        """Delete finished runs (glue_local.run_history decides which) with their work
        folders; GetJobRun then answers EntityNotFound, as for runs past AWS's retention."""
        import shutil

        with self.lock:
            runs = self._job_runs(job_name)
            folder = self.runs_folder(job_name)
            for run_id in run_ids:
                runs.pop(run_id, None)
                (folder / _fname(run_id)).unlink(missing_ok=True)
                shutil.rmtree(self.root / "scripts" / run_id, ignore_errors=True)

    def list_runs(self, job_name: str) -> list[dict]:
        runs = [dict(r) for r in self._job_runs(job_name).values()]
        return sorted(runs, key=lambda r: r["StartedOn"], reverse=True)  # newest first

    def recover(self, now: float) -> list[dict]:
        """Apply recover_run to every stored run; returns runs to queue again (oldest
        first). Every job's runs end up in the cache (settle() looks there)."""
        requeue = []
        with self.lock:
            for name in self._names_with_run_files():
                for run in list(self._job_runs(name).values()):
                    fixed, again = recover_run(run, now)
                    if fixed is not run:
                        self.put_run(fixed)
                    if again:
                        requeue.append(fixed)
        return sorted(requeue, key=lambda r: r["StartedOn"])

    def _names_with_run_files(self) -> list[str]:
        """The job of each runs folder, from its run records (a folder's name is
        state_name's, which cannot always be decoded)."""
        names = set()
        for folder in self.runs_dir.iterdir() if self.runs_dir.exists() else []:
            for path in folder.glob("*.json") if folder.is_dir() else []:
                name = json.loads(path.read_text()).get("JobName")
                if isinstance(name, str) and self.runs_folder(name) == folder:
                    names.add(name)
                    break
        return sorted(names)

    def job_names_with_runs(self) -> list[str]:
        """From the run cache, no disk read: recover() loaded every stored run at start-up
        and put_run adds each new one."""
        with self.lock:
            return sorted(self._runs)

    def settle(self, job_name: str, now: float) -> list[dict]:
        """Moves queued (WAITING) runs on (promote_waiting); returns those now STARTING,
        for the runner to take."""
        with self.lock:
            if not any(r["JobRunState"] == WAITING for r in self._job_runs(job_name).values()):
                return []
            changed = promote_waiting(self.get_job(job_name), self.list_runs(job_name), now)
            for run in changed:
                self.put_run(run)
            return [r for r in changed if r["JobRunState"] == "STARTING"]


# --- operations: (ctx, request) -> response ---------------------------------------
# ctx is glue_local.server.ServerContext: .state_dir, .env, .jobs (JobStore), .runner.
JOB_FIELDS = (
    "Description", "LogUri", "Role", "ExecutionProperty", "Command", "DefaultArguments",
    "NonOverridableArguments", "Connections", "MaxRetries", "AllocatedCapacity", "Timeout",
    "MaxCapacity", "SecurityConfiguration", "Tags", "NotificationProperty", "GlueVersion",
    "NumberOfWorkers", "WorkerType", "ExecutionClass", "JobMode", "JobRunQueuingEnabled",
)


def code_places(ctx) -> code_sources.CodePlaces:
    """Where code may come from: the server's (ServerContext.code_places)."""
    return ctx.code_places


def default_code_places(p: settings.PipelineSettings) -> code_sources.CodePlaces:
    """The scripts bucket (pipeline lake.scripts_bucket, or CDCLAB_SCRIPTS_BUCKET) and what
    the other MinIO users may write in it (pipeline_contract.minio_users' policies)."""
    bucket = p.lake.scripts_bucket
    writable = {resource for name in minio_users.SERVICES
                for st in minio_users.policy(name, p)["Statement"]
                if "s3:PutObject" in st["Action"]
                for resource in st["Resource"] if resource.startswith(f"arn:aws:s3:::{bucket}/")}
    return code_sources.CodePlaces(bucket, tuple(sorted(writable)))


def _caller(ctx) -> str:
    return getattr(ctx, "caller", access.ADMIN)


def _job_from_input(name: str, data: dict, created: float, places) -> dict:
    script = (data.get("Command") or {}).get("ScriptLocation")
    if not script or not isinstance(script, str):
        raise GlueError("InvalidInputException",
                        f"Job {name}: Command.ScriptLocation is required (a string)")
    code_sources.check_job(data, f"Job {name}", places)
    checked_timeout(data.get("Timeout"), f"Job {name}:")
    glue_versions.checked(data.get("GlueVersion"), f"Job {name}")
    job = {k: data[k] for k in JOB_FIELDS if k in data and k != "Tags"}
    job.setdefault("ExecutionProperty", {"MaxConcurrentRuns": DEFAULT_MAX_CONCURRENT_RUNS})
    job.update(Name=name, CreatedOn=created, LastModifiedOn=time.time())
    return job


def create_job(ctx, req: dict) -> dict:
    name = checked_name(req.get("Name"), "name")
    tags = tags_api.checked_tags(req.get("Tags"), "Tags")
    with ctx.jobs.lock:
        if ctx.jobs.get_job(name) is not None:
            raise GlueError("AlreadyExistsException", f"Job with name {name} already exists")
        job = _job_from_input(name, req, time.time(), code_places(ctx))
        # kept apart from the definition: GetJob does not return Tags (GetTags does);
        # written first, so a job never exists without its tags
        tags_api.store_job_tags(ctx.state_dir, name, tags)
        ctx.jobs.put_job(job)
    return {"Name": name}


def get_job(ctx, req: dict) -> dict:
    return {"Job": ctx.jobs.require_job(req.get("JobName"))}


def get_jobs(ctx, req: dict) -> dict:
    jobs, token = page(ctx.jobs.list_jobs(), req)
    return {"Jobs": jobs, **({"NextToken": token} if token else {})}


def update_job(ctx, req: dict) -> dict:
    name = checked_name(req.get("JobName"), "jobName")
    with ctx.jobs.lock:
        old = ctx.jobs.require_job(name)
        # Glue's UpdateJob replaces the whole definition with JobUpdate.
        update = dict(req.get("JobUpdate") or {})
        # JobUpdate.GlueVersion: "If not provided in the update request, the Glue version
        # retains the value from the existing job definition" (Glue API model)
        if update.get("GlueVersion") is None and "GlueVersion" in old:
            update["GlueVersion"] = old["GlueVersion"]
        ctx.jobs.put_job(_job_from_input(name, update, old["CreatedOn"], code_places(ctx)))
    return {"JobName": name}


def delete_job(ctx, req: dict) -> dict:
    name = checked_name(req.get("JobName"), "jobName")
    with ctx.jobs.lock:
        ctx.jobs.delete_job(name)  # idempotent, as in Glue
        tags_api.store_job_tags(ctx.state_dir, name, {})  # the tags go with the job
    _bookmarks().delete_bookmark(ctx.state_dir, name)  # Glue deletes the bookmark with the job
    return {"JobName": name}


def start_job_run(ctx, req: dict) -> dict:
    places = code_places(ctx)
    with ctx.jobs.lock:
        job = ctx.jobs.require_job(req.get("JobName"))
        # the stored definition too: one registered before these rules may not run
        code_sources.check_job(job, f"Job {job['Name']}", places)
        glue_versions.checked(job.get("GlueVersion"), f"Job {job['Name']}")
        code_sources.check_arguments(req.get("Arguments"), "StartJobRun Arguments", places,
                                     admin=_caller(ctx) == access.ADMIN)
        retried = req.get("JobRunId")
        if retried is not None and ctx.jobs.get_run(job["Name"], str(retried)) is None:
            raise GlueError("EntityNotFoundException",
                            f"JobRunId {str(retried)[:80]!r} is not a run of {job['Name']}")
        state = start_state(job, req, ctx.jobs.list_runs(job["Name"]))
        run = new_run(job, req, time.time(), state)
        ctx.jobs.put_run(run)
    if state == "STARTING":
        ctx.runner.submit(job["Name"], run["Id"])
    return {"JobRunId": run["Id"]}


def get_job_run(ctx, req: dict) -> dict:
    job = ctx.jobs.require_job(req.get("JobName"))
    run = ctx.jobs.get_run(job["Name"], req.get("RunId") or "")
    if run is None:
        raise GlueError("EntityNotFoundException",
                        f"Job run {req.get('RunId')} of job {job['Name']} not found")
    return {"JobRun": run}


def get_job_runs(ctx, req: dict) -> dict:
    job = ctx.jobs.require_job(req.get("JobName"))
    runs, token = page(ctx.jobs.list_runs(job["Name"]), req)
    return {"JobRuns": runs, **({"NextToken": token} if token else {})}


def batch_stop_job_run(ctx, req: dict) -> dict:
    name = ctx.jobs.require_job(req.get("JobName"))["Name"]
    ok, errors = [], []
    for run_id in req.get("JobRunIds", []):
        problem = ctx.runner.stop(name, run_id)
        if problem is None:
            ok.append({"JobName": name, "JobRunId": run_id})
        else:
            errors.append({"JobName": name, "JobRunId": run_id,
                           "ErrorDetail": {"ErrorCode": problem.code,
                                           "ErrorMessage": problem.message}})
    return {"SuccessfulSubmissions": ok, "Errors": errors}


def _bookmarks():
    try:
        bookmarks = importlib.import_module("glue_local.bookmarks")
    except ModuleNotFoundError as e:
        if e.name != "glue_local.bookmarks":
            raise
        raise GlueError("InternalServiceException",
                        "job bookmarks are not available: glue_local.bookmarks is missing") from e
    return bookmarks


def get_job_bookmark(ctx, req: dict) -> dict:
    """EntityNotFoundException (a documented error of GetJobBookmark) while the job has
    no bookmark yet; with RunId, the bookmark as that run committed it."""
    name = ctx.jobs.require_job(req.get("JobName"), constrained=False)["Name"]
    return {"JobBookmarkEntry": _bookmarks().get_bookmark(ctx.state_dir, name,
                                                          req.get("RunId"))}


def reset_job_bookmark(ctx, req: dict) -> dict:
    name = ctx.jobs.require_job(req.get("JobName"), constrained=False)["Name"]
    bm = _bookmarks()
    bm.reset_bookmark(ctx.state_dir, name, req.get("RunId"))
    return {"JobBookmarkEntry": bm.bookmark_entry(name, bm.load(ctx.state_dir, name))}


OPERATIONS: dict[str, Callable[[Any, dict], dict]] = {
    "CreateJob": create_job,
    "GetJob": get_job,
    "GetJobs": get_jobs,
    "UpdateJob": update_job,
    "DeleteJob": delete_job,
    "StartJobRun": start_job_run,
    "GetJobRun": get_job_run,
    "GetJobRuns": get_job_runs,
    "BatchStopJobRun": batch_stop_job_run,
    "GetJobBookmark": get_job_bookmark,
    "ResetJobBookmark": reset_job_bookmark,
}
