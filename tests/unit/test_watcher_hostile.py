"""The watcher's decisions against hostile objects and names: one object that can never
be handled, objects that vanish, stray names from the future. Nothing wedges: the others
are announced and covered, the bad one is parked after a bounded number of tries, no
object is announced twice, and no cursor is pinned."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from lambda_shim import watch_logic as logic
from lambda_shim.s3_events import S3Object

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
ROOT = "dms/db/public/"

odd = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
names = st.one_of(
    st.from_regex(r"2026112[12]-[01][0-9][0-5][0-9][0-5][0-9][0-9]{3}\.csv", fullmatch=True),
    st.sampled_from(["20991231-235959999.csv", "20261399-999999999.csv", "LOAD00000001.csv",
                     "x[1]{a,b}*?.csv", "notes.txt", "a\nb.csv", "ü n ï.csv.gz"]),
    odd.map(lambda s: s + ".csv"),
    st.integers(1000, 1100).map(lambda n: "/".join(["f" * 250] * 3) + "/" + "x" * (n - 753)),
)
keys = st.builds(lambda folder, name: f"{ROOT}{folder}/{name}",
                 st.sampled_from(["t", "t-x", "t/2026/11/22"]), names)
fates = st.sampled_from(["ok", "ok", "ok", "poison", "gone"])


def landed(key: str, at: datetime, etag: str = "e") -> S3Object:
    return S3Object("b", key, 10, etag, at)


@settings(max_examples=150, deadline=None)
@given(waves=st.lists(st.lists(st.tuples(keys, fates), max_size=6), min_size=1, max_size=6),
       data=st.data())
def test_no_object_holds_up_the_others_and_none_is_announced_twice(waves, data) -> None:
    """The handler fails every event that holds a poison object (naming it), finds gone
    objects gone, is busy at times; runs fail at times. Every other object is announced
    and covered by a run that succeeded; every poison object is parked after
    MAX_OBJECT_FAILURES tries, alone after its first; none is announced again once an
    accepted event held it, unless the run covering it failed. Objects are written when
    they land; one landing below its table's floor (named late, or in a folder sorting
    there) is found by the next deep listing."""
    s = logic.WatchState()
    now = 1000.0
    fate: dict[str, str] = {}
    present: set[str] = set()
    announced: set[str] = set()  # held by an accepted event, its run not failed since
    done: set[str] = set()  # covered by a run that succeeded
    tries: Counter[str] = Counter()
    in_a_crowd: Counter[str] = Counter()
    runs = 0

    written: dict[str, datetime] = {}

    def step(new: list[tuple[str, str]], busy_ok: bool) -> None:
        nonlocal now, runs
        for key, f in new:
            if key not in fate:
                fate[key] = f
                present.add(key)
                written[key] = T0 + timedelta(seconds=now)
        deep = logic.deep_scan_due(s, now, period=20.0) or not busy_ok
        full = deep or data.draw(st.booleans(), "full listing")
        ranges = logic.listings(s, ROOT, full, deep)
        listed = [landed(k, written[k]) for k in sorted(present)
                  if any(_in(k, lst) for lst in ranges)]
        logic.observe(s, listed, now, full, deep=deep, ranges=ranges)
        for key in [k for k in present if fate[k] == "gone"]:  # deleted once listed
            present.discard(key)
        for run in list(s.in_flight):
            ok = data.draw(st.booleans(), "run succeeds") or not busy_ok
            covered = {o.key for o in s.in_flight[run]}
            again = logic.record_run_ended(s, run, "SUCCEEDED" if ok else "FAILED", now)
            if ok:
                done.update(covered)
            announced.difference_update(o.key for o in again)
        if not logic.due(s, now):
            now += 1.0
            return
        if (ended := logic.run_ended_only(s)) is not None:
            logic.record_event_delivered(s, ended)
            return
        if logic.backlog_only(s):
            logic.record_accepted(s, now, None, [])
            s.backlog = False
            return
        batch = logic.batch(s, limit=4, now=now)
        held = [o.key for o in batch]
        assert len(held) == len(set(held)) and not set(held) & set(s.parked)
        if any(k in s.failing for k in held):
            assert len(held) == 1  # tried again alone
        poison = [k for k in held if fate[k] == "poison"]
        for k in poison:
            tries[k] += 1
            in_a_crowd[k] += len(held) > 1
        if poison:
            logic.record_object_failures(s, now, {k: "KeyTooLongError" for k in poison})
        elif busy_ok and data.draw(st.booleans(), "busy"):
            logic.record_rejected(s, now, "GlueJobAlreadyRunning")
        else:
            for k in held:
                assert k not in announced, f"{k!r} announced twice"
            runs += 1
            gone = [k for k in held if k not in present]
            logic.record_accepted(s, now, f"jr_{runs}", held, announced=held, gone=gone)
            announced.update(k for k in held if k not in gone)
        now += data.draw(st.sampled_from([0.0, 0.3, 1.0, 6.0]), "time passes")

    for wave in waves:
        for _ in range(data.draw(st.integers(1, 8), "steps")):
            step(wave, busy_ok=True)
            wave = []
    for _ in range(400):  # no new objects, no busy job, runs succeed: it all settles
        step([], busy_ok=False)
        now += 1.0
        if not logic.due(s, now) and not s.in_flight and not s.pending:
            break
    assert not s.pending and not s.in_flight
    for key, f in fate.items():
        if f == "ok":
            assert key in done, f"{key!r} never covered by a run that succeeded"
        elif f == "poison":
            assert key in s.parked and tries[key] == logic.MAX_OBJECT_FAILURES
            assert s.parked[key]["error"] == "KeyTooLongError"
            assert in_a_crowd[key] <= 1  # after its first failure it never holds others up


def _in(key: str, listing: logic.Listing) -> bool:
    prefix, after, stop = listing
    return (key.startswith(prefix) and (after is None or key > after)
            and (stop is None or key < stop))


def cdc(minutes: float, folder: str = "t") -> S3Object:
    """A DMS CDC file, written a second after the time in its name."""
    at = T0 + timedelta(minutes=minutes)
    name = at.strftime("%Y%m%d-%H%M%S") + f"{at.microsecond // 1000:03d}.csv"
    return landed(f"{ROOT}{folder}/{name}", at + timedelta(seconds=1))


@settings(max_examples=200, deadline=None)
@given(real=st.lists(st.integers(0, 600), min_size=1, max_size=8, unique=True),
       stray_ahead=st.sampled_from([timedelta(minutes=16), timedelta(hours=3),
                                    timedelta(days=365 * 70)]),
       drop_cursor=st.booleans(), folder=st.sampled_from(["t", "t/2026/11/22"]))
def test_no_stray_name_pins_a_cursor(real, stray_ahead, drop_cursor, folder) -> None:
    s = logic.WatchState()
    objs = [cdc(m, folder) for m in sorted(real)]
    written = objs[-1].last_modified
    at = written + stray_ahead  # the time in its name: ahead of when it was written
    stray = landed(f"{ROOT}{folder}/" + at.strftime("%Y%m%d-%H%M%S") + "999.csv", written)
    listed = [*objs, stray]
    logic.observe(s, listed, 0.0)
    table = logic.table_folder(objs[0].key)
    assert s.cursors[table] == objs[-1].key  # the stray does not move it
    # the stray (and maybe the cursor's own key) quarantined: a full listing falls back
    listed = [o for o in listed if o is not stray and not (drop_cursor and o is objs[-1])]
    logic.observe(s, listed, 1.0, full_scan=True)
    assert s.cursors.get(table) == (max(o.key for o in listed) if listed else None)
    # a new file, named after the others, is found by the incremental listing
    new = cdc(max(real) + 1, folder)
    assert any(_in(new.key, lst) for lst in logic.listings(s, ROOT, full_scan=False))


def test_a_cursor_pinned_in_an_old_state_is_fixed_by_the_first_full_listing() -> None:
    old = logic.to_dict(logic.WatchState(cursors={ROOT + "t": ROOT + "t/20991231-235959999.csv"}))
    s = logic.from_dict(old)
    assert logic.full_scan_due(s, 0.0)
    logic.observe(s, [cdc(1)], 0.0, full_scan=True)
    assert s.cursors == {ROOT + "t": cdc(1).key}


def test_a_name_clock_margin_admits_a_zone_east_of_utc() -> None:
    tokyo = cdc(0)
    ahead = landed(tokyo.key.replace("20261122-100000000", "20261122-190000000"),
                   tokyo.last_modified)  # named in UTC+9
    assert not logic.moves_cursor(ahead)
    assert logic.moves_cursor(ahead, logic.NAME_CLOCK_MARGIN + timedelta(hours=10))


def test_gone_objects_are_forgotten_and_left_out_of_the_run() -> None:
    s = logic.WatchState()
    a, b = cdc(1), cdc(2)
    logic.observe(s, [a, b], 0.0)
    logic.record_accepted(s, 1.0, "jr_1", [a.key, b.key], announced=[a.key, b.key],
                          gone=[b.key])
    assert not s.pending and [o.key for o in s.in_flight["jr_1"]] == [a.key]
    logic.record_run_ended(s, "jr_1", "FAILED", 2.0)
    assert list(s.pending) == [a.key]  # only what exists comes back


def test_objects_beyond_the_event_stay_pending_for_their_own_check() -> None:
    s = logic.WatchState()
    objs = [cdc(m) for m in range(5)]
    logic.observe(s, objs, 0.0)
    first = [o.key for o in logic.batch(s, limit=2)]
    logic.record_accepted(s, 1.0, "jr_1", first, announced=first)
    assert set(s.pending) == {o.key for o in objs[2:]}
    assert {o.key for o in s.in_flight["jr_1"]} == {o.key for o in objs}  # it covers all


def test_a_parked_object_is_reported_until_removed_or_overwritten() -> None:
    s = logic.WatchState()
    bad, good = landed(ROOT + "t/" + "x" * 1000 + ".txt", T0), cdc(1)
    logic.observe(s, [bad, good], 0.0)
    for i in range(logic.MAX_OBJECT_FAILURES):
        held = [o.key for o in logic.batch(s, now=100.0 * i)]
        assert bad.key in held
        parked = logic.record_object_failures(s, 100.0 * i, {bad.key: "KeyTooLongError"})
        if i == 0:  # its first failure: the other goes on at once
            assert logic.batch(s, now=100.0 * i) == [good]
            logic.record_accepted(s, 0.0, "jr_1", [good.key], announced=[good.key])
    assert parked == [bad.key] and not s.pending and not s.failing
    assert s.parked[bad.key]["failures"] == logic.MAX_OBJECT_FAILURES
    back = logic.from_dict(logic.to_dict(s))
    assert back.parked == s.parked
    logic.observe(s, [bad, good], 500.0, full_scan=True)  # still there: still parked
    assert bad.key in s.parked and bad.key not in s.pending
    logic.observe(s, [landed(bad.key, T0, etag="e2"), good], 501.0)  # overwritten: new
    assert bad.key in s.pending and bad.key not in s.parked
    logic.record_accepted(s, 502.0, None, [bad.key], announced=[bad.key])
    logic.observe(s, [good], 503.0, full_scan=True)
    assert not s.parked


def test_a_failing_object_waits_its_back_off_and_the_wakeup_knows() -> None:
    s = logic.WatchState()
    bad = landed(ROOT + "t/a.txt", T0)
    logic.observe(s, [bad], 0.0)
    logic.record_object_failures(s, 10.0, {bad.key: "x"})
    assert not logic.due(s, 10.0) and logic.batch(s, now=10.0) == []
    assert logic.next_wakeup(s, 10.0, 5.0) == logic.backoff_seconds(1)
    assert logic.due(s, 10.0 + logic.backoff_seconds(1))
    restarted = logic.from_dict(logic.to_dict(s))
    assert logic.due(restarted, 10.0) and restarted.failing[bad.key]["failures"] == 1


def test_a_key_landing_below_a_floor_is_found_by_the_next_deep_listing() -> None:
    """From a bucket empty at start: the floor forms, then `t/0.csv` (sorting below it)
    lands; full listings never see it, the next deep listing hands it on, once."""
    s = logic.WatchState()
    logic.observe(s, [], 0.0, deep=True)  # the first listing: nothing there yet
    old, new = cdc(0), cdc(90)
    logic.observe(s, [old, new], 1.0)
    logic.record_accepted(s, 2.0, "jr_1", [old.key, new.key])
    logic.record_run_ended(s, "jr_1", "SUCCEEDED", 3.0)
    logic.observe(s, [old, new], 4.0, full_scan=True)
    assert s.floors == {ROOT + "t": old.key}
    stray = landed(ROOT + "t/0.csv", new.last_modified + timedelta(minutes=1))
    present = [old, new, stray]
    ranges = logic.listings(s, ROOT, full_scan=True)
    assert not any(_in(stray.key, r) for r in ranges)  # below the floor
    listed = [o for o in present if any(_in(o.key, r) for r in ranges)]
    logic.observe(s, listed, 5.0, full_scan=True, ranges=ranges)
    assert [o.key for o in logic.observe(s, present, 6.0, deep=True)] == [stray.key]
    logic.record_accepted(s, 7.0, "jr_2", [stray.key])
    assert logic.observe(s, present, 8.0, deep=True) == []  # not twice


def test_a_state_from_before_deep_listings_does_not_replay_its_history() -> None:
    s = logic.from_dict({"floors": {ROOT + "t": cdc(50).key}, "cursors": {ROOT + "t": cdc(120).key},
                         "seen": {cdc(120).key: "e"}, "pending": []})
    history = [cdc(m) for m in range(0, 60, 10)]
    assert logic.observe(s, [*history, cdc(120)], 0.0, deep=True) == []
