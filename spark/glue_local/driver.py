"""The runner's warm Spark driver, shared by runs whose driver-level settings match.

Each run gets its own SparkSession in its own process (glue_local.run_process); what
those share is this JVM SparkContext. Settings that only apply when a SparkContext
starts (static SQL confs such as `spark.sql.extensions`, core settings such as
`spark.serializer`) are the driver's: a run asking for other values waits until no run
uses the driver, which is then restarted with them and kept until a run asks otherwise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress

log = logging.getLogger("glue_local.driver")

SessionFactory = Callable[..., object]  # (env, extra_conf=...) -> SparkSession
DeathHandler = Callable[[str], None]  # called with why the driver's JVM died
WATCH_INTERVAL_SECONDS = 0.5
# A driver no run has used for this long collects its heap and hands the free part back
# to the OS: the idle lab holds what it uses, not what its biggest run grew (a 1M-row full
# load left 0.9 GB committed, 0.15 GB live; the JVM's RSS fell from 1.0 to 0.67 GB). Twice:
# some objects are freed only by cleaners the first collection sets off (Spark's
# ContextCleaner drops the broadcasts, shuffles and cached blocks of what it collected,
# in its own threads); the second takes them (after a loaded run: 218 -> 156 MB live, the
# JVM's RSS 919 -> 828 MB; a third freed nothing more).
IDLE_TRIM_SECONDS = (10.0, 15.0)
# The free heap's share kept by that collection (MinHeapFreeRatio <= MaxHeapFreeRatio)
FREE_RATIOS = {"MinHeapFreeRatio": "10", "MaxHeapFreeRatio": "30"}
# How the JVM's exit code reads: Spark's SparkExitCode.OOM, and HotSpot's exit under
# -XX:+ExitOnOutOfMemoryError (spark_session adds it: an OOM anywhere ends the JVM
# rather than leaving it half alive)
OOM_EXIT_CODES = {52: "java.lang.OutOfMemoryError (SparkExitCode.OOM)",
                  3: "java.lang.OutOfMemoryError (-XX:+ExitOnOutOfMemoryError)"}


def death_reason(returncode: int) -> str:
    """Why the driver's JVM ended, from its exit status (Popen: -N for signal N)."""
    if returncode in OOM_EXIT_CODES:
        what = OOM_EXIT_CODES[returncode]
    elif returncode < 0:
        what = f"killed by signal {-returncode}"
    else:
        what = f"exit code {returncode}"
    return f"The Spark driver (JVM) died during this run: {what}"


def jvm_process(session):
    """The Popen of the session's JVM (PySpark's launch_gateway keeps it as gateway.proc);
    None when this process did not start it (a driver reached through a port)."""
    try:
        return getattr(session.sparkContext._gateway, "proc", None)
    except Exception:
        return None


def forget_dead_jvm(session, proc=None) -> None:
    """Clear PySpark's process-wide singletons that still point at a dead JVM (`proc`,
    when known), so the next getOrCreate() launches a new one instead of handing back
    the dead context; singletons of a newer JVM are left alone."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    if proc is not None and gateway is not None and getattr(gateway, "proc", None) is not proc:
        return  # already forgotten, and a new driver is up
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    if gateway is not None:
        with suppress(Exception):  # its callback server holds a port and a thread
            gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            with suppress(Exception):
                proc.wait(timeout=5)


def session_alive(session) -> bool:
    try:
        return session.sparkContext._jsc is not None and not (
            session.sparkContext._jsc.sc().isStopped())
    except Exception:
        return False


def gateway_of(session) -> dict:
    """How a run's process reaches this driver through py4j (never put on a command line)."""
    gw = session.sparkContext._gateway
    params = getattr(gw, "java_parameters", None) or gw.gateway_parameters
    return {"port": params.port, "secret": params.auth_token}


