"""Pure: which objects of a DMS target are DMS files, of which table, in which order.

DMS writes `<bucket folder>/<schema>/<table>/LOAD<8 digits>.<ext>` for the full load and
`<...>/<table>/[<date folders>/]<yyyyMMdd-HHmmssSSS>.<ext>` for CDC, `<ext>` one of csv,
csv.gz, parquet (AWS DMS user guide, CHAP_Target.S3: "Using Amazon S3 as a target",
DatePartitionEnabled). A replay copies them in DMS's order: every table's full load in
file-number order, then the CDC files by the time in their names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

LOAD_NAME = re.compile(r"^LOAD([0-9A-F]{8})\.(csv|csv\.gz|parquet)$")
CDC_NAME = re.compile(r"^(\d{8}-\d{9})\.(csv|csv\.gz|parquet)$")
DATE_FOLDER = re.compile(r"^\d{2,10}$")  # yyyy, mm, dd, hh, yyyymmdd, yyyymmddhh ...
FORMATS = {"csv": "csv", "csv.gz": "csv", "parquet": "parquet"}


class ReplayError(ValueError):
    """Input a replay cannot use; the message names the object or table."""


@dataclass(frozen=True)
class DmsFile:
    key: str  # as listed under the source (relative to it)
    size: int
    schema: str
    table: str
    below_table: str  # the path under the table's folder (date folders and name)
    kind: str  # "load" | "cdc"
    order: str  # the load number, or the CDC time, as sortable text
    data_format: str  # csv | parquet

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"


@dataclass
class Plan:
    files: list[DmsFile] = field(default_factory=list)  # in DMS's order
    skipped: dict[str, str] = field(default_factory=dict)  # key -> why it is not copied

    def tables(self) -> list[str]:
        return sorted({f.qualified for f in self.files})

    def of(self, table: str) -> list[DmsFile]:
        return [f for f in self.files if f.qualified == table]


def classify(key: str, size: int) -> DmsFile | str:
    """The DMS file `key` is, or why it is none."""
    parts = [p for p in key.split("/") if p]
    if not parts:
        return "an empty name"
    name = parts[-1]
    load, cdc = LOAD_NAME.match(name), CDC_NAME.match(name)
    if not (load or cdc):
        return "not a DMS file name (LOAD<number> or <yyyyMMdd-HHmmssSSS>, .csv/.csv.gz/.parquet)"
    folders = parts[:-1]
    dated = 0
    while len(folders) - dated > 2 and DATE_FOLDER.match(folders[-1 - dated]):
        dated += 1
    table_path = folders[: len(folders) - dated]
    if len(table_path) < 2:
        return "not under a <schema>/<table> folder, as DMS writes every file"
    schema, table = table_path[-2], table_path[-1]
    match = load or cdc
    assert match is not None
    return DmsFile(key=key, size=size, schema=schema, table=table,
                   below_table="/".join(parts[len(table_path):]),
                   kind="load" if load else "cdc", order=match.group(1),
                   data_format=FORMATS[match.group(2)])


def plan(listing: Iterable[tuple[str, int]], tables: Iterable[str] = ()) -> Plan:
    """The DMS files of a listing (key, size) in the order DMS wrote them: the full loads
    first (by table, then number), then every CDC file by its time (then table), so a
    run that reads only some files never sees a change before its table's full load.
    `tables` (schema.table) keeps only those; an unknown name is an error."""
    out = Plan()
    found: list[DmsFile] = []
    for key, size in listing:
        verdict = classify(key, size)
        if isinstance(verdict, str):
            out.skipped[key] = verdict
        else:
            found.append(verdict)
    wanted = set(tables)
    if wanted:
        unknown = sorted(wanted - {f.qualified for f in found})
        if unknown:
            raise ReplayError(f"no DMS files for {unknown} (found tables: "
                              f"{sorted({f.qualified for f in found})})")
        for f in found:
            if f.qualified not in wanted:
                out.skipped[f.key] = "a table not asked for"
        found = [f for f in found if f.qualified in wanted]
    for qualified in sorted({f.qualified for f in found}):
        mine = [f for f in found if f.qualified == qualified]
        formats = sorted({f.data_format for f in mine})
        if len(formats) > 1:
            raise ReplayError(f"{qualified}: files in more than one format {formats}; one "
                              "task writes one format")
    loads = sorted((f for f in found if f.kind == "load"),
                   key=lambda f: (f.qualified, f.order, f.key))
    changes = sorted((f for f in found if f.kind == "cdc"),
                     key=lambda f: (f.order, f.qualified, f.key))
    out.files = loads + changes
    return out


def target_key(bucket_folder: str, f: DmsFile) -> str:
    """Where the file goes in the lab's bronze: the same layout under the replay's folder."""
    return f"{bucket_folder.strip('/')}/{f.schema}/{f.table}/{f.below_table}"
