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
from contextlib import contextmanager

log = logging.getLogger("glue_local.driver")

SessionFactory = Callable[..., object]  # (env, extra_conf=...) -> SparkSession


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


class Driver:
    def __init__(self, factory: SessionFactory, env: Mapping[str, str]) -> None:
        self._factory, self._env = factory, dict(env)
        self._cond = threading.Condition()
        self._session = None
        self._conf: dict[str, str] = {}  # the driver-level settings it was started with
        self._base: dict[str, str | None] = {}  # their values before the first override
        self._users = 0
        self._restart_pending = False  # a run waits to restart it: no new run joins
        self._scratch = None  # a session only used to ask which settings are runtime ones

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
        try:
            yield session
        finally:
            with self._cond:
                self._users -= 1
                if self._users == 0:
                    forget_cached_data(session)
                self._cond.notify_all()

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
        self._conf, self._scratch = dict(conf), None
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
            self._session = None

    def cancel(self, run_id: str) -> None:
        """Cancel the Spark jobs of one run (its process set job group = run id)."""
        session = self._session
        if session is not None and session_alive(session):
            try:
                session.sparkContext.cancelJobGroup(run_id)
            except Exception:
                log.debug("cancelling the jobs of %s failed", run_id, exc_info=True)
