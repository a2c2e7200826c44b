"""The watcher's pure decisions: what is new, what stays pending, when to retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from lambda_shim import watch_logic as logic
from lambda_shim.s3_events import S3Object

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
PREFIX = "dms/airbnb_db/public/hosts_demo/"


def o(name: str, etag: str = "e1", sec: int = 0) -> S3Object:
    """Written `sec` seconds after the time in its name (T0 for a name holding none)."""
    obj = written(PREFIX + name, 10, etag)
    return S3Object("b", obj.key, 10, etag, obj.last_modified + timedelta(seconds=sec))


def written(key: str, size: int = 1, etag: str = "e") -> S3Object:
    """An object as DMS writes it: Last-Modified a second after the time in its name."""
    at = logic.name_time(key)
    written = T0 if at is None else at.replace(tzinfo=UTC) + timedelta(seconds=1)
    return S3Object("b", key, size, etag, written)


def in_listing(key: str, listing: logic.Listing) -> bool:
    """Would S3 return `key` for this listing (prefix, start after, stop before)?"""
    prefix, after, stop = listing
    return (key.startswith(prefix) and (after is None or key > after)
            and (stop is None or key < stop))


def test_new_objects_become_pending_once():
    s = logic.WatchState()
    assert [x.key for x in logic.observe(s, [o("LOAD00000001.csv")], 0.0)] == [
        PREFIX + "LOAD00000001.csv"]
    assert logic.observe(s, [o("LOAD00000001.csv")], 1.0) == []  # seen: no second event
    assert list(s.pending) == [PREFIX + "LOAD00000001.csv"]
    assert logic.observe(s, [o("LOAD00000001.csv", etag="e2")], 2.0)  # overwritten: new


def test_cursor_follows_time_named_files_only():
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv"), o("LOAD00000001.csv"),
                      o("20261122-100000500.csv")], 0.0)
    # LOAD sorts after digits: it must not become the start-after key
    cursor = PREFIX + "20261122-100000500.csv"
    assert s.cursors == {PREFIX.rstrip("/"): cursor}
    assert logic.listings(s, "dms/", full_scan=False) == [(PREFIX, cursor, None),
                                                          ("dms/", cursor, None)]
    assert logic.listings(s, "dms/", full_scan=True) == [("dms/", None, None)]


def test_each_table_folder_is_listed_after_its_own_cursor() -> None:
    """With two tables one cursor would be the newest key of the folder sorting last;
    the other table's new files sort before it and would wait for the full listing."""
    s = logic.WatchState()
    a, b = "dms/db/public/a/", "dms/db/public/b/"
    logic.observe(s, [S3Object("b", a + "20261122-100000001.csv", 1, "e", T0),
                      S3Object("b", b + "20261122-100000002.csv", 1, "e", T0)], 0.0)
    later = a + "20261122-100000003.csv"  # < b's cursor: a single cursor hides it
    visible = [(p, after) for p, after, _ in logic.listings(s, "dms/", False)
               if later.startswith(p) and (after is None or later > after)]
    assert visible == [(a, a + "20261122-100000001.csv")]
    # a table whose folder sorts after the others is found by the last listing
    new_table = "dms/db/public/c/20261122-100000000.csv"
    assert any(in_listing(new_table, lst) for lst in logic.listings(s, "dms/", False))


def test_an_old_state_files_single_cursor_becomes_its_tables() -> None:
    old = {"cursor": PREFIX + "20261122-100000500.csv", "seen": {}, "pending": []}
    assert logic.from_dict(old).cursors == {PREFIX.rstrip("/"): old["cursor"]}


def test_full_scan_is_periodic():
    s = logic.WatchState()
    assert logic.full_scan_due(s, 0.0)
    logic.observe(s, [], 0.0, full_scan=True)
    assert not logic.full_scan_due(s, 10.0, period=30)
    assert logic.full_scan_due(s, 30.0, period=30)


def test_rejected_keeps_pending_and_backs_off():
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv")], 0.0)
    assert logic.due(s, 0.0)
    at1 = logic.record_rejected(s, 100.0, "ConcurrentRuns")
    assert s.pending and not logic.due(s, 100.1) and logic.due(s, at1)
    at2 = logic.record_rejected(s, at1, "ConcurrentRuns")
    assert at2 - at1 > at1 - 100.0  # grows
    for _ in range(20):
        last = logic.record_rejected(s, 0.0, "x")
    assert last == logic.BACKOFF_CAP_SECONDS
    logic.record_accepted(s, 200.0, "jr_1", list(s.pending))
    assert not s.pending and s.attempts == 0 and not logic.due(s, 200.0)
    assert s.recent_runs[-1]["run_id"] == "jr_1"


