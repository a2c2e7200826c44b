"""Is data flowing, not just are the processes up? A service can be "healthy" while a
file waits forever, every run fails or the slot is gone; status must say so.

`assess` is pure (facts in, problems out); the gatherers below read the facts from the
watcher's state, the Glue API and PostgreSQL, each answering None when it cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from pipeline_contract import settings

# An object waiting this long for a run (or in a run for this long) is a stall, not lag:
# the lab's runs take seconds; DMS's own batching on AWS is another matter.
PENDING_STALL_SECONDS = 120.0
IN_FLIGHT_STALL_SECONDS = 900.0
WATCHER_STALE_SECONDS = settings.WATCHER_STALE_SECONDS
RUNS_LOOKED_AT = 50
FAILED_STATES = ("FAILED", "ERROR", "TIMEOUT", "STOPPED")


@dataclass
class Health:
    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, **asdict(self)}


def _age(now: float, iso: str) -> float:
    return now - datetime.fromisoformat(iso).timestamp()


def assess_watcher(h: Health, now: float, state: Mapping[str, Any] | None) -> None:
    if not state:
        return
    updated = state.get("updated_at")
    if updated is not None and now - updated > WATCHER_STALE_SECONDS:
        h.problems.append(f"watcher: no listing for {now - updated:.0f} s (S3 unreachable "
                          "or the watcher hung)")
    pending = state.get("pending") or []
    h.facts["objects_waiting"] = len(pending)
    if pending:
        oldest = max(_age(now, o["last_modified"]) for o in pending)
        h.facts["oldest_waiting_seconds"] = round(oldest, 1)
        if oldest > PENDING_STALL_SECONDS:
            why = f"; last error: {state['last_error']}" if state.get("last_error") else ""
            h.problems.append(f"watcher: {len(pending)} object(s) waiting for a Glue run, the "
                              f"oldest for {oldest:.0f} s ({state.get('attempts', 0)} "
                              f"attempt(s){why})")
    failing = state.get("failing") or {}
    if failing:
        h.facts["objects_failing"] = len(failing)
    parked = state.get("parked") or {}
    h.facts["objects_parked"] = len(parked)
    if parked:
        # the Lambda's on-failure destination, locally: the object is still in bronze,
        # unchecked, and no event will name it again
        key, newest = max(parked.items(), key=lambda kv: kv[1].get("parked_at") or 0)
        h.problems.append(
            f"watcher: {len(parked)} object(s) parked: the Lambda failed on each "
            f"{newest.get('failures', '?')} times alone; newest {key[:200]}: "
            f"{str(newest.get('error', ''))[:300]} (still in bronze: remove or overwrite it; "
            "`cdclab quarantine` lists them)")
    flights = state.get("in_flight") or {}
    in_flight = [o for objs in flights.values() for o in objs]
    h.facts["objects_in_runs"] = len(in_flight)
    if in_flight:
        oldest = max(_age(now, o["last_modified"]) for o in in_flight)
        if oldest > IN_FLIGHT_STALL_SECONDS:
            h.problems.append(f"watcher: {len(in_flight)} object(s) in runs that have not "
                              f"ended, the oldest landed {oldest:.0f} s ago "
                              f"(runs {', '.join(sorted(flights))})")


def assess_runs(h: Health, now: float, runs: Sequence[Mapping[str, Any]] | None) -> None:
    """`runs`: newest first, with JobRunState, StartedOn/CompletedOn (epoch seconds) and
    ErrorMessage."""
    if runs is None:
        return
    done = [r for r in runs if r.get("JobRunState") in ("SUCCEEDED", *FAILED_STATES)]
    failed = 0
    for r in done:
        if r["JobRunState"] == "SUCCEEDED":
            break
        failed += 1
    h.facts["consecutive_failed_runs"] = failed
    ok = next((r for r in done if r["JobRunState"] == "SUCCEEDED"), None)
    if ok is not None and ok.get("CompletedOn"):
        h.facts["last_successful_run_seconds_ago"] = round(now - ok["CompletedOn"], 1)
    if failed:
        last = done[0]
        h.problems.append(f"glue: the last {failed} run(s) ended {last['JobRunState']}; "
                          f"newest {last.get('Id')}: {last.get('ErrorMessage', '')[:300]}")


def assess_slot(h: Health, slot_name: str, slot: Mapping[str, Any] | None,
                emitter_running: bool, slot_expected: bool) -> None:
    """`slot`: {} when the slot does not exist, None when PostgreSQL cannot be asked;
    `slot_expected`: the emitter has streamed from it (a new lab has none yet)."""
    if slot is None:
        return
    if not slot and slot_expected:
        h.problems.append(f"postgres: replication slot {slot_name} does not exist (dropped, "
                          "or the database was rebuilt): the changes since are not captured")
        return
    if not slot:
        return
    h.facts["slot"] = dict(slot)
    if slot.get("wal_status") == "lost":
        h.problems.append(f"postgres: replication slot {slot_name} is invalidated "
                          "(wal_status lost, max_slot_wal_keep_size): changes were lost; "
                          "the slot and a new full load are needed")
    elif slot.get("wal_status") == "unreserved":
        h.problems.append(f"postgres: replication slot {slot_name} is about to lose WAL "
                          "(wal_status unreserved)")
    if emitter_running and not slot.get("active"):
        h.problems.append(f"emitter: not connected to replication slot {slot_name}")


def assess_resync(h: Health, resync_needed: Mapping[str, Any] | None) -> None:
    """The emitter stopped because streaming on would diverge silently."""
    if resync_needed:
        h.problems.append(f"emitter: stopped since {resync_needed.get('at')}: "
                          f"{resync_needed.get('reason')}; run `cdclab resync` to re-snapshot "
                          "(old files are kept under the archive prefix)")


DISK_LOW_BYTES = 256 * 1024 * 1024  # below this, state, logs and bronze writes start failing


def assess_disk(h: Health, where: str, free: int | None) -> None:
    """A full disk stops every service's writes (the keeper keeps retrying its passes)."""
    if free is not None and free < DISK_LOW_BYTES:
        h.facts["disk_free_bytes"] = free
        h.problems.append(f"disk: {free // (1024 * 1024)} MB left under {where}: services "
                          "cannot write their state, logs or files; free some space")


