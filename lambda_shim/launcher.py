"""The Lambda stand-in's watcher (`python -m lambda_shim`) as a supervised service: its
registry record and launcher. Not shipped to AWS (deploy zips lambda_function.py and the
modules it imports)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from pipeline_contract import minio_users, settings
from pipeline_contract.service_kit import (
    PIPELINE,
    ProcessSpec,
    Service,
    ServiceInfo,
    StackContext,
    python_module,
)

ENV_FULL_SCAN = "CDCLAB_WATCH_FULL_SCAN_SECONDS"  # the watcher's full listing period
ENV_SWEEP = "CDCLAB_WATCH_SWEEP_SECONDS"  # its backlog sweep period (EventBridge schedule)
WATCHER_STATE = ("watcher", "state.json")  # lambda_shim.watcher.state_path
SERVICE = ServiceInfo("watcher", "lambda_shim.launcher:WatcherService", PIPELINE,
                      state_file="/".join(WATCHER_STATE))


class WatcherService(Service):
    info = SERVICE
    depends_on = ("minio", "glue")

    def __init__(self, interval: float | None = None,
                 full_scan_seconds: float | None = None,
                 sweep_seconds: float | None = None,
                 catch_up_seconds: float | None = None) -> None:
        self.interval, self.full_scan_seconds = interval, full_scan_seconds
        self.sweep_seconds, self.catch_up_seconds = sweep_seconds, catch_up_seconds
        self._started_at = 0.0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> WatcherService:
        full_scan, sweep = environ.get(ENV_FULL_SCAN), environ.get(ENV_SWEEP)
        return cls(full_scan_seconds=float(full_scan) if full_scan else None,
                   sweep_seconds=float(sweep) if sweep else None)

    def prepare(self, ctx: StackContext) -> None:
        self._started_at = time.time()

    def _periods(self) -> dict[str, str]:
        env = {}
        if self.interval is not None:
            env[settings.ENV_WATCH_INTERVAL] = str(self.interval)
        if self.catch_up_seconds is not None:
            env[settings.ENV_WATCH_CATCH_UP] = str(self.catch_up_seconds)
        return env

    def container_env(self) -> dict[str, str]:
        env = self._periods()
        if self.full_scan_seconds is not None:
            env[ENV_FULL_SCAN] = str(self.full_scan_seconds)
        if self.sweep_seconds is not None:
            env[ENV_SWEEP] = str(self.sweep_seconds)
        return env

    def process(self, ctx: StackContext) -> ProcessSpec:
        env = {
            settings.ENV_STATE_DIR: str(ctx.state_dir),
            "GLUE_JOB_NAME": ctx.pipeline.glue_job.name,
            **minio_users.service_keys(ctx.env, self.name),
            **self._periods(),
        }
        args = [] if self.full_scan_seconds is None else [
            "--full-scan-seconds", str(self.full_scan_seconds)]
        if self.sweep_seconds is not None:
            args += ["--sweep-seconds", str(self.sweep_seconds)]
        return ProcessSpec(argv=python_module("lambda_shim", *args), env=env)

    def healthy(self, ctx: StackContext) -> bool:
        # the state file persists across restarts: healthy once THIS start rewrote it,
        # and while it keeps listing (rewritten at least every full re-list)
        path = ctx.state_dir.joinpath(*WATCHER_STATE)
        updated = json.loads(path.read_text()).get("updated_at", 0)
        return updated >= self._started_at and (
            time.time() - updated < settings.WATCHER_STALE_SECONDS)

    def address(self, ctx: StackContext) -> str:
        p = ctx.pipeline
        return f"{p.bronze_location} -> lambda_function.lambda_handler -> {p.glue_job.name}"
