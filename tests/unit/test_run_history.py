"""The local Glue API's bounded run history (glue_local.run_history): newest RUNS_KEPT
finished runs per job, AWS's 365-day retention, never an active or bookmarked run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from glue_local import jobs_api
from glue_local.run_history import FINAL_STATES, RETENTION_SECONDS, runs_to_forget

STATES = [*FINAL_STATES, "STARTING", "RUNNING", "STOPPING", "WAITING"]

runs_st = st.lists(st.tuples(st.sampled_from(STATES), st.integers(0, 10**6)),
                   max_size=40, unique_by=lambda t: t[1])


def as_runs(spec) -> list[dict]:
    return [{"Id": f"jr_{t}", "JobRunState": state, "StartedOn": float(t),
             "CompletedOn": float(t + 5)} for state, t in spec]


@given(runs_st, st.integers(0, 10), st.sets(st.integers(0, 10**6), max_size=5))
def test_forgets_only_old_finished_unprotected_runs(spec, keep, protected_t) -> None:
    runs = as_runs(spec)
    protected = {f"jr_{t}" for t in protected_t}
    forget = set(runs_to_forget(runs, now=2e6, keep=keep, protected=protected))
    finished = sorted((r for r in runs if r["JobRunState"] in FINAL_STATES),
                      key=lambda r: r["StartedOn"], reverse=True)
    newest = {r["Id"] for r in finished[:keep]}
    for r in runs:
        if r["JobRunState"] not in FINAL_STATES or r["Id"] in protected or r["Id"] in newest:
            assert r["Id"] not in forget
        else:
            assert r["Id"] in forget
    # at most `keep` finished runs stay, besides the protected ones
    assert len([r for r in finished if r["Id"] not in forget and r["Id"] not in protected]) \
        <= keep


def test_runs_past_awss_retention_go_even_among_the_newest() -> None:
    runs = as_runs([("SUCCEEDED", 0), ("FAILED", 100)])
    now = 5 + RETENTION_SECONDS + 1  # jr_0 ended just over 365 days ago, jr_100 not
    assert runs_to_forget(runs, now) == ["jr_0"]


def test_the_store_forgets_runs_and_their_work_folders(tmp_path) -> None:
    store = jobs_api.JobStore(tmp_path)
    for t in range(3):
        store.put_run({"Id": f"jr_{t}", "JobName": "j", "JobRunState": "SUCCEEDED",
                       "StartedOn": float(t)})
    (tmp_path / "glue" / "scripts" / "jr_0").mkdir(parents=True)
    store.forget_runs("j", ["jr_0"])
    assert [r["Id"] for r in store.list_runs("j")] == ["jr_2", "jr_1"]
    assert not (tmp_path / "glue" / "scripts" / "jr_0").exists()
    assert [r["Id"] for r in jobs_api.JobStore(tmp_path).list_runs("j")] == ["jr_2", "jr_1"]
