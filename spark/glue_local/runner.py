"""Runs queued job runs one at a time in ONE warm SparkSession per process.

A run: resolve Command.ScriptLocation (local path or s3://), set sys.argv the way Glue
does, `runpy.run_path(script, run_name="__main__")`; SystemExit(0) or a normal return
is SUCCEEDED, anything else FAILED with the exception text. stdout/stderr written while
the run executes are teed into <state>/logs/glue-runs/<run id>.log and the process log.

Spark is built lazily: only a script that imports pyspark or awsglue gets the session,
built before the script starts (so its `SparkContext.getOrCreate()` /
`SparkSession.builder.getOrCreate()` return the warm, Iceberg-configured one). Scripts
that never touch Spark (tests' sleeping jobs) run without a JVM. `--warm` builds the
session at start-up. The scripts import AWS's own `awsglue`; its JVM side is spark/glue-jvm.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import io
import json
import logging
import queue
import re
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from cdclab import settings
from glue_local import bookmarks, jobs_api
from glue_local.errors import GlueError

log = logging.getLogger("glue_local.runner")

METRICS_PREFIX = "CDCLAB_METRICS "
RESERVED_ARGS = ("--JOB_NAME", "--JOB_ID", "--JOB_RUN_ID")
SETTLE_INTERVAL_SECONDS = 2.0  # how often queued runs are looked at between runs
# Spark local properties read by spark/glue-jvm (org.cdclab.glue.RunContext)
LOCAL_RUN_ID = "cdclab.glue.runId"
LOCAL_BOOKMARK_OPTION = "cdclab.glue.bookmarkOption"
_SPARK_IMPORT = re.compile(r"^\s*(from|import)\s+(pyspark|awsglue)\b", re.MULTILINE)

_active_runner: Runner | None = None


# --- pure helpers -------------------------------------------------------------------
def needs_spark(source: str) -> bool:
    return bool(_SPARK_IMPORT.search(source))


def script_argv(script: str, job_name: str, run_id: str, args: Mapping[str, str]) -> list[str]:
    argv = [script, "--JOB_NAME", job_name, "--JOB_ID", jobs_api.job_id(job_name),
            "--JOB_RUN_ID", run_id]
    for key, value in args.items():
        key = key if key.startswith("--") else f"--{key}"
        if key not in RESERVED_ARGS:
            argv += [key, str(value)]
    return argv


def parse_metrics(text: str) -> dict | None:
    """The last `CDCLAB_METRICS {json}` line the job printed, if any."""
    found = None
    for line in text.splitlines():
        idx = line.find(METRICS_PREFIX)
        if idx >= 0:
            try:
                found = json.loads(line[idx + len(METRICS_PREFIX):])
            except ValueError:
                log.warning("ignoring malformed metrics line: %s", line[:200])
    return found


def error_message(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit: the script exited with status {exc.code}"
    return f"{type(exc).__name__}: {exc}"


class RunInterrupted(BaseException):  # noqa: N818 - BaseException so `except Exception` in a job can't eat it
    """Raised inside the run's thread by BatchStopJobRun or the run's Timeout."""

    state = "STOPPED"


class RunTimedOut(RunInterrupted):
    state = "TIMEOUT"


class _Tee(io.TextIOBase):
    """Writes go to the original stream and, while open, to the run's log file."""

    def __init__(self, orig, file) -> None:
        self.orig, self.file = orig, file

    def write(self, s: str) -> int:
        self.orig.write(s)
        f = self.file
        if f is not None and not f.closed:
            f.write(s)
        return len(s)

    def flush(self) -> None:
        self.orig.flush()
        if self.file is not None and not self.file.closed:
            self.file.flush()


def bookmark_option(arguments: Mapping[str, str]) -> str:
    """The run's --job-bookmark-option (Glue's default: disabled)."""
    return str(arguments.get("--job-bookmark-option") or bookmarks.DISABLE)


