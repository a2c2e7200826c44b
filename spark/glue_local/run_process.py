"""One Glue job run in its own Python process, on the runner's warm JVM.

`python -m glue_local.run_process` imports PySpark and AWS's awsglue, then waits for the
run's spec (one JSON line on stdin): the runner keeps one such process ready so a run
does not pay for the imports. With a spec it connects to the runner's Spark driver
through py4j (port and secret come on stdin, never on a command line), opens a **new
SparkSession** (its own temp views, SQL conf, UDFs and catalogs; the SparkContext and
its JVM are shared), applies the run's `--conf`, `--extra-py-files`, module paths and
`--extra-jars`, sets `sys.argv` as Glue does and runs the script as `__main__`.

Isolation is the process: `sys.argv`, `sys.modules`, `sys.path`, globals and stdout are
the run's own, and BatchStopJobRun/Timeout end the process (its Spark jobs are
cancelled by job group = run id). The result goes to the spec's result file.

A Glue 5.0 run's process is the Glue 5.0 runtime's Python and starts a driver of its own
(`own_driver` in the spec, no gateway): glue_local.glue_runtimes.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import threading
import traceback
from pathlib import Path

# Imported while waiting for a run, so a run does not pay for them.
import pyspark  # noqa: F401
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

LOCAL_RUN_ID = "cdclab.glue.runId"  # Spark local properties read by spark/glue-jvm
LOCAL_BOOKMARK_OPTION = "cdclab.glue.bookmarkOption"
# Modules Glue gives scripts that AWS does not publish (awsgluedq): cdclab's stand-ins
STAND_INS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand_ins")


def _preload() -> None:
    with contextlib.suppress(Exception):
        import awsglue.context  # noqa: F401
        import awsglue.job  # noqa: F401
        import awsglue.transforms  # noqa: F401
        import awsglue.utils  # noqa: F401


def _warm_boto3() -> None:
    """botocore reads a service's model (megabytes of JSON) for its first client in a
    process, ~0.5 s of CPU for S3: read while the process waits for its run, a script's
    boto3 clients (the shipped job's markers and input guard) come from the cached models.
    In a thread after "ready": a run that comes at once never waits for it."""
    with contextlib.suppress(Exception):
        import boto3

        for service in ("s3", "glue"):
            boto3.client(service, region_name="us-east-1")


def preload() -> None:
    """All a run process reads before its run, at once: what glue_local.run_forks reads
    once for every run process it forks."""
    _preload()
    _warm_boto3()


def connect(gateway: dict) -> SparkContext:
    """A Python SparkContext over the runner's running JVM SparkContext."""
    from pyspark.java_gateway import launch_gateway

    os.environ["PYSPARK_GATEWAY_PORT"] = str(gateway["port"])
    os.environ["PYSPARK_GATEWAY_SECRET"] = gateway["secret"]
    try:
        gw = launch_gateway()
    finally:  # the scripts (and the Python workers they start) need not see the secret
        os.environ.pop("PYSPARK_GATEWAY_PORT", None)
        os.environ.pop("PYSPARK_GATEWAY_SECRET", None)
    jvm = gw.jvm
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(
        jvm.org.apache.spark.SparkContext.getOrCreate())
    return SparkContext(gateway=gw, jsc=jsc, conf=SparkConf(_jconf=jsc.sc().conf()))


def quick_sql_functions() -> None:
    """`pyspark.sql.functions` finds its JVM function by name at every call: a py4j
    lookup of the `functions` class through the gateway's imports (the JVM tries each
    imported package on the class path, ~0.5 ms) and one of the method. A one-row run of
    the pipeline's job builds ~200 columns that way; the JVM's answer never changes in a
    process, so each name is looked up once. PySpark's own code is unchanged."""
    try:
        from pyspark.sql import functions
    except ImportError:
        return
    find = getattr(functions, "_get_jvm_function", None)
    if find is None or getattr(find, "_cdclab_memo", False):
        return
    found: dict[tuple[int, str], object] = {}

    def memo(name: str, sc: SparkContext):
        key = (id(sc._gateway), name)
        member = found.get(key)
        if member is None:
            member = found[key] = find(name, sc)
        return member

    memo._cdclab_memo = True  # type: ignore[attr-defined]
    functions._get_jvm_function = memo


def start_own_driver(own: dict) -> SparkContext:
    """A Spark driver of this run's own (a Glue 5.0 run: this process is that runtime's
    Python, its pyspark launches its Spark), with the run's Glue version's jars and all
    its `--conf` as the driver's settings (glue_local.glue_runtimes)."""
    from glue_local.spark_session import APP_NAME, build_session

    spark = build_session(own["env"], own["catalog"], own["catalog_name"],
                          app_name=f"{APP_NAME}-{own['glue_version']}",
                          extra_conf=own.get("conf"),
                          spark_jars=[Path(j) for j in own["jars"]])
    return spark.sparkContext


def stop_own_driver() -> None:
    """Stop this run's own driver (the scripts' stop() is a no-op: _share_context), so
    its JVM removes its temp files before the process ends."""
    sc = SparkContext._active_spark_context
    if sc is not None:
        sc._jsc.sc().stop()


_run_session = None  # the run's JVM session: forgotten by every thread when it ends


def open_session(sc: SparkContext, conf: dict[str, str]) -> SparkSession:
    """A fresh session for the run; the JVM's default session stays the runner's."""
    jvm = sc._jvm
    root = jvm.SparkSession.getDefaultSession().get()
    jsession = root.newSession()
    global _run_session
    _run_session = jsession
    for key, value in conf.items():
        jsession.conf().set(key, value)
    # PySpark makes the first SparkSession wrapper of a process the JVM's *default* session
    # (shared by all runs): let that be the default it already is, so runs starting at the
    # same time never swap it; then the run's session is this process's one
    SparkSession(sc, root)
    spark = SparkSession(sc, jsession)
    SparkSession._instantiatedSession = SparkSession._activeSession = spark
    jvm.SparkSession.setActiveSession(jsession)  # for the JVM side of awsglue
    return spark


def apply_script_conf(sc: SparkContext, given: dict[str, str], lake_catalog: str | None,
                      strict: bool = True) -> None:
    """The script's own SparkConf / builder settings on the run's session
    (glue_local.script_conf): notes go to the run log; a SparkConf setting that cannot take
    effect fails the run by name, a builder's is noted (`strict` False: Spark's builder
    over an existing session applies only runtime settings and warns about the rest)."""
    from glue_local import script_conf

    if not given or _run_session is None:
        return
    defaults = dict(SparkConf().getAll())
    context = dict(SparkConf(_jconf=sc._jsc.sc().conf()).getAll())
    planned = script_conf.plan(script_conf.script_settings(given, defaults), context,
                               lake_catalog)
    for note in planned.notes:
        print(f"cdclab: {note}", file=sys.stderr)
    for key, value in planned.session.items():
        try:
            _run_session.conf().set(key, value)
        except Exception as e:  # "Cannot modify the value of a static/Spark config"
            if strict:
                raise RuntimeError(script_conf.refusal(key, value)) from e
            print(f"cdclab: SparkSession.builder {key}: a driver-level setting, not applied "
                  "to the existing session (as Spark's builder does; use --conf)",
                  file=sys.stderr)


def _share_context(sc: SparkContext, lake_catalog: str | None = None) -> None:
    """A script's `SparkContext()` is the run's context (as a script's first one on Glue),
    with the script's SparkConf applied to the run's session; stop() leaves the shared
    driver running (on Glue it ends the job's own cluster)."""
    get_or_create = SparkContext.getOrCreate.__func__
    build = SparkSession.Builder.getOrCreate

    def conf_of(args, kwargs) -> dict[str, str]:
        conf = kwargs.get("conf", args[7] if len(args) > 7 else None)
        return dict(conf.getAll()) if conf is not None else {}

    def view(self, *args, **kwargs):
        self.__dict__.update(sc.__dict__)
        apply_script_conf(sc, conf_of(args, kwargs), lake_catalog)

    def get(cls, conf=None):
        if conf is not None:
            apply_script_conf(sc, dict(conf.getAll()), lake_catalog)
        return get_or_create(cls)

    def builder_get(self):
        given = {k: str(v) for k, v in self._options.items() if k.startswith("spark.")}
        apply_script_conf(sc, given, lake_catalog, strict=False)
        for key in given:  # applied above (Spark would set them unlocalized)
            self._options.pop(key, None)
        return build(self)

    def keep_running(self, *args, **kwargs):
        print("cdclab: stop() of the shared local Spark driver ignored", file=sys.stderr)

    SparkContext.__init__ = view
    SparkContext.getOrCreate = classmethod(get)
    SparkSession.Builder.getOrCreate = builder_get
    SparkContext.stop = keep_running
    SparkSession.stop = keep_running


def prepare(spec: dict) -> None:
    for note in spec.get("notes", []):
        print(f"cdclab: {note}", file=sys.stderr)
    os.chdir(spec["cwd"])
    paths = spec.get("py_paths", [])
    sys.path[:0] = [os.path.dirname(spec["script"]), *paths]
    sys.path.append(STAND_INS)  # last: a script's own copy of those modules wins
    gateway, own = spec.get("gateway"), spec.get("own_driver")
    if own:
        sc = start_own_driver(own)
    elif gateway:
        sc = connect(gateway)
    else:
        return
    quick_sql_functions()
    if paths:  # Python workers (UDFs, map/filter) import from the same places
        sc.environment["PYTHONPATH"] = os.pathsep.join(paths)
    sc.setLocalProperty(LOCAL_RUN_ID, spec["run_id"])
    sc.setLocalProperty(LOCAL_BOOKMARK_OPTION, spec["bookmark_option"])
    sc.setJobGroup(spec["run_id"], f"Glue job run {spec['run_id']}", interruptOnCancel=True)
    spark = open_session(sc, {} if own else spec.get("conf", {}))
    for jar in spec.get("jars", []):
        spark.sql(f"ADD JAR '{jar}'")
    _share_context(sc, spec.get("lake_catalog"))


def run(spec: dict) -> dict:
    try:
        prepare(spec)
        sys.argv = list(spec["argv"])
        runpy.run_path(spec["script"], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            return {"state": "FAILED",
                    "error": f"SystemExit: the script exited with status {e.code}"}
    except BaseException as e:  # the job's exception: its traceback goes to the run log
        traceback.print_exc()
        return {"state": "FAILED", "error": f"{type(e).__name__}: {e}"}
    finally:
        with contextlib.suppress(Exception):
            sc = SparkContext._active_spark_context
            if sc is not None:
                sc._jvm.org.cdclab.glue.JobRun.clear()
                # threads started during the run (pools' new workers) inherited its
                # session as their active one and would keep it alive for good
                sc._jvm.org.cdclab.glue.ThreadLocals.forget(_run_session)
                if spec.get("own_driver"):
                    stop_own_driver()
        sys.stdout.flush()
        sys.stderr.flush()
    return {"state": "SUCCEEDED"}


def release_java_objects() -> int:
    """Tell the shared JVM to drop every object this run still holds a py4j reference to.

    py4j frees a JVM object when its Python proxy is collected, through a queue a
    background thread sends; os._exit (below) collects nothing and drops that queue, so
    without this each run's session, DataFrames and their query plans stayed bound in the
    runner's JVM for good: a warm driver under steady runs filled its heap in ten minutes
    and hung ("Failed to allocate a page")."""
    import gc

    from py4j.java_gateway import JavaObject

    SparkSession._instantiatedSession = SparkSession._activeSession = None
    gc.collect()  # proxies kept alive only by cycles queue themselves here
    pending = [o for o in gc.get_objects() if isinstance(o, JavaObject)]
    sent = 0
    for client, target_id in [(o._gateway_client, o._target_id) for o in pending]:
        sent += _free(client, target_id)
    queue = getattr(pending[0]._gateway_client, "finalizer_deque", None) if pending else None
    while queue:  # what was collected but not yet sent
        with contextlib.suppress(IndexError):
            task = queue.pop()
            if isinstance(task, tuple):
                sent += _free(*task)
    return sent


def _free(client, target_id: str) -> int:
    """Send py4j's "object no longer referenced" now (ClientServer would queue it)."""
    try:
        try:
            client.garbage_collect_object(target_id, False)
        except TypeError:  # a plain GatewayClient: sends at once
            client.garbage_collect_object(target_id)
    except Exception:  # the JVM may be gone already: nothing left to free
        return 0
    return 1


def main() -> None:
    _preload()
    print("ready", file=sys.__stdout__, flush=True)  # the runner waits for this line
    threading.Thread(target=_warm_boto3, name="warm-boto3", daemon=True).start()
    line = sys.stdin.readline()
    if not line.strip():
        return  # the runner no longer needs this process
    spec = json.loads(line)
    result = run(spec)
    with contextlib.suppress(Exception):
        release_java_objects()
    tmp = spec["result"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, spec["result"])
    sys.stdout.flush()
    os._exit(0 if result["state"] == "SUCCEEDED" else 1)  # no atexit: the driver is shared


if __name__ == "__main__":
    main()
