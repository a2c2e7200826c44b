"""What the watcher decides, free of I/O: which listed objects are new, what is still
pending, when to retry, and where the listing cursor stands.

Invariant "no stranded files": an object stays pending until a handler invocation that
includes it was accepted (a Glue run was started after the object landed). One accepted
run covers every pending object, because they all landed before it started. The objects
then stay in flight under that run until it ends: if it fails (or is stopped, or times
out), its objects are pending again, so a later run picks them up without a new upload.

Backpressure: a run takes at most the job's cap of files (Glue's bounded execution) and
writes its job's backlog marker when it left input for later. As EventBridge does on
AWS, the watcher hands the Lambda a "Glue Job State Change" for each of its runs that
SUCCEEDED (`ended`) and a "Scheduled Event" every sweep period; the Lambda starts the
next run while the marker exists. A failed run that only worked off a backlog sets
`backlog`: the watcher starts the job again itself, backing off (the local stand-in for
the job's retries; on AWS its MaxRetries, the next upload or the sweep).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lambda_shim.s3_events import S3Object

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 5.0
FULL_SCAN_SECONDS = 30.0
MAX_RECORDS_PER_EVENT = 100  # keeps one event well under Lambda's async payload limit
RECENT_RUNS_KEPT = 20
# `seen` keeps a table's time-named keys for this long behind its cursor (by the time in
# their names); older ones are forgotten and never listed again (the table's floor), so
# neither the state nor the full listing grows with bronze, which is kept for audit
SEEN_HORIZON = timedelta(hours=1)
RUN_SUCCEEDED = "SUCCEEDED"
RUN_FAILED_STATES = ("FAILED", "ERROR", "TIMEOUT", "STOPPED", "UNKNOWN")


_CDC_NAME = re.compile(r"\d{8}-\d{9}\.(csv(\.gz)?|parquet)")
_DATE_FOLDER = re.compile(r"[\d_-]+")


def is_time_named(key: str) -> bool:
    """DMS CDC files are named yyyyMMdd-HHmmssSSS.csv(.gz)|.parquet and sort by time;
    LOAD files and stray objects don't (a stray "20261122-99…" name must not move the
    cursor past the day's real files)."""
    return (_CDC_NAME.fullmatch(posixpath.basename(key)) is not None
            and name_time(key) is not None)


_NAME_TIME = re.compile(r"(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})(\d{3})")


def name_time(key: str) -> datetime | None:
    """The time in a DMS CDC file's name (yyyyMMdd-HHmmssSSS); None if it holds none
    (strptime would read "20261122-990000000" as 09:09)."""
    m = _NAME_TIME.match(posixpath.basename(key))
    if m is None:
        return None
    y, mo, d, h, mi, sec, ms = (int(g) for g in m.groups())
    try:
        return datetime(y, mo, d, h, mi, sec, ms * 1000)
    except ValueError:
        return None


def _split_dates(key: str) -> tuple[str, str]:
    """(the table's folder, the digits of the date folders below it) of a key."""
    parts = key.split("/")[:-1]
    digits = ""
    while parts and _DATE_FOLDER.fullmatch(parts[-1]):
        digits = re.sub(r"[_-]", "", parts.pop()) + digits
    return "/".join(parts), digits


def table_folder(key: str) -> str:
    """The folder a key's table writes to: its parent, less DMS's date folders."""
    return _split_dates(key)[0]


def sorts_by_time(key: str) -> bool:
    """Does the key sort among its table's keys by time? Yes without date folders, or
    under year-first ones (DatePartitionSequence YYYYMMDD, YYYYMMDDHH, YYYYMM); not
    under MMYYYYDD or DDMMYYYY folders, whose later dates may sort first. Those keys
    never move the listing cursor: the periodic full listing finds what it would skip."""
    digits = _split_dates(key)[1]
    return not digits or digits.startswith(posixpath.basename(key)[:4])