# --- I/O ----------------------------------------------------------------------------
@contextlib.contextmanager
def run_context(spark, run: Mapping):
    """While a run executes on this thread: the JVM side of awsglue learns the run id and
    bookmark option (Spark local properties are per thread), and `SparkContext()` returns
    the warm context instead of failing ("Cannot run multiple SparkContexts at once"), as
    a script's first SparkContext() does on Glue. Undone afterwards, the bookmark state too.
    """
    if spark is None:
        yield
        return
    from pyspark import SparkContext

    sc = spark.sparkContext
    sc.setLocalProperty(LOCAL_RUN_ID, run["Id"])
    sc.setLocalProperty(LOCAL_BOOKMARK_OPTION,
                        bookmark_option(jobs_api.resolved_arguments(run)))
    orig_init = SparkContext.__init__

    def share_warm_context(self, *args, **kwargs):
        # a view of the warm context (same JVM SparkContext, gateway, conf); patching
        # __new__ instead cannot be undone cleanly in CPython (tp_new stays patched)
        self.__dict__.update(sc.__dict__)

    SparkContext.__init__ = share_warm_context
    try:
        yield
    finally:
        SparkContext.__init__ = orig_init
        with contextlib.suppress(Exception):
            sc._jvm.org.cdclab.glue.JobRun.clear()
        sc.setLocalProperty(LOCAL_RUN_ID, None)
        sc.setLocalProperty(LOCAL_BOOKMARK_OPTION, None)


def resolve_script(location: str, work_dir: Path) -> Path:
    if location.startswith("s3://"):
        import boto3
        from botocore.config import Config

        bucket, _, key = location[5:].partition("/")
        dest = work_dir / Path(key).name
        dest.parent.mkdir(parents=True, exist_ok=True)
        boto3.client("s3", config=Config(s3={"addressing_style": "path"})).download_file(
            bucket, key, str(dest))
        return dest
    path = Path(location.removeprefix("file://"))
    if not path.is_file():
        raise FileNotFoundError(f"Command.ScriptLocation {location} does not exist")
    return path


def _default_session_factory(env: Mapping[str, str]):
    try:
        build_session = importlib.import_module("glue_local.spark_session").build_session
    except ModuleNotFoundError as e:
        if e.name != "glue_local.spark_session":
            raise
        raise RuntimeError("glue_local.spark_session is missing: cannot build Spark") from e
    return build_session(env)


def _session_alive(session) -> bool:
    try:
        return session.sparkContext._jsc is not None
    except Exception:
        return False


def spark_session():
    """The process's warm SparkSession (hook for awsglue; builds it on first use)."""
    if _active_runner is None:
        raise RuntimeError("no glue_local runner in this process")
    return _active_runner.session()


