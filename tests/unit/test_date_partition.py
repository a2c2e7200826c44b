"""DatePartitionEnabled / Sequence / Delimiter / Timezone (CHAP_Target.S3 "Using
date-based folder partitioning", API S3Settings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dms_emitter.date_partition import DatePartitioning, PartitionError, join
from dms_emitter.dms_csv import cdc_file_name

MOMENT = datetime(2024, 3, 4, 22, 30, tzinfo=UTC)


@pytest.mark.parametrize(("sequence", "delimiter", "folder"), [
    ("YYYYMMDD", "SLASH", "2024/03/04"),
    ("YYYYMMDDHH", "SLASH", "2024/03/04/22"),
    ("YYYYMM", "DASH", "2024-03"),
    ("MMYYYYDD", "UNDERSCORE", "03_2024_04"),
    ("DDMMYYYY", "NONE", "04032024"),
])
def test_folder_of_each_sequence_and_delimiter(sequence: str, delimiter: str,
                                               folder: str) -> None:
    assert DatePartitioning(True, sequence, delimiter).folder(MOMENT) == folder


def test_disabled_writes_no_folder_and_the_time_zone_moves_the_date() -> None:
    assert DatePartitioning().folder(MOMENT) == ""
    seoul = DatePartitioning(True, timezone="Asia/Seoul")  # the API reference's example
    assert seoul.folder(MOMENT) == "2024/03/05"  # 07:30 the next day there
    assert DatePartitioning(True, full_load=False).load_folder(MOMENT) == ""
    assert join("public/t", "2024/03/05", "x.csv") == "public/t/2024/03/05/x.csv"
    assert join("public/t", "", "x.csv") == "public/t/x.csv"


@pytest.mark.parametrize(("changes", "named"), [
    ({"sequence": "YYYY"}, "date_partition_sequence"),
    ({"delimiter": "COMMA"}, "date_partition_delimiter"),
    ({"timezone": "Mars/Olympus"}, "date_partition_timezone"),
])
def test_bad_settings_fail_naming_them(changes: dict, named: str) -> None:
    with pytest.raises(PartitionError, match=named):
        DatePartitioning(True, **changes)


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                    timezones=st.just(UTC)), st.sampled_from(["", "Asia/Seoul",
                                                             "America/New_York"]))
def test_year_first_folders_sort_like_time(moment: datetime, zone: str) -> None:
    p = DatePartitioning(True, "YYYYMMDDHH", "SLASH", zone)
    later = moment + timedelta(hours=1)
    if p.local(later).utcoffset() == p.local(moment).utcoffset():  # not across a DST step
        assert p.folder(moment) <= p.folder(later)


def test_cdc_names_in_the_zone_and_after_the_previous_name() -> None:
    seoul = ZoneInfo("Asia/Seoul")
    assert cdc_file_name(MOMENT, zone=seoul) == "20240305-073000000.csv"
    # an autumn hour repeated (or a clock step back) still sorts after the last name
    assert cdc_file_name(MOMENT, "20240304-233000000.csv") == "20240304-233000001.csv"
    assert cdc_file_name(MOMENT, "20240304-223000000.parquet",
                         suffix=".parquet") == "20240304-223000001.parquet"
