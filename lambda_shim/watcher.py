"""The local stand-in for S3 event notifications and EventBridge: take MinIO's notice of
each new object (bucket_events) and list the bronze prefix, which catches up on what a
dropped notice stream missed; turn new objects into S3 event records and invoke the
Lambda handler, retrying until accepted; hand it the "Glue Job State Change" of each run
it started that SUCCEEDED, and the backlog sweep's "Scheduled Event" on its schedule.

Decisions live in watch_logic (pure); this module only lists, invokes and persists.
State (cursors, seen, pending, parked) is written under $CDCLAB_STATE_DIR/watcher/ before
and after every invocation, so a restart replays pending events instead of skipping
them. The handler's answer says which objects were gone (forgotten); an
ObjectHandlingError names the objects it could not handle (taken out of the batch, tried
alone, parked after MAX_OBJECT_FAILURES); any other error retries the whole event.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path

from lambda_shim import eventbridge_events
from lambda_shim import watch_logic as logic
from lambda_shim.bucket_events import BucketEventFeed
from lambda_shim.object_gate import is_hidden
from lambda_shim.s3_events import S3Object, s3_event
from pipeline_contract.atomic import write_json
from pipeline_contract.settings import LAB_WATCH_CATCH_UP_S, LAB_WATCH_INTERVAL_S, LOCAL_ACCOUNT

log = logging.getLogger("lambda_shim.watcher")

STATE_FILE = "state.json"
FUNCTION_NAME = "cdclab-bronze-trigger"
SWEEP_RULE = "cdclab-backlog-sweep"
LAMBDA_TIMEOUT_MS = 60_000

Handler = Callable[[dict, object], object]
# run id -> its JobRunState; None when it cannot be known right now (API down)
RunStateLookup = Callable[[str], str | None]
# start one more run of the pipeline's job (no new object): its run id
StartRun = Callable[[], str | None]


@dataclass
class LambdaContext:
    """The small part of Lambda's context object handlers use."""

    function_name: str = FUNCTION_NAME
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 128
    timeout_ms: int = LAMBDA_TIMEOUT_MS
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = int((time.monotonic() - self.started) * 1000)
        return max(0, self.timeout_ms - elapsed)


def state_path(state_dir: Path) -> Path:
    return state_dir / "watcher" / STATE_FILE


