"""Pure: DMS's date-based folder partitioning (DatePartitionEnabled and friends).

"DatePartitionEnabled ... partition S3 bucket folders based on transaction commit
dates"; DatePartitionSequence orders the date parts, DatePartitionDelimiter joins them,
DatePartitionTimezone converts "the current UTC time into a specified time zone ... when
a date partition folder is created and a CDC filename is generated" (CHAP_Target.S3,
"Using date-based folder partitioning"; API S3Settings). The folder sits between the
table's folder and the file: <bucket folder>/<schema>/<table>/<date folder>/<file>.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SEQUENCES = {  # DatePartitionSequence -> the strftime parts, in order
    "YYYYMMDD": ("%Y", "%m", "%d"),
    "YYYYMMDDHH": ("%Y", "%m", "%d", "%H"),
    "YYYYMM": ("%Y", "%m"),
    "MMYYYYDD": ("%m", "%Y", "%d"),
    "DDMMYYYY": ("%d", "%m", "%Y"),
}
DELIMITERS = {"SLASH": "/", "DASH": "-", "UNDERSCORE": "_", "NONE": ""}


class PartitionError(ValueError):
    """A date-partition setting DMS would refuse; the message names it."""


@dataclass(frozen=True)
class DatePartitioning:
    enabled: bool = False
    sequence: str = "YYYYMMDD"
    delimiter: str = "SLASH"
    timezone: str = ""  # "" = UTC
    full_load: bool = True  # LOAD files in the load's date folder (not documented)

    def __post_init__(self) -> None:
        if self.sequence not in SEQUENCES:
            raise PartitionError(f"date_partition_sequence={self.sequence!r}: expected "
                                 f"one of {tuple(SEQUENCES)}")
        if self.delimiter not in DELIMITERS:
            raise PartitionError(f"date_partition_delimiter={self.delimiter!r}: expected "
                                 f"one of {tuple(DELIMITERS)}")
        if self.timezone:
            self.zone  # noqa: B018 - refuses an unknown zone at startup

    @property
    def zone(self) -> tzinfo:
        if not self.timezone:
            return UTC
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise PartitionError(f"date_partition_timezone={self.timezone!r}: not an "
                                 "Area/Location time zone") from None

    def local(self, moment: datetime) -> datetime:
        """The moment in DatePartitionTimezone (UTC when unset or disabled)."""
        if moment.tzinfo is None:
            raise ValueError(f"{moment!r} has no time zone")
        return moment.astimezone(self.zone if self.enabled else UTC)

    def folder(self, moment: datetime) -> str:
        """The date folder of a moment ("" when partitioning is off)."""
        if not self.enabled:
            return ""
        local = self.local(moment)
        return DELIMITERS[self.delimiter].join(local.strftime(p)
                                               for p in SEQUENCES[self.sequence])

    def load_folder(self, moment: datetime) -> str:
        return self.folder(moment) if self.full_load else ""


def join(folder: str, partition: str, name: str = "") -> str:
    """table folder / date folder / name, skipping empty parts."""
    return "/".join(p for p in (folder, partition, name) if p)
