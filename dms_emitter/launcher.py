"""The DMS-format CDC emitter as a supervised service (python -m dms_emitter): its
registry record and launcher. The registry imports this module, and containers' health
checks the registry: the emitter itself (psycopg, pyarrow) is imported only to check it."""

from __future__ import annotations

from pipeline_contract import minio_users, settings
from pipeline_contract.service_kit import (
    ENV_PG_PASSWORD,
    PIPELINE,
    ProcessSpec,
    Service,
    ServiceInfo,
    StackContext,
    pid_alive,
    python_module,
)

SERVICE = ServiceInfo("emitter", "dms_emitter.launcher:EmitterService", PIPELINE,
                      state_file="emitter/state.json")


def emitter_healthy(state: dict) -> bool:
    from dms_emitter.emitter import HEALTHY_PHASES

    pid = state.get("pid")
    return (state.get("phase") in HEALTHY_PHASES and not state.get("resync_needed")
            and isinstance(pid, int) and pid_alive(pid))


def emitter_state(ctx: StackContext) -> dict:
    from dms_emitter.emitter import read_state

    return read_state(ctx.state_dir / SERVICE.state_file)


class EmitterService(Service):
    info = SERVICE
    secrets = frozenset({ENV_PG_PASSWORD})  # it logs in to the source (CDCLAB_PG_DSN)
    depends_on = ("postgres", "minio")

    def process(self, ctx: StackContext) -> ProcessSpec:
        return ProcessSpec(argv=python_module("dms_emitter"), cwd=settings.REPO_ROOT,
                           env={settings.ENV_STATE_DIR: str(ctx.state_dir),
                                **minio_users.service_keys(ctx.env, self.name)})

    def healthy(self, ctx: StackContext) -> bool:
        """Streaming: the full load is in the bucket and CDC is running (or, for a
        full-load task, the full load is done), by a live emitter that passed its start
        checks (it writes its pid then), not one stopped for a resync."""
        return emitter_healthy(emitter_state(ctx))

    def address(self, ctx: StackContext) -> str:
        p = ctx.pipeline
        return f"slot {p.source.slot} -> {p.bronze_location}"

    def startup_timeout(self) -> float:
        return 300.0  # the snapshot's start and each LOAD file (DMS's 1 GB at most)

    def start_progress(self, ctx: StackContext) -> str | None:
        """The full load's files so far: a big table's load takes as long as it needs."""
        loading = emitter_state(ctx).get("loading")
        if not loading:
            return None
        return (f"full load of {loading['table']}: {loading['files']} file(s), "
                f"{loading['rows']} rows")
