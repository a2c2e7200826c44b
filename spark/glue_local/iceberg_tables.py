"""Iceberg tables in the local Data Catalog, shown the way Iceberg's GlueCatalog writes them.

On AWS the job's Iceberg tables live in the Glue Data Catalog: GlueCatalog creates a Glue
table per Iceberg table, with `TableType` EXTERNAL_TABLE, `Parameters` `table_type`
ICEBERG, `metadata_location` (and `previous_metadata_location`), and a best-effort
`StorageDescriptor` (location, and columns typed as Hive type strings with the
`iceberg.field.id`/`optional`/`current` parameters) — Iceberg's
`aws/.../glue/IcebergToGlueConverter.java` and `GlueTableOperations.java`. Locally the
tables live in the Iceberg REST catalog; GetTable/GetTables/GetDatabase(s) read them from
there (the Glue database is the Iceberg namespace), so boto3 code that browses the
catalog sees what it would on AWS.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT_SECONDS = 5.0
_PRIMITIVES = {
    "boolean": "boolean", "int": "int", "long": "bigint", "float": "float",
    "double": "double", "date": "date", "time": "string", "string": "string",
    "uuid": "string", "timestamp": "timestamp", "timestamptz": "timestamp",
    "binary": "binary",
}


# --- pure -----------------------------------------------------------------------------
def glue_type(t) -> str:
    """Iceberg's JSON type -> the type string GlueCatalog shows (informational, as there)."""
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t]
        if t.startswith("decimal"):
            return t.replace(" ", "")
        if t.startswith("fixed"):
            return "binary"
        return t.lower()
    kind = t.get("type")
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{glue_type(f['type'])}"
                                    for f in t["fields"]) + ">"
    if kind == "list":
        return f"array<{glue_type(t['element'])}>"
    if kind == "map":
        return f"map<{glue_type(t['key'])},{glue_type(t['value'])}>"
    return str(kind)


def _columns(metadata: dict) -> list[dict]:
    current = metadata.get("current-schema-id", 0)
    schemas = metadata.get("schemas") or [metadata.get("schema", {})]
    ordered = sorted(schemas, key=lambda s: s.get("schema-id", 0) != current)  # current first
    columns, seen = [], set()
    for schema in ordered:
        for field in schema.get("fields", []):
            if field["name"] in seen:
                continue
            seen.add(field["name"])
            column = {"Name": field["name"], "Type": glue_type(field["type"]), "Parameters": {
                "iceberg.field.id": str(field["id"]),
                "iceberg.field.optional": str(not field.get("required", False)).lower(),
                "iceberg.field.current": str(schema.get("schema-id", 0) == current).lower(),
            }}
            if field.get("doc"):
                column["Comment"] = field["doc"]
            columns.append(column)
    return columns


def glue_table(database: str, name: str, loaded: dict, catalog_id: str) -> dict:
    """A Glue `Table` for an Iceberg REST LoadTable response."""
    metadata = loaded.get("metadata", {})
    params = {"table_type": "ICEBERG", "metadata_location": loaded.get("metadata-location", "")}
    log = metadata.get("metadata-log") or []
    if log:
        params["previous_metadata_location"] = log[-1]["metadata-file"]
    updated = metadata.get("last-updated-ms", 0) / 1000
    table = {
        "Name": name, "DatabaseName": database, "CatalogId": catalog_id,
        "TableType": "EXTERNAL_TABLE", "Parameters": params,
        "CreateTime": updated, "UpdateTime": updated,
        "StorageDescriptor": {"Location": metadata.get("location", ""),
                              "Columns": _columns(metadata)},
        "IsRegisteredWithLakeFormation": False,
    }
    comment = (metadata.get("properties") or {}).get("comment")
    if comment:
        table["Description"] = comment
    return table


# --- I/O ------------------------------------------------------------------------------
class RestCatalog:
    """The few read calls of the Iceberg REST catalog API this view needs."""

    def __init__(self, uri: str, token: str | None = None) -> None:
        self.uri = uri.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._prefix: str | None = None

    def _get(self, path: str) -> dict | None:
        try:
            request = urllib.request.Request(self.uri + path, headers=self._headers)
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def _base(self) -> str:
        if self._prefix is None:
            config = self._get("/v1/config") or {}
            prefix = (config.get("overrides") or {}).get("prefix") or \
                (config.get("defaults") or {}).get("prefix") or ""
            self._prefix = f"/{urllib.parse.quote(prefix, safe='')}" if prefix else ""
        return f"/v1{self._prefix}"

    @staticmethod
    def _ns(namespace: str) -> str:
        return urllib.parse.quote(namespace, safe="")

    def namespaces(self) -> list[str]:
        got = self._get(f"{self._base()}/namespaces") or {}
        return [".".join(ns) for ns in got.get("namespaces", []) if len(ns) == 1]

    def namespace(self, namespace: str) -> dict | None:
        return self._get(f"{self._base()}/namespaces/{self._ns(namespace)}")

    def tables(self, namespace: str) -> list[str]:
        got = self._get(f"{self._base()}/namespaces/{self._ns(namespace)}/tables") or {}
        return [ident["name"] for ident in got.get("identifiers", [])]

    def load(self, namespace: str, table: str) -> dict | None:
        return self._get(f"{self._base()}/namespaces/{self._ns(namespace)}/tables/"
                         f"{urllib.parse.quote(table, safe='')}")