class Runner:
    def __init__(self, store: jobs_api.JobStore, env: Mapping[str, str], state_dir: Path,
                 session_factory: Callable[[Mapping[str, str]], object] | None = None) -> None:
        self.store, self.env, self.state_dir = store, dict(env), Path(state_dir)
        self.log_dir = settings.glue_run_logs(self.state_dir)
        self._factory = session_factory or _default_session_factory
        self._session = None
        self._session_lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._current: tuple[str, str] | None = None
        self._thread: threading.Thread | None = None

    # public API used by jobs_api and server
    def start(self, warm: bool = False) -> None:
        global _active_runner
        _active_runner = self
        self._thread = threading.Thread(target=self._loop, args=(warm,),
                                        name="glue-runner", daemon=True)
        self._thread.start()

    def submit(self, job_name: str, run_id: str) -> None:
        self._queue.put((job_name, run_id))

    def session(self):
        with self._session_lock:
            if self._session is None or not _session_alive(self._session):
                started = time.monotonic()
                self._session = self._factory(self.env)
                log.info("SparkSession ready in %.1fs", time.monotonic() - started)
            return self._session

    def stop(self, job_name: str, run_id: str) -> GlueError | None:
        """BatchStopJobRun for one run; returns the error to report, if any."""
        with self.store.lock:
            run = self.store.get_run(job_name, run_id)
            if run is None:
                return GlueError("EntityNotFoundException", f"Job run {run_id} not found")
            state = run["JobRunState"]
            if state in ("STARTING", jobs_api.WAITING):  # queued: the worker skips it
                self.store.put_run(jobs_api.finish_run(run, "STOPPED", time.time()))
                return None
            if state in ("RUNNING", "STOPPING") and self._current == (job_name, run_id):
                self.store.put_run({**run, "JobRunState": "STOPPING",
                                    "LastModifiedOn": time.time()})
                self._interrupt(RunInterrupted)
                return None
            return GlueError("InvalidInputException",
                             f"Job run {run_id} is not running (state {state})")

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the worker; a run still executing is marked FAILED."""
        with self.store.lock:
            cur = self._current
            if cur is not None:
                run = self.store.get_run(*cur)
                if run is not None and run["JobRunState"] in jobs_api.ACTIVE_STATES:
                    self.store.put_run(jobs_api.finish_run(
                        run, "FAILED", time.time(),
                        error="The local Glue API was shut down during this run"))
                self._interrupt(RunInterrupted)
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def settle_all(self) -> None:
        """Queued (WAITING) runs of every job: into free slots, or FAILED after waiting
        too long."""
        try:
            for name in self.store.job_names_with_runs():
                for run in self.store.settle(name, time.time()):
                    self.submit(name, run["Id"])
        except Exception:
            log.exception("settling queued runs failed")

    # worker
    def _interrupt(self, exc: type[RunInterrupted]) -> None:
        if self._thread is not None and self._current is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self._thread.ident), ctypes.py_object(exc))
            if self._session is not None:  # return from long JVM calls promptly
                with contextlib.suppress(Exception):
                    self._session.sparkContext.cancelAllJobs()

    def _loop(self, warm: bool) -> None:
        if warm:
            try:
                from glue_local.spark_session import warm_up

                started = time.monotonic()
                warm_up(self.session())
                log.info("Spark warm (session, Python workers, Iceberg catalog) in %.1fs",
                         time.monotonic() - started)
            except Exception:
                log.exception("warm SparkSession failed; runs needing Spark will retry it")
        while True:
            try:
                item = self._queue.get(timeout=SETTLE_INTERVAL_SECONDS)
            except queue.Empty:
                self.settle_all()
                continue
            if item is None:
                return
            try:
                self._process(*item)
            except RunInterrupted:  # arrived after the run ended: nothing to do
                pass
            except Exception:
                log.exception("runner error on run %s", item[1])

    def _process(self, job_name: str, run_id: str) -> None:
        with self.store.lock:
            run = self.store.get_run(job_name, run_id)
            if run is None or run["JobRunState"] != "STARTING":
                return  # stopped while queued
            job = self.store.get_job(job_name)
            run = {**run, "JobRunState": "RUNNING", "RunStartedOn": time.time(),
                   "LastModifiedOn": time.time(), "LogGroupName": str(self.log_dir)}
            self.store.put_run(run)
            self._current = (job_name, run_id)
        timer = threading.Timer(run["Timeout"] * 60, self._interrupt, (RunTimedOut,))
        timer.daemon = True
        timer.start()
        log_path = self.log_dir / f"{run_id}.log"
        state, error = "SUCCEEDED", None
        try:
            if job is None:
                raise RuntimeError(f"job {job_name} was deleted before run {run_id} started")
            self._execute(job, run, log_path)
        except RunInterrupted as e:
            state = e.state
            error = "Run stopped by BatchStopJobRun" if state == "STOPPED" else (
                f"Run exceeded its Timeout of {run['Timeout']} minutes")
        except BaseException as e:  # SystemExit(non-zero), the job's exception
            state, error = "FAILED", error_message(e)
        finally:
            timer.cancel()
            with self.store.lock:
                self._current = None
                ctypes.pythonapi.PyThreadState_SetAsyncExc(  # drop a late interrupt
                    ctypes.c_ulong(threading.get_ident()), None)
                text = log_path.read_text(errors="replace") if log_path.exists() else ""
                latest = self.store.get_run(job_name, run_id) or run
                if latest["JobRunState"] in jobs_api.ACTIVE_STATES:  # not failed by shutdown
                    latest = jobs_api.finish_run(latest, state, time.time(), error,
                                                 parse_metrics(text))
                    self.store.put_run(latest)
                    retry = job and jobs_api.retry_of(job, latest, time.time())
                    if retry:
                        self.store.put_run(retry)
                        self.submit(job_name, retry["Id"])
                        log.info("run %s failed: attempt %d is %s", run_id,
                                 retry["Attempt"], retry["Id"])
                for promoted in self.store.settle(job_name, time.time()):
                    self.submit(job_name, promoted["Id"])
            log.info("run %s of %s: %s%s", run_id, job_name, state, f" ({error})" if error else "")

    def _execute(self, job: dict, run: dict, log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        work = self.state_dir / "glue" / "scripts" / run["Id"]
        script = resolve_script(job["Command"]["ScriptLocation"], work)
        spark = self.session() if needs_spark(script.read_text(errors="replace")) else None
        argv = script_argv(str(script), job["Name"], run["Id"],
                           jobs_api.resolved_arguments(run))
        saved = sys.argv, sys.stdout, sys.stderr, list(sys.path)
        with open(log_path, "a", encoding="utf-8") as out, run_context(spark, run):
            sys.stdout, sys.stderr = _Tee(saved[1], out), _Tee(saved[2], out)
            sys.argv = argv
            sys.path.insert(0, str(script.parent))
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise
            except BaseException:
                traceback.print_exc()  # into the run log
                raise
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                sys.argv, sys.stdout, sys.stderr = saved[0], saved[1], saved[2]
                sys.path[:] = saved[3]
