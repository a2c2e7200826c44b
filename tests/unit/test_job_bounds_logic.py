"""Pure parts of the job's bounded resources: the input cap's options, when the scheduled
upkeep is due, the snapshot bound's expiry, and the [glue_job] / [maintenance] settings
that reach the job."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline_contract import job_config
from pipeline_contract.settings import GlueJobSettings, MaintenanceSettings, load_pipeline

SCRIPT = Path(__file__).resolve().parents[2] / "jobs" / "bronze_to_silver.py"
_spec = importlib.util.spec_from_file_location("bronze_to_silver_bounds", SCRIPT)
job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(job)


def test_bounded_options_are_one_boundary_as_strings() -> None:
    assert job.bounded_options(500, 0) == {"boundedFiles": "500"}
    assert job.bounded_options(500, 1_000_000) == {"boundedSize": "1000000"}  # size wins
    assert job.bounded_options(0, 0) == {}


@given(last=st.integers(0, 10**13), now=st.integers(0, 10**13),
       interval=st.floats(0, 10**4, allow_nan=False))
def test_upkeep_is_due_once_the_interval_passed_or_the_clock_went_back(last, now,
                                                                      interval) -> None:
    props = {job.LAST_MAINTENANCE_PROPERTY: str(last)}
    due = job.maintenance_due(props, now, interval)
    assert due == (now < last or now - last >= interval * 60_000)
    assert job.maintenance_due({}, now, interval) == (interval == 0)  # never run: starts now
    assert job.maintenance_due({job.LAST_MAINTENANCE_PROPERTY: "garbage"}, now, interval)


@given(count=st.integers(0, 10**5), bound=st.integers(0, 10**4), retain=st.integers(1, 100),
       timed=st.booleans(), hours=st.floats(0, 10**3, allow_nan=False))
def test_a_table_over_its_snapshot_bound_is_expired_to_half_of_it(count, bound, retain, timed,
                                                                   hours) -> None:
    plan = {"max_snapshots": float(bound), "retain_last_snapshots": float(retain),
            "snapshot_retention_hours": hours}
    # a bound pipeline.toml refuses (under twice retain_last) given to the job: no bound
    assert job.snapshot_bound(plan) == (bound if bound >= 2 * retain else 0)
    bound = job.snapshot_bound(plan)
    now = 1.8e9
    expiry = job.snapshot_expiry(count, plan, now, timed)
    if bound and count > bound:  # whatever the window, in any run
        older_than, keep = expiry
        assert older_than == now and retain <= keep <= bound // 2 < count
    elif timed:  # the scheduled upkeep: by the time-travel window only
        assert expiry == (now - hours * 3600, retain)
    else:
        assert expiry is None
    # what it keeps is under the bound by half of it: the next expiry waits as many commits
    if expiry and bound and count > bound:
        assert job.snapshot_expiry(expiry[1], plan, now, False) is None


def test_input_left_without_a_cap_is_never_backlog() -> None:
    class NoFiles:
        def inputFiles(self):
            return []

    assert not job.input_left(None, NoFiles(), {"files": 10**6}, 0, 0)
    assert job.input_left(None, NoFiles(), {"files": 3}, 3, 0)
    assert not job.input_left(None, NoFiles(), {"files": 2}, 3, 0)
    assert not job.input_left(None, NoFiles(), {"files": 0}, 0, 100)
    # a size cap whose bytes cannot be had: look again (a follow-up run may find nothing)
    assert job.input_left(None, NoFiles(), {"files": 2}, 0, 100)


def test_settings_reach_the_job_as_arguments() -> None:
    p = load_pipeline()
    args = job_config.glue_default_arguments(p)
    assert args["--bounded_files"] == str(p.glue_job.bounded_files)
    assert "--bounded_size" not in args
    sized = dataclasses.replace(p, glue_job=dataclasses.replace(p.glue_job,
                                                                bounded_size_bytes=10**8))
    args = job_config.glue_default_arguments(sized)
    assert args["--bounded_size"] == "100000000" and "--bounded_files" not in args
    m = p.maintenance
    assert job_config.maintenance_arguments(p) == {
        "--maintenance_interval_minutes": f"{m.interval_minutes:g}",
        "--snapshot_retention_hours": f"{m.snapshot_retention_hours:g}",
        "--retain_last_snapshots": str(m.retain_last_snapshots),
        "--orphan_file_age_hours": f"{m.orphan_file_age_hours:g}",
        "--tombstone_retention_days": f"{m.tombstone_retention_days:g}",
        "--max_snapshots": str(m.max_snapshots)}
    # every argument the job reads has its default in the job too (it runs without cdclab)
    assert {k.removeprefix("--") for k in job_config.maintenance_arguments(p)} == set(
        job.MAINTENANCE_DEFAULTS)


def test_unsafe_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="orphan_file_age_hours = 1: a number >= 24"):
        MaintenanceSettings(orphan_file_age_hours=1).check()
    with pytest.raises(ValueError, match="retain_last_snapshots"):
        MaintenanceSettings.build({"retain_last_snapshots": 0}, "p.toml")
    # a bound the expiry's half could not keep retain_last_snapshots under
    with pytest.raises(ValueError, match="max_snapshots = 15: 0 or at least twice"):
        MaintenanceSettings(max_snapshots=15).check()
    MaintenanceSettings(max_snapshots=0).check()  # no bound
    with pytest.raises(ValueError, match="bounded_files"):
        GlueJobSettings("j", "s.py", "5.1", "G.1X", 2, "job-bookmark-enable", 1, 60,
                        bounded_files=-1).check()