def forget_cached_data(session) -> None:
    """Cached tables and persisted RDDs live in the shared driver, not in a session: once
    no run uses the driver, drop them, so no run reads another's cached (stale) data."""
    if not session_alive(session):
        return
    try:
        session.catalog.clearCache()
        for rdd in list(session.sparkContext._jsc.getPersistentRDDs().values()):
            rdd.unpersist(False)
    except Exception:
        log.warning("dropping cached data after the runs failed", exc_info=True)


def collect_compactly(jvm) -> str | None:
    """A full collection after which the heap keeps at most 30 % free (FREE_RATIOS), and
    gives the rest back to the OS, as it then does with the native heap's free memory; the
    JVM's own ratios (40 / 70 % by default) are put back at once, so the runs size the heap
    as before. The ratios are manageable flags. Returns the native trim's report."""
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    before = {name: bean.getVMOption(name).getValue() for name in FREE_RATIOS}
    for name, value in FREE_RATIOS.items():  # min first: min <= max at every step
        bean.setVMOption(name, value)
    try:
        jvm.java.lang.System.gc()
    finally:
        for name in reversed(FREE_RATIOS):
            bean.setVMOption(name, before[name])
    return trim_native_heap(jvm)


def trim_native_heap(jvm) -> str | None:
    """HotSpot's `System.trim_native_heap` (jcmd's; JDK 17.0.9+), through the
    DiagnosticCommand MBean: glibc keeps what the JVM's threads and compilers freed
    (70-85 MB of an idle driver after a minute of load) until malloc_trim hands it back. The
    command's report, or None where the JVM lacks it (off glibc it answers so itself)."""
    lang = jvm.java.lang

    def array(component: str, items: list):
        made = lang.reflect.Array.newInstance(lang.Class.forName(component), len(items))
        for i, item in enumerate(items):
            lang.reflect.Array.set(made, i, item)
        return made

    try:
        # the platform server's own class is not exported (java.management): its
        # interface's method is what reflection may call
        invoke = lang.Class.forName("javax.management.MBeanServerConnection").getMethod(
            "invoke", array("java.lang.Class", [lang.Class.forName(n) for n in (
                "javax.management.ObjectName", "java.lang.String",
                "[Ljava.lang.Object;", "[Ljava.lang.String;")]))
        command = jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand")
        no_args = array("java.lang.String", [])
        report = invoke.invoke(
            lang.management.ManagementFactory.getPlatformMBeanServer(),
            array("java.lang.Object", [command, "systemTrimNativeHeap",
                                       array("java.lang.Object", [no_args]),
                                       array("java.lang.String", ["[Ljava.lang.String;"])]))
        return str(report).strip()
    except Exception:
        log.debug("the driver's native heap was not trimmed", exc_info=True)
        return None


