"""Table specs for tests: the demo table's, built offline as cdclab.tables_sync builds it
from the source (postgres/schema.sql), and a spec writer for jobs run by tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdclab.tables_sync import layout_of, overrides_for, source_table
from pipeline_contract import settings
from pipeline_contract.dms_format.source_types import PgType, SourceColumn
from pipeline_contract.dms_format.table_mappings import TableMappings, default_mappings
from pipeline_contract.table_specs import SourceTable, build_spec, tables_document

HOSTS_COLUMNS = (("id", "int4"), ("url", "text"), ("name", "text"), ("since", "date"),
                 ("location", "text"), ("response_time", "text"), ("response_rate", "text"))


def hosts_source(p: settings.PipelineSettings | None = None,
                 before_image: bool = False) -> SourceTable:
    """The demo table by the default mappings. `before_image` true: with their before
    image of the key (BI_id), as the shipped pipeline (dms.before_image_columns = true)
    writes it; false (the tests' hand-written bronze files): without."""
    p = p or settings.load_pipeline()
    columns = [SourceColumn(n, PgType(t), n == "id") for n, t in HOSTS_COLUMNS]
    mappings = TableMappings.parse(default_mappings(
        p.source.schema, p.source.table, p.dms.change_seq_column, before_image))
    return source_table(mappings.plan(p.source.schema, p.source.table), columns, ["id"])


def hosts_spec(p: settings.PipelineSettings | None = None,
               before_image: bool = False) -> dict[str, Any]:
    p = p or settings.load_pipeline()
    source = hosts_source(p, before_image)
    return build_spec(source, layout_of(p), overrides_for(p, source.qualified))


def write_tables_config(path: Path, specs: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps(tables_document(specs)))
    return str(path)