def backoff_seconds(attempts: int, base: float = BACKOFF_BASE_SECONDS,
                    cap: float = BACKOFF_CAP_SECONDS) -> float:
    if attempts <= 0:
        return 0.0
    return min(cap, base * 2 ** (attempts - 1))


@dataclass
class WatchState:
    # start-after key of each table folder's incremental listing: the greatest
    # time-named key seen there (one cursor for all tables would hide the new files of
    # every table whose folder sorts before the newest one until the full listing).
    # LOAD0000000N.csv sorts after every digit-named key, so it never moves a cursor and
    # is re-listed each time (there are few of them); `seen` dedups.
    cursors: dict[str, str] = field(default_factory=dict)
    # per table folder: keys up to this one are done and forgotten (not in `seen`, never
    # listed again); only time-named keys that sort by time, an hour behind the cursor
    floors: dict[str, str] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)  # key -> etag (an overwrite is new)
    pending: dict[str, S3Object] = field(default_factory=dict)
    # run id -> the objects that run must cover, until it ends
    in_flight: dict[str, list[S3Object]] = field(default_factory=dict)
    attempts: int = 0
    next_attempt_at: float = 0.0
    last_full_scan_at: float | None = None
    last_error: str | None = None
    recent_runs: list[dict] = field(default_factory=list)
    # a run we started only for a backlog failed: start the job again (backing off)
    backlog: bool = False
    # runs we started that SUCCEEDED: their "Glue Job State Change" is for the Lambda
    ended: list[str] = field(default_factory=list)
    last_sweep_at: float | None = None


def full_scan_due(state: WatchState, now: float, period: float = FULL_SCAN_SECONDS) -> bool:
    """Every `period`; at once when the last one is in the future (the wall clock
    stepped back: waiting for it to catch up would stall the re-list)."""
    last = state.last_full_scan_at
    return last is None or now - last >= period or now < last


# (prefix, start after this key or None, stop at the first key >= this or None)
Listing = tuple[str, str | None, str | None]


def listings(state: WatchState, prefix: str, full_scan: bool) -> list[Listing]:
    """The listings a poll makes. Incremental: each table folder after its cursor, and
    the whole prefix after the greatest cursor (a new table's folder sorting last). Full
    (or before any cursor): the whole prefix, less each folder's forgotten keys (up to
    its floor)."""
    if not full_scan and state.cursors:
        folders = sorted(state.cursors.items())
        return [*((f"{folder}/", after, None) for folder, after in folders),
                (prefix, max(after for _, after in folders), None)]
    out: list[Listing] = []
    after = None
    # in the order of the folders' keys ("t/" sorts after "t-x/": not as "t" and "t-x")
    for folder, floor in sorted(state.floors.items(), key=lambda f: f[0] + "/"):
        out.append((prefix, after, f"{folder}/"))
        after = floor
    return [*out, (prefix, after, None)]




def forget_old(state: WatchState, horizon: timedelta = SEEN_HORIZON) -> int:
    """Move each table's floor up to its newest time-named key older than `horizon`
    behind its cursor (by name), never past an object still pending or in flight, and
    forget the keys up to it. Returns how many were forgotten."""
    held = set(state.pending) | {o.key for objs in state.in_flight.values() for o in objs}
    by_folder: dict[str, list[str]] = {}
    for key in state.seen:
        by_folder.setdefault(table_folder(key), []).append(key)
    lowest_held: dict[str, str] = {}
    for key in held:
        folder = table_folder(key)
        lowest_held[folder] = min(key, lowest_held.get(folder, key))
    forgotten = 0
    for folder, cursor in state.cursors.items():
        keys = by_folder.get(folder, [])
        newest = name_time(cursor)
        if newest is None:  # not a cursor this version would set
            continue
        limit = lowest_held.get(folder)
        old = [k for k in keys if is_time_named(k) and sorts_by_time(k)
               and (limit is None or k < limit)
               and (at := name_time(k)) is not None and at < newest - horizon]
        if not old:
            continue
        floor = max(old)
        for key in keys:
            if key <= floor:
                del state.seen[key]
                forgotten += 1
        state.floors[folder] = max(floor, state.floors.get(folder, ""))
    return forgotten


