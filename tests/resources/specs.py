"""Table specs for tests: the demo table's, built offline as cdclab.tables_sync builds it
from the source (postgres/schema.sql), and a spec writer for jobs run by tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdclab import settings
from cdclab.table_specs import SourceTable, build_spec, tables_document
from cdclab.tables_sync import layout_of, overrides_for
from dms_emitter.source_types import PgType, SourceColumn

HOSTS_COLUMNS = (("id", "int4"), ("url", "text"), ("name", "text"), ("since", "date"),
                 ("location", "text"), ("response_time", "text"), ("response_rate", "text"))


def hosts_source(p: settings.PipelineSettings | None = None) -> SourceTable:
    p = p or settings.load_pipeline()
    columns = [SourceColumn(n, PgType(t), n == "id") for n, t in HOSTS_COLUMNS]
    return SourceTable(p.source.schema, p.source.table,
                       f"{p.source.schema}/{p.source.table}", columns,
                       [c.name for c in columns], [p.dms.change_seq_column], ["id"])


def hosts_spec(p: settings.PipelineSettings | None = None) -> dict[str, Any]:
    p = p or settings.load_pipeline()
    source = hosts_source(p)
    return build_spec(source, layout_of(p), overrides_for(p, source.qualified))


def write_tables_config(path: Path, specs: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps(tables_document(specs)))
    return str(path)
