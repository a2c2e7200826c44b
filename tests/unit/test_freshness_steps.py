"""bench/freshness_steps.py: commit -> visible cut into steps that add up, percentiles,
and the readers of the watcher log and the Glue runs."""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("freshness_steps",
                                               ROOT / "bench/freshness_steps.py")
assert _spec and _spec.loader
fs = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fs  # dataclasses look their module up
_spec.loader.exec_module(fs)

T0 = 1_800_000_000.0
offsets = st.floats(min_value=0, max_value=60, allow_nan=False)
maybe = st.none() | offsets
phase_names = st.sampled_from([*fs.PHASE_STEPS, "merge tombstones", "compact"])


@st.composite
def probes(draw) -> fs.ProbeTimes:
    committed = T0 + draw(offsets)
    visible = committed + draw(offsets)

    def at():
        off = draw(maybe)
        return None if off is None else committed + off - 5  # some before the commit

    return fs.ProbeTimes(committed=committed, visible=visible, received=at(), named=at(),
                         stored=at(), noticed=at(), requested=at(), running=at(),
                         snapshot=at(),
                         phases=draw(st.dictionaries(phase_names, offsets, max_size=5)))


@given(probes())
def test_steps_add_up_to_commit_to_visible_and_none_is_negative(p):
    steps = fs.breakdown(p)
    assert tuple(steps) == fs.STEPS
    assert all(v >= 0 for v in steps.values()), steps
    assert math.isclose(sum(steps.values()), p.visible - p.committed, abs_tol=1e-6)


@given(probes())
def test_job_phases_never_take_more_than_the_run_reported(p):
    steps, reported = fs.breakdown(p), fs.job_phases(p.phases)
    for name in fs.JOB_PHASES:
        assert steps[name] <= reported[name] + 1e-9


def test_an_ordered_way_reads_off_each_step():
    p = fs.ProbeTimes(committed=T0, received=T0 + 0.05, named=T0 + 1.0, stored=T0 + 1.1,
                      noticed=T0 + 1.6, requested=T0 + 1.8, running=T0 + 1.9,
                      snapshot=T0 + 3.9,
                      visible=T0 + 4.0,
                      phases={"ensure tables": 0.1, "read and validate": 0.3,
                              "dedup and classify": 0.4, "merge into silver": 0.8,
                              "merge tombstones": 0.5})
    steps = fs.breakdown(p)
    expected = {"wal_decode": 0.05, "emitter_batch": 0.95, "upload": 0.1, "notice": 0.5,
                "trigger": 0.2, "run_queue": 0.1, "job_setup": 0.4, "ensure_tables": 0.1,
                "read": 0.3, "dedup": 0.4, "merge_commit": 0.8, "catalog_refresh": 0.1}
    assert steps == pytest.approx(expected, abs=1e-6)


def test_a_run_already_going_when_the_file_landed_costs_only_its_last_phases():
    # the run started before the upload and read the file in its listing
    p = fs.ProbeTimes(committed=T0, named=T0 + 1.0, stored=T0 + 1.1, noticed=T0 + 1.5,
                      requested=T0 - 2.0, running=T0 - 1.9, snapshot=T0 + 2.0,
                      visible=T0 + 2.2,
                      phases={"read and validate": 0.6, "dedup and classify": 0.4,
                              "merge into silver": 0.3})
    steps = fs.breakdown(p)
    assert steps["trigger"] == steps["run_queue"] == 0
    assert steps["merge_commit"] == pytest.approx(0.3)
    assert steps["dedup"] == pytest.approx(0.2)  # only what is left after the notice
    assert steps["read"] == steps["job_setup"] == 0


def test_a_probe_visible_before_its_commit_is_refused():
    with pytest.raises(ValueError, match="before its commit"):
        fs.breakdown(fs.ProbeTimes(committed=T0, visible=T0 - 1))


values = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1)


@given(values, st.floats(min_value=0, max_value=1))
def test_percentile_lies_within_the_values_and_ignores_order(xs, q):
    v = fs.percentile(xs, q)
    assert min(xs) <= v <= max(xs)
    assert v == fs.percentile(list(reversed(xs)), q)


@given(values)
def test_percentiles_are_ordered_and_p50_is_the_median(xs):
    s = fs.spread(xs)
    assert s["count"] == len(xs)
    assert s["min"] <= s["p50"] + 1e-3 <= s["p90"] + 2e-3 <= s["max"] + 3e-3
    assert s["p50"] == pytest.approx(statistics.median(xs), abs=1e-3)
    assert fs.percentile(xs, 0) == min(xs) and fs.percentile(xs, 1) == max(xs)


def test_percentile_refuses_no_values_and_quantiles_out_of_range():
    assert fs.spread([]) == {"count": 0}
    with pytest.raises(ValueError, match="no values"):
        fs.percentile([], 0.5)
    with pytest.raises(ValueError, match="quantile 1.5"):
        fs.percentile([1.0], 1.5)


