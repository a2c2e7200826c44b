"""More corpus scripts (tests/corpus/, written for cdclab in the styles of AWS's pages,
named at the top of each script) run as jobs through the local Glue API: DynamicFrame
field transforms with Spigot, a partitioned catalog table read with push-down and catalog
partition predicates, Iceberg through `--datalake-formats iceberg`. Each output is checked
against the result computed here in plain Python from the same input, without Glue.
Job bookmarks over runs are covered by test_glue_corpus.py's Glue Studio job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_glue_corpus import create
from tests.integration.test_glue_public_scripts import TEXT_NAME, jsonl, objects
from tests.integration.test_glue_sinks_conf_buckets import (  # noqa: F401 (fixtures)
    driver,
    glue,
    succeeded,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

JSON_SERDE = {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"}


def lines(folder: Path) -> list[dict]:
    """The records of every object in folder (Spark's markers and hidden files aside)."""
    return [json.loads(line) for name in objects(folder) if not name.startswith("_")
            for line in (folder / name).read_text().splitlines() if line]


def by(key: str, records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: r[key])


# --- SelectFields, SplitFields, Spigot, DropNullFields ---------------------------------

def person(i: int) -> dict:
    p = {"id": f"p{i:02d}", "name": f"Person {i}", "family_name": f"Fam{i}",
         "gender": "f" if i % 2 else "m", "birth_date": f"19{50 + i}-01-01",
         "death_date": None, "contact": {"email": f"p{i}@example.org", "phone": f"555-{i:04d}"},
         "images": [{"url": f"img{i}"}]}
    if i == 3:
        del p["gender"]
    if i == 4:
        del p["contact"]
    return p


PERSONS = [person(i) for i in range(40)]


def expected_split() -> tuple[list[dict], list[dict]]:
    """DropNullFields drops death_date (null in every record); SelectFields keeps id, name,
    family_name, gender, contact; SplitFields puts id, name and contact.email in the first
    frame and the rest in the second. JSON sinks leave out absent and null fields."""
    names, details = [], []
    for p in PERSONS:
        name = {"id": p["id"], "name": p["name"]}
        rest = {k: p[k] for k in ("family_name", "gender") if k in p}
        if "contact" in p:
            name["contact"] = {"email": p["contact"]["email"]}
            rest["contact"] = {"phone": p["contact"]["phone"]}
        names.append(name)
        details.append(rest)
    return names, details


def test_field_transforms_and_spigot_samples(glue, tmp_path):  # noqa: F811
    src, out, spigot = tmp_path / "persons", tmp_path / "out", tmp_path / "spigot"
    jsonl(src, PERSONS)
    (spigot / "names").mkdir(parents=True)
    (spigot / "names" / "keep.txt").write_text("not the spigot's")
    create(glue, "fields", "field_transforms_spigot.py", source=f"file://{src}",
           target=f"file://{out}", spigot=f"file://{spigot}")
    log = succeeded(glue, "fields")
    assert "Count:  40" in log
    assert "null_fields ['death_date']" in log  # AWS's DropNullFields found the null field
    assert "Frames:  ['details', 'names']" in log

    names, details = expected_split()
    assert by("id", lines(out / "names")) == names
    assert by("family_name", lines(out / "details")) == by("family_name", details)

    # topk 2: "the first k records"; the spigot appends and deletes nothing at its path
    assert (spigot / "names" / "keep.txt").read_text() == "not the spigot's"
    sampled = [n for n in objects(spigot / "names") if n != "keep.txt"]
    assert sampled and all(TEXT_NAME.fullmatch(n) for n in sampled), sampled
    assert [json.loads(line) for n in sampled
            for line in (spigot / "names" / n).read_text().splitlines()] == names[:2]
    # prob 0.5, topk 5: about 20 of the 40 picked, at most 5 written (AWS's Scala reference)
    picked = lines(spigot / "details")
    assert len(picked) == 5 and len({json.dumps(r, sort_keys=True) for r in picked}) == 5
    assert all(r in details for r in picked)


def test_spigot_options_outside_their_ranges_fail_by_name(driver, tmp_path):  # noqa: F811
    from awsglue.context import GlueContext
    from awsglue.dynamicframe import DynamicFrame

    glue_context = GlueContext(driver.sparkContext)
    frame = DynamicFrame.fromDF(driver.createDataFrame([(1, "a")], "id int, v string"),
                                glue_context, "f")
    for options, named in [({"topk": -1}, "spigot option topk=-1"),
                           ({"prob": 1.5}, "spigot option prob=1.5"),
                           ({"prob": "often"}, "spigot option prob=often")]:
        with pytest.raises(Exception, match=named):
            frame.spigot(f"file://{tmp_path / 'never'}", options)
    assert not (tmp_path / "never").exists()
    frame.spigot(f"file://{tmp_path / 'all'}")  # defaults: topk 100, prob 1
    assert lines(tmp_path / "all") == [{"id": 1, "v": "a"}]


# --- a partitioned catalog table: push_down_predicate, catalogPartitionPredicate --------

ORDERS = {("2024", "04", "05"): [(1, "pen", 1.5), (2, "ink", 3.0)],
          ("2024", "04", "20"): [(3, "pad", 2.25)],
          ("2024", "04", "30"): [(4, "cap", 9.0)],  # on disk, not in the catalog
          ("2024", "05", "03"): [(5, "pen", 1.5)],
          ("2024", "05", "10"): [(6, "nib", 0.5), (7, "pen", 1.5)],
          ("2024", "05", "28"): [(8, "ink", 3.0)],
          ("2024", "06", "12"): [(9, "pad", 2.25)]}
REGISTERED = [k for k in ORDERS if k != ("2024", "04", "30")]


def expected_orders(keep) -> list[dict]:
    """The registered partitions `keep` selects, their rows with the keys as columns."""
    return by("order_id", [{"order_id": o, "item": item, "amount": amount, "year": y, "month": m,
                   "day": d}
                  for (y, m, d) in REGISTERED if keep(y, m, d)
                  for o, item, amount in ORDERS[(y, m, d)]])


def test_partitioned_catalog_table_read_with_predicates(glue, tmp_path):  # noqa: F811
    root, out = tmp_path / "orders", tmp_path / "out"
    for (y, m, d), rows in ORDERS.items():
        jsonl(root / f"year={y}" / f"month={m}" / f"day={d}",
              [{"order_id": o, "item": item, "amount": amount} for o, item, amount in rows])
    columns = [{"Name": "order_id", "Type": "bigint"}, {"Name": "item", "Type": "string"},
               {"Name": "amount", "Type": "double"}]
    glue.create_database(DatabaseInput={"Name": "sales"})
    glue.create_table(DatabaseName="sales", TableInput={
        "Name": "orders", "TableType": "EXTERNAL_TABLE",
        "Parameters": {"classification": "json"},
        "PartitionKeys": [{"Name": k, "Type": "string"} for k in ("year", "month", "day")],
        "StorageDescriptor": {"Location": f"file://{root}/", "Columns": columns,
                              "SerdeInfo": JSON_SERDE}})
    glue.batch_create_partition(DatabaseName="sales", TableName="orders", PartitionInputList=[
        {"Values": list(k), "StorageDescriptor": {
            "Location": f"file://{root}/year={k[0]}/month={k[1]}/day={k[2]}/",
            "Columns": columns, "SerdeInfo": JSON_SERDE}} for k in REGISTERED])
    create(glue, "partitions", "catalog_partition_predicates.py", database="sales",
           table_name="orders", target=f"file://{out}")
    log = succeeded(glue, "partitions")

    april = expected_orders(lambda y, m, d: y == "2024" and m == "04")
    late_may = expected_orders(lambda y, m, d: y == "2024" and m == "05" and int(d) >= 10)
    assert by("order_id", lines(out / "april")) == april
    assert by("order_id", lines(out / "late_may")) == late_may
    assert f"April count:  {len(april)}" in log and f"Late May count:  {len(late_may)}" in log
    assert "|-- order_id: long" in log  # the catalog's bigint, as Glue reads it


# --- Iceberg through --datalake-formats iceberg and the page's --conf ------------------

FIRST = [{"id": 1, "item": "pen", "amount": 1.5}, {"id": 2, "item": "ink", "amount": 3.0}]
SECOND = [{"id": 3, "item": "pen", "amount": 2.5}]


def test_iceberg_through_datalake_formats_writes_then_reads(glue, tmp_path):  # noqa: F811
    src, out, warehouse = tmp_path / "src", tmp_path / "out", tmp_path / "warehouse"
    jsonl(src / "first", FIRST)
    jsonl(src / "second", SECOND)
    glue.create_database(DatabaseInput={"Name": "shop"})
    # the entry GlueCatalog registers for the table it creates (table_type ICEBERG)
    glue.create_table(DatabaseName="shop", TableInput={
        "Name": "orders", "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "ICEBERG"}})
    conf = " --conf ".join([
        "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.glue_catalog.warehouse=file://{warehouse}",
        "spark.sql.catalog.glue_catalog.type=hadoop"])
    create(glue, "iceberg", "iceberg_datalake_formats.py", source=f"file://{src}",
           database="shop", table_name="orders", target=f"file://{out}",
           conf=conf, **{"datalake-formats": "iceberg"})
    log = succeeded(glue, "iceberg")

    rows = FIRST + SECOND  # the CTAS batch, then the catalog sink's append
    assert by("id", lines(out / "catalog")) == by("id", rows)
    totals: dict[str, float] = {}
    for r in rows:
        totals[r["item"]] = totals.get(r["item"], 0.0) + r["amount"]
    assert by("item", lines(out / "totals")) == by(
        "item", [{"item": k, "total": v} for k, v in totals.items()])
    assert "Snapshots:  2" in log  # CREATE TABLE AS SELECT, then one append
    assert (warehouse / "shop" / "orders" / "metadata").is_dir()
