"""Executes job runs: each in its own process, concurrently, on one warm Spark driver.

A run: resolve Command.ScriptLocation (local path or s3://), turn the run's special
parameters into a plan (glue_local.run_args: `--conf`, `--extra-py-files`,
`--extra-files`, `--extra-jars`, `--additional-python-modules`, `--datalake-formats`),
and hand script, argv and plan to a ready `glue_local.run_process`, which opens its own
SparkSession on the shared driver (glue_local.driver) and runs the script as __main__.
Exit 0 is SUCCEEDED, anything else FAILED with the exception text. The process's output
is written to <state>/logs/glue-runs/<run id>.log and the service's log.

Runs of different jobs, and of one job up to its MaxConcurrentRuns (jobs_api admits
them), execute at the same time; BatchStopJobRun and Timeout cancel the run's Spark jobs
and end its process. Spark starts lazily: only a script that imports pyspark or awsglue
needs the driver; `--warm` starts it with the service.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from glue_local import (
    bookmarks,
    glue_runtimes,
    glue_versions,
    jit_warmup,
    jobs_api,
    run_args,
    run_forks,
    run_history,
    run_setup,
)
from glue_local.driver import Driver, gateway_of
from glue_local.driver_state import write_driver_state
from glue_local.errors import GlueError
from pipeline_contract import settings
from pipeline_contract.job_config import catalog_token_conf, local_spark_conf

log = logging.getLogger("glue_local.runner")

METRICS_PREFIX = "CDCLAB_METRICS "
EXIT_DRIVER_LOST = 70  # EX_SOFTWARE: the service exits when no new driver can start
RESERVED_ARGS = ("--JOB_NAME", "--JOB_ID", "--JOB_RUN_ID")
SETTLE_INTERVAL_SECONDS = 2.0  # how often queued runs are looked at between runs
STOP_GRACE_SECONDS = 10.0  # a stopped run's process gets this long to exit on SIGTERM
# The next spare process starts this long into a run, or when the run ends if sooner: a
# spawned one's imports (a second or two of CPU; a forked one's far less) then leave a
# short run alone, yet a long one's follower, started as soon as it ends, finds the spare
# ready (bench/bench_freshness.py)
SPARE_AFTER_START_SECONDS = 2.0
RUN_STARTS = ("fork", "spawn")  # settings.ENV_GLUE_RUN_START
_SPARK_IMPORT = re.compile(r"^\s*(from|import)\s+(pyspark|awsglue)\b", re.MULTILINE)


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


def run_start(env: Mapping[str, str]) -> str:
    return settings.env_choice(env, settings.ENV_GLUE_RUN_START, RUN_STARTS, RUN_STARTS[0])


def bookmark_option(arguments: Mapping[str, str]) -> str:
    """The run's --job-bookmark-option (Glue's default: disabled)."""
    return str(arguments.get("--job-bookmark-option") or bookmarks.DISABLE)


def exit_message(returncode: int) -> str:
    if returncode < 0:
        return f"the run's process was ended by signal {-returncode}"
    return f"the run's process exited with status {returncode} before reporting a result"


# --- I/O ----------------------------------------------------------------------------
def _default_session_factory(env: Mapping[str, str], extra_conf: Mapping[str, str] | None = None,
                             *, pipeline: settings.PipelineSettings):
    try:
        spark_session = importlib.import_module("glue_local.spark_session")
    except ModuleNotFoundError as e:
        if e.name != "glue_local.spark_session":
            raise
        raise RuntimeError("glue_local.spark_session is missing: cannot build Spark") from e
    return spark_session.build_session(env, spark_session.catalog_conf(env, pipeline),
                                       pipeline.lake.catalog_name, extra_conf=extra_conf)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # glue_local, cdclab
    env["PYTHONUNBUFFERED"] = "1"
    # Python workers (UDFs, map/filter) run this interpreter, where awsglue is installed;
    # PySpark's default is whatever `python3` is on PATH
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


RunProcess = subprocess.Popen | run_forks.ForkedProcess


def _spawn(runtime: glue_runtimes.Runtime | None = None) -> subprocess.Popen:
    """A run process: the lab's Python, or the interpreter of the run's Glue runtime."""
    python, env = sys.executable, None
    if runtime is not None and not runtime.shared_driver:
        python = str(runtime.python)
        env = glue_runtimes.child_env(os.environ, runtime)
    # own session: a Ctrl-C meant for the service must not reach (and cancel) a run
    return subprocess.Popen(
        [python, "-m", "glue_local.run_process"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env or _child_env(),
        start_new_session=True, text=True, encoding="utf-8", errors="replace", bufsize=1)


def _signal_group(proc: RunProcess, sig: int) -> None:
    """Signal the run's process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _reap_group(proc: RunProcess) -> None:
    """Once the run's process exits, what it left running goes too (on Glue the job's
    cluster ends with the script), so nothing holds the output pipe open."""
    proc.wait()
    time.sleep(1.0)
    _signal_group(proc, signal.SIGKILL)