@given(st.lists(probes(), min_size=1, max_size=20))
def test_summary_has_every_step_and_counts_missing_timestamps(ps):
    s = fs.summarize(ps)
    assert set(s["steps_seconds"]) == set(fs.STEPS)
    assert s["commit_to_visible_seconds"]["count"] == len(ps)
    for name in fs.TIMESTAMP_NAMES:
        assert s["missing_timestamps"].get(name, 0) == sum(getattr(p, name) is None
                                                           for p in ps)


def _line(when: datetime, logger: str, message: str) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S},{when.microsecond // 1000:03d} {logger} {message}"


def test_noticed_times_read_the_watchers_first_listing_of_each_key():
    a, b = "dms/public/t/20261126-100000100.csv", "dms/public/t/20261126-100001100.csv"
    t1, t2 = datetime(2026, 11, 26, 10, 0, 0, 600_000), datetime(2026, 11, 26, 10, 0, 1, 700_000)
    lines = [
        _line(t1, "root", f"1 new object(s) for Glue job(s) ['j']: [{b!r}]"),  # the Lambda's
        _line(t1, "lambda_shim.watcher", f"1 new object(s): [{a!r}]"),
        "a line of no logger",
        _line(t2, "lambda_shim.watcher", f"2 new object(s): [{a!r}, {b!r}]"),
    ]
    found = fs.noticed_times(lines, [a, b, "never/listed.csv"])
    assert found == {a: pytest.approx(t1.timestamp()), b: pytest.approx(t2.timestamp())}


def test_run_holding_a_snapshot_is_the_one_going_then():
    runs = [{"Id": "r1", "RunStartedOn": T0, "CompletedOn": T0 + 3},
            {"Id": "r2", "RunStartedOn": T0 + 5, "CompletedOn": T0 + 8},
            {"Id": "r3", "StartedOn": T0 + 9}]  # not running yet
    assert fs.run_holding(runs, T0 + 6)["Id"] == "r2"
    assert fs.run_holding(runs, T0 + 3.2)["Id"] == "r1"  # the slack: commit, then CompletedOn
    assert fs.run_holding(runs, T0 + 4.2) is None
    assert fs.run_holding([{"Id": "r4", "RunStartedOn": T0}], T0 + 100)["Id"] == "r4"
    # a run that starts just after another ended does not take the earlier one's commit
    back_to_back = [{"Id": "a", "RunStartedOn": T0, "CompletedOn": T0 + 3},
                    {"Id": "b", "RunStartedOn": T0 + 3.1, "CompletedOn": T0 + 6}]
    assert fs.run_holding(back_to_back, T0 + 2.9)["Id"] == "a"


def test_first_snapshot_skips_compactions():
    assert fs.first_snapshot([(T0 + 2, "overwrite"), (T0 + 1, "replace")]) == T0 + 2
    assert fs.first_snapshot([(T0 + 1, "replace")]) is None


@given(st.integers(min_value=0, max_value=999_999), st.integers(min_value=0, max_value=999_999))
def test_probe_markers_are_distinct_and_none_contains_another(a, b):
    if a != b:
        assert fs.probe_marker(a) not in fs.probe_marker(b)
    assert "," not in fs.probe_marker(a) and '"' not in fs.probe_marker(a)


@given(st.lists(probes(), min_size=1, max_size=5))
def test_the_markdown_table_has_a_row_per_step_and_the_total(ps):
    result = {"idle": fs.summarize(ps), "load": fs.summarize(ps[:1])}
    lines = fs.markdown_table(result).splitlines()
    assert len(lines) == 2 + len(fs.STEPS) + 1
    assert all(line.count("|") == 4 for line in lines)
    assert "commit → visible" in lines[-1]
    assert fs.markdown_table({"idle": fs.summarize(ps)}).splitlines()[0].count("|") == 3
    trend = fs.lag_trend([(p.committed, p.visible - p.committed) for p in ps])
    with_trend = fs.markdown_table({"idle": {**fs.summarize(ps), "lag_trend": trend}})
    assert with_trend.splitlines()[-1].startswith("| lag: first → last third p50")


def test_each_phase_is_compared_with_the_baseline_and_the_target() -> None:
    result = {"idle": {"commit_to_visible_seconds": {"count": 15, "p50": 2.515, "p90": 2.5}},
              "load": {"commit_to_visible_seconds": {"count": 0}}}
    out = fs.against_baseline(result)
    assert out["idle"]["p50"] == {"now": 2.515, "baseline": 10.06, "speedup": 4.0,
                                  "target": 1.5, "target_met": False}
    assert out["idle"]["p90"]["target_met"] and "load" not in out
    assert "baseline_comparable" not in out
    assert fs.against_baseline({**result, "params": {"rows": 10**6}})["baseline_comparable"] \
        is False


def test_idle_memory_and_big_transactions_are_held_to_their_targets() -> None:
    result = {"idle_memory": {"total_gib": 1.72},
              "big_transaction": {"rows": 100_000,
                                  "insert": {"seconds": 3.5, "rows_per_second": 28_571},
                                  "update": {"seconds": None, "visible_rows": 10}}}
    out = fs.against_baseline(result)
    assert out["idle_memory_gib"] == {"now": 1.72, "target": 1.5, "target_met": False}
    assert out["big_insert_rows_per_second"]["target_met"]
    assert out["big_update_rows_per_second"] == {"now": None, "target": 20_000,
                                                 "target_met": False}
    assert "big_insert_rows_per_second" not in fs.against_baseline({})


def test_the_full_load_counts_from_up_and_is_held_to_its_target_at_a_million_rows() -> None:
    result = {"params": {"rows": 1_000_000}, "timings_seconds": {"up_to_silver": 31.5}}
    assert fs.against_baseline(result)["full_load_seconds"] == {
        "now": 31.5, "rows": 1_000_000, "target": 30.0, "target_met": False}
    small = fs.against_baseline({"params": {"rows": 1000},
                                 "timings_seconds": {"up_to_silver": 9.0}})
    assert small["full_load_seconds"] == {"now": 9.0, "rows": 1000}  # no target at 1000 rows
    assert "full_load_seconds" not in fs.against_baseline({})


def test_the_emitters_wrote_lines_tell_when_each_files_first_row_came():
    key = "dms/airbnb_db/public/hosts_demo/20261129-052000123.csv"
    lines = ["full load: wrote LOAD00000001.csv (5 rows of public.hosts_demo so far)",
             f"wrote s3://cdclab-bronze/{key}: 1 changes "
             "(first received 2026-11-29T05:20:00.021+00:00)",
             "wrote s3://cdclab-bronze/other/20261129-052001000.csv: 3 changes "
             "(first received 2026-11-29T05:20:00.900+00:00)",
             "batch of 4 changes stored (total 2 files, 4 changes)"]
    got = fs.received_times(lines, [key, "never/written.csv"])
    assert got == {key: datetime(2026, 11, 29, 5, 20, 0, 21000, tzinfo=UTC).timestamp()}


@given(st.lists(st.integers(0, 600).map(float), min_size=3, max_size=40, unique=True),
       st.floats(-0.5, 0.5), st.floats(0.1, 30))
def test_the_lag_trend_recovers_a_steady_rise_or_fall(times, slope, base):
    """Lags on a line over commit time: the slope is the line's, and the thirds' p50s
    are ordered as the line is."""
    trend = fs.lag_trend([(t, base + slope * t) for t in times])
    assert trend["count"] == len(times)
    assert math.isclose(trend["slope_seconds_per_second"], slope, abs_tol=1e-3)
    if slope > 0:
        assert trend["last_third_p50"] >= trend["first_third_p50"]
    elif slope < 0:
        assert trend["last_third_p50"] <= trend["first_third_p50"]


def test_a_lag_that_does_not_grow_has_no_slope_and_too_few_probes_no_trend() -> None:
    flat = fs.lag_trend([(float(t), 4.0 + (0.5 if t % 2 else -0.5)) for t in range(30)])
    assert abs(flat["slope_seconds_per_second"]) < 0.01
    assert flat["first_third_p50"] == flat["last_third_p50"] == 4.0
    assert fs.lag_trend([(0.0, 1.0), (1.0, 2.0)]) == {"count": 2}


COLLECTED = f"2026-12-07 14:00:00,000 INFO glue_local.driver: {fs.DRIVER_COLLECTED}"
WARMED = ("2026-12-07 14:00:00,000 INFO glue_local.jit_warmup: JIT warm-up: 40 batches in "
          "60.0s of work (the first 2.10s, the last 0.40s)")
RUN = "2026-12-07 14:00:00,000 INFO glue_local.runner: run jr_1 SUCCEEDED"


def test_the_driver_rests_once_warmed_and_collected_twice_after_the_probes() -> None:
    assert not fs.driver_at_rest([WARMED, RUN, COLLECTED, COLLECTED], since=3)
    assert fs.driver_at_rest([WARMED, RUN, COLLECTED, COLLECTED], since=1)
    # the warm-up's work ends after the probes: the collections before it do not count
    lines = [RUN, COLLECTED, COLLECTED, WARMED, COLLECTED]
    assert not fs.driver_at_rest(lines, since=1)
    assert fs.driver_at_rest([*lines, COLLECTED], since=1)
    # no warm-up line: still warming, unless the warm-up is off
    assert not fs.driver_at_rest([RUN, COLLECTED, COLLECTED], since=1)
    assert fs.driver_at_rest([RUN, COLLECTED, COLLECTED], since=1, warmup=False)
    early = "... INFO glue_local.runner: JIT warm-up ended early: Py4JError: gone"
    assert fs.driver_at_rest([early, COLLECTED, COLLECTED], since=0)


@given(st.lists(st.sampled_from([COLLECTED, WARMED, RUN]), max_size=30),
       st.integers(0, 30), st.lists(st.sampled_from([COLLECTED, RUN]), max_size=5))
def test_a_driver_at_rest_stays_so_until_it_warms_again(lines, since, more) -> None:
    if fs.driver_at_rest(lines, since):
        assert fs.driver_at_rest([*lines, *more], since)  # the bench reads it at once
        assert not fs.driver_at_rest([*lines, *more, WARMED], since)