class Driver:
    def __init__(self, factory: SessionFactory, env: Mapping[str, str],
                 on_state: Callable[[Driver], None] = lambda driver: None) -> None:
        self._factory, self._env = factory, dict(env)
        self._on_state = on_state  # told of every change of `state` (health checks)
        self._cond = threading.Condition()
        self._session = None
        # the JVM's Popen, kept when the session starts: PySpark's gateway is process-wide,
        # and another driver of this process that saw the JVM die first clears it
        self._proc = None
        self._conf: dict[str, str] = {}  # the driver-level settings it was started with
        self._base: dict[str, str | None] = {}  # their values before the first override
        self._users = 0
        self._restart_pending = False  # a run waits to restart it: no new run joins
        self._scratch = None  # a session only used to ask which settings are runtime ones
        self._generation = 0  # +1 at each death: a run of a dead driver leaves no count
        self.state = "idle"  # idle (not started) | up | dead (its JVM died) | restarting
        self.last_death: str | None = None
        self.deaths = 0
        self._unwatch: threading.Event | None = None  # the running watch's wake-up
        self._idle_since = time.monotonic()  # the last run's end (or the driver's birth)
        self._trims = 0  # collections since then (trim), the last one at _trimmed_at
        self._trimmed_at = self._idle_since

    def watch(self, on_death: DeathHandler, restart: Callable[[], None] | None = None,
              interval: float = WATCH_INTERVAL_SECONDS) -> threading.Thread:
        """Look at the JVM every `interval`: once it has died (an OutOfMemoryError, a
        kill), state turns "dead" at once, `on_death` fails the runs that were on it,
        PySpark forgets it, and `restart` (the warm start) brings a new one up. Without
        this, every later run got the dead context (ConnectionRefusedError) for good."""
        wake = threading.Event()

        def seen(why: str) -> None:  # found by a run: the watch deals with it now
            self._seen = why
            wake.set()

        self._on_death_seen = seen  # type: ignore[method-assign]
        self._seen: str | None = None
        self._unwatch = wake

        def loop() -> None:
            while self._unwatch is wake:  # until unwatch(): a stopped server looks no more
                wake.wait(interval)
                wake.clear()
                if self._unwatch is not wake:
                    return
                why, self._seen = self._check_death() or self._seen, None
                if why is None:
                    continue
                try:
                    on_death(why)
                except Exception:
                    log.exception("failing the runs of the dead driver failed")
                if restart is not None:
                    self.state = "restarting"
                    self._on_state(self)
                    restart()

        thread = threading.Thread(target=loop, name="spark-driver-watch", daemon=True)
        thread.start()
        return thread

    def unwatch(self) -> None:
        """End the watch (the server stops): it neither fails runs nor restarts."""
        wake, self._unwatch = self._unwatch, None
        if wake is not None:
            wake.set()

    @property
    def in_use(self) -> bool:
        """A run holds the driver, or waits to restart it."""
        return self._users > 0 or self._restart_pending

    @property
    def generation(self) -> int:
        return self._generation

    def died_since(self, generation: int) -> str | None:
        """Why the driver a run started on (its `generation`) died, if it did: a run
        usually notices the dead JVM (py4j: connection refused) before the watch does."""
        why = self._check_death()
        if why is not None:
            self._on_death_seen(why)
        return self.last_death if self._generation > generation else None

    def _on_death_seen(self, why: str) -> None:  # noqa: B027 - set by watch()
        pass

    def _check_death(self) -> str | None:
        with self._cond:
            proc = self._proc if self._session is not None else None
            code = proc.poll() if proc is not None else None
            if code is None:
                return None
            why = death_reason(code)
            log.error("%s (pid %s); runs on it fail, a new driver starts", why, proc.pid)
            session = self._session
            self._session, self._proc, self._scratch, self._conf = None, None, None, {}
            self._users = 0  # the runs that held it are ended by on_death
            self._generation += 1
            self.state, self.last_death = "dead", why
            self.deaths += 1
            self._on_state(self)
            forget_dead_jvm(session, proc)
            self._cond.notify_all()
            return why

    def session(self, conf: Mapping[str, str] | None = None,
                abort: Callable[[], bool] = lambda: False):
        """The driver, started (or restarted once idle) with `conf` if that differs. While a
        restart waits for the runs using the driver to leave, no new run joins them."""
        wanted = dict(conf or {})
        with self._cond:
            mine = False  # this caller waits for the runs to leave, to restart the driver
            try:
                while True:
                    alive = self._session is not None and session_alive(self._session)
                    matches = alive and (conf is None or wanted == self._conf)
                    if matches and (not self._restart_pending or mine):
                        return self._session
                    if not matches and (not alive or self._users == 0):
                        self._restart(wanted if conf is not None else self._conf)
                        return self._session
                    if abort():
                        return None
                    if not matches and not self._restart_pending:
                        self._restart_pending = mine = True
                    self._cond.wait(timeout=5.0)
            finally:
                if mine:
                    self._restart_pending = False
                    self._cond.notify_all()

    def wake(self) -> None:
        """Let waiting runs look again (one of them was stopped)."""
        with self._cond:
            self._cond.notify_all()

    @contextmanager
    def use(self, conf: Mapping[str, str],
            abort: Callable[[], bool] = lambda: False) -> Iterator[object]:
        """Hold the driver (with these driver-level settings) for one run; None if `abort`
        turned true while waiting for it."""
        with self._cond:
            session = self.session(conf, abort)
            if session is None:
                yield None
                return
            self._users += 1
            generation = self._generation
        try:
            yield session
        finally:
            with self._cond:
                if generation == self._generation:
                    self._users -= 1
                    if self._users == 0:
                        forget_cached_data(session)
                        self._idle_since, self._trims = time.monotonic(), 0
                self._cond.notify_all()

    def worked(self) -> None:
        """Work that held no run (the JIT warm-up) grew the heap: collect it once idle."""
        with self._cond:
            self._idle_since, self._trims = time.monotonic(), 0

    def trim(self, idle_seconds: tuple[float, ...] = IDLE_TRIM_SECONDS,
             now: float | None = None) -> bool:
        """A full collection of the driver's heap once no run has used it for
        `idle_seconds[0]`, each next one as far after the one before as `idle_seconds`
        has them apart, then none until a run has used it again; True if it collected. A
        run that starts meanwhile waits at most the collection's pause (~0.3 s)."""
        now = time.monotonic() if now is None else now
        with self._cond:
            session, done = self._session, self._trims
            if session is None or self._users or self._restart_pending \
                    or done >= len(idle_seconds):
                return False
            due = (self._idle_since + idle_seconds[0] if done == 0
                   else self._trimmed_at + idle_seconds[done] - idle_seconds[done - 1])
            if now < due:
                return False
            self._trims, self._trimmed_at = done + 1, now
        if not session_alive(session):
            return False
        begun = time.monotonic()
        try:
            native = collect_compactly(session.sparkContext._jvm)
        except Exception:  # it died meanwhile: the watch deals with that
            log.warning("collecting the idle driver's heap failed", exc_info=True)
            return False
        log.info("the idle Spark driver collected its heap%s", f" ({native})" if native else "")
        with self._cond:  # the next one's gap counts from the collection's end
            self._trimmed_at = now + time.monotonic() - begun
        return True

    def _restart(self, conf: dict[str, str]) -> None:
        if self._session is not None and session_alive(self._session):
            log.info("restarting the Spark driver for settings %s", sorted(conf))
            jconf = self._session.sparkContext._jsc.sc().conf()
            for key in conf:
                if key not in self._base:
                    self._base[key] = jconf.get(key) if jconf.contains(key) else None
            self._session.stop()
        started = time.monotonic()
        self._session = (self._factory(self._env, extra_conf=conf) if conf
                         else self._factory(self._env))
        self._proc = jvm_process(self._session)
        self._conf, self._scratch = dict(conf), None
        self.state = "up"
        self._on_state(self)
        log.info("SparkSession ready in %.1fs", time.monotonic() - started)

    def split_conf(self, session, conf: Mapping[str, str]) -> tuple[dict, dict]:
        """(settings a session can take, the driver-level settings the run needs: those
        that differ from the driver's values before any run changed them)."""
        with self._cond:
            if self._scratch is None:
                self._scratch = session._jsparkSession.newSession()
            scratch = self._scratch
        runtime, driver = {}, {}
        jconf = session.sparkContext._jsc.sc().conf()
        for key, value in conf.items():
            try:
                scratch.conf().set(key, value)
                runtime[key] = value
            except Exception:  # "Cannot modify the value of a static/Spark config"
                current = jconf.get(key) if jconf.contains(key) else None
                if value != self._base.get(key, current):
                    driver[key] = value
        return runtime, driver

    def stop(self) -> None:
        with self._cond:
            if self._session is not None and session_alive(self._session):
                self._session.stop()
            self._session, self._proc = None, None

    def cancel(self, run_id: str) -> None:
        """Cancel the Spark jobs of one run (its process set job group = run id)."""
        session = self._session
        if session is not None and session_alive(session):
            try:
                session.sparkContext.cancelJobGroup(run_id)
            except Exception:
                log.debug("cancelling the jobs of %s failed", run_id, exc_info=True)