def test_next_wakeup_is_sooner_when_a_retry_is_due():
    s = logic.WatchState()
    assert logic.next_wakeup(s, 0.0, 1.0) == 1.0
    logic.observe(s, [o("20261122-100000001.csv")], 0.0)
    logic.record_rejected(s, 0.0, "x")  # retry at 0.5
    assert logic.next_wakeup(s, 0.0, 1.0) == 0.5


def test_batch_is_oldest_first_and_bounded():
    s = logic.WatchState()
    logic.observe(s, [o(f"2026112{i}-x.csv", sec=-i) for i in range(5)], 0.0)
    names = [x.key for x in logic.batch(s, limit=3)]
    assert names == [PREFIX + f"2026112{i}-x.csv" for i in (4, 3, 2)]


def test_state_round_trips_and_a_restart_retries_at_once():
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv"), o("LOAD00000001.csv")], 0.0, True)
    logic.record_rejected(s, 0.0, "busy")
    back = logic.from_dict(logic.to_dict(s))
    assert back.pending == s.pending and back.seen == s.seen and back.cursors == s.cursors
    assert logic.due(back, 0.0) and logic.full_scan_due(back, 0.0)


names = st.from_regex(r"(LOAD0000000[1-9]|2026112[0-9]-[0-9]{9})\.csv", fullmatch=True)
ROOT = "dms/db/public/"
# table folders whose names prefix each other ("t-x/" sorts before "t/"), LOAD files,
# CDC names over two days (floors move), and names holding no valid time
keys = st.builds(lambda folder, name: f"{ROOT}{folder}/{name}.csv",
                 st.sampled_from(["t", "t-x", "t2", "t/2026/11/2"]),
                 st.from_regex(r"LOAD0000000[1-9]|2026112[12]-[0-2][0-9][0-5][0-9]00000"
                               r"|20261122-9[0-9]{8}", fullmatch=True))


def late(state: logic.WatchState, key: str) -> bool:
    """Named over an hour behind its table's newest name when it lands: DMS and the
    lab's emitter write no such name."""
    cursor = state.cursors.get(logic.table_folder(key))
    at = logic.name_time(key)
    return (cursor is not None and at is not None and logic.is_time_named(key)
            and at < logic.name_time(cursor) - logic.SEEN_HORIZON)


@given(st.lists(st.lists(keys, max_size=4), max_size=8), st.data())
def test_no_object_is_ever_dropped_without_an_accepted_run(batches, data):
    """Whatever lands and however often the handler refuses, an object leaves `pending`
    only through an accepted invocation, every landed object is seen but one named over
    an hour late or landing below its table's floor (the deep listing finds those:
    test_watcher_hostile), and none is announced twice."""
    s = logic.WatchState()
    landed: set[str] = set()
    covered: set[str] = set()
    excused: set[str] = set()
    now = 0.0

    def obj(key: str) -> S3Object:
        return written(key, 10, "e1")

    for batch in batches:
        now += 1
        excused |= {k for k in batch if k not in landed and (
            late(s, k) or k <= s.floors.get(logic.table_folder(k), ""))}
        landed |= set(batch)
        full = data.draw(st.booleans())
        # each listing returns the keys under its prefix after its start-after key
        visible = [obj(k) for k in sorted(landed)
                   if any(in_listing(k, lst) for lst in logic.listings(s, ROOT, full))]
        new = logic.observe(s, visible, now, full)
        assert not {x.key for x in new} & covered  # never announced twice
        if logic.due(s, now):
            if data.draw(st.booleans()):
                covered |= set(s.pending)
                logic.record_accepted(s, now, "jr", list(s.pending))
            else:
                logic.record_rejected(s, now, "busy")
    # a final full scan then catches anything the incremental listing skipped
    visible = [obj(k) for k in sorted(landed)
               if any(in_listing(k, lst) for lst in logic.listings(s, ROOT, True))]
    logic.observe(s, visible, now + 1, full_scan=True)
    assert covered | set(s.pending) | excused == landed


def test_a_name_holding_no_valid_time_is_not_time_named() -> None:
    for name in ("20261122-990000000.csv", "20261124-250000000.csv", "20261340-100000000.csv"):
        assert not logic.is_time_named(PREFIX + name), name
    assert logic.is_time_named(PREFIX + "20261124-235959999.csv")