def load_state(path: Path) -> logic.WatchState:
    if not path.exists():
        return logic.WatchState()
    try:
        return logic.from_dict(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as e:
        raise RuntimeError(f"watcher state file {path} is unreadable ({e}); fix or remove "
                           "it (removing replays every object in the prefix once)") from e


def save_state(path: Path, state: logic.WatchState) -> None:
    # atomic: a crash leaves the old or the new state, never half
    write_json(path, {**logic.to_dict(state), "updated_at": time.time(), "pid": os.getpid()})


def list_objects(s3, bucket: str, prefix: str, start_after: str | None,
                 stop_before: str | None = None) -> list[S3Object]:
    """Every object the job would read: all but hidden names, whatever their ending (the
    Lambda checks each one, so a stray object is quarantined, not left to fail a run);
    keys after `start_after` and before `stop_before` (keys come in order)."""
    kwargs = {"Bucket": bucket, "Prefix": prefix}
    if start_after:
        kwargs["StartAfter"] = start_after
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(**kwargs):
        for item in page.get("Contents", []):
            if stop_before is not None and item["Key"] >= stop_before:
                return out
            if not is_hidden(item["Key"]):
                lm = item["LastModified"]
                out.append(S3Object(bucket, item["Key"], int(item["Size"]),
                                    item["ETag"].strip('"'), lm.astimezone(UTC)))
    return out


class Watcher:
    def __init__(self, s3, bucket: str, prefix: str, state_file: Path, handler: Handler, *,
                 region: str, interval: float = LAB_WATCH_INTERVAL_S,
                 full_scan_seconds: float = logic.FULL_SCAN_SECONDS,
                 run_state: RunStateLookup | None = None,
                 start_run: StartRun | None = None, job_name: str = "",
                 sweep_seconds: float = 0.0,
                 deep_scan_seconds: float = logic.DEEP_SCAN_SECONDS,
                 name_margin: timedelta = logic.NAME_CLOCK_MARGIN,
                 events: BucketEventFeed | None = None,
                 catch_up_seconds: float = LAB_WATCH_CATCH_UP_S) -> None:
        self.s3, self.bucket, self.prefix, self.events = s3, bucket, prefix, events
        self.catch_up_seconds = catch_up_seconds
        self._listed_at, self._listed_stream = 0.0, -1
        # announced objects a failed listing left unobserved, for the next poll
        self._unobserved: dict[str, S3Object] = {}
        self.deep_scan_seconds, self.name_margin = deep_scan_seconds, name_margin
        self.run_state, self.start_run, self.job_name = run_state, start_run, job_name
        self.sweep_seconds = sweep_seconds
        self.state_file, self.handler, self.region = state_file, handler, region
        self.interval, self.full_scan_seconds = interval, full_scan_seconds
        self.state = load_state(state_file)
        save_state(state_file, self.state)  # also the health signal

    def poll_once(self) -> None:
        now = time.time()
        deep = logic.deep_scan_due(self.state, now, self.deep_scan_seconds)
        full = deep or logic.full_scan_due(self.state, now, self.full_scan_seconds)
        stream = self.events.streams if self.events and self.events.connected else -1
        listing = full or self._listing_due(now, stream)
        ranges = logic.listings(self.state, self.prefix, full, deep) if listing else []
        # objects MinIO announced (whatever their names: the listing after a table's
        # cursor does not see a key sorting before it), then what the listing finds
        announced = {**self._unobserved,  # a newer record of the same key wins
                     **{obj.key: obj for obj in (self.events.take() if self.events else ())}}
        listed = dict(announced)
        try:
            for prefix, after, stop in ranges:
                for obj in list_objects(self.s3, self.bucket, prefix, after, stop):
                    listed[obj.key] = obj
        except Exception as e:  # S3 down or bucket missing: say so, keep polling
            log.warning("listing s3://%s/%s failed: %s", self.bucket, self.prefix, e)
            # kept for the next poll: a key below its cursor would otherwise wait for a
            # full listing
            self._unobserved = announced
            return
        self._unobserved = {}
        if listing:
            self._listed_at, self._listed_stream = now, stream
        new = logic.observe(self.state, listed.values(), now, full, self.name_margin,
                            deep=deep, ranges=ranges, announced_only=not listing)
        if new:
            log.info("%d new object(s): %s", len(new), [o.key for o in new][:10])
        if new or full:
            save_state(self.state_file, self.state)
        self._check_in_flight()
        if logic.due(self.state, time.time()):
            self._invoke()
        elif logic.sweep_due(self.state, time.time(), self.sweep_seconds):
            self._sweep()

    def _listing_due(self, now: float, stream: int) -> bool:
        """Every poll without MinIO's notifications (`stream` -1); with them, every
        catch_up_seconds, and at once when a stream (re)opened since the last listing
        (what was stored while none was open)."""
        if stream < 0 or stream != self._listed_stream:
            return True
        return now - self._listed_at >= self.catch_up_seconds or now < self._listed_at

    def _check_in_flight(self) -> None:
        if self.run_state is None:
            return
        for run_id in list(self.state.in_flight):
            state = self.run_state(run_id)
            if state is None or state not in (logic.RUN_SUCCEEDED, *logic.RUN_FAILED_STATES):
                continue  # still running, or unknown for now
            again = logic.record_run_ended(self.state, run_id, state, time.time())
            if again:
                log.warning("run %s ended %s: %d object(s) pending again for a later run",
                            run_id, state, len(again))
            save_state(self.state_file, self.state)

    def _invoke(self) -> None:
        if logic.backlog_only(self.state):
            self._start_for_backlog()
            return
        if (run_id := logic.run_ended_only(self.state)) is not None:
            self._deliver(eventbridge_events.job_state_change(
                self.job_name, run_id, logic.RUN_SUCCEEDED, region=self.region,
                account=LOCAL_ACCOUNT), f"run {run_id} SUCCEEDED", run_id)
            return
        objs = logic.batch(self.state, now=time.time())
        if not objs:
            return  # the only pending objects wait out their own back-off
        keys = [o.key for o in objs]
        try:
            result = self.handler(s3_event(objs, region=self.region), LambdaContext())
        except Exception as e:
            failures = getattr(e, "failures", None)
            if isinstance(failures, dict) and failures:  # ObjectHandlingError
                parked = logic.record_object_failures(self.state, time.time(), failures)
                log.warning("handler could not handle %d object(s) (tried alone next, "
                            "backing off): %s", len(failures), e)
                for key in parked:
                    log.error("PARKED s3://%s/%s after %d failures: %s (it stays in bronze; "
                              "remove or overwrite it to clear this)", self.bucket, key,
                              logic.MAX_OBJECT_FAILURES, self.state.parked[key]["error"])
            else:  # never drop the event: it stays pending, backing off
                at = logic.record_rejected(self.state, time.time(), f"{type(e).__name__}: {e}")
                log.info("handler for %d object(s) failed, retry in %.1fs: %s", len(objs),
                         at - time.time(), e)
            save_state(self.state_file, self.state)
            return
        result = result if isinstance(result, dict) else {}
        run_id, gone = result.get("JobRunId"), result.get("Gone") or []
        log.info("handler accepted %d object(s): run %s%s", len(objs), run_id,
                 f"; {len(gone)} gone, forgotten" if gone else "")
        logic.record_accepted(self.state, time.time(), run_id, keys, announced=keys,
                              gone=gone)
        save_state(self.state_file, self.state)

    def _attempt(self, what: str, call: Callable[[], object]) -> tuple[bool, object]:
        """(True, its result), or (False, None) when it raised: then the next attempt
        backs off, as Lambda's async retries do."""
        try:
            return True, call()
        except Exception as e:
            at = logic.record_rejected(self.state, time.time(), f"{type(e).__name__}: {e}")
            log.info("%s failed, retry in %.1fs: %s", what, at - time.time(), e)
            return False, None

    def _deliver(self, event: dict, what: str, ended_run: str | None = None) -> None:
        """Hand the Lambda an EventBridge event; a run it starts is followed like the
        runs S3 events start."""
        done, result = self._attempt(f"handler for {what}",
                                     lambda: self.handler(event, LambdaContext()))
        if done:
            run_id = result.get("JobRunId") if isinstance(result, dict) else None
            if run_id:
                log.info("%s: input was left for later, the Lambda started run %s", what,
                         run_id)
                logic.record_accepted(self.state, time.time(), run_id, [])
            elif ended_run is not None:
                logic.record_event_delivered(self.state, ended_run)
        save_state(self.state_file, self.state)

    def _sweep(self) -> None:
        """The backlog sweep's schedule (EventBridge rate(), as deployed)."""
        self.state.last_sweep_at = time.time()
        self._deliver(eventbridge_events.scheduled(SWEEP_RULE, region=self.region,
                                                   account=LOCAL_ACCOUNT), "backlog sweep")

    def _start_for_backlog(self) -> None:
        """A run that only worked off a backlog failed: start the job again (the local
        stand-in for the job's retries; busy: back off, retry)."""
        if self.start_run is None:
            self.state.backlog = False  # nothing to start it with
        else:
            done, run_id = self._attempt("starting a run for the backlog", self.start_run)
            if done:
                log.info("started run %s for the backlog", run_id)
                logic.record_accepted(self.state, time.time(), run_id, [])
        save_state(self.state_file, self.state)

    def run(self, stop: threading.Event) -> None:
        log.info("watching s3://%s/%s every %.1fs (%s), backlog sweep every %.0fs (state %s)",
                 self.bucket, self.prefix, self.interval,
                 "listing each poll" if self.events is None else
                 f"MinIO's notifications, listing every {self.catch_up_seconds:.1f}s to catch up",
                 self.sweep_seconds, self.state_file)
        while not stop.is_set():
            self.poll_once()
            wait = logic.next_wakeup(self.state, time.time(), self.interval)
            # an announced object wakes the watcher at once (the wait is at most the
            # interval, so a stop is still seen within it)
            (stop if self.events is None else self.events.arrived).wait(wait)