def assess(now: float, *, watcher: Mapping[str, Any] | None,
           runs: Sequence[Mapping[str, Any]] | None, slot: Mapping[str, Any] | None,
           slot_name: str, emitter_running: bool, slot_expected: bool,
           resync_needed: Mapping[str, Any] | None = None) -> Health:
    """`watcher`: its state while it runs (None when stopped: status says so already)."""
    h = Health()
    assess_resync(h, resync_needed)
    assess_watcher(h, now, watcher)
    assess_runs(h, now, runs)
    assess_slot(h, slot_name, slot, emitter_running, slot_expected)
    return h


# --- gathering ------------------------------------------------------------------------
def job_runs(env: Mapping[str, str], job_name: str) -> list[dict[str, Any]] | None:
    from cdclab.services.glue_api import glue_call

    endpoint = env.get(settings.ENV_GLUE_ENDPOINT)
    if not endpoint:
        return None
    try:
        return glue_call(endpoint, "GetJobRuns", {
            "JobName": job_name,
            "MaxResults": RUNS_LOOKED_AT}, env=env)["JobRuns"]
    except (OSError, ValueError, KeyError):
        return None


def slot_row(env: Mapping[str, str], slot_name: str) -> dict[str, Any] | None:
    dsn = env.get(settings.ENV_PG_DSN)
    if not dsn:
        return None
    import psycopg
    from psycopg.rows import dict_row

    try:
        with psycopg.connect(dsn, connect_timeout=3, row_factory=dict_row) as conn:
            row = conn.execute(
                "SELECT active, wal_status, "
                "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint "
                "AS behind_bytes FROM pg_replication_slots WHERE slot_name = %s",
                (slot_name,)).fetchone()
    except psycopg.Error:
        return None
    return dict(row) if row else {}