def test_full_listings_skip_forgotten_keys_whatever_the_folders_names() -> None:
    """"t-x/" sorts before "t/": ordering the floors by folder name ("t" < "t-x") made
    the ranges overlap and re-announced both tables' whole history."""
    s = logic.WatchState()
    keys = [f"{ROOT}{folder}/{t(m)[len(PREFIX):]}" for folder in ("t", "t-x")
            for m in range(0, 130, 10)]
    objs = [written(k) for k in keys]
    logic.observe(s, objs, 0.0)
    logic.record_accepted(s, 1.0, "jr_1", keys)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 2.0)
    logic.observe(s, objs, 3.0, full_scan=True)
    assert len(s.floors) == 2
    for _ in range(3):
        visible = [x for x in objs
                   if any(in_listing(x.key, lst) for lst in logic.listings(s, ROOT, True))]
        assert logic.observe(s, visible, 4.0, full_scan=True) == []


def test_an_emptied_tables_cursor_and_floor_go() -> None:
    s = logic.WatchState()
    keys = [t(m) for m in range(0, 130, 10)]
    logic.observe(s, [written(k) for k in keys], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", keys)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 2.0)
    logic.observe(s, [written(k) for k in keys], 3.0, full_scan=True)
    assert s.floors and s.cursors
    logic.observe(s, [], 4.0, full_scan=True)  # resync moved the table's files away
    assert s.cursors == {} and s.seen == {}
    assert s.floors  # a full listing skips the floor's keys: only a deep one shows them gone
    logic.observe(s, [], 5.0, deep=True)
    assert s.floors == {}


def handed_on_with_a_floor() -> tuple[logic.WatchState, list[S3Object]]:
    """Two hours and ten minutes of CDC keys, deep-listed, covered by a run that
    succeeded, then a full listing: the keys up to t(50) are forgotten below the floor."""
    s = logic.WatchState()
    keys = [t(m) for m in range(0, 130, 10)]
    listed = [written(k) for k in keys]
    logic.observe(s, listed, 0.0, deep=True)
    logic.record_accepted(s, 1.0, "jr_1", keys)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 2.0)
    logic.observe(s, listed, 3.0, full_scan=True)
    return s, listed


def test_a_folder_whose_newest_keys_went_keeps_its_floor_until_a_deep_listing() -> None:
    """Its keys above the floor gone (quarantined), a full listing shows none of the
    folder's keys; had it dropped the floor, the keys forgotten below it would be new to
    the next listing and announced again."""
    s, listed = handed_on_with_a_floor()
    floor = s.floors[PREFIX.rstrip("/")]
    below = [o for o in listed if o.key <= floor]
    logic.observe(s, [], 4.0, full_scan=True)  # every key above the floor went
    assert s.floors == {PREFIX.rstrip("/"): floor}
    for listing in logic.listings(s, "dms/", full_scan=True):
        assert not any(in_listing(o.key, listing) for o in below)
    assert logic.observe(s, below, 5.0, deep=True) == []


def test_a_failed_run_puts_its_objects_back_and_a_succeeded_one_clears_them():
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv"), o("20261122-100000002.csv")], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", list(s.pending))
    assert not s.pending and len(s.in_flight["jr_1"]) == 2
    again = logic.record_run_ended(s, "jr_1", "FAILED", 5.0)
    assert {x.key for x in again} == set(s.pending) and len(again) == 2
    assert "jr_1" not in s.in_flight and s.next_attempt_at > 5.0  # backs off
    logic.record_accepted(s, 9.0, "jr_2", list(s.pending))
    assert logic.record_run_ended(s, "jr_2", "SUCCEEDED", 12.0) == []
    assert not s.pending and not s.in_flight


def test_in_flight_runs_survive_a_restart():
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv")], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", list(s.pending))
    back = logic.from_dict(logic.to_dict(s))
    assert back.in_flight == s.in_flight


@given(st.lists(st.tuples(names, st.sampled_from(["SUCCEEDED", "FAILED", "TIMEOUT",
                                                  "STOPPED"])), min_size=1, max_size=8))