def observe(state: WatchState, listed: Iterable[S3Object], now: float,
            full_scan: bool = False) -> list[S3Object]:
    """Record a listing; returns the objects not seen before (now pending). A full
    listing also forgets keys that are gone (quarantined or removed) and keys an hour
    behind their table's cursor (forget_old), so `seen` stays the size of the last
    hour's files, not of the prefix's history."""
    new = []
    listed = list(listed)
    if full_scan:
        present = {o.key for o in listed}
        for key in [k for k in state.seen if k not in present and k not in state.pending]:
            del state.seen[key]
        # a table's cursor key lies above its floor, so it is always listed while it
        # exists: a folder with no key listed has been emptied (resync, table removed)
        folders = {table_folder(k) for k in present}
        for folder in [f for f in {*state.cursors, *state.floors} if f not in folders]:
            state.cursors.pop(folder, None)
            state.floors.pop(folder, None)
    for obj in listed:
        if state.seen.get(obj.key) == obj.etag:
            continue
        state.seen[obj.key] = obj.etag
        state.pending[obj.key] = obj
        new.append(obj)
        folder = table_folder(obj.key)
        if (is_time_named(obj.key) and sorts_by_time(obj.key)
                and obj.key > state.cursors.get(folder, "")):
            state.cursors[folder] = obj.key
    if full_scan:
        state.last_full_scan_at = now
        forget_old(state)
    return new


def retry_wait(state: WatchState, now: float) -> float:
    """Seconds of back-off left (0: none). A retry time further ahead than the longest
    back-off means the wall clock stepped back since: none left, not stalled."""
    wait = state.next_attempt_at - now
    return 0.0 if wait > BACKOFF_CAP_SECONDS else max(0.0, wait)


def due(state: WatchState, now: float) -> bool:
    """Something to announce and no back-off to wait out."""
    return ((bool(state.pending) or state.backlog or bool(state.ended))
            and retry_wait(state, now) == 0.0)


def backlog_only(state: WatchState) -> bool:
    """Nothing new to announce, but a backlog run failed: start a run directly (no event)."""
    return state.backlog and not state.pending


def run_ended_only(state: WatchState) -> str | None:
    """Nothing new to announce: the run whose state change to hand the Lambda next."""
    return state.ended[0] if state.ended and not state.pending and not state.backlog else None


def sweep_due(state: WatchState, now: float, period: float) -> bool:
    """The sweep's schedule: every `period` seconds (0: never); at once when the last one
    is in the future (the wall clock stepped back). Not while new objects wait for the
    Lambda (backing off): a run the sweep started would read them unchecked."""
    last = state.last_sweep_at
    return (period > 0 and not state.pending
            and (last is None or now - last >= period or now < last))


def batch(state: WatchState, limit: int = MAX_RECORDS_PER_EVENT) -> list[S3Object]:
    """The pending objects to put in the next event (oldest first)."""
    objs = sorted(state.pending.values(), key=lambda o: (o.last_modified, o.key))
    return objs[:limit]


def record_accepted(state: WatchState, now: float, run_id: str | None,
                    keys: list[str]) -> None:
    if run_id:
        state.in_flight[run_id] = list(state.pending.values())
    state.pending.clear()
    if run_id:  # (none: every object was quarantined or gone, so nothing was started)
        # the new run lists everything: it signals a backlog again if need be (on AWS the
        # ended runs' events still arrive; the Lambda finds this run going and leaves it)
        state.backlog = False
        state.ended.clear()
    state.attempts = 0
    state.next_attempt_at = 0.0
    state.last_error = None
    state.recent_runs.append({"run_id": run_id, "at": now, "keys": keys[:5], "n": len(keys)})
    del state.recent_runs[:-RECENT_RUNS_KEPT]