class GlueRuntimeMissing(RuntimeError):
    """The runtime of the job's GlueVersion is not installed (the run fails, saying how)."""


@dataclass
class _Active:
    job_name: str
    proc: RunProcess | None = None
    ended_by: str | None = None  # STOPPED / TIMEOUT / FAILED (shutdown, dead driver)
    error: str | None = None  # why, when ended_by is FAILED
    on_driver: bool = False  # it holds the Spark driver
    generation: int = 0  # of the driver it holds (glue_local.driver)


class Runner:
    def __init__(self, store: jobs_api.JobStore, env: Mapping[str, str], state_dir: Path,
                 pipeline: settings.PipelineSettings,
                 session_factory: Callable[..., object] | None = None) -> None:
        self.store, self.env, self.state_dir = store, dict(env), Path(state_dir)
        self.pipeline = pipeline  # as the server's entry point read it: not read per run
        self.log_dir = settings.glue_run_logs(self.state_dir)
        factory = session_factory or functools.partial(_default_session_factory,
                                                       pipeline=pipeline)
        self.driver = Driver(factory, self.env,
                             on_state=lambda d: write_driver_state(self.state_dir, d))
        self._queue: queue.Queue = queue.Queue()
        self._active: dict[str, _Active] = {}
        self._spare: RunProcess | None = None
        self._spare_lock = threading.Lock()
        self._run_start = run_start(self.env)
        self._forks: run_forks.ForkServer | None = None
        self._forks_lock = threading.Lock()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._warmup_stop = threading.Event()
        # read once: a wrong value stops the service at start, naming the variable
        self._warmup_seconds = settings.env_seconds(self.env, settings.ENV_DRIVER_WARMUP,
                                                    settings.LAB_DRIVER_WARMUP_S)

    # public API used by jobs_api and server
    def start(self, warm: bool = False) -> None:
        write_driver_state(self.state_dir, self.driver)  # "idle": a dead one's word goes
        self._thread = threading.Thread(target=self._loop, args=(warm,),
                                        name="glue-runner", daemon=True)
        self._thread.start()
        self.driver.watch(self._driver_died, self._warm_again if warm else None)

    def _driver_died(self, why: str) -> None:
        """The shared JVM is gone: every run on it ends now and fails with the reason
        (its MaxRetries apply; the watcher sees FAILED and announces its objects again)."""
        with self.store.lock:
            for run_id, active in list(self._active.items()):
                if active.on_driver:
                    active.error = why
                    self._end(run_id, "FAILED")

    def _warm_again(self) -> None:
        """A new driver after a death, warmed as at start. Should that fail, this process
        exits so its supervisor (the keeper, Docker) starts the service afresh."""
        try:
            from glue_local.spark_session import warm_up

            started = time.monotonic()
            warm_up(self.session(), self.pipeline.lake.catalog_name)
            log.info("new Spark driver warm in %.1fs", time.monotonic() - started)
            self._start_jit_warmup()
        except Exception:
            log.exception("the Spark driver did not come back: exiting, to be restarted")
            os._exit(EXIT_DRIVER_LOST)

    def _busy(self) -> bool:
        """A run is queued, going, or holds the driver."""
        return self.driver.in_use or not self._queue.empty() or bool(self._active)

    def _start_jit_warmup(self) -> None:
        """The local driver's JIT warmed in the background while no run needs it
        (glue_local.jit_warmup; ENV_DRIVER_WARMUP seconds of work, 0: off). Not on a
        cluster's driver: its workers cannot read the warm-up's local files."""
        from glue_local.spark_session import local_cores

        seconds = self._warmup_seconds
        master = self.env.get(settings.ENV_SPARK_MASTER, settings.LOCAL_SPARK_MASTER)
        if not seconds or local_cores(master) is None:
            return
        session = self.session()

        def warm() -> None:
            try:
                jit_warmup.exercise(session, self.state_dir / "spark" / "jit-warmup", seconds,
                                    self._busy, self._warmup_stop)
            except Exception as e:  # the driver died or restarted: runs warm it from now
                log.info("JIT warm-up ended early: %s: %s", type(e).__name__, str(e)[:300])
            self.driver.worked()

        threading.Thread(target=warm, name="glue-jit-warmup", daemon=True).start()

    def submit(self, job_name: str, run_id: str) -> None:
        self._queue.put((job_name, run_id))

    def session(self):
        """The warm driver's SparkSession (started on first use)."""
        return self.driver.session()

    def stop(self, job_name: str, run_id: str) -> GlueError | None:
        """BatchStopJobRun for one run; returns the error to report, if any."""
        with self.store.lock:
            run = self.store.get_run(job_name, run_id)
            if run is None:
                return GlueError("EntityNotFoundException", f"Job run {run_id} not found")
            state = run["JobRunState"]
            if state in ("STARTING", jobs_api.WAITING) and run_id not in self._active:
                self.store.put_run(jobs_api.finish_run(run, "STOPPED", time.time()))
                return None
            if state in ("STARTING", "RUNNING", "STOPPING") and run_id in self._active:
                self.store.put_run({**run, "JobRunState": "STOPPING",
                                    "LastModifiedOn": time.time()})
                self._end(run_id, "STOPPED")
                return None
            return GlueError("InvalidInputException",
                             f"Job run {run_id} is not running (state {state})")

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the worker; runs still executing are marked FAILED and their processes end."""
        self._closing = True
        self._warmup_stop.set()
        self.driver.unwatch()
        with self.store.lock:
            for run_id, active in list(self._active.items()):
                run = self.store.get_run(active.job_name, run_id)
                if run is not None and run["JobRunState"] in jobs_api.ACTIVE_STATES:
                    self.store.put_run(jobs_api.finish_run(
                        run, "FAILED", time.time(),
                        error="The local Glue API was shut down during this run"))
                self._end(run_id, "FAILED")
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)
        with self._spare_lock:
            if self._spare is not None:
                self._spare.kill()
                self._spare.wait()
                self._spare = None
        with self._forks_lock:
            if self._forks is not None:
                self._forks.close()
                self._forks = None

    def settle_all(self) -> None:
        """Queued (WAITING) runs of every job: into free slots, or FAILED after waiting
        too long."""
        try:
            for name in self.store.job_names_with_runs():
                for run in self.store.settle(name, time.time()):
                    self.submit(name, run["Id"])
        except Exception:
            log.exception("settling queued runs failed")

    # processes
    def _take_process(self, runtime: glue_runtimes.Runtime | None = None) -> RunProcess:
        """A run process: the spare one (PySpark/awsglue already imported) if there is one;
        a run of another Glue runtime than the lab's gets a new one of that runtime."""
        if runtime is not None and not runtime.shared_driver:
            return _spawn(runtime)
        with self._spare_lock:
            proc, self._spare = self._spare, None
        if proc is None or proc.poll() is not None:
            proc = self._new_process()
        return proc

    def _new_process(self) -> RunProcess:
        """A run process of the lab's runtime: forked from the fork server (started on
        first use, and again should it die), or spawned if forking fails or is off."""
        if self._run_start == "fork":
            with self._forks_lock:
                try:
                    if self._forks is None or not self._forks.alive:
                        if self._forks is not None:
                            self._forks.close()
                        self._forks = run_forks.ForkServer(sys.executable, _child_env())
                    return self._forks.fork()
                except OSError as e:
                    log.warning("forking a run process failed (%s): spawning one", e)
        return _spawn()

    def _ensure_spare(self) -> None:
        """Start the next spare process: SPARE_AFTER_START_SECONDS into a run, or when it
        ends, not when it starts (its imports would compete with the run's start)."""
        with self._spare_lock:
            if self._closing or (self._spare is not None and self._spare.poll() is None):
                return
            self._spare = self._new_process()

    @staticmethod
    def _wait_ready(proc: RunProcess) -> None:
        before = []  # e.g. warnings printed while importing
        for line in proc.stdout:
            if line.strip() == "ready":
                return
            before.append(line)
        proc.wait()
        raise RuntimeError("the run process failed to start: " + "".join(before).strip()[-2000:])

    def _end(self, run_id: str, reason: str) -> None:
        """End a run: its process group (the script and anything it started) gets SIGTERM,
        then SIGKILL; its Spark jobs are cancelled (again once the process is gone)."""
        active = self._active.get(run_id)
        if active is None or active.ended_by is not None:
            return
        active.ended_by = reason
        self.driver.wake()  # a run waiting for the driver gives up
        proc = active.proc
        if proc is not None and proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            timer = threading.Timer(STOP_GRACE_SECONDS, _signal_group, (proc, signal.SIGKILL))
            timer.daemon = True
            timer.start()
        self.driver.cancel(run_id)

    # worker
    def _loop(self, warm: bool) -> None:
        if warm:
            try:
                from glue_local.spark_session import warm_up

                started = time.monotonic()
                warm_up(self.session(), self.pipeline.lake.catalog_name)
                log.info("Spark warm (session, Iceberg catalog) in %.1fs",
                         time.monotonic() - started)
                self._start_jit_warmup()
            except Exception:
                log.exception("warm SparkSession failed; runs needing Spark will retry it")
        self._ensure_spare()
        while True:
            try:
                item = self._queue.get(timeout=SETTLE_INTERVAL_SECONDS)
            except queue.Empty:
                self.settle_all()
                self.driver.trim()
                continue
            if item is None:
                return
            threading.Thread(target=self._process_safely, args=item,
                             name=f"glue-run-{item[1]}", daemon=True).start()

    def _process_safely(self, job_name: str, run_id: str) -> None:
        try:
            self._process(job_name, run_id)
        except Exception:
            log.exception("runner error on run %s", run_id)
        finally:
            self._ensure_spare()

    def _process(self, job_name: str, run_id: str) -> None:
        with self.store.lock:
            run = self.store.get_run(job_name, run_id)
            if run is None or run["JobRunState"] != "STARTING" or run_id in self._active:
                return  # stopped while queued, or already executing
            job = self.store.get_job(job_name)
            run = {**run, "JobRunState": "RUNNING", "RunStartedOn": time.time(),
                   "LastModifiedOn": time.time(), "LogGroupName": str(self.log_dir)}
            self.store.put_run(run)
            active = self._active[run_id] = _Active(job_name)
        timer = threading.Timer(run["Timeout"] * 60, self._end, (run_id, "TIMEOUT"))
        timer.daemon = True
        timer.start()
        log_path = self.log_dir / f"{run_id}.log"
        state, error = "SUCCEEDED", None
        try:
            if job is None:
                raise RuntimeError(f"job {job_name} was deleted before run {run_id} started")
            state, error = self._execute(job, run, log_path, active)
        except Exception as e:
            state, error = "FAILED", f"{type(e).__name__}: {e}"
        finally:
            timer.cancel()
            # its driver died: that is why it failed, whatever py4j said
            if state == "FAILED" and active.on_driver and not active.error:
                active.error = self.driver.died_since(active.generation)
            if state == "FAILED" and active.error:
                state, error = "FAILED", active.error
            elif active.ended_by == "STOPPED":
                state, error = "STOPPED", "Run stopped by BatchStopJobRun"
            elif active.ended_by == "TIMEOUT":
                state, error = "TIMEOUT", f"Run exceeded its Timeout of {run['Timeout']} minutes"
            self._finish(job, job_name, run, state, error, log_path)

    def _finish(self, job, job_name: str, run: dict, state: str, error: str | None,
                log_path: Path) -> None:
        run_id = run["Id"]
        with self.store.lock:
            self._active.pop(run_id, None)
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
            self._trim_history(job_name)
        log.info("run %s of %s: %s%s", run_id, job_name, state, f" ({error})" if error else "")

    def _trim_history(self, job_name: str) -> None:
        """Keep the job's run history bounded (glue_local.run_history); runs the bookmark
        history names stay."""
        try:
            runs, now = self.store.list_runs(job_name), time.time()
            keep = run_history.RUNS_KEPT
            if not run_history.runs_to_forget(runs, now, keep):
                return  # the common case: no bookmark file read
            state = bookmarks.load(self.state_dir, job_name)
            named = [h.get("run_id") for h in state.get("history", [])]
            forget = run_history.runs_to_forget(runs, now, keep,
                                                protected=[state.get("run_id"), *named])
            if forget:
                self.store.forget_runs(job_name, forget)
                log.info("forgot %d old run(s) of %s", len(forget), job_name)
        except Exception:
            log.exception("trimming the run history of %s failed", job_name)

    def _plan(self, job: dict, args: Mapping[str, str], work: Path, note) -> run_args.RunPlan:
        """Files, jars and modules fetched; `--conf` parsed (split later, on the driver)."""
        plan = run_args.RunPlan()
        run_args.datalake_formats(args.get(run_args.DATALAKE_FORMATS))
        workers = run_args.worker_note(job)
        if workers:
            note(workers)
        plan.py_paths = run_setup.python_paths(
            run_args.csv_list(args.get(run_args.EXTRA_PY_FILES)), work)
        for location in run_args.csv_list(args.get(run_args.EXTRA_FILES)):
            run_setup.fetch(location, work)
        plan.jars = [str(run_setup.fetch(j, work / "jars"))
                     for j in run_args.csv_list(args.get(run_args.EXTRA_JARS))]
        modules = run_args.modules_spec(args)
        if modules:
            plan.py_paths.append(run_setup.install_modules(
                *modules, self.state_dir / "glue" / "python-modules", work, note))
        conf = run_args.conf_pairs(args.get(run_args.CONF))
        if self.env.get(settings.ENV_PROFILE, settings.PROFILE_LOCAL) != settings.PROFILE_AWS:
            glue_catalogs = run_args.glue_catalogs(conf)
            if glue_catalogs:
                p = self.pipeline
                conf, notes = run_args.localize_catalogs(
                    conf, local_spark_conf(self.env, p), p.lake.catalog_name)
                for n in notes:
                    note(n)
                # the token reaches the run's session through the runner's pipe, not a file
                conf |= catalog_token_conf(self.env, list(glue_catalogs))
        for key in [k for k in conf if run_args.process_level(k)]:
            note(f"--conf {key} is a driver-process setting: not applied on one machine")
            del conf[key]
        plan.conf = conf
        return plan

    def _execute(self, job: dict, run: dict, log_path: Path,
                 active: _Active) -> tuple[str, str | None]:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        work = self.state_dir / "glue" / "scripts" / run["Id"]
        work.mkdir(parents=True, exist_ok=True)
        args = jobs_api.resolved_arguments(run)
        with open(log_path, "a", encoding="utf-8") as out:
            def note(text: str) -> None:
                out.write(f"cdclab: {text}\n")
                out.flush()

            runtime = glue_runtimes.runtime(
                glue_versions.checked(job.get("GlueVersion"), f"Job {job['Name']}"))
            if not runtime.shared_driver:
                from glue_local import glue_jvm

                lacking = glue_runtimes.missing(runtime, glue_jvm.jar_path())
                if lacking:
                    raise GlueRuntimeMissing(glue_runtimes.not_installed(runtime, lacking))
            script = run_setup.resolve_script(job["Command"]["ScriptLocation"], work)
            plan = self._plan(job, args, work, note)
            spec = {
                "script": str(script), "run_id": run["Id"], "cwd": str(work),
                "argv": script_argv(str(script), job["Name"], run["Id"], args),
                "bookmark_option": bookmark_option(args), "py_paths": plan.py_paths,
                "jars": plan.jars, "result": str(work / "result.json"),
                # a GlueCatalog the script's own SparkConf defines maps to this catalog's
                # local REST settings (glue_local.script_conf)
                "lake_catalog": (self.pipeline.lake.catalog_name
                                 if self.env.get(settings.ENV_PROFILE, settings.PROFILE_LOCAL)
                                 != settings.PROFILE_AWS else None),
            }
            uses_spark = needs_spark(script.read_text(errors="replace"))
            if not runtime.shared_driver:  # its own Spark driver, started by its process
                note(f"GlueVersion {runtime.glue_version}: AWS Glue {runtime.glue_version}'s "
                     f"runtime (Spark {runtime.spark}, Iceberg {runtime.iceberg}, "
                     f"AWSGlueDataplanePython {runtime.awsglue}), on a Spark driver of its own")
                if uses_spark:
                    from glue_local.spark_session import catalog_conf

                    driver_env = glue_runtimes.driver_env(self.env, self.state_dir, note)
                    spec["own_driver"] = {
                        "glue_version": runtime.glue_version, "conf": plan.conf,
                        "jars": [str(j) for j in runtime.jars], "env": driver_env,
                        # the lake's settings from the runner's pipeline: the run's
                        # process does not read pipeline.toml again
                        "catalog": catalog_conf(driver_env, self.pipeline),
                        "catalog_name": self.pipeline.lake.catalog_name}
                return self._run_process(spec, out, active, runtime)
            if not uses_spark:
                return self._run_process(spec, out, active)
            # from here on a dead driver is the run's cause of failure (also while its
            # settings are sorted out on the driver, before its process starts)
            active.on_driver, active.generation = True, self.driver.generation
            session = self.driver.session()
            plan.conf, plan.driver_conf = self.driver.split_conf(session, plan.conf)
            if plan.driver_conf:
                note(f"driver settings {sorted(plan.driver_conf)}: this run uses a Spark "
                     "driver started with them (it waits until other runs leave the driver)")
            with self.driver.use(plan.driver_conf, lambda: active.ended_by is not None) as session:
                if active.ended_by:
                    return "FAILED", None
                active.generation = self.driver.generation  # the driver it runs on
                spec |= {"gateway": gateway_of(session), "conf": plan.conf}
                return self._run_process(spec, out, active)

    def _run_process(self, spec: dict, out, active: _Active,
                     runtime: glue_runtimes.Runtime | None = None) -> tuple[str, str | None]:
        if active.ended_by:
            return "FAILED", None  # stopped while being prepared: _process names the state
        proc = active.proc = self._take_process(runtime)
        threading.Thread(target=_reap_group, args=(proc,), daemon=True).start()
        spare = threading.Timer(SPARE_AFTER_START_SECONDS, self._ensure_spare)
        spare.daemon = True
        spare.start()
        try:
            if active.ended_by:  # stopped in between: _end may have missed the process
                _signal_group(proc, signal.SIGKILL)
            self._wait_ready(proc)
            try:
                proc.stdin.write(json.dumps(spec) + "\n")
                proc.stdin.close()
            except OSError:
                pass  # it died: its exit status below says so
            for line in proc.stdout:
                out.write(line)
                out.flush()
                sys.__stderr__.write(line)
            proc.wait()
        finally:
            if proc.poll() is None:  # the runner failed while the run went on: end it
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    stream.close()
            if active.ended_by:  # jobs it submitted while being ended
                self.driver.cancel(spec["run_id"])
        result_path = Path(spec["result"])
        if result_path.exists():
            result = json.loads(result_path.read_text())
            result_path.unlink()
            return result["state"], result.get("error")
        return "FAILED", exit_message(proc.returncode)