def test_an_object_is_done_only_when_a_run_covering_it_succeeded(events):
    """Every landed object is pending, in flight, or covered by a SUCCEEDED run."""
    s = logic.WatchState()
    done: set[str] = set()
    for i, (name, outcome) in enumerate(events):
        logic.observe(s, [o(name, etag=f"e{i}")], float(i))
        run = f"jr_{i}"
        covering = set(s.pending)
        logic.record_accepted(s, float(i), run, list(s.pending))
        logic.record_run_ended(s, run, outcome, float(i))
        if outcome == "SUCCEEDED":
            done |= covering
    in_flight = {x.key for objs in s.in_flight.values() for x in objs}
    landed = {PREFIX + n for n, _ in events}
    assert done | set(s.pending) | in_flight == landed


def test_a_full_listing_forgets_keys_that_are_gone() -> None:
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv"), o("bad.csv.gz")], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", ["20261122-100000001.csv", "bad.csv.gz"])
    logic.observe(s, [o("20261122-100000001.csv")], 2.0, full_scan=True)  # bad one moved
    assert set(s.seen) == {PREFIX + "20261122-100000001.csv"}
    # an incremental listing (after the cursor) proves nothing about absent keys
    logic.observe(s, [], 3.0)
    assert set(s.seen) == {PREFIX + "20261122-100000001.csv"}


def test_parquet_and_date_folders_move_the_cursor_only_when_they_sort_by_time():
    assert logic.is_time_named(PREFIX + "20261122-101500123.parquet")
    for folder, sorts in (("", True), ("2026/11/22/", True), ("2026112210/", True),
                          ("2026-11/", True), ("11/2026/22/", False), ("22112026/", False),
                          ("22_11_2026/", False)):
        assert logic.sorts_by_time(PREFIX + folder + "20261122-101500123.parquet") == sorts
    s = logic.WatchState()
    logic.observe(s, [o("2026/11/22/20261122-101500123.parquet")], 0.0)
    assert s.cursors == {PREFIX.rstrip("/"): PREFIX + "2026/11/22/20261122-101500123.parquet"}
    logic.observe(s, [o("22/11/2026/20261122-111500123.parquet")], 1.0)
    assert s.cursors == {PREFIX.rstrip("/"): PREFIX + "2026/11/22/20261122-101500123.parquet"}


def test_a_wall_clock_step_back_stalls_neither_retries_nor_the_full_scan():
    """Times are wall clock (they survive restarts in the state file): after a step back
    of an hour, a retry set for 'now + back-off' and the last full scan lie an hour ahead."""
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv")], 3600.0, True)
    at = logic.record_rejected(s, 3600.0, "busy")
    assert not logic.due(s, 3600.0)  # an ordinary back-off is waited out
    assert logic.next_wakeup(s, 3600.0, 10.0) == at - 3600.0
    stepped = 5.0  # the clock now reads an hour less
    assert logic.due(s, stepped) and logic.next_wakeup(s, stepped, 10.0) == 0.0
    assert logic.full_scan_due(s, stepped)



def t(minutes: int, folder: str = "") -> str:
    """A DMS CDC key `minutes` after 10:00."""
    at = T0 + timedelta(minutes=minutes)
    return PREFIX + folder + at.strftime("%Y%m%d-%H%M%S") + "000.csv"