def record_rejected(state: WatchState, now: float, error: str) -> float:
    """The handler raised: keep everything pending; returns when to try again."""
    state.attempts += 1
    state.next_attempt_at = now + backoff_seconds(state.attempts)
    state.last_error = error
    return state.next_attempt_at


def record_event_delivered(state: WatchState, run_id: str) -> None:
    """The Lambda took a run's state change and started nothing (no backlog, or a run is
    going that takes it)."""
    if run_id in state.ended:
        state.ended.remove(run_id)


def record_run_ended(state: WatchState, run_id: str, run_state: str,
                     now: float) -> list[S3Object]:
    """A run we started has ended. Succeeded: its state change is due for the Lambda. On
    failure its objects are pending again (backing off like a rejected invocation, so a
    broken job is not hammered); returns them. A failed run that only worked off a
    backlog leaves the backlog due, with the same back-off."""
    if run_id not in state.in_flight:
        return []
    objs = state.in_flight.pop(run_id)
    if run_state == RUN_SUCCEEDED:
        state.ended.append(run_id)
        del state.ended[:-RECENT_RUNS_KEPT]
        return []
    for o in objs:
        state.pending.setdefault(o.key, o)
    if not objs:
        state.backlog = True
    record_rejected(state, now, f"run {run_id} ended {run_state}")
    return objs


def next_wakeup(state: WatchState, now: float, interval: float) -> float:
    """Seconds to sleep: the poll interval, or sooner when a retry is due."""
    if state.pending or state.backlog or state.ended:
        return min(interval, retry_wait(state, now))
    return interval


# --- persistence shape (the adapter writes it as JSON) --------------------------------
def _obj_to_dict(o: S3Object) -> dict:
    return {"bucket": o.bucket, "key": o.key, "size": o.size, "etag": o.etag,
            "last_modified": o.last_modified.isoformat()}


def _obj_from_dict(d: dict) -> S3Object:
    return S3Object(d["bucket"], d["key"], int(d["size"]), d["etag"],
                    datetime.fromisoformat(d["last_modified"]))


def to_dict(state: WatchState) -> dict:
    return {
        "cursors": state.cursors,
        "floors": state.floors,
        "seen": state.seen,
        "pending": [_obj_to_dict(o) for o in state.pending.values()],
        "in_flight": {r: [_obj_to_dict(o) for o in objs] for r, objs in state.in_flight.items()},
        "attempts": state.attempts,
        "next_attempt_at": state.next_attempt_at,
        "last_full_scan_at": state.last_full_scan_at,
        "last_error": state.last_error,
        "recent_runs": state.recent_runs,
        "backlog": state.backlog,
        "ended": state.ended,
        "last_sweep_at": state.last_sweep_at,
    }


def _cursors(d: dict) -> dict[str, str]:
    """Each table folder's cursor; a state file from before had one for all tables."""
    cursors = dict(d.get("cursors") or {})
    if d.get("cursor") and not cursors:
        cursors[table_folder(d["cursor"])] = d["cursor"]
    return cursors


def from_dict(d: dict) -> WatchState:
    pending = [_obj_from_dict(x) for x in d.get("pending", [])]
    return WatchState(
        cursors=_cursors(d),
        floors=dict(d.get("floors") or {}),
        seen=dict(d.get("seen", {})),
        pending={o.key: o for o in pending},
        in_flight={r: [_obj_from_dict(x) for x in objs]
                   for r, objs in d.get("in_flight", {}).items()},
        attempts=int(d.get("attempts", 0)),
        # A restart retries pending objects at once; the full scan runs first anyway.
        next_attempt_at=0.0,
        last_full_scan_at=None,
        last_error=d.get("last_error"),
        recent_runs=list(d.get("recent_runs", [])),
        backlog=bool(d.get("backlog", False)),
        ended=[str(r) for r in d.get("ended", [])],
        last_sweep_at=d.get("last_sweep_at"),
    )
