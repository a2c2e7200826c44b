"""What the watcher decides, free of I/O: which listed objects are new, what is still
pending, when to retry, and where the listing cursor stands.

Invariant "no stranded files": an object stays pending until a handler invocation that
includes it was accepted (a Glue run was started after the object landed). One accepted
run covers every pending object, because they all landed before it started; those the
invocation did not include stay pending too, so the Lambda's gate checks every object.
The objects then stay in flight under that run until it ends: if it fails (or is
stopped, or times out), its objects are pending again, so a later run picks them up
without a new upload.

No object holds up the others ("the watcher never wedges"):
- an object the handler reports gone (removed, or quarantined by an earlier invocation)
  is forgotten, not retried;
- an object the handler names as one it could not handle (ObjectHandlingError) leaves
  its batch: the others go on at once, it is retried alone, backing off, and after
  MAX_OBJECT_FAILURES failures it is parked with its error (Lambda's retries, then its
  on-failure destination: S3 sends one object per event on AWS). A parked object stays
  in bronze; it is reported until it is removed or overwritten;
- a name never pins a table's listing cursor: only a DMS CDC name whose time is not
  ahead of the object's Last-Modified (beyond the clocks' margin) moves it, and each
  full listing sets each cursor to the greatest such key listed (a cursor's key that is
  gone falls back to what is there).

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
from datetime import UTC, datetime, timedelta

from lambda_shim.s3_events import S3Object

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 5.0
FULL_SCAN_SECONDS = 30.0
# Now and then the whole prefix is listed, floors and all (a key can land below a floor:
# named late, or in a folder sorting there): what was written since the last such
# listing is handled like any new key. Its Last-Modified mark trails by a margin that
# covers the listing's own duration.
DEEP_SCAN_SECONDS = 600.0
DEEP_MARK_MARGIN = timedelta(minutes=5)
MAX_RECORDS_PER_EVENT = 100  # keeps one event well under Lambda's async payload limit
RECENT_RUNS_KEPT = 20
# `seen` keeps a table's time-named keys for this long behind its cursor (by the time in
# their names); older ones are forgotten and never listed again (the table's floor), so
# neither the state nor the full listing grows with bronze, which is kept for audit
SEEN_HORIZON = timedelta(hours=1)
# Lambda's asynchronous invocation: the first try and MaximumRetryAttempts (default 2)
# retries; after them the event goes to the on-failure destination
MAX_OBJECT_FAILURES = 3
# A name's time may run ahead of the object's Last-Modified by the writer's clock skew:
# S3 refuses requests signed more than 15 minutes off its clock (RequestTimeTooSkewed).
# A DatePartitionTimezone east of UTC adds its offset (__main__ passes it).
NAME_CLOCK_MARGIN = timedelta(minutes=15)
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


def moves_cursor(obj: S3Object, margin: timedelta = NAME_CLOCK_MARGIN) -> bool:
    """May this object be its table's listing cursor? A DMS CDC name that sorts by time
    and holds a time not ahead of when the object was written: a stray future name
    (20991231-235959999.csv) would otherwise hide every real file after it from the
    incremental listing."""
    if not (is_time_named(obj.key) and sorts_by_time(obj.key)):
        return False
    at = name_time(obj.key)
    written = obj.last_modified
    if written.tzinfo is not None:
        written = written.astimezone(UTC).replace(tzinfo=None)
    return at is not None and at <= written + margin


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
    # pending objects the handler could not handle: key -> failures (alone), when to
    # try again, the last error
    failing: dict[str, dict] = field(default_factory=dict)
    # objects set aside after MAX_OBJECT_FAILURES: key -> the object, its error, when
    parked: dict[str, dict] = field(default_factory=dict)
    last_deep_scan_at: float | None = None
    # keys below a floor written up to this (ISO, S3's clock) were listed by the last deep
    # listing; a later one is new
    deep_mark: str | None = None
    # keys forgotten (below a floor) that were written after deep_mark: key -> [etag,
    # Last-Modified]; the next deep listing must not take them for new
    unmarked: dict[str, list[str]] = field(default_factory=dict)


def full_scan_due(state: WatchState, now: float, period: float = FULL_SCAN_SECONDS) -> bool:
    """Every `period`; at once when the last one is in the future (the wall clock
    stepped back: waiting for it to catch up would stall the re-list)."""
    last = state.last_full_scan_at
    return last is None or now - last >= period or now < last


def deep_scan_due(state: WatchState, now: float, period: float = DEEP_SCAN_SECONDS) -> bool:
    last = state.last_deep_scan_at
    return last is None or now - last >= period or now < last


# (prefix, start after this key or None, stop at the first key >= this or None)
Listing = tuple[str, str | None, str | None]


def in_listing(key: str, listing: Listing) -> bool:
    """Would S3 return `key` for this listing?"""
    prefix, after, stop = listing
    return (key.startswith(prefix) and (after is None or key > after)
            and (stop is None or key < stop))


def listings(state: WatchState, prefix: str, full_scan: bool,
             deep: bool = False) -> list[Listing]:
    """The listings a poll makes. Incremental: each table folder after its cursor, and
    the whole prefix after the greatest cursor (a new table's folder sorting last). Full
    (or before any cursor, or while a folder with a floor has none): the whole prefix,
    less each folder's forgotten keys (up to its floor). Deep: the whole prefix."""
    if deep:
        return [(prefix, None, None)]
    # incremental only while every folder with forgotten keys has a cursor: the last
    # range (after the greatest cursor) would list a cursorless folder's keys below its
    # floor, handed on long ago, as new (its newest keys quarantined or removed)
    if not full_scan and state.cursors and state.floors.keys() <= state.cursors.keys():
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




def forget_old(state: WatchState, horizon: timedelta = SEEN_HORIZON,
               listed: dict[str, S3Object] | None = None) -> int:
    """Move each table's floor up to its newest time-named key older than `horizon`
    behind its cursor (by name), never past an object still pending, in flight or
    parked (its report lasts while it is listed), and forget the keys up to it; those
    written after the deep listing's mark (`listed` tells) are remembered until a deep
    listing passes them. Returns how many were forgotten."""
    listed = listed or {}
    mark = None if state.deep_mark is None else datetime.fromisoformat(state.deep_mark)
    held = ({*state.pending, *state.parked}
            | {o.key for objs in state.in_flight.values() for o in objs})
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
                obj = listed.get(key)
                if obj is None and key <= state.floors.get(folder, ""):
                    # found late below the floor by a deep listing; this listing skips
                    # the floor's keys, so when it was written is unknown here: kept
                    # until a deep listing shows it, else the next one announces it again
                    continue
                if obj is not None and (mark is None or obj.last_modified > mark):
                    state.unmarked[key] = [state.seen[key], obj.last_modified.isoformat()]
                del state.seen[key]
                forgotten += 1
        state.floors[folder] = max(floor, state.floors.get(folder, ""))
    return forgotten


def observe(state: WatchState, listed: Iterable[S3Object], now: float,
            full_scan: bool = False, margin: timedelta = NAME_CLOCK_MARGIN,
            deep: bool = False, ranges: list[Listing] | None = None,
            announced_only: bool = False) -> list[S3Object]:
    """Record a listing (`ranges`: what it asked S3 for; None: everything); returns the
    objects not seen before (now pending). A full listing also forgets keys that are
    gone (quarantined or removed; parked ones too) and keys an hour behind their table's
    cursor (forget_old), so `seen` stays the size of the last hour's files, not of the
    prefix's history; and it sets each table's cursor to the greatest key listed that
    may be one (moves_cursor). A deep listing is a full one that also hands on the keys
    below a floor written since the last deep one. `announced_only`: no listing, only
    objects MinIO announced; they move no cursor, since the stream may have missed a key
    below them that the next incremental listing must still cover."""
    new = []
    listed = list(listed)
    full_scan = full_scan or deep
    mark = None if state.deep_mark is None else datetime.fromisoformat(state.deep_mark)
    if full_scan:
        present = {o.key for o in listed}

        def gone(key: str) -> bool:
            return key not in present and (deep or ranges is None or any(
                in_listing(key, r) for r in ranges))

        for key in [k for k in state.seen if k not in state.pending and gone(k)]:
            del state.seen[key]
        for key in [k for k in state.parked if gone(k)]:
            del state.parked[key]
        # a folder with no key listed has lost its cursor key (quarantined, resync, table
        # removed); only a deep listing, which lists the keys up to the floor too, shows
        # it empty: until then the floor keeps its forgotten keys from being new again
        folders = {table_folder(k) for k in present}
        for folder in [f for f in {*state.cursors, *state.floors} if f not in folders]:
            state.cursors.pop(folder, None)
            if deep:
                state.floors.pop(folder, None)
        best: dict[str, str] = {}
        for obj in listed:
            if moves_cursor(obj, margin):
                folder = table_folder(obj.key)
                best[folder] = max(obj.key, best.get(folder, ""))
        state.cursors = best
    for obj in listed:
        if state.seen.get(obj.key) == obj.etag:
            continue
        # (no mark: a state from before deep listings, its floors' keys all handed on)
        if (deep and obj.key <= state.floors.get(table_folder(obj.key), "")
                and (mark is None or obj.last_modified <= mark
                     or state.unmarked.get(obj.key, [None])[0] == obj.etag)):
            continue  # forgotten: handed on before
        state.seen[obj.key] = obj.etag
        state.pending[obj.key] = obj
        state.parked.pop(obj.key, None)  # overwritten: a new object
        state.failing.pop(obj.key, None)
        new.append(obj)
    # a listing moves each cursor to its greatest key, seen before (announced) or not
    for obj in () if announced_only else listed:
        folder = table_folder(obj.key)
        if moves_cursor(obj, margin) and obj.key > state.cursors.get(folder, ""):
            state.cursors[folder] = obj.key
    if full_scan:
        state.last_full_scan_at = now
        forget_old(state, listed={o.key: o for o in listed})
    if deep:
        state.last_deep_scan_at = now
        if listed:
            newest = max(o.last_modified for o in listed) - DEEP_MARK_MARGIN
            if mark is None or newest > mark:
                state.deep_mark = newest.isoformat()
        elif mark is None:  # nothing exists, so nothing was forgotten: all later is new
            state.deep_mark = datetime(1, 1, 1, tzinfo=UTC).isoformat()
        mark = datetime.fromisoformat(state.deep_mark) if state.deep_mark else None
        state.unmarked = {k: v for k, v in state.unmarked.items()
                          if mark is None or datetime.fromisoformat(v[1]) > mark}
    return new


def retry_wait(state: WatchState, now: float) -> float:
    """Seconds of back-off left (0: none). A retry time further ahead than the longest
    back-off means the wall clock stepped back since: none left, not stalled."""
    wait = state.next_attempt_at - now
    return 0.0 if wait > BACKOFF_CAP_SECONDS else max(0.0, wait)


def _announceable(state: WatchState, now: float) -> bool:
    return any(k not in state.failing or state.failing[k]["retry_at"] <= now
               for k in state.pending)


def due(state: WatchState, now: float) -> bool:
    """Something to announce and no back-off to wait out."""
    return ((_announceable(state, now) or state.backlog or bool(state.ended))
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


def batch(state: WatchState, limit: int = MAX_RECORDS_PER_EVENT,
          now: float = float("inf")) -> list[S3Object]:
    """The pending objects to put in the next event (oldest first): one that failed
    before, alone, once its back-off is over; else those that never failed."""
    objs = sorted(state.pending.values(), key=lambda o: (o.last_modified, o.key))
    retry = [o for o in objs if o.key in state.failing
             and state.failing[o.key]["retry_at"] <= now]
    if retry:
        return retry[:1]
    return [o for o in objs if o.key not in state.failing][:limit]


def record_accepted(state: WatchState, now: float, run_id: str | None,
                    keys: list[str], announced: Iterable[str] | None = None,
                    gone: Iterable[str] = ()) -> None:
    """The handler took an event. `announced`: the keys it held (None: every pending
    object); `gone`: those it found gone, forgotten. The run, if one started, covers
    every pending object; the others stay pending until an event includes them."""
    gone = set(gone)
    done = set(state.pending) if announced is None else set(announced)
    if run_id:
        state.in_flight[run_id] = [o for o in state.pending.values() if o.key not in gone]
    for key in done | gone:
        state.pending.pop(key, None)
        state.failing.pop(key, None)
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


def record_object_failures(state: WatchState, now: float, failures: dict[str, str]
                           ) -> list[str]:
    """The handler named objects it could not handle: each leaves the batch and is tried
    again alone, backing off; after MAX_OBJECT_FAILURES it is parked (taken out of
    `pending`, kept with its error). The other objects are due at once. Returns the keys
    parked now."""
    parked = []
    for key, error in failures.items():
        obj = state.pending.get(key)
        if obj is None:
            continue
        entry = state.failing.setdefault(key, {"failures": 0})
        entry["failures"] += 1
        entry["error"] = error
        entry["retry_at"] = now + backoff_seconds(entry["failures"])
        if entry["failures"] >= MAX_OBJECT_FAILURES:
            del state.pending[key]
            del state.failing[key]
            state.parked[key] = {**_obj_to_dict(obj), "error": error,
                                 "failures": entry["failures"], "parked_at": now}
            parked.append(key)
    state.last_error = "; ".join(f"{k}: {e}" for k, e in list(failures.items())[:3])
    return parked


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
        # Its state change goes to the Lambda now, as EventBridge sends it, and objects
        # refused while it ran (MaxConcurrentRuns) may start the next run at once: the
        # back-off of those refusals (S3's async retries) is not EventBridge's to wait.
        state.attempts = 0
        state.next_attempt_at = 0.0
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
        soonest = min((f["retry_at"] for k, f in state.failing.items() if k in state.pending),
                      default=now)
        wait = retry_wait(state, now)
        if not _announceable(state, now) and not state.backlog and not state.ended:
            wait = max(wait, soonest - now)
        return max(0.0, min(interval, wait))
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
        "failing": state.failing,
        "parked": state.parked,
        "last_deep_scan_at": state.last_deep_scan_at,
        "deep_mark": state.deep_mark,
        "unmarked": state.unmarked,
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
        # a restart retries failing objects at once (their count stands)
        failing={k: {**f, "retry_at": 0.0} for k, f in (d.get("failing") or {}).items()},
        parked=dict(d.get("parked") or {}),
        last_deep_scan_at=None,  # a restart lists everything first
        deep_mark=d.get("deep_mark"),
        unmarked=dict(d.get("unmarked") or {}),
    )
