"""The generic job's table specs, built from the source and published to the lake.

`source_tables` reads the source's catalog through the same table mappings the emitter
(and DMS) apply; `build_specs` makes the specs and refuses two tables that would share a
name (pipeline_contract.table_names); `publish` creates or updates each table's bronze Glue catalog
table and uploads the `--tables_config` document the job reads. `cdclab up`, the demo
and `cdclab tables --sync` call `sync`; `cdclab deploy` publishes the same document.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline_contract import settings
from pipeline_contract.catalog_tables import database_input
from pipeline_contract.dms_format.table_mappings import (
    TableMappings,
    default_mappings,
    read_document,
)
from pipeline_contract.table_names import check_names
from pipeline_contract.table_specs import (
    Layout,
    SourceTable,
    SpecError,
    TableOverrides,
    bronze_table_input,
    build_spec,
    tables_document,
)

if TYPE_CHECKING:
    from pipeline_contract.dms_format.source_types import SourceColumn
    from pipeline_contract.dms_format.table_mappings import TablePlan


@dataclass
class SyncReport:
    specs: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why the job skips it

    def lines(self) -> list[str]:
        out = [f"{s['name']} -> {s['silver_table']} (key {', '.join(s['keys'])})"
               for s in self.specs]
        out += [f"{name}: not merged: {why}" for name, why in self.skipped.items()]
        return out


def layout_of(p: settings.PipelineSettings) -> Layout:
    return Layout(p.lake.bronze_bucket, p.dms.bucket_folder, p.lake.glue_database,
                  p.lake.catalog_name, p.dms.timestamp_column_name, p.dms.change_seq_column,
                  p.dms.include_op_for_full_load, p.dms.map_unbounded_numeric_as_string,
                  p.dms.data_format, p.dms.map_boolean_as_boolean, p.dms.add_column_name)


def overrides_for(p: settings.PipelineSettings, qualified: str) -> TableOverrides:
    """[tables."schema.table"]; [source].table also takes the [lake] table names."""
    o = TableOverrides.parse(qualified, p.tables.get(qualified, {}))
    if qualified != f"{p.source.schema}.{p.source.table}":
        return o
    lake = p.lake
    return TableOverrides(o.bronze_table or lake.bronze_table,
                          o.silver_table or lake.silver_table,
                          o.tombstone_table or lake.tombstone_table,
                          o.quarantine_table or lake.quarantine_table,
                          o.transformation_ctx, o.derive)


def table_mappings(p: settings.PipelineSettings):
    if p.source.table_mappings:
        path = settings.table_mappings_path(p)
        return TableMappings.parse(read_document(path), str(path))
    return TableMappings.parse(default_mappings(p.source.schema, p.source.table,
                                                p.dms.change_seq_column,
                                                p.dms.before_image_columns))


def source_tables(dsn: str, p: settings.PipelineSettings) -> list[SourceTable]:
    """The selected tables as the emitter writes them: written columns, names, key."""
    import psycopg

    from dms_emitter import replication as repl

    mappings = table_mappings(p)
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for plan in mappings.select(repl.list_tables(conn)):
            columns = repl.table_columns(conn, plan.schema, plan.table)
            key = [c.name for c in columns if c.in_key]
            if not key and plan.qualified == f"{p.source.schema}.{p.source.table}":
                uniques = repl.unique_keys(conn, plan.schema, plan.table)
                if any(set(u) == {p.source.primary_key} for u in uniques):
                    key = [p.source.primary_key]
            out.append(source_table(plan, columns, key))
    return out


def source_table(plan: TablePlan, columns: list[SourceColumn], key: list[str]) -> SourceTable:
    """A source table as the emitter writes it by `plan` (pure)."""
    kept = [columns[i] for i in plan.kept([c.name for c in columns])]
    bi = plan.before_image
    before = [(bi.name(plan.column_name(columns[i].name)), columns[i].name)
              for i in plan.before(columns, key)] if bi else []
    return SourceTable(plan.schema, plan.table, plan.folder, kept,
                       [plan.column_name(c.name) for c in kept],
                       [a.name for a in plan.added], key, before)


def build_specs(tables: list[SourceTable], p: settings.PipelineSettings) -> SyncReport:
    report = SyncReport()
    layout = layout_of(p)
    for t in tables:
        try:
            report.specs.append(build_spec(t, layout, overrides_for(p, t.qualified)))
        except SpecError as exc:
            report.skipped[t.qualified] = str(exc)
    unknown = sorted(set(p.tables) - {t.qualified for t in tables})
    for name in unknown:
        report.skipped[name] = ('pipeline.toml names it in [tables] but the table mappings '
                                'select no such source table')
    check_names(report.specs)  # two tables sharing a name: refused, nothing published
    return report


def publish(env: Mapping[str, str], p: settings.PipelineSettings,
            specs: list[dict[str, Any]]) -> None:
    """Bronze catalog tables (created or updated) and the --tables_config document."""
    from cdclab.services.glue_api import glue_client
    from cdclab.services.minio import s3_client

    glue = glue_client(env)
    with contextlib.suppress(glue.exceptions.AlreadyExistsException):
        glue.create_database(DatabaseInput=database_input(p))
    for spec in specs:
        table = bronze_table_input(spec, p.dms.csv_delimiter)
        try:
            glue.create_table(DatabaseName=spec["bronze_database"], TableInput=table)
        except glue.exceptions.AlreadyExistsException:
            glue.update_table(DatabaseName=spec["bronze_database"], TableInput=table)
    bucket, key = p.tables_config.removeprefix("s3://").split("/", 1)
    s3_client(env).put_object(Bucket=bucket, Key=key, ContentType="application/json",
                              Body=json.dumps(tables_document(specs), indent=1).encode())


def sync(env: Mapping[str, str], p: settings.PipelineSettings,
         progress: Callable[[str], None] = lambda _m: None) -> SyncReport:
    report = build_specs(source_tables(env[settings.ENV_PG_DSN], p), p)
    publish(env, p, report.specs)
    for line in report.lines():
        progress(f"job table: {line}")
    return report


def published_specs(env: Mapping[str, str],
                    p: settings.PipelineSettings) -> list[dict[str, Any]]:
    """The specs the job reads now (empty before the first sync)."""
    from cdclab.services.minio import s3_client

    bucket, key = p.tables_config.removeprefix("s3://").split("/", 1)
    s3 = s3_client(env)
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return []
    return json.loads(body)["tables"]