def test_keys_an_hour_behind_their_tables_cursor_are_forgotten_and_never_listed() -> None:
    """Bronze is kept for audit: without a floor `seen` and the full listing would grow
    with it forever."""
    s = logic.WatchState()
    keys = [t(m) for m in range(0, 130, 10)] + [PREFIX + "LOAD00000001.csv"]
    logic.observe(s, [written(k) for k in keys], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", keys)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 2.0)
    logic.observe(s, [written(k) for k in keys], 3.0, full_scan=True)
    # cursor at 12:00: keys named before 11:00 are forgotten; LOAD files are kept
    assert s.floors == {PREFIX.rstrip("/"): t(50)}
    assert set(s.seen) == {*(t(m) for m in range(60, 130, 10)), PREFIX + "LOAD00000001.csv"}
    for listing in logic.listings(s, "dms/", full_scan=True):
        assert not any(in_listing(k, listing) for k in keys[:6])  # never listed again
    assert any(in_listing(t(60), lst) for lst in logic.listings(s, "dms/", full_scan=True))
    assert logic.from_dict(logic.to_dict(s)).floors == s.floors


def test_a_key_found_below_its_floor_is_handed_on_once() -> None:
    """A key named late lands below its table's floor: a deep listing hands it on. A full
    listing skips the floor's keys, so it cannot tell when that key was written; had it
    forgotten the key then, the next deep listing would have handed it on again."""
    s, listed = handed_on_with_a_floor()
    assert s.floors == {PREFIX.rstrip("/"): t(50)}
    late = S3Object("b", t(5), 10, "late", T0 + timedelta(hours=3))  # written 3 h late
    assert logic.observe(s, [*listed, late], 4.0, deep=True) == [late]
    logic.record_accepted(s, 5.0, "jr_2", [late.key])
    logic.record_run_ended(s, "jr_2", "SUCCEEDED", 6.0)
    ranges = logic.listings(s, "dms/", full_scan=True)
    assert not any(in_listing(late.key, r) for r in ranges)
    logic.observe(s, [o for o in listed if any(in_listing(o.key, r) for r in ranges)],
                  7.0, full_scan=True, ranges=ranges)
    for at in (8.0, 9.0):  # the deep listing that shows it forgets it, known as handed on
        assert logic.observe(s, [*listed, late], at, deep=True) == []
    assert late.key not in s.seen


def test_the_floor_never_passes_an_object_still_pending_or_in_flight() -> None:
    s = logic.WatchState()
    keys = [t(m) for m in range(0, 130, 10)]
    logic.observe(s, [written(k) for k in keys], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", keys)  # in flight: not read yet
    logic.observe(s, [written(k) for k in keys], 3.0, full_scan=True)
    assert s.floors == {} and set(s.seen) == set(keys)
    logic.record_run_ended(s, "jr_1", "FAILED", 4.0)  # pending again
    logic.observe(s, [written(k) for k in keys], 5.0, full_scan=True)
    assert s.floors == {}


def test_a_folder_whose_cursor_keys_went_keeps_its_forgotten_keys_out_of_listings() -> None:
    """Its newest keys quarantined, a folder keeps its floor but has no cursor: the
    incremental listing's last range (after the greatest cursor, another folder's) would
    list its keys below the floor, handed on long ago, as new; it lists as a full one."""
    s = logic.WatchState()
    s.cursors = {"dms/db/public/t-x": "dms/db/public/t-x/20261121-000000000.csv"}
    s.floors = {"dms/db/public/t": "dms/db/public/t/20261121-000000000.csv"}
    forgotten = "dms/db/public/t/20261121-000000000.csv"
    newer = "dms/db/public/t/20261121-120000000.csv"
    ranges = logic.listings(s, ROOT, full_scan=False)
    assert not any(in_listing(forgotten, r) for r in ranges)
    assert any(in_listing(newer, r) for r in ranges)


def test_a_succeeded_run_ends_the_busy_back_off() -> None:
    """Objects refused while a run went (MaxConcurrentRuns) back off; once that run has
    SUCCEEDED its state change and the objects are due at once, not after the back-off."""
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv")], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", list(s.pending))
    logic.observe(s, [o("20261122-100000002.csv")], 2.0)
    for attempt in range(5):  # refused: jr_1 is going
        logic.record_rejected(s, 2.0 + attempt, "ConcurrentRunsExceededException")
    assert not logic.due(s, 6.5)
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 6.5)
    assert logic.due(s, 6.5) and logic.next_wakeup(s, 6.5, 1.0) == 0.0


def test_a_failed_run_keeps_backing_off() -> None:
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000001.csv")], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", list(s.pending))
    logic.record_run_ended(s, "jr_1", "FAILED", 2.0)
    assert not logic.due(s, 2.0) and logic.due(s, 2.0 + logic.BACKOFF_BASE_SECONDS)


@given(st.lists(st.integers(1, 999), min_size=1, max_size=30, unique=True), st.data())
def test_whatever_the_stream_misses_the_next_incremental_listing_finds(millis, data):
    """Objects after the cursor, some announced by MinIO (observed with no listing), the
    rest missed: the next incremental listing, from the cursors as the announcements left
    them, returns every missed one."""
    s = logic.WatchState()
    logic.observe(s, [o("20261122-100000000.csv")], 0.0, full_scan=True)
    bucket = [o(f"20261122-100001{m:03d}.csv") for m in millis]
    announced = data.draw(st.lists(st.sampled_from(bucket), unique=True))
    logic.observe(s, announced, 1.0, announced_only=True)
    ranges = logic.listings(s, PREFIX, full_scan=False)
    listed = [x for x in bucket if any(in_listing(x.key, r) for r in ranges)]
    logic.observe(s, listed, 2.0, ranges=ranges)
    assert {x.key for x in bucket} <= set(s.seen)
    assert {x.key for x in bucket} - {x.key for x in announced} <= set(s.pending)
