"""What `cdclab resync` touches, decided from the emitter's state alone."""

from __future__ import annotations

import pytest

from cdclab.resync import archive_key, plan
from cdclab.services.base import ServiceError
from pipeline_contract import settings

P = settings.load_pipeline()
JOB_TABLE = f"{P.source.schema}.{P.source.table}"
ROOT = P.dms.bucket_folder.strip("/")
STATE = {"phase": "streaming", "tables": {
    JOB_TABLE: {"folder": f"{P.source.schema}/{P.source.table}"},
    "sales.Order Lines": {"folder": "sales/Order Lines"},
}}


def test_a_whole_resync_archives_every_folder_drops_the_slot_and_empties_silver() -> None:
    chosen = plan(None, STATE, P)
    assert chosen.whole and chosen.empty_silver
    assert chosen.folders == [f"{ROOT}/"]
    assert set(chosen.tables) == set(STATE["tables"])


def test_one_table_touches_its_folder_only() -> None:
    other = plan("sales.Order Lines", STATE, P)
    assert not other.whole and not other.empty_silver
    assert other.folders == [f"{ROOT}/sales/Order Lines/"]
    job = plan(JOB_TABLE, STATE, P)
    assert job.empty_silver and job.folders == [f"{ROOT}/{P.source.schema}/{P.source.table}/"]


def test_a_table_resync_is_refused_when_the_slot_or_source_was_lost() -> None:
    waiting = {**STATE, "resync_needed": {"reason": "replication slot s is gone", "at": "t"}}
    with pytest.raises(ServiceError, match="without a table"):
        plan(JOB_TABLE, waiting, P)
    assert plan(None, waiting, P).notes == ["emitter waited for a resync: "
                                            "replication slot s is gone"]


def test_an_unknown_table_is_named() -> None:
    with pytest.raises(ServiceError, match="public.nope is not a table"):
        plan("public.nope", STATE, P)


def test_lost_state_still_resyncs_the_job_table() -> None:
    chosen = plan(None, {}, P)
    assert chosen.tables == [JOB_TABLE] and chosen.whole


def test_archived_keys_keep_the_original_key_under_the_stamp() -> None:
    assert archive_key("archive/", "20261123T000000Z", f"{ROOT}/a/LOAD00000001.csv") == \
        f"archive/20261123T000000Z/{ROOT}/a/LOAD00000001.csv"
